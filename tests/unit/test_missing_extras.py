"""A client-only install (``pip install reward-suite``, no extras) names the extra a command needs.

The missing stacks are simulated, not uninstalled: each command runs in a subprocess whose
``sys.modules`` holds None for the extra's modules, so importing them fails as if they were absent.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reward_core.extras import EXTRA_MODULES, MissingExtra, missing_modules, require_extra

ROOT = Path(__file__).resolve().parents[2]
HIDDEN = ("torch", "transformers", "safetensors", "starlette", "uvicorn", "tensorboard", "matplotlib")
RUN_HIDDEN = ("import runpy, sys\n"
              "for name in {hidden!r}: sys.modules[name] = None\n"
              "sys.argv = {argv!r}\n"
              "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n")


def run_without_extras(*argv: str) -> subprocess.CompletedProcess[str]:
    code = RUN_HIDDEN.format(hidden=HIDDEN, argv=list(argv))
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("argv", "extra"), [
    (("trainer_client", "--help"), "train"),
    (("trainer_client", "grpo", "--config", "configs/demo_grpo.yaml"), "train"),
    (("reward_service", "serve-http", "--upstream", "127.0.0.1:1"), "http"),
    (("reward_service", "serve-rm", "--checkpoint", "no-such-dir"), "rm"),
    (("reward_service", "serve-judge", "--model", "no-such-dir"), "rm"),
])
def test_a_command_without_its_extra_names_the_extra_without_a_traceback(argv, extra):
    done = run_without_extras(*argv)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"pip install 'reward-suite[{extra}]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_module_blocked_in_sys_modules_counts_as_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    assert missing_modules(["uvicorn", "json", "no_such_module_h22"]) == ["uvicorn", "no_such_module_h22"]
    with pytest.raises(MissingExtra, match=r"pip install 'reward-suite\[http\]'") as info:
        require_extra("http", "serve-http")
    assert isinstance(info.value, ImportError) and "uvicorn" in info.value.missing


def test_every_extra_named_exists_in_pyproject():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRA_MODULES) <= set(extras)
