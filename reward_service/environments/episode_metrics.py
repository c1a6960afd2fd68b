"""Prometheus metrics of the session manager (on a registry of its own; a server exports it).

==============================================  ===================================================
``reward_episode_sessions``                     episodes open now (holding an admission slot)
``reward_episode_waiting``                      opens waiting for admission now
``reward_episode_opened_total{environment}``    episodes opened
``reward_episode_refused_total``                opens refused (admission queue timeout)
``reward_episode_ended_total{environment,status}``  episodes ended, by how (FINISHED, SANDBOX_FAILED, ...)
``reward_episode_reaped_total{reason}``         sessions ended by the reaper: ``idle``, ``deadline``
``reward_episode_tool_calls_total{tool,status}``  tool calls answered, by status (RUNNING, FINISHED,
                                                an unscored one)
``reward_episode_tool_seconds{tool}``           wall time of a tool call (histogram)
``reward_episode_seconds{environment}``         wall time of an episode, open to end (histogram)
``reward_episode_reward{environment}``          final rewards of FINISHED episodes (histogram)
``reward_episode_cleanup_overruns_total``       closes whose tool calls did not stop within the cleanup
                                                deadline
==============================================  ===================================================

``environment`` labels are registered names (unknown names never reach a label); ``tool`` labels
are the environment's tools, or ``_unknown`` for a name no environment offers.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

UNKNOWN_TOOL_LABEL = "_unknown"
REWARD_BUCKETS = (-1.0, -0.5, 0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 2.0)
SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)


class EpisodeMetrics:
    """The ``reward_episode_*`` series; ``open_count``/``waiting_count`` are read at scrape time."""

    def __init__(self, open_count: Callable[[], int], waiting_count: Callable[[], int],
                 registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        Gauge("reward_episode_sessions", "Episodes open now", registry=r).set_function(open_count)
        Gauge("reward_episode_waiting", "Opens waiting for admission now", registry=r).set_function(waiting_count)
        self.opened = Counter("reward_episode_opened", "Episodes opened", ["environment"], registry=r)
        self.refused = Counter("reward_episode_refused", "Opens refused past the admission queue timeout",
                               registry=r)
        self.ended = Counter("reward_episode_ended", "Episodes ended, by final status", ["environment", "status"],
                             registry=r)
        self.reaped = Counter("reward_episode_reaped", "Sessions ended by the reaper", ["reason"], registry=r)
        self.tool_calls = Counter("reward_episode_tool_calls", "Tool calls answered, by status", ["tool", "status"],
                                  registry=r)
        self.tool_seconds = Histogram("reward_episode_tool_seconds", "Wall time of a tool call", ["tool"],
                                      buckets=SECONDS_BUCKETS, registry=r)
        self.episode_seconds = Histogram("reward_episode_seconds", "Wall time of an episode, open to end",
                                         ["environment"], buckets=SECONDS_BUCKETS, registry=r)
        self.reward = Histogram("reward_episode_reward", "Final rewards of finished episodes", ["environment"],
                                buckets=REWARD_BUCKETS, registry=r)
        self.cleanup_overruns = Counter("reward_episode_cleanup_overruns",
                                        "Closes whose tool calls did not stop within the cleanup deadline",
                                        registry=r)
