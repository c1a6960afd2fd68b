"""``reward-service explain``: one rollout scored in-process, its whole verdict printed, exit 0."""

from __future__ import annotations

import json

from reward_service.cli import main

RAISE_CONFIG = """\
tasks:
  raise:
    task: tests.integration.stress_tasks:RaiseTask
rewards:
  math_fmt:
    components: {math: 1.0, format: 0.5}
"""


def explain(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["explain", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_explain_prints_the_verdict_and_the_tasks_trace(capsys):
    code, out, _ = explain(capsys, "--task", "math", "--completion", "so \\boxed{\\frac{1}{2}}",
                           "--reference", '{"answer": "0.5"}')
    assert code == 0
    lines = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line and not line.startswith(" "))
    assert lines["task"] == "math" and lines["status"] == "OK" and lines["score"] == "1.0"
    assert lines["extracted"] == "\\frac{1}{2}"
    assert lines["explanation"] == "extracted '\\frac{1}{2}' from \\boxed{}; equals gold '0.5' numerically"
    assert '"extraction_method": "boxed"' in out and '"rule": "numeric"' in out


def test_explain_json_of_a_wrong_answer_read_from_a_file(capsys, tmp_path):
    completion = tmp_path / "completion.txt"
    completion.write_text("Let me think.\n#### 70\n", encoding="utf-8")
    code, out, _ = explain(capsys, "--task", "gsm8k", "--completion", f"@{completion}", "--reference", "72", "--json")
    report = json.loads(out)
    assert code == 0
    assert report["status"] == "OK" and report["scored"] is True and report["score"] == 0.0
    assert report["components"] == {"gsm8k": 0.0}
    assert report["explanation"] == "extracted '70' after '####'; does not equal gold '72'"
    assert report["trace"]["gold_as_compared"] == "72"


def test_explain_of_no_answer(capsys):
    code, out, _ = explain(capsys, "--task", "mcqa", "--completion", "I cannot tell.", "--json",
                           "--reference", '{"options": [{"A": "x"}, {"B": "y"}], "answer": "B"}')
    report = json.loads(out)
    assert code == 0 and report["status"] == "NO_ANSWER"
    assert report["explanation"].startswith("no answer: no option letter")


def test_explain_of_a_raising_task_shows_the_exception_and_its_traceback(capsys, tmp_path):
    config = tmp_path / "rewards.yaml"
    config.write_text(RAISE_CONFIG, encoding="utf-8")
    code, out, _ = explain(capsys, "--task", "raise", "--completion", "raise", "--config", str(config), "--json")
    report = json.loads(out)
    assert code == 0 and report["status"] == "ERROR" and report["scored"] is False
    assert report["explanation"] == "unscored (ERROR): task 'raise' raised RuntimeError: verifier bug"
    assert "Traceback" in report["traceback"] and "stress_tasks.py" in report["traceback"]


def test_explain_of_a_composite_names_each_part(capsys, tmp_path):
    config = tmp_path / "rewards.yaml"
    config.write_text(RAISE_CONFIG, encoding="utf-8")
    code, out, _ = explain(capsys, "--task", "math_fmt", "--completion", "\\boxed{3}", "--reference", "3",
                           "--config", str(config), "--json")
    report = json.loads(out)
    assert code == 0 and report["score"] == 1.0
    assert report["explanation"].startswith("score 1 = math (1x): extracted '3' from \\boxed{}")
    assert "format (0.5x): format mismatch: missing <think>" in report["explanation"]


def test_explain_of_an_invalid_reference(capsys):
    code, out, _ = explain(capsys, "--task", "math", "--completion", "\\boxed{3}", "--json")
    report = json.loads(out)
    assert code == 0 and report["status"] == "INVALID_REFERENCE"
    assert report["explanation"].startswith("unscored (INVALID_REFERENCE): task 'math' needs reference field(s)")


def test_explain_of_an_unknown_task_is_an_error_naming_the_tasks(capsys):
    code, _, err = explain(capsys, "--task", "nope", "--completion", "x")
    assert code == 2 and "unknown task 'nope'" in err and "gsm8k" in err


def test_explain_of_a_missing_file_is_an_error(capsys, tmp_path):
    code, _, err = explain(capsys, "--task", "math", "--completion", f"@{tmp_path / 'none.txt'}")
    assert code == 2 and "--completion" in err and "cannot read" in err
