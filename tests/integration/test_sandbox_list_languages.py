"""ListLanguages and UNSUPPORTED_LANGUAGE end to end: a real sandbox server on loopback (process backend),
its gRPC clients, the CLI, the HTTP door's ``/v1/languages``, the ``code`` task and the batch CLI.

A language whose toolchain is missing is declared by a languages file (``nolang``: its run command
names a program no machine has), so these tests mean the same here and in CI.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import grpc
import httpx
import pytest

import reward_core.sandbox_contract as ex
from reward_core.clients.sandbox import AsyncSandboxClient, SandboxClient
from reward_core.contract import RolloutStatus
from reward_service.task_api import TaskInput
from reward_service.tasks.code_task import CodeTask
from sandbox.factory import create_executor
from sandbox.languages import load_languages
from sandbox.remote_executor import RemoteExecutor
from sandbox.server import SandboxServerConfig, create_server
from sandbox.submissions import run_batch
from tests.http_fixtures import running_door

MISSING_TOOL = "no-such-toolchain-xyz"
HINT = "install the nolang toolchain from nolang.example"
NOLANG = f"""nolang:
  source_file: main.nl
  run: [{MISSING_TOOL}, main.nl]
  version: [{MISSING_TOOL}, --version]
  aliases: [nl]
  install_hint: {HINT}
"""
STDIO_CASE = (ex.TestCase(stdin="", expected_stdout="hi\n"),)


@pytest.fixture(scope="module")
def languages_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("languages") / "nolang.yaml"
    path.write_text(NOLANG)
    return str(path)


@pytest.fixture(scope="module")
def server(languages_file):
    server = create_server(SandboxServerConfig(port=0, workers=1, grace_s=0, languages_file=languages_file))
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def client(server):
    with SandboxClient(server.address, timeout_s=120) as client:
        yield client


def nolang_request(rid: str = "n1") -> ex.ExecutionRequest:
    return ex.ExecutionRequest(id=rid, code="print hi", language="nolang", style=ex.TestStyle.STDIO, cases=STDIO_CASE)


def test_list_languages_reports_every_language_of_the_servers_table(client, languages_file):
    names = [info.name for info in client.list_languages()]
    assert names == list(load_languages(languages_file))


def test_an_available_language_comes_with_its_version_and_kind(client):
    infos = {info.name: info for info in client.list_languages()}
    python, cpp = infos["python"], infos["cpp"]
    assert python.available and python.version.startswith("Python 3.") and not python.compiled
    assert "py" in python.aliases and python.set == "core" and python.packages == ("python3",)
    assert cpp.available and cpp.compiled and cpp.version and not cpp.reason


def test_a_language_whose_toolchain_is_missing_says_why_and_what_to_install(client):
    info = next(i for i in client.list_languages() if i.name == "nolang")
    assert (info.available, info.version, info.aliases) == (False, "", ("nl",))
    assert MISSING_TOOL in info.reason
    assert info.install_hint == HINT


def test_test_framework_modes_are_flagged(client):
    infos = {info.name: info for info in client.list_languages()}
    assert infos["pytest"].test_framework and infos["jest"].test_framework
    assert not infos["python"].test_framework


def test_the_async_client_lists_the_same_languages(server, client):
    async def listed():
        async with AsyncSandboxClient(server.address, timeout_s=120) as aclient:
            return await aclient.list_languages()

    assert asyncio.run(listed()) == client.list_languages()


def test_a_request_in_an_unsupported_language_is_invalid_argument_naming_what_to_install(client):
    with pytest.raises(grpc.RpcError) as info:
        client.execute(nolang_request())
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = info.value.details()
    assert details.startswith("UNSUPPORTED_LANGUAGE:"), details
    assert HINT in details and "'nolang'" in details


def test_an_alias_of_an_unsupported_language_is_unsupported_too(client):
    request = ex.ExecutionRequest(id="a", code="x", language="nl", style=ex.TestStyle.STDIO, cases=STDIO_CASE)
    with pytest.raises(grpc.RpcError) as info:
        client.execute(request)
    assert info.value.details().startswith("UNSUPPORTED_LANGUAGE:")


def test_the_remote_executor_raises_unsupported_language(server):
    executor = RemoteExecutor(server.address, call_timeout_s=60)
    try:
        with pytest.raises(ex.UnsupportedLanguage) as info:
            executor.execute(nolang_request())
    finally:
        executor.close()
    assert info.value.language == "nolang" and HINT in info.value.hint


def test_the_cli_prints_the_servers_languages(server):
    proc = subprocess.run([sys.executable, "-m", "sandbox", "languages", "--endpoint", server.address],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()[1:]}
    assert rows["python"].split()[1] == "yes" and "Python 3." in rows["python"]
    assert rows["nolang"].split()[1] == "NO" and HINT in rows["nolang"]


def test_the_cli_lists_this_hosts_languages_as_json(languages_file):
    proc = subprocess.run([sys.executable, "-m", "sandbox", "languages", "--languages", languages_file, "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    infos = {info["name"]: info for info in json.loads(proc.stdout)}
    assert infos["python"]["available"] and infos["python"]["version"].startswith("Python 3.")
    assert not infos["nolang"]["available"] and infos["nolang"]["install_hint"] == HINT


def test_the_reward_servers_own_sandbox_lists_its_languages(reward_server):
    """The reward server serves its code task's executor as a SandboxService: ListLanguages included."""
    with SandboxClient(reward_server.address, timeout_s=120) as sandbox:
        infos = {info.name: info for info in sandbox.list_languages()}
    assert infos["python"].available and infos["python"].version.startswith("Python 3.")


