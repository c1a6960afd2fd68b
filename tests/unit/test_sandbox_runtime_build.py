"""The fork servers' C helpers (sandbox/runtime_build.py): built on the host, copied into every slot."""

from __future__ import annotations

import shutil

import pytest

from sandbox import runtime_build
from sandbox.process_backend import runtime_files

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None, reason="needs a C compiler")


@needs_gcc
def test_every_runtime_c_file_is_built_once_into_a_private_shared_object() -> None:
    built = runtime_build.built_helpers()
    assert [p.name for p in built] == [f"{p.stem}.so" for p in sorted(runtime_build.RUNTIME_DIR.glob("*.c"))]
    assert "fork_server_native.so" in {p.name for p in built}        # R's and racket's
    for path in built:
        assert path.read_bytes()[:4] == b"\x7fELF"
        assert path.parent.stat().st_mode & 0o077 == 0          # no one else may swap it before a slot copies it
        assert runtime_build.RUNTIME_DIR not in path.parents     # never written into the checkout
    assert runtime_build.built_helpers() is built                # once per process


def test_without_a_compiler_nothing_is_built(monkeypatch) -> None:
    monkeypatch.setattr(runtime_build.shutil, "which", lambda name: None)
    runtime_build.built_helpers.cache_clear()
    try:
        assert runtime_build.built_helpers() == ()
    finally:
        runtime_build.built_helpers.cache_clear()


def test_the_scripts_that_load_a_helper_are_copied_into_the_slot() -> None:
    assert {"fork_server.R", "fork_server.rkt"} <= {p.name for p in runtime_files()}
