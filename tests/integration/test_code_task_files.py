"""The ``code`` task's ``files``, ``args`` and ``expected_files`` (and function-call references in
JavaScript) through a real reward server: gRPC ``Score`` (local and remote sandbox) and the HTTP
door's ``/v1/score``."""

from __future__ import annotations

import base64
import shutil

import httpx
import pytest

from reward_core.contract import RolloutStatus
from reward_service.router.rewards_config import RewardsConfig, TaskSpec
from sandbox.languages import load_languages
from tests.http_fixtures import running_door
from tests.integration.conftest import start_server
from tests.language_programs import require_language
from trainer_client import RewardClient

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (apt-get install bubblewrap)"),
              pytest.mark.timeout(240)]

# Prints data.txt's first line, the size of blob.bin and its run arguments.
READS_FILES = ("```python\nimport sys\nprint(open('data.txt').read().split()[0], len(open('blob.bin', 'rb').read()), "
               "*sys.argv[1:])\n```")
FILES_REF = {"cases": [{"stdin": "", "expected_stdout": "hello 3 -x 7\n"}],
             "files": {"data.txt": "hello\n", "blob.bin": {"base64": base64.b64encode(b"\0\1\2").decode()},
                       "ignored.txt": None},
             "args": ["-x", "7"]}
WRITES_ANSWER = "```python\nn = int(input())\nopen('out.txt', 'w').write(str(n * 2) + '\\n')\nprint('done')\n```"
EXPECTED_REF = {"cases": [{"stdin": "21\n", "expected_stdout": "done\n"}], "expected_files": {"out.txt": "42\n"}}


@pytest.fixture(scope="module")
def reward_server(sandbox_server):
    rewards = RewardsConfig(tasks=(
        TaskSpec("code", "code", {"timeout_s": 5.0, "concurrency": 2}),
        TaskSpec("code_fraction", "code", {"timeout_s": 5.0, "concurrency": 2, "reward": "fraction"}),
        TaskSpec("code_remote", "code", {"endpoint": sandbox_server.address, "timeout_s": 5.0}),
    ))
    server = start_server(workers=1, rewards=rewards)
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def door(reward_server):
    with running_door(reward_server.address) as url:
        yield url


def score(server, task: str, reference: dict, completion: str):
    with RewardClient(server.address, timeout_s=180) as client:
        return client.score([{"id": "r", "task": task, "prompt": "", "completion": completion,
                              "reference": reference}])[0]


@pytest.mark.parametrize("task", ["code", "code_remote"])
def test_files_and_args_reach_the_program(reward_server, task):
    result = score(reward_server, task, FILES_REF, READS_FILES)
    assert (result.status, result.score) == (RolloutStatus.OK, 1.0), result.explanation


def test_without_the_files_the_same_program_fails(reward_server):
    bare = {"cases": FILES_REF["cases"]}
    result = score(reward_server, "code", bare, READS_FILES)
    assert (result.status, result.score) == (RolloutStatus.OK, 0.0)


@pytest.mark.parametrize("task", ["code", "code_remote"])
def test_expected_files_pass_when_written_exactly(reward_server, task):
    result = score(reward_server, task, EXPECTED_REF, WRITES_ANSWER)
    assert (result.status, result.score) == (RolloutStatus.OK, 1.0), result.explanation


def test_a_wrong_expected_file_fails_and_says_which(reward_server):
    wrong = {**EXPECTED_REF, "expected_files": {"out.txt": "43\n"}}
    result = score(reward_server, "code", wrong, WRITES_ANSWER)
    assert (result.status, result.score) == (RolloutStatus.OK, 0.0)
    assert "out.txt" in result.explanation and "wrong_answer" in result.extracted


def test_expected_files_count_as_one_more_test_for_fraction(reward_server):
    missing = {**EXPECTED_REF, "expected_files": {"never_written.txt": "x"}}
    result = score(reward_server, "code_fraction", missing, WRITES_ANSWER)
    assert (result.status, result.score) == (RolloutStatus.OK, 0.5)


def test_a_header_file_reaches_a_compiled_program(reward_server):
    require_language(load_languages(), "cpp")
    code = "```cpp\n#include <cstdio>\n#include \"k.h\"\nint main() { std::printf(\"%d\\n\", K); }\n```"
    ref = {"language": "cpp", "cases": [{"stdin": "", "expected_stdout": "7\n"}], "files": {"k.h": "#define K 7\n"}}
    assert score(reward_server, "code_remote", ref, code).score == 1.0


@pytest.mark.parametrize("bad", [
    {"files": {"../escape.txt": "x"}},
    {"files": {"a.bin": {"base64": "not base64!"}}},
    {"files": ["a.txt"]},
    {"args": "-x"},
    {"expected_files": {"out.txt": 42}},
])
def test_malformed_file_fields_are_an_invalid_reference(reward_server, bad):
    result = score(reward_server, "code", {"cases": FILES_REF["cases"], **bad}, READS_FILES)
    assert result.status is RolloutStatus.INVALID_REFERENCE, result


def test_files_on_a_humaneval_reference_are_an_invalid_reference(reward_server):
    ref = {"tests": "def check(candidate):\n    assert candidate() == 1\n", "entry_point": "f",
           "files": {"a.txt": "x"}}
    result = score(reward_server, "code", ref, "def f():\n    return 1\n")
    assert result.status is RolloutStatus.INVALID_REFERENCE and "stdin/stdout" in result.error


def test_the_http_doors_v1_score_carries_them_as_grpc_does(reward_server, door):
    rollouts = [{"id": "files", "task": "code", "completion": READS_FILES, "reference": FILES_REF},
                {"id": "expected", "task": "code", "completion": WRITES_ANSWER, "reference": EXPECTED_REF},
                {"id": "wrong", "task": "code", "completion": WRITES_ANSWER,
                 "reference": {**EXPECTED_REF, "expected_files": {"out.txt": "43\n"}}}]
    reply = httpx.post(f"{door}/v1/score", json={"rollouts": rollouts}, timeout=180)
    assert reply.status_code == 200, reply.text
    over_http = [(r["id"], r["score"], r["status"]) for r in reply.json()["results"]]
    assert over_http == [("files", 1.0, "ROLLOUT_STATUS_OK"), ("expected", 1.0, "ROLLOUT_STATUS_OK"),
                         ("wrong", 0.0, "ROLLOUT_STATUS_OK")]
    with RewardClient(reward_server.address, timeout_s=180) as client:
        assert [(r.id, r.score) for r in client.score(rollouts)] == [(i, s) for i, s, _ in over_http]


@pytest.mark.parametrize("task", ["code", "code_remote"])
def test_a_javascript_function_call_reference_is_scored(reward_server, task):
    require_language(load_languages(), "nodejs")
    ref = {"language": "nodejs", "entry_point": "add",
           "cases": [{"args": [1, 2], "expected": 3}, {"args": [2, 2], "expected": 4}]}
    right = score(reward_server, task, ref, "```javascript\nfunction add(a, b) { return a + b; }\n```")
    wrong = score(reward_server, task, ref, "```javascript\nfunction add(a, b) { return a * 2; }\n```")
    assert (right.status, right.score, wrong.status, wrong.score) == (RolloutStatus.OK, 1.0, RolloutStatus.OK, 0.0)
