"""SandboxFusion's API on the front door, called by verl's own client, against our real sandbox.

verl's client (``verl/utils/reward_score/sandbox_fusion/utils.py``, ``pip install --no-deps
verl``) is loaded from its file alone: importing it as ``verl.…`` would run ``verl/__init__``,
which needs ray and torch extras this test has no use for. Without verl installed those tests
skip; the rest post the body verl sends (recorded from that file) with httpx.
"""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import subprocess
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from types import ModuleType

import grpc
import httpx
import pytest

from reward.v1 import sandbox_pb2 as pb
from reward.v1 import sandbox_pb2_grpc
from reward_service.http_door.sandbox_fusion import LANGUAGES, NO_COMPILE_STEP
from sandbox.languages import BUILTIN_LANGUAGES, load_languages, resolve_language_name
from sandbox.server import SandboxServerConfig, create_server
from tests.http_fixtures import running_door
from tests.language_programs import DOUBLE as DOUBLE_IN
from tests.language_programs import TEST_FILES, require_language

DOUBLE = ("n = int(input())\n"
          "if n == 3:\n    raise ValueError('three')\n"
          "if n == 4:\n    while True:\n        pass\n"
          "print(n * 2 if n != 2 else 5)\n")
INPUTS, OUTPUTS = ["1\n", "2\n", "3\n", "4\n"], ["2\n", "4\n", "6\n", "8\n"]
CPP_SUM = "#include <iostream>\nint main() { long a, b; std::cin >> a >> b; std::cout << a + b << std::endl; }\n"
CPP_BROKEN = "#include <iostream>\nint main() { std::cout << 1 }\n"
#: verl's per-case results (``check_correctness``) for our verdicts.
VERL_RESULT = {pb.VERDICT_ACCEPTED: True, pb.VERDICT_WRONG_ANSWER: False, pb.VERDICT_RUNTIME_ERROR: -2,
               pb.VERDICT_TIMEOUT: -3, pb.VERDICT_COMPILE_ERROR: -4, pb.VERDICT_SANDBOX_ERROR: -1}


def verl_payload(code: str, stdin: str | None = "", language: str = "python", timeout: int = 5) -> dict:
    """The body verl's ``call_sandbox_api`` posts (verl 0.9)."""
    return {"compile_timeout": timeout, "run_timeout": timeout, "code": code, "stdin": stdin,
            "memory_limit_MB": 1024, "language": language, "files": {}, "fetch_files": []}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def run_code(door: str, code: str, language: str = "python", timeout: int = 5, **fields) -> dict:
    """POST /run_code with verl's body plus ``fields``; the JSON answer."""
    reply = httpx.post(f"{door}/run_code", json={**verl_payload(code, language=language, timeout=timeout), **fields},
                       timeout=120)
    assert reply.status_code == 200, reply.text
    return reply.json()


@pytest.fixture(scope="module")
def languages():
    """The language table the sandbox server runs with (its toolchains probed on this host)."""
    return load_languages()


@pytest.fixture(scope="module")
def sandbox_server():
    server = create_server(SandboxServerConfig(port=0, workers=1, grace_s=0))
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def door(reward_server, sandbox_server) -> Iterator[str]:
    with running_door(reward_server.address, sandbox=sandbox_server.address) as url:
        yield url


@pytest.fixture(scope="module")
def sandbox_stub(sandbox_server):
    channel = grpc.insecure_channel(sandbox_server.address)
    yield sandbox_pb2_grpc.SandboxServiceStub(channel)
    channel.close()


