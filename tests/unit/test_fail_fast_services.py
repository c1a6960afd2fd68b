"""Fail fast, say why, for the sandbox and reward-model clients and ``python -m sandbox --endpoint``.

As in test_fail_fast.py, nothing is timed: the deadlines and connect timeouts are 10 minutes, so
only a refused connection explained at once lets these tests pass before pytest's own timeout.
"""

from __future__ import annotations

import asyncio

import pytest

import reward_core.sandbox_contract as ex
from reward_core.clients import (
    AsyncRewardModelClient,
    AsyncSandboxClient,
    EndpointUnreachable,
    RewardModelClient,
    SandboxClient,
)
from reward_core.ports import free_port
from sandbox import cli as sandbox_cli

REQUEST = ex.ExecutionRequest(code="print(1)", style=ex.TestStyle.STDIO,
                             cases=(ex.TestCase(stdin="", expected_stdout="1\n"),))


def closed_endpoint() -> str:
    return f"127.0.0.1:{free_port()}"


def test_sandbox_client_names_a_refused_connection_at_once() -> None:
    endpoint = closed_endpoint()
    with SandboxClient(endpoint, timeout_s=600, connect_timeout_s=600) as client:
        with pytest.raises(EndpointUnreachable, match="connection refused") as info:
            client.execute(REQUEST)
    assert info.value.endpoint == endpoint and "sandbox service" in str(info.value)


def test_async_sandbox_client_names_a_refused_connection_at_once() -> None:
    async def main() -> None:
        async with AsyncSandboxClient(closed_endpoint(), timeout_s=600, connect_timeout_s=600) as client:
            with pytest.raises(EndpointUnreachable, match="sandbox service.*connection refused"):
                await client.list_languages()

    asyncio.run(main())


def test_reward_model_clients_name_a_refused_connection_at_once() -> None:
    with RewardModelClient(closed_endpoint(), timeout_s=600, connect_timeout_s=600) as client:
        with pytest.raises(EndpointUnreachable, match="reward-model service.*connection refused"):
            client.score([("prompt", "completion")])

    async def main() -> None:
        async with AsyncRewardModelClient(closed_endpoint(), timeout_s=600, connect_timeout_s=600) as client:
            with pytest.raises(EndpointUnreachable, match="reward-model service.*connection refused"):
                await client.info()

    asyncio.run(main())


def test_sandbox_exec_with_a_closed_endpoint_exits_2_naming_it(tmp_path, capsys) -> None:
    code, tests = tmp_path / "p.py", tmp_path / "tests.json"
    code.write_text("print(1)\n")
    tests.write_text('[{"stdin": "", "expected_stdout": "1\\n"}]')
    endpoint = closed_endpoint()
    assert sandbox_cli.main(["exec", "--code", str(code), "--tests", str(tests), "--lang", "python",
                             "--endpoint", endpoint]) == 2
    err = capsys.readouterr().err
    assert f"cannot connect to the sandbox service at {endpoint}" in err and "connection refused" in err
