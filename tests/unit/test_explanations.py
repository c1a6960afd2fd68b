"""Every verdict is explained: what was extracted, which rule matched or why nothing did, which test failed.

Each built-in task's explanation for a right answer, a wrong answer and no answer; the default one
built from an outcome's fields; the cap; and the field's way through the contract and protobuf.
"""

from __future__ import annotations

import pytest

from reward.v1 import reward_pb2 as pb
from reward_core import convert
from reward_core.contract import RolloutResult, RolloutStatus
from reward_core.sandbox_contract import CaseOutcome, CompileResult, ExecutionResult, LimitHit, Verdict
from reward_core.sandbox_contract import TestResult as CaseResult
from reward_service.task_api import TaskOutcome
from reward_service.tasks.code_task import CodeTask, explain_execution
from reward_service.tasks.explanation import MAX_CHARS, cap, explain_exception, explain_outcome, quote
from reward_service.tasks.format_task import FormatTask
from reward_service.tasks.gsm8k_task import Gsm8kTask
from reward_service.tasks.ifbench_task import IfbenchTask
from reward_service.tasks.ifeval_task import IfevalTask
from reward_service.tasks.math_task import MathTask
from reward_service.tasks.mcqa_task import McqaTask
from reward_service.tasks.qa_task import ExactMatchTask, F1Task
from reward_service.tasks.shaping_tasks import TagCountTask


def explained(task, completion: str, reference: dict) -> tuple[TaskOutcome, str]:
    outcome = task.score(completion, reference)
    return outcome, explain_outcome(outcome)


# --- math and gsm8k -------------------------------------------------------------------------------

def test_math_right_answer_names_the_box_the_gold_and_the_rule():
    _, text = explained(MathTask(), "so \\boxed{\\frac{1}{2}}", {"answer": "0.5"})
    assert text == "extracted '\\frac{1}{2}' from \\boxed{}; equals gold '0.5' numerically"


def test_math_symbolic_match_says_sympy():
    _, text = explained(MathTask(), "\\boxed{x^2+2x+1}", {"answer": "(x+1)^2"})
    assert text.endswith("equals gold '(x+1)^2' symbolically (sympy)")


def test_math_wrong_answer_says_it_does_not_equal_the_gold():
    outcome, text = explained(MathTask(), "The answer is 3.", {"answer": "0.5"})
    assert outcome.score == 0.0
    assert text == "extracted '3' from an 'answer is' line; does not equal gold '0.5'"


def test_math_no_answer_says_what_was_looked_for():
    outcome, text = explained(MathTask(), "I am not sure.", {"answer": "0.5"})
    assert outcome.status == RolloutStatus.NO_ANSWER
    assert text.startswith("no answer: no \\boxed{}, '####'")


def test_math_strict_no_answer_says_strict():
    _, text = explained(MathTask(strict=True), "it is 5", {"answer": "5"})
    assert text == "no answer: no \\boxed{} or '####' answer found (strict)"


def test_gsm8k_right_wrong_and_no_answer():
    task = Gsm8kTask()
    right = explained(task, "so #### 72", {"answer": "72"})[1]
    wrong = explained(task, "so #### 70", {"answer": "72"})[1]
    assert right == "extracted '72' after '####'; equals gold '72' numerically"
    assert wrong == "extracted '70' after '####'; does not equal gold '72'"
    assert explained(task, "", {"answer": "72"})[1].startswith("no answer:")


def test_gsm8k_a_non_number_is_named():
    _, text = explained(Gsm8kTask(), "The answer is $x$", {"answer": "72"})
    assert text == "extracted 'x' from an 'answer is' line; not a number; gold '72'"


def test_a_configured_wrong_score_keeps_the_explanation():
    outcome, text = explained(MathTask(wrong_score=-1.0), "\\boxed{3}", {"answer": "2"})
    assert outcome.score == -1.0 and "does not equal gold '2'" in text


# --- code ---------------------------------------------------------------------------------------

def execution(verdict: Verdict, *tests: CaseResult, **fields) -> ExecutionResult:
    return ExecutionResult(id="0", verdict=verdict, tests=tests, **fields)


def test_code_accepted_counts_the_tests():
    result = execution(Verdict.ACCEPTED, CaseResult(0, CaseOutcome.PASSED), CaseResult(1, CaseOutcome.PASSED))
    assert explain_execution(result) == "accepted: 2/2 tests passed"


def test_code_wrong_answer_names_the_first_failing_test_and_its_diff():
    result = execution(Verdict.WRONG_ANSWER, CaseResult(0, CaseOutcome.PASSED),
                       CaseResult(1, CaseOutcome.FAILED, "line 1: expected '3', got '2'"),
                       CaseResult(2, CaseOutcome.FAILED, "line 1: expected '9', got '8'"))
    assert explain_execution(result) == ("wrong_answer: 1/3 tests passed; first failure, test 1: "
                                         "line 1: expected '3', got '2'")


