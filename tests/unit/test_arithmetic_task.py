"""The procedural arithmetic task: correct answers, determinism, GSM8K-gradable completions."""

import json

import pytest

from examples.tiny.arithmetic_task import (
    Problem,
    TaskConfig,
    completion_for,
    make_problems,
    solution_steps,
    write_jsonl,
)
from reward_service.verifiers.math import grade_numeric

HARD = TaskConfig(max_operand=99, max_factor=12, max_ops=2)


@pytest.mark.parametrize("config", [TaskConfig(), HARD], ids=["default", "hard"])
def test_answers_equal_python_arithmetic(config):
    for problem in make_problems(300, seed=3, config=config):
        assert int(problem.answer) == eval(problem.expression)  # our own digits and + - * only


def test_expression_appears_in_prompt():
    assert all(p.expression in p.prompt for p in make_problems(100, seed=0, config=HARD))


def test_same_seed_same_problems():
    assert make_problems(50, seed=7, config=HARD) == make_problems(50, seed=7, config=HARD)


def test_different_seed_different_problems():
    assert make_problems(50, seed=7, config=HARD) != make_problems(50, seed=8, config=HARD)


def test_no_negative_results_unless_allowed():
    problems = make_problems(300, seed=1, config=HARD)
    assert all(r >= 0 for p in problems for *_, r in solution_steps(p.operands, p.operators))


def test_multiplication_goes_first():
    # 2 + 3 * 4: 3 * 4 = 12, then 2 + 12 = 14
    assert solution_steps((2, 3, 4), ("+", "*")) == [(3, "*", 4, 12), (2, "+", 12, 14)]


def test_completion_works_one_step_per_line():
    problem = Problem(prompt="17 * 3 - 5 = ?", answer="46", operands=(17, 3, 5), operators=("*", "-"))
    assert completion_for(problem) == "17 * 3 = 51\n51 - 5 = 46\n#### 46"


@pytest.mark.parametrize("config", [TaskConfig(), HARD], ids=["default", "hard"])
def test_completion_ends_with_answer_and_grades_correct(config):
    for problem in make_problems(100, seed=5, config=config):
        completion = completion_for(problem)
        assert completion.endswith(f"\n#### {problem.answer}") and grade_numeric(completion, problem.answer).correct


def test_wrong_final_answer_grades_incorrect():
    problem = make_problems(1, seed=0)[0]
    wrong = completion_for(problem).rsplit("#### ", 1)[0] + f"#### {int(problem.answer) + 1}"
    assert not grade_numeric(wrong, problem.answer).correct


def test_jsonl_rows_are_the_trainer_dataset_format(tmp_path):
    problems = make_problems(5, seed=0)
    path = tmp_path / "rl.jsonl"
    assert write_jsonl(path, problems) == 5
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows[0] == {"id": "arith-000000", "prompt": problems[0].prompt,
                       "reference": {"answer": problems[0].answer}, "task": "gsm8k"}


@pytest.mark.parametrize("kwargs", [dict(operators="/"), dict(min_ops=2, max_ops=1), dict(max_factor=1)])
def test_bad_config_raises_value_error(kwargs):
    with pytest.raises(ValueError):
        TaskConfig(**kwargs)
