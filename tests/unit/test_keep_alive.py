"""Every uvicorn server of ours outlives its clients' idle connections (no keep-alive reset race)."""

from __future__ import annotations

import ast
from pathlib import Path

import httpx

from reward_core.keep_alive import SERVER_KEEP_ALIVE_S

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [p for folder in ("reward_service", "reward_core", "trainer_client", "tests", "bench")
           for p in (ROOT / folder).rglob("*.py")]


def uvicorn_server_calls(tree: ast.AST) -> list[ast.Call]:
    """``uvicorn.run(...)`` and ``uvicorn.Config(...)`` calls."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr in ("run", "Config")
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "uvicorn"]


def test_the_server_keeps_idle_connections_longer_than_httpx_pools_do() -> None:
    assert SERVER_KEEP_ALIVE_S > httpx.Limits().keepalive_expiry


def test_every_uvicorn_server_of_the_project_sets_the_keep_alive() -> None:
    calls = {(path, call.lineno): {kw.arg for kw in call.keywords}
             for path in SOURCES for call in uvicorn_server_calls(ast.parse(path.read_text()))}
    assert len(calls) >= 5  # the door, the judge endpoint (thread and CLI), the fault proxy, the inspector
    missing = [f"{path.relative_to(ROOT)}:{line}" for (path, line), keywords in calls.items()
               if "timeout_keep_alive" not in keywords and not path.is_relative_to(ROOT / "bench")]
    assert not missing, f"uvicorn servers without timeout_keep_alive=SERVER_KEEP_ALIVE_S: {missing}"
