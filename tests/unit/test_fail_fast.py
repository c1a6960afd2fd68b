"""Fail fast, say why (issue 22): an endpoint where nothing answers is named within seconds.

No test here measures time: a diagnosis that is final (connection refused) must raise although
the call's deadline and the connect timeout are 10 minutes (pytest's own timeout would fail a
test that waited them out), and one that is not final raises after a short connect timeout.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading

import pytest

from reward_core.clients import AsyncRewardClient, EndpointUnreachable, RewardClient
from reward_core.clients.connection import diagnose
from reward_core.ports import free_port
from reward_service import cli
from reward_service.jsonl_io import atomic_text_file
from trainer_client.train.models import ModelPathError, check_model_path
from trainer_client.train.reward_overlap import OverlappedScorer

ROLLOUT = {"id": "r0", "task": "gsm8k", "completion": "#### 4", "reference": "4"}


def closed_endpoint() -> str:
    return f"127.0.0.1:{free_port()}"


def test_blocking_client_names_a_refused_connection_at_once() -> None:
    endpoint = closed_endpoint()
    with RewardClient(endpoint, timeout_s=600, connect_timeout_s=600) as client:
        with pytest.raises(EndpointUnreachable, match="connection refused") as info:
            client.score([ROLLOUT])
    assert info.value.endpoint == endpoint and "reward service" in str(info.value)
    assert isinstance(info.value, ConnectionError)


def test_async_client_names_a_refused_connection_at_once() -> None:
    async def main() -> None:
        async with AsyncRewardClient(closed_endpoint(), timeout_s=600, connect_timeout_s=600) as client:
            with pytest.raises(EndpointUnreachable, match="connection refused"):
                await client.score([ROLLOUT])

    asyncio.run(main())


@pytest.fixture()
def silent_tcp_port():
    """A port that accepts TCP connections and never speaks (not a gRPC server)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_a_port_that_is_not_grpc_is_named_after_the_connect_timeout(silent_tcp_port: int) -> None:
    with RewardClient(f"127.0.0.1:{silent_tcp_port}", timeout_s=600, connect_timeout_s=0.5) as client:
        with pytest.raises(EndpointUnreachable, match="accepts TCP connections but no gRPC server answered"):
            client.list_tasks()


def test_diagnosis_of_each_kind() -> None:
    refused = diagnose(closed_endpoint())
    assert refused.final and "connection refused" in refused
    odd = diagnose("unix:/nonexistent/socket")
    assert not odd.final and "no gRPC server answered" in odd


def test_score_cli_fails_fast_and_writes_no_output(tmp_path) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(json.dumps(ROLLOUT) + "\n")
    code = cli.main(["score", "--in", str(src), "--out", str(out), "--endpoint", closed_endpoint(), "--quiet"])
    assert code == 2
    assert not out.exists() and list(tmp_path.iterdir()) == [src]   # no 0-byte file, no leftover part file


def test_atomic_text_file_keeps_the_old_file_on_failure(tmp_path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_text_file(path) as out:
        out.write("half")
        raise RuntimeError("interrupted")
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl"]
    with atomic_text_file(path) as out:
        out.write("new\n")
    assert path.read_text() == "new\n"


def test_trainer_scorer_checks_its_endpoint_before_step_zero() -> None:
    with pytest.raises(EndpointUnreachable, match="connection refused"):
        OverlappedScorer(closed_endpoint(), timeout_s=600)


def _checkpoint(tmp_path, config: dict) -> str:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "config.json").write_text(json.dumps(config))
    return str(tmp_path)


def test_model_path_is_checked_before_loading(tmp_path) -> None:
    with pytest.raises(ModelPathError, match="no such directory"):
        check_model_path(str(tmp_path / "missing"))
    with pytest.raises(ModelPathError, match="no such directory"):
        check_model_path("no-such-org/no-such-model")          # a hub id not in the cache: no download tried
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(ModelPathError, match="is a file"):
        check_model_path(str(tmp_path / "weights.bin"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelPathError, match="no config.json"):
        check_model_path(str(tmp_path / "empty"))
    encoder = _checkpoint(tmp_path / "bert", {"model_type": "bert", "architectures": ["BertModel"]})
    with pytest.raises(ModelPathError, match="not a causal LM"):
        check_model_path(encoder)
    causal = _checkpoint(tmp_path / "gpt2", {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]})
    assert check_model_path(causal) == causal
