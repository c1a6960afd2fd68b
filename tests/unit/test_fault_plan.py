"""The fault proxy's plan: seeded and scheduled fault choices, and garbage verdicts."""

from __future__ import annotations

import collections
import json

import pytest

from reward_service.judges.fault_plan import FAILING_KINDS, GARBAGE_WORDS, OK, FaultDecider, FaultPlan
from reward_service.judges.fault_proxy import garble, split_base_url


def kinds(plan: FaultPlan, n: int) -> list[str]:
    decider = FaultDecider(plan)
    return [decider.next() for _ in range(n)]


def test_the_same_seed_injects_the_same_faults() -> None:
    plan = FaultPlan.each(0.1, seed=7)
    assert kinds(plan, 500) == kinds(plan, 500)


def test_another_seed_injects_other_faults() -> None:
    assert kinds(FaultPlan.each(0.1, seed=1), 200) != kinds(FaultPlan.each(0.1, seed=2), 200)


def test_each_kind_comes_at_its_rate() -> None:
    counts = collections.Counter(kinds(FaultPlan(rates={"http_429": 0.1, "cut": 0.3}, seed=0), 20_000))
    assert set(counts) == {"http_429", "cut", OK}
    assert abs(counts["http_429"] / 20_000 - 0.1) < 0.01 and abs(counts["cut"] / 20_000 - 0.3) < 0.01


def test_every_nth_call_gets_its_kind() -> None:
    assert kinds(FaultPlan(every={"http_500": 3}), 7) == [OK, OK, "http_500", OK, OK, "http_500", OK]


def test_the_script_comes_first_then_every() -> None:
    plan = FaultPlan(script=("cut", OK, "garbage"), every={"hang": 2})
    assert kinds(plan, 6) == ["cut", OK, "garbage", "hang", OK, "hang"]


def test_a_script_does_not_shift_the_seeded_draws_after_it() -> None:
    rates = {"http_503": 0.5}
    assert kinds(FaultPlan(rates=rates, script=("cut",) * 5), 50)[5:] == kinds(FaultPlan(rates=rates), 50)[5:]


@pytest.mark.parametrize("options", [
    {"rates": {"http_418": 0.1}}, {"script": ("boom",)}, {"every": {"cut": 0}},
    {"rates": {"cut": 0.6, "hang": 0.6}}, {"rates": {"cut": -0.1}}, {"latency_s": -1},
])
def test_a_bad_plan_is_refused(options) -> None:
    with pytest.raises(ValueError):
        FaultPlan(**options)


def test_each_covers_every_failing_kind() -> None:
    assert dict(FaultPlan.each(0.1).rates) == dict.fromkeys(FAILING_KINDS, 0.1)


def test_faults_hit_only_judge_calls() -> None:
    plan = FaultPlan()
    assert plan.applies_to("POST", "/v1/chat/completions") and plan.applies_to("POST", "/v1/responses")
    assert not plan.applies_to("GET", "/v1/models") and not plan.applies_to("GET", "/v1/chat/completions")


def test_garbage_is_nonsense_words_and_seeded() -> None:
    first, again = FaultDecider(FaultPlan(seed=3)), FaultDecider(FaultPlan(seed=3))
    text = first.garbage()
    assert text == again.garbage() and set(text.split()) <= set(GARBAGE_WORDS)
    assert FaultDecider(FaultPlan(garbage_text="???")).garbage() == "???"


def test_garble_replaces_chat_and_responses_text_only() -> None:
    chat = {"choices": [{"message": {"role": "assistant", "content": "yes"}}], "usage": {"total_tokens": 3}}
    assert json.loads(garble(json.dumps(chat).encode(), "blorp")) == {
        "choices": [{"message": {"role": "assistant", "content": "blorp"}}], "usage": {"total_tokens": 3}}
    response = {"output": [{"type": "message", "content": [{"type": "output_text", "text": "A"}]}]}
    assert json.loads(garble(json.dumps(response).encode(), "quux"))["output"][0]["content"][0]["text"] == "quux"
    assert garble(b"not json", "x") == b"not json"


def test_the_base_url_splits_into_origin_and_path() -> None:
    assert split_base_url("http://127.0.0.1:8000/v1/") == ("http://127.0.0.1:8000", "/v1")
    with pytest.raises(ValueError):
        split_base_url("127.0.0.1:8000")
