"""LLM judges: the client layer the judge tasks call (endpoint, call, reply, typed failures).

Importing this package loads no HTTP client: ``openai`` (the ``judge`` extra) is imported when a
client is first made.
"""

from reward_service.judges.cache import VerdictCache, verdict_key
from reward_service.judges.calls import JudgeCall, JudgeEndpoint, JudgeReply
from reward_service.judges.client import JudgeClient, close_judge_clients, judge_client
from reward_service.judges.failures import JudgeError, JudgeFailureKind, status_of

__all__ = ["JudgeCall", "JudgeClient", "JudgeEndpoint", "JudgeError", "JudgeFailureKind", "JudgeReply",
           "VerdictCache", "close_judge_clients", "judge_client", "status_of", "verdict_key"]
