"""A client-only or reward-only install pulls no torch; the extras add the heavy parts.

Checked two ways: the declared base dependencies, and what importing the rule-based reward
server, the sandbox server and the client library really loads (in a fresh interpreter).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "safetensors", "tensorboard", "matplotlib", "numpy", "starlette", "uvicorn")


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def names(requirements: list[str]) -> set[str]:
    return {r.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower()
            for r in requirements}


def test_the_base_install_has_no_heavy_dependency():
    assert not names(project()["dependencies"]) & set(HEAVY)


def test_the_extras_carry_the_heavy_parts():
    extras = project()["optional-dependencies"]
    assert {"torch", "transformers"} <= names(extras["rm"])
    assert "reward-suite" in names(extras["train"]) and "tensorboard" in names(extras["train"])
    assert {"starlette", "uvicorn"} <= names(extras["http"])
    assert "docker" in names(extras["sandbox"])
    assert names(extras["all"]) == {"reward-suite"}


def test_serving_and_the_client_import_nothing_heavy():
    modules = ("reward_service.cli", "reward_service.router.server", "reward_service.tasks.code_task",
               "reward_service.tasks.rm_task", "reward_service.tasks.math_task", "sandbox.server", "sandbox.cli",
               "trainer_client", "reward_core.clients", "reward_service.http_door.server")
    code = ("import sys\n" + "".join(f"import {m}\n" for m in modules)
            + f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
