"""The docker backend's pure parts: no Docker engine needed (engine tests: tests/integration/test_sandbox_docker.py)."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from reward_core.sandbox_contract import Limits
from sandbox.docker_backend import ZYGOTE_CAPS, AttachTransport, DockerConfig, container_settings
from sandbox.docker_image import BaseRecipe, debian_mirror, runner_tag, runtime_digest
from sandbox.zygote_client import ZygoteDied, ZygoteTimeout


def _mux(stream: int, payload: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(payload)) + payload


def _transport_pair(**kw) -> tuple[AttachTransport, socket.socket]:
    ours, theirs = socket.socketpair()
    return AttachTransport(ours, **kw), theirs


def test_mirror_is_read_from_deb822_sources(tmp_path, monkeypatch):
    monkeypatch.delenv("SANDBOX_DEBIAN_MIRROR", raising=False)
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm\n\n"
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n")
    assert debian_mirror(tmp_path) == "http://mirror.example/debian"


def test_mirror_is_read_from_a_one_line_sources_list(tmp_path, monkeypatch):
    monkeypatch.delenv("SANDBOX_DEBIAN_MIRROR", raising=False)
    (tmp_path / "sources.list").write_text("deb http://security.debian.org/debian-security bookworm-security main\n"
                                           "deb [arch=amd64] http://ftp.example/debian bookworm main\n")
    assert debian_mirror(tmp_path) == "http://ftp.example/debian"


def test_mirror_defaults_to_deb_debian_org_and_env_overrides(tmp_path, monkeypatch):
    monkeypatch.delenv("SANDBOX_DEBIAN_MIRROR", raising=False)
    assert debian_mirror(tmp_path) == "http://deb.debian.org/debian"
    monkeypatch.setenv("SANDBOX_DEBIAN_MIRROR", "http://local/debian")
    assert debian_mirror(tmp_path) == "http://local/debian"


def test_runner_tag_follows_the_runtime_content_not_its_caches(tmp_path):
    (tmp_path / "zygote.py").write_text("print(1)\n")
    before = runner_tag(BaseRecipe(), tmp_path)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "zygote.cpython-311.pyc").write_bytes(b"\0")
    assert runner_tag(BaseRecipe(), tmp_path) == before
    (tmp_path / "zygote.py").write_text("print(2)\n")
    assert runner_tag(BaseRecipe(), tmp_path) != before
    assert runtime_digest(tmp_path) != ""


def test_base_tag_changes_with_the_package_list():
    assert BaseRecipe().tag != BaseRecipe(packages=("python3",)).tag
    assert BaseRecipe().tag.startswith("reward-sandbox-base:")


def test_attach_transport_strips_headers_and_drops_stderr():
    transport, peer = _transport_pair()
    wire = _mux(1, b"hello ") + _mux(2, b"log line\n") + _mux(1, b"world")
    for i in range(0, len(wire), 3):           # headers and payloads split across reads
        peer.sendall(wire[i:i + 3])
    peer.close()
    got = b""
    while chunk := transport.recv(4, time.monotonic() + 5):
        got += chunk
    assert got == b"hello world"


def test_attach_transport_sends_raw_bytes():
    transport, peer = _transport_pair()
    transport.send(b"\x00\x00\x00\x02{}", time.monotonic() + 5)
    assert peer.recv(16) == b"\x00\x00\x00\x02{}"


def test_attach_transport_eof_names_why_the_container_ended():
    transport, peer = _transport_pair(explain_eof=lambda: "exit code 137, OOM-killed")
    peer.close()
    with pytest.raises(ZygoteDied, match="OOM-killed"):
        transport.recv(100, time.monotonic() + 5)
    assert transport.closed_by_peer()


def test_attach_transport_honours_the_host_deadline():
    transport, peer = _transport_pair()
    with pytest.raises(ZygoteTimeout):
        transport.recv(100, time.monotonic() + 0.05)
    assert not transport.closed_by_peer()       # idle and open: alive
    peer.close()


def test_containers_are_locked_down():
    settings = container_settings(DockerConfig(), "img:tag", 123456789, {"l": "v"})
    host = settings["host_config"]
    assert host["network_mode"] == "none" and settings["network_disabled"]
    assert host["read_only"] is True
    assert host["cap_drop"] == ["ALL"] and set(host["cap_add"]) == set(ZYGOTE_CAPS)
    assert not {"SYS_ADMIN", "SYS_PTRACE", "NET_ADMIN", "NET_RAW", "MKNOD"} & set(host["cap_add"])
    assert host["security_opt"] == ["no-new-privileges"]
    assert host["pids_limit"] > 0 and host["nano_cpus"] > 0
    assert host["mem_limit"] == host["memswap_limit"]                  # no swap
    assert all("nosuid" in opts and "nodev" in opts and "size=" in opts for opts in host["tmpfs"].values())
    assert "--mode" in settings["command"] and "container" in settings["command"]
    assert settings["command"][settings["command"].index("--slot-uid") + 1] == "123456789"
    assert settings["stdin_open"] and not settings["tty"]


def test_the_supervisor_gets_a_uid_of_its_own():
    command = container_settings(DockerConfig(), "img:tag", 123456789, {"l": "v"}, 987654321)["command"]
    assert command[command.index("--supervisor-uid") + 1] == "987654321"
    assert command[command.index("--slot-uid") + 1] == "123456789"


def test_container_memory_follows_the_execution_limits():
    config = DockerConfig(memory_slack_mb=100, compile_memory_mb=512)
    assert config.container_memory_mb(Limits(memory_mb=256, scratch_mb=32)) == 388
    assert config.container_memory_mb(Limits(memory_mb=256, scratch_mb=32), compiled=True) == 644


def test_config_rejects_nonsense_with_the_field_name():
    with pytest.raises(ValueError, match="concurrency"):
        DockerConfig(concurrency=0)