def test_the_http_door_serves_the_languages_as_json(reward_server, server):
    with running_door(reward_server.address, sandbox=server.address) as url:
        reply = httpx.get(f"{url}/v1/languages", timeout=60)
    assert reply.status_code == 200, reply.text
    infos = {info["name"]: info for info in reply.json()["languages"]}
    assert infos["python"]["available"] and infos["python"]["version"].startswith("Python 3.")
    assert infos["nolang"] == {**infos["nolang"], "available": False, "version": "", "install_hint": HINT}


@pytest.mark.parametrize("remote", [False, True], ids=["local-executor", "remote-sandbox"])
def test_the_code_task_answers_an_unsupported_language_as_an_unscored_error(server, languages_file, remote):
    task = CodeTask(endpoint=server.address) if remote else CodeTask(languages=languages_file, concurrency=1)
    reference = {"cases": [{"stdin": "", "expected_stdout": "hi\n"}], "language": "nolang"}
    python_ref = {"cases": [{"stdin": "", "expected_stdout": "hi\n"}]}
    try:
        unsupported, python = task.score_batch([TaskInput("print hi", reference), TaskInput("print('hi')", python_ref)])
    finally:
        task.close()
    assert unsupported.status is RolloutStatus.ERROR and not unsupported.status.scored
    assert "UNSUPPORTED_LANGUAGE:" in unsupported.detail and HINT in unsupported.detail
    assert (python.status, python.score) == (RolloutStatus.OK, 1.0)  # the rest of the batch is scored


def test_the_process_executor_refuses_a_language_its_probe_found_missing():
    """What the code task meets without a languages file: the executor's own probed table refuses it."""
    table = load_languages(None, probe=lambda lang: "probe says no" if lang.name == "bash" else "")
    executor = create_executor("process", concurrency=1, languages=table)
    try:
        with pytest.raises(ex.UnsupportedLanguage):
            executor.execute(ex.ExecutionRequest(id="b", code="echo hi", language="bash", style=ex.TestStyle.STDIO,
                                              cases=STDIO_CASE))
    finally:
        executor.close()


@pytest.mark.parametrize("remote", [False, True], ids=["local-executor", "remote-sandbox"])
def test_a_batch_line_in_an_unsupported_language_is_an_invalid_request_saying_what_to_install(
        server, languages_file, remote, tmp_path: Path):
    lines = [json.dumps({"id": "n", "code": "print hi", "language": "nolang",
                         "tests": [{"stdin": "", "expected_stdout": "hi\n"}]}),
             json.dumps({"id": "p", "code": "print('hi')", "tests": [{"stdin": "", "expected_stdout": "hi\n"}]})]
    table = load_languages(languages_file)
    executor = RemoteExecutor(server.address, call_timeout_s=60) if remote else \
        create_executor("process", concurrency=1, languages=table)
    out = tmp_path / "out.jsonl"
    try:
        with open(out, "w", encoding="utf-8") as f:
            stats = run_batch(lines, executor, f, workers=1, languages=None if remote else table)
    finally:
        executor.close()
    first, second = [json.loads(line) for line in out.read_text().splitlines()]
    assert (first["id"], first["verdict"], first["passed"]) == ("n", "invalid_request", False)
    assert "UNSUPPORTED_LANGUAGE:" in first["error"] and HINT in first["error"]
    assert (second["id"], second["verdict"]) == ("p", "accepted")
    assert stats.verdicts["invalid_request"] == 1