def test_code_compile_error_shows_the_error_line():
    result = execution(Verdict.COMPILE_ERROR, CaseResult(0, CaseOutcome.NOT_RUN),
                       compile=CompileResult(exit_code=1, stderr="main.cpp: In function 'int main()':\n"
                                             "main.cpp:3:5: error: expected ';' before '}' token\n    3 | }\n"))
    assert explain_execution(result) == ("compile_error: main.cpp:3:5: error: expected ';' before '}' token "
                                         "(0/1 tests passed)")


def test_code_timeout_names_the_limit():
    result = execution(Verdict.TIMEOUT, CaseResult(0, CaseOutcome.TIMEOUT, "time limit exceeded"),
                       limit_hit=LimitHit.WALL_TIME)
    assert explain_execution(result) == ("timeout (wall_time limit): 0/1 tests passed; first failure, test 0: "
                                         "time limit exceeded")


def test_code_outcome_carries_the_explanation():
    result = execution(Verdict.RUNTIME_ERROR, CaseResult(0, CaseOutcome.ERROR, "ValueError: nope"))
    outcome = CodeTask().outcome(result)
    assert outcome.score == 0.0
    assert explain_outcome(outcome) == "runtime_error: 0/1 tests passed; first failure, test 0: ValueError: nope"


def test_code_with_no_code_is_no_answer_and_says_so():
    outcome = CodeTask().score("", {"cases": [{"stdin": "", "expected_stdout": "1"}]})
    assert outcome.status == RolloutStatus.NO_ANSWER
    assert explain_outcome(outcome) == "no answer (the completion holds no code); score 0"


# --- instruction following ------------------------------------------------------------------------

IFEVAL_ROW = {"instruction_id_list": ["punctuation:no_comma", "detectable_format:title"], "kwargs": [{}, {}]}


def test_ifeval_all_followed():
    _, text = explained(IfevalTask(), "<<Notes>> no commas at all here.", IFEVAL_ROW)
    assert text == "followed 2/2 instructions (strict, all: 1)"


def test_ifeval_names_the_instructions_not_followed():
    _, text = explained(IfevalTask(), "<<Notes>> one, two.", IFEVAL_ROW)
    assert text == "followed 1/2 instructions (strict, all: 0); not followed: punctuation:no_comma"


def test_ifeval_empty_and_echoed_responses_are_no_answer():
    assert explained(IfevalTask(), "", IFEVAL_ROW)[1] == "no answer: the response is empty (follows nothing)"
    echoed = IfevalTask().score("write it", {**IFEVAL_ROW, "prompt": "write it"})
    assert explain_outcome(echoed) == "no answer: the response only repeats the prompt (follows nothing)"


def test_ifbench_names_its_own_instruction():
    row = {"instruction_id_list": ["words:odd_even_syllables"], "kwargs": [{}]}
    assert explained(IfbenchTask(), "Cat apple dog.", row)[1] == "followed 1/1 instructions (strict, all: 1)"
    assert explained(IfbenchTask(), "Cat dog apple.", row)[1].endswith("not followed: words:odd_even_syllables")


# --- multiple choice ------------------------------------------------------------------------------

MCQA_ROW = {"options": [{"A": "Circle"}, {"B": "Square"}, {"C": "Triangle"}], "answer": "C"}


def test_mcqa_right_and_wrong_letters():
    right = explained(McqaTask(), "Answer: C", MCQA_ROW)[1]
    wrong = explained(McqaTask(), "Answer: B", MCQA_ROW)[1]
    assert right.startswith("read option C by ") and right.endswith("; equals gold C")
    assert wrong.startswith("read option B by ") and wrong.endswith("; is not gold C")


def test_mcqa_no_letter_and_hedge():
    assert explained(McqaTask(), "no idea", MCQA_ROW)[1] == ("no answer: no option letter or option text found "
                                                             "(grading mode auto)")
    hedge = explained(McqaTask(), "The answer is A or C", MCQA_ROW)[1]
    assert hedge.startswith("hedge: lists options A, C") and hedge.endswith("a hedge scores 0")


# --- format and tags ------------------------------------------------------------------------------

def test_format_match_and_the_missing_tags():
    assert explained(FormatTask(), "<think>x</think><answer>1</answer>", {})[1].startswith("matches <think>")
    assert explained(FormatTask(), "<think>x</think> 1", {})[1] == "format mismatch: missing <answer>, </answer>"
    assert explained(FormatTask(), "", {})[1] == "format mismatch: missing <think>, </think>, <answer>, </answer>"


