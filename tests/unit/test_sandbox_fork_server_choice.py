"""Which fork servers a slot starts: every one not opt-in by default (ruby, php, R, nodejs), racket's only
when named."""

from __future__ import annotations

import pytest

from sandbox.docker_backend import DockerConfig
from sandbox.languages import LanguageTable, load_languages
from sandbox.process_backend import ProcessSandboxConfig, started_fork_servers
from sandbox.server import SandboxServerConfig


@pytest.fixture(scope="module")
def table() -> LanguageTable:
    return load_languages(probe=None)   # every language counts as installed


def test_by_default_every_server_but_the_opt_in_ones(table) -> None:
    assert table["racket"].fork_server and table["racket"].fork_server_opt_in
    assert table["nodejs"].fork_server and not table["nodejs"].fork_server_opt_in
    started = started_fork_servers(table, None)
    assert set(started) == {"ruby", "php", "R", "nodejs"}
    assert started["ruby"] == table["ruby"].fork_server


def test_a_named_set_is_exactly_those_and_default_stands_for_the_usual_ones(table) -> None:
    assert set(started_fork_servers(table, ("racket",))) == {"racket"}
    assert set(started_fork_servers(table, ("default", "racket"))) == {"ruby", "php", "R", "nodejs", "racket"}
    assert set(started_fork_servers(table, ("ruby", "php", "R"))) == {"ruby", "php", "R"}
    assert started_fork_servers(table, ()) == {}


def test_a_language_without_a_fork_server_is_refused_by_name(table) -> None:
    with pytest.raises(ValueError, match="'python'"):
        started_fork_servers(table, ("python",))


def test_an_uninstalled_language_starts_no_server(table) -> None:
    installed_only = LanguageTable(table.values(), {"racket": "not installed", "R": "not installed"})
    assert set(started_fork_servers(installed_only, ("default", "racket"))) == {"ruby", "php", "nodejs"}


@pytest.mark.parametrize("flag, options", [
    ("", {}),
    ("default,racket", {"fork_servers": ("default", "racket")}),
    ("none", {"fork_servers": ()}),
])
def test_the_servers_flag_becomes_the_executor_option(flag, options) -> None:
    got = SandboxServerConfig(fork_servers=flag).executor_options()
    assert {k: v for k, v in got.items() if k == "fork_servers"} == options
    ProcessSandboxConfig(**{k: v for k, v in got.items() if k in ("fork_servers",)})


@pytest.mark.parametrize("flag, options", [
    ("", {}),
    ("default,racket", {"fork_servers": ("default", "racket")}),
    ("none", {"fork_servers": ()}),
])
def test_the_docker_backend_gets_the_same_choice(flag, options) -> None:
    got = SandboxServerConfig(backend="docker", fork_servers=flag).executor_options()
    assert {k: v for k, v in got.items() if k == "fork_servers"} == options
    DockerConfig(**{k: v for k, v in got.items() if k in ("fork_servers",)})


def test_a_servers_language_environment_reaches_it_through_env(table) -> None:
    started = started_fork_servers(table, ("default",))
    assert table["nodejs"].env
    assert started["nodejs"] == ("env", *(f"{k}={v}" for k, v in table["nodejs"].env.items()),
                                 *table["nodejs"].fork_server)
    assert not table["php"].env and started["php"] == table["php"].fork_server
