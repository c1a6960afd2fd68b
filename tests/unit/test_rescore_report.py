"""The flip report of ``reward-service rescore``: a pure function of old and new results."""

from reward_core.contract import RolloutResult, RolloutStatus
from reward_service.rescore import OldResult, classify, flip_report, format_report, mixed_versions

OK, NO_ANSWER, TIMEOUT, ERROR = RolloutStatus.OK, RolloutStatus.NO_ANSWER, RolloutStatus.TIMEOUT, RolloutStatus.ERROR


def old(rid: str, status=OK, score=0.0, task="gsm8k", version="v1") -> OldResult:
    return OldResult(rid, task, status, score, version)


def new(rid: str, status=OK, score=0.0, task="gsm8k", version="v2") -> RolloutResult:
    return RolloutResult(rid, status, score, task=task, verifier_version=version)


def test_each_kind_of_change_is_classified():
    assert classify(old("a", score=0.0), new("a", score=1.0)) == "up"
    assert classify(old("a", score=1.0), new("a", score=0.0)) == "down"
    assert classify(old("a", score=1.0), new("a", TIMEOUT)) == "scored_to_unscored"
    assert classify(old("a", ERROR), new("a", score=0.0)) == "unscored_to_scored"
    assert classify(old("a", OK, 0.0), new("a", NO_ANSWER, 0.0)) == "status_changed"
    assert classify(old("a", TIMEOUT), new("a", ERROR)) == "status_changed"
    assert classify(old("a", score=1.0), new("a", score=1.0)) is None
    assert classify(old("a", ERROR), new("a", ERROR)) is None


def test_score_changes_within_epsilon_are_not_flips():
    assert classify(old("a", score=0.5), new("a", score=0.5 + 1e-9)) is None
    assert classify(old("a", score=0.5), new("a", score=0.6), epsilon=0.2) is None


def test_flips_are_counted_per_task_with_a_few_example_ids():
    pairs = [(old(f"u{i}", score=0.0), new(f"u{i}", score=1.0)) for i in range(5)]
    pairs += [(old("d", score=1.0), new("d", score=0.0)), (old("same", score=1.0), new("same", score=1.0))]
    pairs += [(old("m", task="math", version="m1"), new("m", task="math", version="m1"))]
    report = flip_report(pairs, examples=2)
    gsm8k = report["gsm8k"]
    assert (gsm8k.total, gsm8k.unchanged, gsm8k.flips) == (7, 1, 6)
    assert gsm8k.counts["up"] == 5 and gsm8k.counts["down"] == 1
    assert gsm8k.examples["up"] == ["u0", "u1"] and gsm8k.examples["down"] == ["d"]
    assert gsm8k.version_changed
    assert not report["math"].version_changed and report["math"].flips == 0


def test_the_text_report_names_the_versions_and_flags_nondeterminism():
    changed = format_report(flip_report([(old("a", score=0.0), new("a", score=1.0))]))
    assert "version changed: v1 -> v2" in changed and "score rose (0->1): 1  (e.g. a)" in changed
    same = format_report(flip_report([(old("a", score=0.0, version="v"), new("a", score=1.0, version="v"))]))
    assert "same version v" in same and "not deterministic" in same


def test_mixed_versions_names_each_task_with_several():
    results = [old("a", version="v1"), old("b", version="v2"), old("c", task="math", version="m")]
    assert mixed_versions(results) == {"gsm8k": {"v1", "v2"}}
    assert mixed_versions([new("a"), new("b")]) == {}
