"""The judge client against a real judge endpoint (a tiny causal LM over OpenAI's API) and the fault proxy.

Each fault the proxy injects ends in a verdict (recovered within the deadline) or a typed failure,
never in an empty reply; what the proxy counts shows the retries were really made.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from reward_core.contract import RolloutStatus
from reward_service.judges import (
    JudgeCall,
    JudgeClient,
    JudgeEndpoint,
    JudgeError,
    JudgeFailureKind,
    VerdictCache,
    close_judge_clients,
    judge_client,
)
from reward_service.judges.backoff import Backoff
from reward_service.judges.fault_plan import FaultPlan
from reward_service.judges.fault_proxy import FaultProxy
from reward_service.judges.judge_metrics import JudgeMetrics
from tests.judge_fixtures import JUDGE_MODEL

CHOICES = ("yes", "no")
CALL = JudgeCall(messages=({"role": "system", "content": "Answer yes or no."},
                           {"role": "user", "content": "Gold: 4. Answer: 2+2 = 4. Equivalent?"}),
                 max_tokens=4, choices=CHOICES, template_version="it-1")
FAST = Backoff(base_s=0.05, factor=2.0, max_s=0.2, jitter=0.0)


def client_for(base_url: str, *, cache: VerdictCache | None = None, **endpoint: object) -> JudgeClient:
    ep = JudgeEndpoint(base_url=base_url, model=JUDGE_MODEL, name="it", **endpoint)  # type: ignore[arg-type]
    return JudgeClient(ep, cache, metrics=JudgeMetrics(), backoff=FAST)


def test_the_real_judge_answers_one_of_the_choices_and_repeats_from_the_cache(judge_endpoint) -> None:
    client = client_for(judge_endpoint.base_url, cache=VerdictCache(10))
    before = judge_endpoint.requests
    first = client.complete(CALL, deadline_s=30)
    second = client.complete(CALL, deadline_s=30)
    assert first.text in CHOICES and not first.cached and first.prompt_tokens > 0
    assert second.text == first.text and second.cached
    assert judge_endpoint.requests - before == 1


def test_the_responses_api_gives_the_same_verdict(judge_server: str) -> None:
    chat = client_for(judge_server).complete(CALL, deadline_s=30)
    responses = client_for(judge_server, api="responses").complete(CALL, deadline_s=30)
    assert responses.text == chat.text


@pytest.mark.parametrize("fault", ["http_429", "http_500", "http_502", "http_503", "cut"])
def test_a_passing_fault_is_retried_into_the_verdict(fault: str, judge_server: str,
                                                     fault_proxy: Callable[..., FaultProxy]) -> None:
    clean = client_for(judge_server).complete(CALL, deadline_s=30).text
    proxy = fault_proxy(FaultPlan(script=(fault, fault, "ok"), retry_after_s=0.1))
    reply = client_for(proxy.base_url).complete(CALL, deadline_s=30)
    assert reply.text == clean
    assert proxy.counts.get(fault) == 2 and proxy.counts.get("ok") == 1


def test_server_errors_past_the_retries_are_judge_failed(fault_proxy: Callable[..., FaultProxy]) -> None:
    proxy = fault_proxy(FaultPlan(every={"http_500": 1}))
    with pytest.raises(JudgeError) as info:
        client_for(proxy.base_url, max_retries=2).complete(CALL, deadline_s=30)
    assert info.value.kind is JudgeFailureKind.FAILED and info.value.status is RolloutStatus.JUDGE_FAILED
    assert "HTTP 500" in info.value.reason and proxy.counts.get("http_500") == 3


def test_429_past_the_retries_is_rate_limited_with_the_endpoints_hint(
        fault_proxy: Callable[..., FaultProxy]) -> None:
    proxy = fault_proxy(FaultPlan(every={"http_429": 1}, retry_after_s=0.2))
    with pytest.raises(JudgeError) as info:
        client_for(proxy.base_url, max_retries=1).complete(CALL, deadline_s=30)
    assert info.value.kind is JudgeFailureKind.RATE_LIMITED and info.value.retry_after_s == pytest.approx(0.2)
    assert proxy.counts.get("http_429") == 2


def test_a_hanging_judge_is_judge_failed_within_the_deadline(fault_proxy: Callable[..., FaultProxy]) -> None:
    proxy = fault_proxy(FaultPlan(every={"hang": 1}))
    with pytest.raises(JudgeError, match="no reply within") as info:
        client_for(proxy.base_url).complete(CALL, deadline_s=1.0)
    assert info.value.kind is JudgeFailureKind.FAILED and proxy.counts.get("hang") == 1


def test_latency_past_the_deadline_is_judge_failed(fault_proxy: Callable[..., FaultProxy]) -> None:
    proxy = fault_proxy(FaultPlan(every={"latency": 1}, latency_s=5.0))
    with pytest.raises(JudgeError) as info:
        client_for(proxy.base_url).complete(CALL, deadline_s=1.0)
    assert info.value.kind is JudgeFailureKind.FAILED


def test_a_garbage_verdict_comes_back_as_text_and_is_not_cached_when_rejected(
        fault_proxy: Callable[..., FaultProxy]) -> None:
    proxy = fault_proxy(FaultPlan(script=("garbage", "ok")))
    client = client_for(proxy.base_url, cache=VerdictCache(10))
    accept = set(CHOICES).__contains__
    garbage = client.complete(CALL, deadline_s=30, accept=accept)
    assert garbage.text not in CHOICES and garbage.text.strip()
    verdict = client.complete(CALL, deadline_s=30, accept=accept)
    assert verdict.text in CHOICES and not verdict.cached
    assert client.complete(CALL, deadline_s=30, accept=accept).cached
    assert proxy.counts == {"garbage": 1, "ok": 1}


def test_the_shared_client_is_one_per_endpoint(judge_server: str) -> None:
    endpoint = JudgeEndpoint(base_url=judge_server, model=JUDGE_MODEL, name="shared", cache="off")
    other = JudgeEndpoint(base_url=judge_server, model=JUDGE_MODEL, name="shared", cache="off", max_concurrency=2)
    try:
        assert judge_client(endpoint) is judge_client(endpoint)
        assert judge_client(other) is not judge_client(endpoint)
        assert judge_client(endpoint).complete(CALL, deadline_s=30).text in CHOICES
    finally:
        close_judge_clients()
