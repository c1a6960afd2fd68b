"""The judge client's failure handling against a real HTTP server that answers as scripted.

The client's clock and sleep are fake (sleep moves the clock), so the deadline arithmetic is exact;
the HTTP calls are real (the ``openai`` library over loopback).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from reward_core.contract import RolloutStatus
from reward_service.judges import JudgeCall, JudgeClient, JudgeEndpoint, JudgeError, JudgeFailureKind, VerdictCache
from reward_service.judges.backoff import Backoff
from reward_service.judges.judge_metrics import JudgeMetrics

pytest.importorskip("openai")

CALL = JudgeCall(messages=({"role": "user", "content": "Is 2+2=4?"},), choices=("yes", "no"))


class Scripted(ThreadingHTTPServer):
    """Answers each POST with the next scripted action; records every request."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[tuple] = []
        self.requests: list[tuple[str, dict]] = []
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: Scripted

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 -- http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests.append((self.path, body))
            action = self.server.script.pop(0) if self.server.script else ("ok", "yes")
        kind = action[0]
        if kind == "text":
            data = action[1].encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if kind == "cut":
            self.connection.shutdown(2)
            return
        if kind == "sleep":
            time.sleep(action[1])
            action = ("ok", "yes")
            kind = "ok"
        if kind == "ok":
            text = action[1]
            if self.path.endswith("/responses"):
                reply = {"id": "r", "object": "response", "created_at": 0, "model": body["model"],
                         "status": "completed",
                         "output": [{"type": "message", "id": "m", "role": "assistant", "status": "completed",
                                     "content": [{"type": "output_text", "text": text, "annotations": []}]}],
                         "usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6,
                                   "input_tokens_details": {"cached_tokens": 0},
                                   "output_tokens_details": {"reasoning_tokens": 0}},
                         "parallel_tool_calls": False, "tool_choice": "none", "tools": []}
            else:
                reply = {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": text}}],
                         "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}
            self._send(200, reply)
            return
        status, headers = int(kind), (action[1] if len(action) > 1 else {})
        self._send(status, {"error": {"message": f"scripted {status}", "type": "x", "code": status}}, headers)

    def _send(self, status: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def upstream() -> Iterator[Scripted]:
    server = Scripted()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def make_client(upstream: Scripted, fake: FakeTime, cache: VerdictCache | None = None, **endpoint: object
                ) -> JudgeClient:
    ep = JudgeEndpoint(base_url=upstream.base_url, model="judge", name="t", **endpoint)  # type: ignore[arg-type]
    return JudgeClient(ep, cache, metrics=JudgeMetrics(), backoff=Backoff(base_s=0.2, factor=2.0, max_s=5.0),
                       clock=fake.clock, sleep=fake.sleep, draw=lambda: 0.0)


def test_server_errors_are_retried_with_backoff_then_answered(upstream: Scripted) -> None:
    upstream.script = [("500",), ("503",), ("ok", "yes")]
    fake = FakeTime()
    reply = make_client(upstream, fake).complete(CALL, deadline_s=10)
    assert (reply.text, reply.cached, reply.prompt_tokens) == ("yes", False, 5)
    assert fake.slept == [0.2, 0.4] and len(upstream.requests) == 3


def test_a_429s_retry_after_is_waited_out(upstream: Scripted) -> None:
    upstream.script = [("429", {"Retry-After": "1.5"}), ("ok", "no")]
    fake = FakeTime()
    assert make_client(upstream, fake).complete(CALL, deadline_s=10).text == "no"
    assert fake.slept == [1.5]


def test_429_after_every_retry_is_rate_limited_with_the_hint(upstream: Scripted) -> None:
    upstream.script = [("429", {"Retry-After": "0.5"})] * 4
    fake = FakeTime()
    with pytest.raises(JudgeError) as info:
        make_client(upstream, fake, max_retries=3).complete(CALL, deadline_s=60)
    assert info.value.kind is JudgeFailureKind.RATE_LIMITED and info.value.retry_after_s == 0.5
    assert info.value.status is RolloutStatus.JUDGE_RATE_LIMITED and not info.value.status.scored
    assert len(upstream.requests) == 4 and "retry after 0.5 s" in info.value.detail()


def test_a_retry_after_past_the_deadline_gives_up_at_once(upstream: Scripted) -> None:
    upstream.script = [("429", {"Retry-After": "30"})]
    fake = FakeTime()
    with pytest.raises(JudgeError) as info:
        make_client(upstream, fake).complete(CALL, deadline_s=5)
    assert info.value.kind is JudgeFailureKind.RATE_LIMITED and info.value.retry_after_s == 30.0
    assert fake.slept == [] and len(upstream.requests) == 1


def test_one_deadline_covers_every_retry(upstream: Scripted) -> None:
    # Backoff 0.2 then 0.4: after the first wait 0.2 s are spent; 0.4 more (+ time for a call) does not fit in 0.5.
    upstream.script = [("500",)] * 10
    fake = FakeTime()
    with pytest.raises(JudgeError) as info:
        make_client(upstream, fake, max_retries=10).complete(CALL, deadline_s=0.5)
    assert info.value.kind is JudgeFailureKind.FAILED and "2 attempt(s)" in info.value.reason
    assert fake.slept == [0.2] and len(upstream.requests) == 2


def test_a_client_error_is_not_retried(upstream: Scripted) -> None:
    upstream.script = [("400",)]
    fake = FakeTime()
    with pytest.raises(JudgeError, match="HTTP 400") as info:
        make_client(upstream, fake).complete(CALL, deadline_s=10)
    assert info.value.kind is JudgeFailureKind.FAILED and len(upstream.requests) == 1


def test_a_cut_connection_is_retried(upstream: Scripted) -> None:
    upstream.script = [("cut",), ("ok", "yes")]
    fake = FakeTime()
    assert make_client(upstream, fake).complete(CALL, deadline_s=10).text == "yes"
    assert len(upstream.requests) == 2


def test_an_empty_reply_is_a_failure_never_an_empty_verdict(upstream: Scripted) -> None:
    upstream.script = [("ok", "")]
    with pytest.raises(JudgeError, match="no text") as info:
        make_client(upstream, FakeTime()).complete(CALL, deadline_s=10)
    assert info.value.kind is JudgeFailureKind.FAILED


def test_a_reply_that_is_not_a_completion_is_a_failure(upstream: Scripted) -> None:
    upstream.script = [("text", "yes")]
    with pytest.raises(JudgeError, match="wrong shape") as info:
        make_client(upstream, FakeTime()).complete(CALL, deadline_s=10)
    assert info.value.kind is JudgeFailureKind.FAILED and len(upstream.requests) == 1


def test_no_reply_within_the_deadline_is_a_failure(upstream: Scripted) -> None:
    upstream.script = [("sleep", 3.0)]
    ep = JudgeEndpoint(base_url=upstream.base_url, model="judge")
    with pytest.raises(JudgeError, match="no reply within") as info:
        JudgeClient(ep, None, metrics=JudgeMetrics()).complete(CALL, deadline_s=0.3)
    assert info.value.kind is JudgeFailureKind.FAILED


def test_a_spent_deadline_makes_no_call(upstream: Scripted) -> None:
    with pytest.raises(JudgeError, match="deadline passed") as info:
        make_client(upstream, FakeTime()).complete(CALL, deadline_s=0.0)
    assert info.value.kind is JudgeFailureKind.FAILED and upstream.requests == []


def test_choices_go_as_guided_choice_and_sampling_as_sent(upstream: Scripted) -> None:
    make_client(upstream, FakeTime()).complete(CALL, deadline_s=10)
    _, body = upstream.requests[0]
    assert body["guided_choice"] == ["yes", "no"]
    assert (body["temperature"], body["max_tokens"], body["seed"], body["model"]) == (0.0, 64, 0, "judge")


def test_the_responses_api_is_called_when_configured(upstream: Scripted) -> None:
    upstream.script = [("ok", "no")]
    reply = make_client(upstream, FakeTime(), api="responses").complete(CALL, deadline_s=10)
    path, body = upstream.requests[0]
    assert path == "/v1/responses" and body["input"][0]["content"] == "Is 2+2=4?"
    assert body["max_output_tokens"] == 64 and body["guided_choice"] == ["yes", "no"]
    assert (reply.text, reply.prompt_tokens, reply.completion_tokens) == ("no", 5, 1)


def test_a_repeated_judgement_is_answered_from_the_cache(upstream: Scripted) -> None:
    client = make_client(upstream, FakeTime(), VerdictCache(10))
    first = client.complete(CALL, deadline_s=10)
    second = client.complete(CALL, deadline_s=10)
    assert (first.cached, second.cached, second.text) == (False, True, "yes") and len(upstream.requests) == 1
    assert client.metrics.sample("reward_judge_cache_lookups_total", {"judge": "t", "result": "hit"}) == 1
    assert client.metrics.sample("reward_judge_calls_total", {"judge": "t", "outcome": "cached"}) == 1


def test_a_reply_the_parser_rejects_is_not_cached(upstream: Scripted) -> None:
    upstream.script = [("ok", "gibberish"), ("ok", "yes")]
    client = make_client(upstream, FakeTime(), VerdictCache(10))
    accept = {"yes", "no"}.__contains__
    assert client.complete(CALL, deadline_s=10, accept=accept).text == "gibberish"
    assert client.complete(CALL, deadline_s=10, accept=accept).text == "yes"
    assert client.complete(CALL, deadline_s=10, accept=accept).cached
    assert len(upstream.requests) == 2


def test_over_this_servers_quota_is_rate_limited_without_a_call(upstream: Scripted) -> None:
    client = make_client(upstream, FakeTime(), requests_per_minute=1)
    client.complete(CALL, deadline_s=10)
    with pytest.raises(JudgeError) as info:
        client.complete(CALL, deadline_s=10)
    assert info.value.kind is JudgeFailureKind.RATE_LIMITED and info.value.retry_after_s == pytest.approx(60.0)
    assert len(upstream.requests) == 1
    assert client.metrics.sample("reward_judge_rate_limited_total", {"judge": "t", "source": "quota"}) == 1


def test_outcomes_are_counted_by_kind(upstream: Scripted) -> None:
    upstream.script = [("400",), ("ok", "yes")]
    client = make_client(upstream, FakeTime())
    with pytest.raises(JudgeError):
        client.complete(CALL, deadline_s=10)
    client.complete(CALL, deadline_s=10)
    m = client.metrics
    assert m.sample("reward_judge_calls_total", {"judge": "t", "outcome": "judge_failed"}) == 1
    assert m.sample("reward_judge_calls_total", {"judge": "t", "outcome": "ok"}) == 1
    assert m.sample("reward_judge_call_seconds_count", {"judge": "t"}) == 2
    assert m.sample("reward_judge_in_flight", {"judge": "t"}) == 0
