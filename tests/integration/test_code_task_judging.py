"""The ``code`` task's comparators in a real reward server: reference ``compare``, a checker, the option."""

from __future__ import annotations

import shutil

import pytest

from reward_core.contract import RolloutStatus
from reward_service.router.rewards_config import RewardsConfig, TaskSpec
from reward_service.task_api import InvalidTaskOptions
from reward_service.tasks.code_task import CodeTask
from tests.integration.conftest import start_server
from trainer_client import RewardClient

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (apt-get install bubblewrap)"),
              pytest.mark.timeout(240)]

# Prints the words of its input line in reverse order, one per line.
REVERSE_LINES = "```python\nprint('\\n'.join(reversed(input().split())))\n```"
CASES = [{"stdin": "a b c\n", "expected_stdout": "a\nb\nc\n"}, {"stdin": "x y\n", "expected_stdout": "x\ny\n"}]
SET_CHECKER = ("import sys\nout, ans = open(sys.argv[2]).read().split(), open(sys.argv[3]).read().split()\n"
               "sys.exit(0 if sorted(out) == sorted(ans) else 1)\n")


@pytest.fixture(scope="module")
def reward_server(sandbox_server):
    rewards = RewardsConfig(tasks=(
        TaskSpec("code", "code", {"timeout_s": 5.0, "concurrency": 2}),
        TaskSpec("code_unordered", "code", {"timeout_s": 5.0, "concurrency": 2, "compare": "lines_unordered"}),
        TaskSpec("code_remote", "code", {"endpoint": sandbox_server.address, "timeout_s": 5.0}),
    ))
    server = start_server(workers=1, rewards=rewards)
    yield server
    server.stop(0)


def score(server, task: str, reference: dict, completion: str = REVERSE_LINES):
    with RewardClient(server.address, timeout_s=180) as client:
        return client.score([{"id": "r", "task": task, "prompt": "", "completion": completion,
                              "reference": reference}])[0]


def test_the_reference_compare_mode_judges_the_output(reward_server):
    tokens = score(reward_server, "code", {"cases": CASES})
    unordered = score(reward_server, "code", {"cases": CASES, "compare": "lines_unordered"})
    assert (tokens.status, tokens.score) == (RolloutStatus.OK, 0.0)
    assert (unordered.status, unordered.score) == (RolloutStatus.OK, 1.0)


def test_the_compare_option_is_the_default_for_references_without_one(reward_server):
    result = score(reward_server, "code_unordered", {"cases": CASES})
    assert (result.status, result.score) == (RolloutStatus.OK, 1.0)


def test_a_checker_travels_to_a_remote_sandbox(reward_server):
    result = score(reward_server, "code_remote", {"cases": CASES, "compare": {"checker": SET_CHECKER}})
    assert (result.status, result.score) == (RolloutStatus.OK, 1.0)


def test_a_crashing_checker_is_an_unscored_error(reward_server):
    result = score(reward_server, "code", {"cases": CASES, "compare": {"checker": "raise ValueError('bug')\n"}})
    assert result.status is RolloutStatus.ERROR and not result.scored


def test_an_unknown_compare_mode_is_an_invalid_reference(reward_server):
    result = score(reward_server, "code", {"cases": CASES, "compare": "fuzzy"})
    assert result.status is RolloutStatus.INVALID_REFERENCE


@pytest.mark.parametrize("options", [{"compare": "checker"}, {"compare": "fuzzy"}, {"float_tolerance": -1}])
def test_an_unusable_compare_option_is_refused(options):
    with pytest.raises(InvalidTaskOptions):
        CodeTask(**options)
