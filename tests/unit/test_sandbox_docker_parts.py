"""The docker backend's pure parts: no Docker engine needed (engine tests: tests/integration/test_sandbox_docker.py)."""

from __future__ import annotations

import io
import json
import socket
import struct
import tarfile
import time

import pytest

from reward_core.sandbox_contract import Limits
from sandbox import docker_backend
from sandbox.docker_backend import ZYGOTE_CAPS, AttachTransport, DockerConfig, container_settings, image_language_table
from sandbox.docker_image import (
    LANGUAGES_LABEL,
    BaseRecipe,
    _runtime_tar,
    debian_mirror,
    language_selection,
    runner_tag,
    runtime_digest,
)
from sandbox.languages import BUILTIN_LANGUAGES, LanguageTable
from sandbox.loopback_names import HOSTNAME, HOSTNAME_ADDRESS
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
    # loopback only ("none"); not NetworkDisabled, whose empty /etc/hosts left even localhost unresolved
    assert host["network_mode"] == "none" and not settings.get("network_disabled")
    assert settings["hostname"] == HOSTNAME and host["extra_hosts"] == {HOSTNAME: HOSTNAME_ADDRESS}
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


def test_the_fork_servers_are_named_to_the_zygote_and_counted_in_the_memory_limit():
    servers = {"ruby": ("ruby", "{runtime}/fork_server.rb"), "R": ("Rscript", "--vanilla", "{runtime}/fork_server.R")}
    config = DockerConfig(memory_slack_mb=100, fork_server_memory_mb=64)
    with_servers = container_settings(config, "img:tag", 123456789, {"l": "v"}, 987654321, servers)
    command = with_servers["command"]
    assert json.loads(command[command.index("--fork-servers") + 1]) == {
        "ruby": ["ruby", "/opt/sandbox/runtime/fork_server.rb"],
        "R": ["Rscript", "--vanilla", "/opt/sandbox/runtime/fork_server.R"]}
    without = container_settings(config, "img:tag", 123456789, {"l": "v"}, 987654321)
    assert "--fork-servers" not in without["command"]
    assert int(with_servers["host_config"]["mem_limit"][:-1]) == int(without["host_config"]["mem_limit"][:-1]) + 128
    assert config.container_memory_mb(Limits(memory_mb=256, scratch_mb=32), None, 2) == 388 + 128
    assert set(with_servers["host_config"]["cap_add"]) == set(ZYGOTE_CAPS)     # no capability more for them


def test_the_runtime_in_the_image_is_roots_alone(tmp_path):
    (tmp_path / "zygote.py").write_text("x = 1\n")
    with tarfile.open(fileobj=io.BytesIO(_runtime_tar(tmp_path))) as tar:
        modes = {member.name: member.mode for member in tar.getmembers()}
    assert modes["opt/sandbox/runtime"] == 0o700 and modes["opt/sandbox"] == 0o755


def test_container_memory_follows_the_execution_limits():
    config = DockerConfig(memory_slack_mb=100, compile_memory_mb=512)
    assert config.container_memory_mb(Limits(memory_mb=256, scratch_mb=32)) == 388
    assert config.container_memory_mb(Limits(memory_mb=256, scratch_mb=32), BUILTIN_LANGUAGES["cpp"]) == 644


def test_container_memory_is_raised_to_the_languages_floor():
    config = DockerConfig(memory_slack_mb=100, compile_memory_mb=512)
    kotlin = BUILTIN_LANGUAGES["kotlin_script"]                 # a JVM (kotlinc, then the script): min_memory_mb 768
    assert config.container_memory_mb(Limits(memory_mb=64, scratch_mb=32), kotlin) == kotlin.min_memory_mb + 132
    assert config.container_memory_mb(Limits(memory_mb=64, scratch_mb=32), BUILTIN_LANGUAGES["python"]) == 196


# -- language sets and the image's record -------------------------------------------------------------
def test_a_language_set_has_one_spelling_and_one_tag(monkeypatch):
    monkeypatch.delenv("SANDBOX_LANGUAGES", raising=False)
    assert language_selection(None) == "core" and language_selection("python,c") == "core"
    assert language_selection("java,go") == language_selection("go, java,python") == "go,java"
    assert BaseRecipe.for_languages("java,go").tag == BaseRecipe.for_languages("go,java").tag
    monkeypatch.setenv("SANDBOX_LANGUAGES", "all")
    assert BaseRecipe.for_languages().languages == "all"
    with pytest.raises(ValueError, match="unknown language 'cobol'"):
        language_selection("cobol")


def test_each_set_installs_its_languages_packages_and_has_its_own_tag():
    core, everything = BaseRecipe.for_languages("core"), BaseRecipe.for_languages("all")
    assert {"python3", "g++", "gcc"} <= set(core.packages) and "golang-go" not in core.packages
    assert {"golang-go", "openjdk-17-jdk-headless", "jest", "rustc"} <= set(everything.packages)
    assert "golang-go" in BaseRecipe.for_languages("go").packages
    assert len({core.tag, everything.tag, BaseRecipe.for_languages("go").tag, BaseRecipe().tag}) == 4
    assert runner_tag(core) != runner_tag(everything)


class _FakeImages:
    def __init__(self, labels: dict) -> None:
        self.labels = labels

    def get(self, tag: str):
        return self


class _FakeClient:
    def __init__(self, record: dict) -> None:
        self.images = _FakeImages({LANGUAGES_LABEL: json.dumps(record)})


def _record(*names: str) -> dict:
    tools = {t: False for lang in BUILTIN_LANGUAGES.values() for t in lang.required_tools()}
    tools.update({t: True for n in names for t in BUILTIN_LANGUAGES[n].required_tools()})
    return {"set": "core", "tools": tools, "languages": {n: f"{n} 1.0" for n in names}}


def test_languages_come_from_the_images_record_not_from_this_host():
    table, versions = image_language_table(_FakeClient(_record("python", "cpp", "bash")), "runner:x")
    assert {lang.name for lang in table.available()} >= {"python", "cpp", "bash"}
    assert "go" in table.unavailable and "c" in table.unavailable
    assert table.unavailable["go"].startswith("not in the runner image runner:x (built with SANDBOX_LANGUAGES=core)")
    assert "SANDBOX_LANGUAGES=go" in table.unavailable["go"]         # how to get an image that has it
    assert versions["python"] == "python 1.0" and "go" not in versions


def test_a_hosts_missing_toolchain_does_not_hide_a_language_the_image_has(monkeypatch):
    def no_go_here(lang):                 # this host's probe: no Go toolchain
        return "go not found on /usr/bin" if lang.name == "go" else ""

    monkeypatch.setattr(docker_backend, "host_probe", no_go_here)
    host = LanguageTable(BUILTIN_LANGUAGES.values()).with_probe(no_go_here)
    host.unavailable["python"] = "not enabled on this server"
    table, _ = image_language_table(_FakeClient(_record("python", "go")), "runner:x", host)
    assert "go" not in table.unavailable
    assert table.unavailable["python"] == "not enabled on this server"    # a server's own restriction stays


def test_config_rejects_nonsense_with_the_field_name():
    with pytest.raises(ValueError, match="concurrency"):
        DockerConfig(concurrency=0)