@pytest.fixture(scope="module")
def verl() -> ModuleType:
    pytest.importorskip("requests")
    spec = importlib.util.find_spec("verl")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("verl is not installed (pip install --no-deps verl)")
    path = Path(next(iter(spec.submodule_search_locations))) / "utils/reward_score/sandbox_fusion/utils.py"
    module_spec = importlib.util.spec_from_file_location("verl_sandbox_fusion_utils", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def our_verdicts(stub, code: str, language: str, inputs: list[str], outputs: list[str], timeout: float) -> list:
    """Our own sandbox's verdict on each case, run as a one-case STDIO test."""
    limits = pb.Limits(wall_s=timeout, cpu_s=timeout, compile_wall_s=timeout)
    return [stub.Execute(pb.ExecutionRequest(code=code, language=language, style=pb.TEST_STYLE_STDIO, limits=limits,
                                             cases=[pb.TestCase(stdin=i, expected_stdout=o)]), timeout=60).verdict
            for i, o in zip(inputs, outputs)]


# --- verl's own client ------------------------------------------------------------------------------


def test_verl_results_equal_our_sandbox_verdicts(door, verl, sandbox_stub):
    results, meta = verl.check_correctness(f"{door}/run_code", {"inputs": INPUTS, "outputs": OUTPUTS}, DOUBLE,
                                           timeout=2, language="python")
    assert results == [True, False, -2, -3], meta
    ours = our_verdicts(sandbox_stub, DOUBLE, "python", INPUTS, OUTPUTS, 2)
    assert ours == [pb.VERDICT_ACCEPTED, pb.VERDICT_WRONG_ANSWER, pb.VERDICT_RUNTIME_ERROR, pb.VERDICT_TIMEOUT]
    assert results == [VERL_RESULT[v] for v in ours]
    assert [m["status"] for m in meta] == ["success", "wrong_answer", "runtime_error", "timeout"]


def test_verl_passes_correct_code_and_fails_wrong_code(door, verl):
    cases = {"inputs": ["3\n", "10\n"], "outputs": ["6\n", "20\n"]}
    right, _ = verl.check_correctness(f"{door}/run_code", cases, "print(int(input()) * 2)\n", timeout=5)
    wrong, _ = verl.check_correctness(f"{door}/run_code", cases, "print(int(input()) + 2)\n", timeout=5)
    assert right == [True, True] and wrong == [False, False]


def test_verl_cpp_compile_errors_and_passes_equal_our_verdicts(door, verl, sandbox_stub):
    cases = {"inputs": ["1 2\n", "40 2\n"], "outputs": ["3\n", "42\n"]}
    right, _ = verl.check_correctness(f"{door}/run_code", cases, CPP_SUM, timeout=20, language="cpp")
    broken, meta = verl.check_correctness(f"{door}/run_code", cases, CPP_BROKEN, timeout=20, language="cpp")
    assert right == [True, True]
    assert broken == [-4, -4] and meta[0]["status"] == "compile_error" and meta[0]["compile_stderr"]
    ours = our_verdicts(sandbox_stub, CPP_BROKEN, "cpp", cases["inputs"][:1], cases["outputs"][:1], 20)
    assert [VERL_RESULT[v] for v in ours] == broken[:1]


def test_a_sandbox_failure_of_ours_is_sandbox_error_to_verl(reward_server, verl):
    with failing_sandbox() as (address, calls), running_door(reward_server.address, sandbox=address) as url:
        result, meta = verl._process_single_case(0, "1\n", "2\n", f"{url}/run_code", "print(2)", 5, 1024, "python")
        reply = httpx.post(f"{url}/run_code", json=verl_payload("print(2)"), timeout=30).json()
    assert (result, meta["status"]) == (-1, "sandbox_error")
    assert reply["status"] == "SandboxError" and "slot died" in reply["message"] and reply["run_result"] is None
    assert len(calls) == 2  # one Execute per HTTP call, nothing else


# --- the API itself, field for field ---------------------------------------------------------------


def test_ping_answers_pong(door):
    reply = httpx.get(f"{door}/v1/ping")
    assert reply.status_code == 200 and reply.json() == "pong"


def test_a_run_answers_every_field_of_run_code_response(door):
    reply = httpx.post(f"{door}/run_code", json=verl_payload("import sys\nprint(input()[::-1])\n"
                                                             "print('warn', file=sys.stderr)", "abc\n"), timeout=30)
    body = reply.json()
    assert reply.status_code == 200
    assert set(body) == {"status", "message", "compile_result", "run_result", "executor_pod_name", "files"}
    assert (body["status"], body["message"], body["compile_result"], body["files"]) == ("Success", "", None, {})
    run = body["run_result"]
    assert set(run) == {"status", "execution_time", "return_code", "stdout", "stderr"}
    assert (run["status"], run["return_code"], run["stdout"], run["stderr"]) == ("Finished", 0, "cba\n", "warn\n")
    assert 0 < run["execution_time"] < 5


@pytest.mark.parametrize(("code", "return_code", "stderr"), [
    ("import sys\nsys.exit(3)", 3, ""),
    ("raise KeyError('boom')", 1, "KeyError: 'boom'"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)", -11, ""),
])
def test_runtime_errors_carry_their_return_code(door, code, return_code, stderr):
    body = httpx.post(f"{door}/run_code", json=verl_payload(code), timeout=30).json()
    assert body["status"] == "Failed" and body["run_result"]["status"] == "Finished"
    assert body["run_result"]["return_code"] == return_code and stderr in body["run_result"]["stderr"]


def test_a_timeout_is_time_limit_exceeded_without_a_return_code(door):
    body = httpx.post(f"{door}/run_code", json=verl_payload("while True:\n    pass", timeout=1), timeout=30).json()
    assert body["status"] == "Failed"
    assert (body["run_result"]["status"], body["run_result"]["return_code"]) == ("TimeLimitExceeded", None)


def test_a_python_syntax_error_is_a_run_failure_as_in_sandbox_fusion(door):
    body = httpx.post(f"{door}/run_code", json=verl_payload("def f(:\n"), timeout=30).json()
    assert (body["status"], body["compile_result"]) == ("Failed", None)
    assert body["run_result"]["return_code"] == 1 and "SyntaxError" in body["run_result"]["stderr"]


def test_cpp_reports_its_compile_step(door):
    ok = httpx.post(f"{door}/run_code", json=verl_payload(CPP_SUM, "2 3\n", "cpp", 20), timeout=60).json()
    assert ok["status"] == "Success" and ok["run_result"]["stdout"] == "5\n"
    assert ok["compile_result"]["status"] == "Finished" and ok["compile_result"]["return_code"] == 0
    bad = httpx.post(f"{door}/run_code", json=verl_payload(CPP_BROKEN, "", "cpp", 20), timeout=60).json()
    assert (bad["status"], bad["run_result"]) == ("Failed", None)
    assert bad["compile_result"]["return_code"] != 0 and "error" in bad["compile_result"]["stderr"]


def test_a_language_whose_toolchain_is_missing_is_an_unsupported_language_sandbox_error(door, languages):
    missing = next((n for n in LANGUAGES if n in languages.unavailable), None)
    if missing is None:
        pytest.skip("every SandboxFusion language's toolchain is installed here")
    body = run_code(door, "print(1)", missing)
    assert body["status"] == "SandboxError" and body["run_result"] is None
    assert body["message"].startswith("UNSUPPORTED_LANGUAGE:") and repr(missing) in body["message"]


# --- every language, files in and out, args, compile steps, limits ---------------------------------

#: The languages of SandboxFusion's literal with a stdin program (tests/language_programs.py: DOUBLE).
SF_STDIN_LANGUAGES = [name for name in LANGUAGES if name in DOUBLE_IN]


@pytest.mark.parametrize("language", SF_STDIN_LANGUAGES)
def test_every_sandbox_fusion_language_runs_through_run_code(door, languages, language):
    require_language(languages, language)
    body = run_code(door, DOUBLE_IN[language], language, timeout=60, stdin="21\n")
    assert body["status"] == "Success", body
    assert (body["run_result"]["status"], body["run_result"]["return_code"]) == ("Finished", 0)
    assert body["run_result"]["stdout"].strip() == "42"
    if BUILTIN_LANGUAGES[resolve_language_name(language, BUILTIN_LANGUAGES)].compiled and \
            language not in NO_COMPILE_STEP:  # (kotlin_script: compiled once here, a script run there)
        assert (body["compile_result"]["status"], body["compile_result"]["return_code"]) == ("Finished", 0)
        assert body["compile_result"]["execution_time"] > 0
    else:
        assert body["compile_result"] is None


def test_go_test_answers_go_tests_own_report_in_run_result(door, languages):
    """go_test runs `go test main_test.go`, as SandboxFusion does: its report, no compile step."""
    require_language(languages, "go_test")
    passing, failing = TEST_FILES["go_test"]
    body = run_code(door, passing, "go_test", timeout=60)
    assert body["status"] == "Success" and body["compile_result"] is None, body
    assert body["run_result"]["stdout"].startswith("ok  \tcommand-line-arguments"), body
    body = run_code(door, failing, "go_test", timeout=60)
    assert (body["status"], body["run_result"]["return_code"]) == ("Failed", 1), body
    assert "add(2, 3) != 6" in body["run_result"]["stdout"] and "FAIL" in body["run_result"]["stdout"], body
    body = run_code(door, "package main\nimport \"testing\"\nfunc TestX(t *testing.T) { undefinedName() }\n",
                    "go_test", timeout=60)
    assert body["status"] == "Failed" and body["compile_result"] is None, body
    run = body["run_result"]
    assert run["return_code"] != 0 and "undefined: undefinedName" in run["stdout"] + run["stderr"], body


def test_the_seven_main_languages_have_programs_and_are_in_the_literal():
    assert {"python", "cpp", "go", "java", "nodejs", "rust", "bash"} <= set(SF_STDIN_LANGUAGES)


def test_a_program_reads_the_files_it_was_given_in_a_subdirectory(door):
    code = "print(open('data/in.txt').read().strip() * 2)"
    body = run_code(door, code, files={"data/in.txt": b64(b"ab\n")})
    assert (body["status"], body["run_result"]["stdout"]) == ("Success", "abab\n")


def test_files_are_there_for_the_compile_step(door):
    code = '#include <iostream>\n#include "twice.h"\nint main() { std::cout << twice(21) << std::endl; }\n'
    body = run_code(door, code, "cpp", timeout=30, files={"twice.h": b64(b"int twice(int x) { return 2 * x; }\n")})
    assert body["status"] == "Success" and body["run_result"]["stdout"] == "42\n"


@pytest.mark.parametrize(("language", "code"), [
    ("python", "open('out.txt', 'w').write('made ' + open('in.txt').read())"),
    ("bash", "printf 'made %s' \"$(cat in.txt)\" > out.txt"),
    ("go", 'package main\nimport "os"\nfunc main() { b, _ := os.ReadFile("in.txt"); '
           'os.WriteFile("out.txt", append([]byte("made "), b...), 0644) }'),
])
def test_fetch_files_come_back_as_base64_and_a_missing_one_is_left_out(door, languages, language, code):
    require_language(languages, language)
    body = run_code(door, code, language, timeout=60, files={"in.txt": b64(b"it")},
                    fetch_files=["out.txt", "never_written.txt"])
    assert body["status"] == "Success", body
    assert body["files"] == {"out.txt": b64(b"made it")}


def test_a_null_file_entry_is_no_file_not_an_error(door):
    code = "import os\nprint(os.path.exists('a.txt'), open('b.txt').read())"
    body = run_code(door, code, files={"a.txt": None, "b.txt": b64(b"bee")})
    assert (body["status"], body["run_result"]["stdout"]) == ("Success", "False bee\n")


@pytest.mark.parametrize(("language", "code"), [
    ("python", "import sys\nprint(sys.argv[1:])"),
    ("bash", 'for a in "$@"; do echo "[$a]"; done'),
])
def test_args_are_appended_to_the_run_command(door, language, code):
    body = run_code(door, code, language, args=["-k", "two words"])
    expected = {"python": "['-k', 'two words']\n", "bash": "[-k]\n[two words]\n"}[language]
    assert (body["status"], body["run_result"]["stdout"]) == ("Success", expected)


def test_a_file_name_outside_the_work_dir_is_a_sandbox_error(door):
    for fields in ({"files": {"../escape.txt": b64(b"x")}}, {"files": {"/tmp/x": b64(b"x")}},
                   {"fetch_files": ["/etc/passwd"]}):
        body = run_code(door, "print(1)", **fields)
        assert body["status"] == "SandboxError" and "relative path" in body["message"], body


BROKEN = {"cpp": (CPP_BROKEN, "error: expected"),
          "go": ("package main\nfunc main() { undefined_name() }\n", "undefined: undefined_name"),
          "rust": ("fn main() { let x: i32 = \"no\"; }\n", "mismatched types"),
          "java": ("public class Main { public static void main(String[] a) { int x = \"no\"; } }\n",
                   "incompatible types")}


def compile_on_this_host(language, code: str, where: Path) -> subprocess.CompletedProcess:
    """The language's own compile command (sandbox/languages.toml), run here, outside any sandbox."""
    source, argv, _ = language.for_code(code)
    (where / source).write_text(code)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(where), "LANG": "C.UTF-8",
           **{k: v.replace("/tmp/", f"{where}/") for k, v in language.env.items()}}
    return subprocess.run(list(argv), cwd=where, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_compile_error_answers_the_compilers_own_return_code_and_output(door, languages, tmp_path, name):
    require_language(languages, name)
    code, message = BROKEN[name]
    own = compile_on_this_host(languages[name], code, tmp_path)
    body = run_code(door, code, name, timeout=60)
    compiled = body["compile_result"]
    assert (body["status"], body["run_result"]) == ("Failed", None)
    assert own.returncode != 0 and (compiled["status"], compiled["return_code"]) == ("Finished", own.returncode)
    assert message in compiled["stderr"] + compiled["stdout"] and message in own.stderr + own.stdout


@pytest.mark.parametrize(("language", "code"), [
    ("python", "import sys\nprint('partial', flush=True)\nprint('warn', file=sys.stderr)\nwhile True:\n    pass"),
    ("bash", "echo partial; echo warn >&2; while :; do :; done"),
])
def test_a_timed_out_program_keeps_its_partial_output(door, language, code):
    body = run_code(door, code, language, timeout=1)
    run = body["run_result"]
    assert body["status"] == "Failed"
    assert (run["status"], run["return_code"], run["stdout"], run["stderr"]) == (
        "TimeLimitExceeded", None, "partial\n", "warn\n")
    assert "limit_exceeded" not in run


def test_a_memory_limit_stays_finished_and_says_memory_limit_exceeded(door):
    code = "blocks = []\nwhile True:\n    blocks.append(bytearray(16 << 20))"
    body = run_code(door, code, memory_limit_MB=128)
    run = body["run_result"]
    assert (body["status"], run["status"]) == ("Failed", "Finished")
    assert run["return_code"] not in (None, 0) and run["limit_exceeded"] == "MemoryLimitExceeded"


def test_verl_reads_a_memory_limit_as_a_runtime_error(door, verl):
    code = "blocks = []\nwhile True:\n    blocks.append(bytearray(16 << 20))"
    result, meta = verl._process_single_case(0, "", "", f"{door}/run_code", code, 5, 128, "python")
    assert (result, meta["status"]) == (-2, "runtime_error")


def test_php_without_its_tag_runs_as_in_sandbox_fusion(door, languages):
    require_language(languages, "php")
    body = run_code(door, "echo 6 * 7, \"\\n\";", "php")
    assert (body["status"], body["run_result"]["stdout"]) == ("Success", "42\n")


def test_body_errors_are_fastapi_422s(door):
    unknown = httpx.post(f"{door}/run_code", json=verl_payload("x", language="cobol"))
    assert unknown.status_code == 422
    detail = unknown.json()["detail"][0]
    assert (detail["type"], detail["loc"], detail["input"]) == ("literal_error", ["body", "language"], "cobol")
    missing = httpx.post(f"{door}/run_code", json={"language": "python"}).json()["detail"]
    assert [(d["type"], d["loc"]) for d in missing] == [("missing", ["body", "code"])]
    not_json = httpx.post(f"{door}/run_code", content=b"{nope")
    assert not_json.status_code == 422 and not_json.json()["detail"][0]["type"] == "json_invalid"
    wrong_type = httpx.post(f"{door}/run_code", json={**verl_payload("x"), "run_timeout": "soon"}).json()["detail"]
    assert [(d["type"], d["loc"]) for d in wrong_type] == [("float_parsing", ["body", "run_timeout"])]


def test_an_unreachable_sandbox_is_503_with_retry_after(reward_server):
    with running_door(reward_server.address, sandbox="127.0.0.1:1") as url:
        reply = httpx.post(f"{url}/run_code", json=verl_payload("print(1)"), timeout=30)
    assert reply.status_code == 503 and reply.headers["Retry-After"] == "1"


# --- a sandbox that fails (our failure, not a verdict on the code) --------------------------------


class _FailingSandbox(sandbox_pb2_grpc.SandboxServiceServicer):
    def __init__(self) -> None:
        self.calls: list[pb.ExecutionRequest] = []

    def Execute(self, request, context):  # noqa: N802 -- the generated servicer's name
        self.calls.append(request)
        return pb.ExecutionResult(verdict=pb.VERDICT_SANDBOX_ERROR, error="the slot died mid-run", backend="fake")


@contextlib.contextmanager
def failing_sandbox() -> Iterator[tuple[str, list]]:
    """A SandboxService on loopback that answers every run with SANDBOX_ERROR; yields (address, calls)."""
    servicer = _FailingSandbox()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    sandbox_pb2_grpc.add_SandboxServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", servicer.calls
    finally:
        server.stop(0)


def test_run_code_defaults_to_the_reward_servers_own_sandbox(reward_server):
    """Without --sandbox, /run_code goes to the SandboxService the reward server serves on its code executor."""
    with running_door(reward_server.address) as url:
        reply = httpx.post(f"{url}/run_code", json={"code": "print(int(input()) + 1)", "language": "python",
                                                    "stdin": "41\n"}, timeout=60).json()
    assert reply["status"] == "Success" and reply["run_result"]["stdout"] == "42\n"