def test_format_with_a_configured_pattern_names_it():
    _, text = explained(FormatTask(pattern=r".*\\boxed\{.+\}.*"), "no box", {})
    assert text == "does not match the format regex '.*\\\\boxed\\{.+\\}.*'"


def test_tag_count_lists_missing_and_repeated_tags():
    full = "<think>\nx\n</think>\n<answer>\n1\n</answer>"
    assert explained(TagCountTask(), full, {})[1] == "4/4 tags exactly once (1)"
    _, text = explained(TagCountTask(), "<think>\n<think>\nx\n</think>\n", {})
    assert text == ("1/4 tags exactly once (0.25); missing: '\\n<answer>\\n', '\\n</answer>'; "
                    "repeated: '<think>\\n' x2")
    assert explained(TagCountTask(), "", {})[1].startswith("0/4 tags exactly once (0); missing:")


# --- exact match and F1 ---------------------------------------------------------------------------

def test_exact_match_right_wrong_and_none():
    golds = {"answers": ["eiffel tower", "the Eiffel Tower in Paris"]}
    assert explained(ExactMatchTask(), "The Eiffel Tower!", golds)[1] == (
        "extracted 'The Eiffel Tower!'; equals gold 'eiffel tower' after squad normalization")
    assert explained(ExactMatchTask(), "Louvre", golds)[1] == (
        "extracted 'Louvre'; equals none of 2 gold(s) after squad normalization, e.g. 'eiffel tower'")
    assert explained(ExactMatchTask(), "", golds)[1].startswith("no answer:")


def test_f1_reports_the_overlap_and_the_best_gold():
    assert explained(F1Task(), "the cat sat", {"answers": ["cat sat on mat"]})[1] == (
        "extracted 'the cat sat'; token F1 0.667 against the best gold 'cat sat on mat' (exact match 0, of 1 gold(s))")
    assert explained(F1Task(), "   ", {"answers": ["cat"]})[1].startswith("no answer:")


# --- the default explanation and the cap ----------------------------------------------------------

def test_an_outcome_without_explanation_is_explained_from_its_fields():
    outcome = TaskOutcome(0.0, extracted="41", detail="off by one")
    assert explain_outcome(outcome) == "score 0; extracted '41'; off by one"


def test_an_unscored_outcome_says_why():
    outcome = TaskOutcome(0.0, RolloutStatus.INVALID_REFERENCE, detail="needs 'answer'")
    assert explain_outcome(outcome) == "unscored (INVALID_REFERENCE): needs 'answer'"


def test_a_no_answer_outcome_says_so():
    assert explain_outcome(TaskOutcome.no_answer()) == "no answer (no answer found); score 0"


def test_an_exception_is_named_without_a_traceback():
    text = explain_exception("RuntimeError", "verifier bug", "raise")
    assert text == "unscored (ERROR): task 'raise' raised RuntimeError: verifier bug"


@pytest.mark.parametrize("text", ["x" * 5000, "line\n" * 50, "a\n\n\nb\nc\nd"])
def test_an_explanation_is_at_most_two_lines_and_capped(text):
    capped = cap(text)
    assert len(capped) <= MAX_CHARS and capped.count("\n") <= 1


def test_a_long_task_explanation_is_capped():
    outcome = TaskOutcome(1.0, explanation="y" * 1000)
    text = explain_outcome(outcome)
    assert len(text) == MAX_CHARS and text.endswith("…")


def test_quote_shows_line_breaks_and_keeps_backslashes_single():
    assert quote("a\nb") == "'a\\nb'"
    assert quote("\\frac{1}{2}") == "'\\frac{1}{2}'"
    assert quote("z" * 100, 10) == "'" + "z" * 10 + "'…"


# --- the contract and protobuf --------------------------------------------------------------------

def test_explanation_round_trips_through_protobuf():
    result = RolloutResult("a", RolloutStatus.OK, 1.0, {"math": 1.0}, "2", "", 3.0, "math", "g",
                           explanation="extracted '2' from \\boxed{}; equals gold '2' as a string")
    msg = convert.result_to_proto(result)
    assert msg.explanation == result.explanation
    assert convert.result_from_proto(msg) == result


def test_explanation_is_in_the_jsonl_line():
    line = RolloutResult("a", RolloutStatus.NO_ANSWER, explanation="no answer: nothing").to_dict()
    assert line["explanation"] == "no answer: nothing"


def test_unknown_status_keeps_the_servers_explanation():
    back = convert.result_from_proto(pb.RolloutResult(id="a", status=42, explanation="new reason"))
    assert back.status == RolloutStatus.ERROR and "42" in back.explanation and "new reason" in back.explanation
