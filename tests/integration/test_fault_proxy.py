"""The fault proxy in front of the real judge endpoint: each fault reaches the ``openai`` client as the
exception a real endpoint's failure of that kind raises."""

from __future__ import annotations

import logging
import subprocess
import sys
import time

import httpx
import openai
import pytest

from reward_core.ports import free_port
from reward_service.judges.fault_proxy import COUNTS_PATH, FaultPlan
from tests.judge_fixtures import JUDGE_MODEL

QUESTION = [{"role": "user", "content": "Is 4 the same as 2+2? yes or no"}]
CHOICES = ["yes", "no"]


def client_of(base_url: str, *, timeout: float = 60, retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="unused", max_retries=retries, timeout=timeout)


def verdict(client: openai.OpenAI) -> str:
    reply = client.chat.completions.create(model=JUDGE_MODEL, messages=QUESTION, temperature=0, max_tokens=4,
                                           extra_body={"guided_choice": CHOICES})
    return reply.choices[0].message.content


def test_a_call_without_a_fault_gets_the_endpoint_s_reply(fault_proxy, judge_server) -> None:
    proxy = fault_proxy(FaultPlan())
    assert verdict(client_of(proxy.base_url)) == verdict(client_of(judge_server))
    assert proxy.counts == {"ok": 1}


def test_an_injected_429_is_a_rate_limit_error_with_its_retry_hint(fault_proxy) -> None:
    proxy = fault_proxy(FaultPlan(script=("http_429",), retry_after_s=1.5))
    with pytest.raises(openai.RateLimitError) as info:
        verdict(client_of(proxy.base_url))
    assert info.value.response.headers["retry-after"] == "1.5"
    assert proxy.counts == {"http_429": 1}


@pytest.mark.parametrize("kind, status", [("http_500", 500), ("http_502", 502), ("http_503", 503)])
def test_an_injected_5xx_is_an_internal_server_error(fault_proxy, kind, status) -> None:
    proxy = fault_proxy(FaultPlan(script=(kind,)))
    with pytest.raises(openai.InternalServerError) as info:
        verdict(client_of(proxy.base_url))
    assert info.value.status_code == status and info.value.type == "server_error"


def test_a_cut_connection_is_a_connection_error(fault_proxy) -> None:
    proxy = fault_proxy(FaultPlan(script=("cut",)))
    with pytest.raises(openai.APIConnectionError) as info:
        verdict(client_of(proxy.base_url))
    assert not isinstance(info.value, openai.APITimeoutError)
    assert type(info.value.__cause__).__name__ == "RemoteProtocolError"  # httpx (or httpx2) saw a short body


def test_a_cut_on_purpose_logs_no_error(fault_proxy, caplog) -> None:
    proxy = fault_proxy(FaultPlan(script=("cut",)))
    log = logging.getLogger("uvicorn.error")  # uvicorn's loggers do not propagate to the root's handler
    log.addHandler(caplog.handler)
    try:
        with pytest.raises(openai.APIConnectionError):
            verdict(client_of(proxy.base_url))
    finally:
        log.removeHandler(caplog.handler)
    assert not [r for r in caplog.records if "without completing response" in r.getMessage()]


def test_a_garbage_verdict_is_none_of_the_choices(fault_proxy) -> None:
    proxy = fault_proxy(FaultPlan(script=("garbage",), garbage_text="blorp fnord"))
    assert verdict(client_of(proxy.base_url)) == "blorp fnord"


def test_a_garbage_response_replaces_output_text(fault_proxy) -> None:
    proxy = fault_proxy(FaultPlan(script=("garbage",), garbage_text="wibble"))
    reply = client_of(proxy.base_url).responses.create(model=JUDGE_MODEL, input="A or B?", temperature=0,
                                                       extra_body={"guided_choice": ["A", "B"]})
    assert reply.output_text == "wibble"


def test_a_hang_is_a_timeout_of_the_client(fault_proxy) -> None:
    proxy = fault_proxy(FaultPlan(script=("hang",)))
    with pytest.raises(openai.APITimeoutError):
        verdict(client_of(proxy.base_url, timeout=0.5))
    assert proxy.counts == {"hang": 1}


def test_latency_past_the_client_s_timeout_is_a_timeout(fault_proxy) -> None:
    proxy = fault_proxy(FaultPlan(script=("latency",), latency_s=60))
    with pytest.raises(openai.APITimeoutError):
        verdict(client_of(proxy.base_url, timeout=0.5))


def test_latency_within_the_timeout_still_answers(fault_proxy, judge_server) -> None:
    proxy = fault_proxy(FaultPlan(script=("latency",), latency_s=0.05))
    assert verdict(client_of(proxy.base_url)) == verdict(client_of(judge_server))
    assert proxy.counts == {"latency": 1}


def test_the_client_s_own_retries_get_past_transient_faults(fault_proxy) -> None:
    proxy = fault_proxy(FaultPlan(script=("http_429", "http_503", "cut"), retry_after_s=0.01))
    assert verdict(client_of(proxy.base_url, retries=3)) in CHOICES
    assert proxy.counts == {"http_429": 1, "http_503": 1, "cut": 1, "ok": 1}


def test_every_nth_call_fails(fault_proxy) -> None:
    proxy = fault_proxy(FaultPlan(every={"http_500": 2}))
    client = client_of(proxy.base_url)
    outcomes = []
    for _ in range(4):
        try:
            outcomes.append(verdict(client) in CHOICES)
        except openai.InternalServerError:
            outcomes.append("500")
    assert outcomes == [True, "500", True, "500"]


def test_calls_other_than_judgements_pass_untouched(fault_proxy) -> None:
    proxy = fault_proxy(FaultPlan(every={"http_500": 1}))
    assert [m.id for m in client_of(proxy.base_url).models.list().data] == [JUDGE_MODEL]
    assert proxy.counts == {"ok": 1}


def test_an_unreachable_upstream_is_a_502(fault_proxy) -> None:
    proxy = fault_proxy(FaultPlan(), upstream=f"http://127.0.0.1:{free_port()}/v1")
    with pytest.raises(openai.InternalServerError) as info:
        verdict(client_of(proxy.base_url))
    assert info.value.status_code == 502 and proxy.counts == {"ok": 1, "upstream_error": 1}


def test_a_new_plan_starts_from_its_first_call(fault_proxy) -> None:
    proxy = fault_proxy(FaultPlan(script=("http_500",)))
    with pytest.raises(openai.InternalServerError):
        verdict(client_of(proxy.base_url))
    proxy.set_plan(FaultPlan(script=("http_503",)))
    with pytest.raises(openai.InternalServerError) as info:
        verdict(client_of(proxy.base_url))
    assert info.value.status_code == 503


def test_the_command_line_proxy_injects_its_faults_and_reports_counts(judge_server) -> None:
    port = free_port()
    command = [sys.executable, "-m", "reward_service.judges.fault_proxy", "--upstream", judge_server,
               "--port", str(port), "--every", "http_429=2", "--retry-after-s", "3"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(base + COUNTS_PATH)
                break
            except httpx.ConnectError:
                assert process.poll() is None, process.stderr.read()
                assert time.monotonic() < deadline, "the fault proxy did not start listening in 60 s"
                time.sleep(0.1)
        client = client_of(base + "/v1")
        assert verdict(client) in CHOICES
        with pytest.raises(openai.RateLimitError) as info:
            verdict(client)
        assert info.value.response.headers["retry-after"] == "3"
        assert httpx.get(base + COUNTS_PATH).json() == {"ok": 1, "http_429": 1}
    finally:
        process.terminate()
        process.wait(timeout=30)
