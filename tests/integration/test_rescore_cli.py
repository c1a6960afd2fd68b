"""``reward-service rescore`` end to end, in-process: re-scores stored rollouts, reports flips, and refuses
to write an output that mixes verifier versions of one task unless --force."""

import json

import pytest

from reward_service.cli import main

ROLLOUTS = [
    {"id": "fallback", "task": "gsm8k", "completion": "so in the end we get 72", "reference": {"answer": "72"}},
    {"id": "marked", "task": "gsm8k", "completion": "#### 72", "reference": {"answer": "72"}},
    {"id": "wrong", "task": "gsm8k", "completion": "#### 5", "reference": {"answer": "72"}},
]
STRICT = "tasks:\n  gsm8k:\n    options: {last_number_fallback: false}\n"
COMMON = ["--workers", "1", "--quiet"]


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def scored(tmp_path):
    """Results of ROLLOUTS with their inputs kept (``score --keep-inputs``), default options."""
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text("".join(json.dumps(r) + "\n" for r in ROLLOUTS))
    old = tmp_path / "old.jsonl"
    assert main(["score", "--in", str(rollouts), "--out", str(old), "--keep-inputs", *COMMON]) == 0
    return old


def test_score_keep_inputs_writes_rescorable_lines_with_their_version(scored):
    rows = lines(scored)
    assert [row["completion"] for row in rows] == [r["completion"] for r in ROLLOUTS]
    assert len({row["verifier_version"] for row in rows}) == 1
    assert [row["score"] for row in rows] == [1.0, 1.0, 0.0]


def test_an_option_change_flips_results_and_the_report_says_which(scored, tmp_path, capsys):
    config = tmp_path / "strict.yaml"
    config.write_text(STRICT)
    out = tmp_path / "new.jsonl"
    capsys.readouterr()
    assert main(["rescore", "--in", str(scored), "--out", str(out), "--config", str(config), *COMMON]) == 0
    report = capsys.readouterr().out
    assert "gsm8k: 3 rollouts, 1 changed, 2 unchanged; version changed" in report
    assert "score fell (1->0): 1  (e.g. fallback)" in report
    new = lines(out)
    assert [row["id"] for row in new] == ["fallback", "marked", "wrong"]
    assert new[0]["status"] == "NO_ANSWER" and new[0]["completion"] == ROLLOUTS[0]["completion"]
    assert new[0]["verifier_version"] != lines(scored)[0]["verifier_version"]


def test_unchanged_verifiers_flip_nothing_and_fail_on_flip_stays_zero(scored, tmp_path, capsys):
    out = tmp_path / "same.jsonl"
    assert main(["rescore", "--in", str(scored), "--out", str(out), "--fail-on-flip", *COMMON]) == 0
    assert "3 rollouts, 0 changed, 3 unchanged; same version" in capsys.readouterr().out


def test_fail_on_flip_exits_1_when_a_result_changed(scored, tmp_path):
    config = tmp_path / "strict.yaml"
    config.write_text(STRICT)
    out = tmp_path / "new.jsonl"
    assert main(["rescore", "--in", str(scored), "--out", str(out), "--config", str(config), "--fail-on-flip",
                 *COMMON]) == 1
    assert out.exists()


def test_old_results_of_two_versions_are_refused_without_force(scored, tmp_path, capsys):
    rows = lines(scored)
    rows[1]["verifier_version"] = "0123456789abcdef"  # a line from another build
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "new.jsonl"
    assert main(["rescore", "--in", str(mixed), "--out", str(out), *COMMON]) == 2
    err = capsys.readouterr().err
    assert "mix verifier versions" in err and "--force" in err and "0123456789abcdef" in err
    assert not out.exists()
    assert main(["rescore", "--in", str(mixed), "--out", str(out), "--force", *COMMON]) == 0
    assert len({row["verifier_version"] for row in lines(out)}) == 1


def test_results_without_inputs_are_joined_with_their_rollouts_file(tmp_path, capsys):
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text("".join(json.dumps(r) + "\n" for r in ROLLOUTS))
    old = tmp_path / "old.jsonl"
    assert main(["score", "--in", str(rollouts), "--out", str(old), *COMMON]) == 0
    out = tmp_path / "new.jsonl"
    assert main(["rescore", "--in", str(old), "--out", str(out), *COMMON]) == 2
    assert "--rollouts" in capsys.readouterr().err
    assert main(["rescore", "--in", str(old), "--rollouts", str(rollouts), "--out", str(out), *COMMON]) == 0
    assert [row["completion"] for row in lines(out)] == [r["completion"] for r in ROLLOUTS]


def test_a_warm_rescore_writes_what_the_cold_one_wrote(tmp_path):
    """The second pass is answered from the reward cache (the SQLite file the first one filled): every
    line holds the same fields and values, the elapsed time aside (a hit spends none)."""
    rollouts = tmp_path / "rollouts.jsonl"
    extra = [{"id": "uni", "task": "math", "completion": "ответ: \\boxed{\\frac{1}{2}} 😀", "prompt": "Ünï?",
              "reference": {"answer": "1/2"}, "metadata": {"source": "null", "n": "3"}, "group_id": "g"},
             {"id": "big", "task": "gsm8k", "completion": "#### 51090942171709440000",
              "reference": {"answer": 51090942171709440000}}]  # an integer past 64 bits stays exact
    rollouts.write_text("".join(json.dumps(r) + "\n" for r in ROLLOUTS + extra))
    old, cold, warm = tmp_path / "old.jsonl", tmp_path / "cold.jsonl", tmp_path / "warm.jsonl"
    assert main(["score", "--in", str(rollouts), "--out", str(old), "--keep-inputs", *COMMON]) == 0
    cache = ["--reward-cache", str(tmp_path / "cache.sqlite")]
    assert main(["rescore", "--in", str(old), "--out", str(cold), *cache, *COMMON]) == 0
    assert main(["rescore", "--in", str(old), "--out", str(warm), *cache, *COMMON]) == 0
    cold_rows, warm_rows = lines(cold), lines(warm)
    assert all(row["elapsed_ms"] == 0 for row in warm_rows)  # every one a cache hit
    assert any(row["elapsed_ms"] > 0 for row in cold_rows)  # verified
    for row in cold_rows + warm_rows:
        del row["elapsed_ms"]
    assert warm_rows == cold_rows and [list(row) for row in warm_rows] == [list(row) for row in cold_rows]
    assert warm_rows[-1]["reference"] == {"answer": 51090942171709440000} and warm_rows[-1]["score"] == 1.0
