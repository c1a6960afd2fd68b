"""The front door's router answers every call exactly as Starlette's own router does, and matches
a remembered path against its one route only."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, Router
from starlette.testclient import TestClient

from reward_service.http_door.routing import MAX_REMEMBERED_PATHS, MatchCachingRouter


def _routes() -> list[Route]:
    def endpoint(name: str):
        async def answer(request: Request) -> JSONResponse:
            return JSONResponse({"route": name, "params": request.path_params,
                                 "template": request.scope["route"].path})
        return answer

    return [
        Route("/v1/score", endpoint("score"), methods=["POST"]),
        Route("/items/{name}", endpoint("items-get"), methods=["GET"]),       # PARTIAL for a POST...
        Route("/items/{name}", endpoint("items-post"), methods=["POST"]),     # ...whose FULL match is here
        Route("/slime/{reward}", endpoint("slime"), methods=["POST"]),
        Route("/{env}/tasks", endpoint("env-tasks"), methods=["GET"]),
        Route("/n/{k:int}", endpoint("int"), methods=["GET"]),
        Route("/slash/", endpoint("slash"), methods=["GET"]),
    ]


def _client(router: Router) -> TestClient:
    app = Starlette()
    app.router = router
    return TestClient(app)


CALLS = [("POST", "/v1/score"), ("GET", "/v1/score"), ("POST", "/items/a"), ("GET", "/items/a"),
         ("DELETE", "/items/a"), ("POST", "/slime/gsm8k"), ("POST", "/slime/math"), ("GET", "/gsm8k/tasks"),
         ("GET", "/n/7"), ("GET", "/n/x"), ("GET", "/slash"), ("GET", "/nowhere"), ("POST", "/slime/")]


@pytest.mark.parametrize("rounds", [1, 3])
def test_every_answer_is_starlettes(rounds):
    """Each call, first and remembered, gets Starlette's status, headers and body (405, 404 and the
    slash redirect included)."""
    plain, caching = _client(Router(_routes())), _client(MatchCachingRouter(_routes()))
    for _ in range(rounds):
        for method, path in CALLS:
            want = plain.request(method, path, follow_redirects=False)
            got = caching.request(method, path, follow_redirects=False)
            assert (got.status_code, got.content, got.headers.get("allow"), got.headers.get("location")) == \
                   (want.status_code, want.content, want.headers.get("allow"), want.headers.get("location")), \
                   (method, path)


def test_a_remembered_path_is_matched_against_its_route_alone():
    router = MatchCachingRouter(_routes())
    client = _client(router)
    assert client.post("/slime/gsm8k").json()["route"] == "slime"
    assert router._first_full[("POST", "/slime/gsm8k")].path == "/slime/{reward}"
    tried: list[str] = []
    for route in router.routes:
        original = route.matches
        route.matches = lambda scope, _route=route, _original=original: (tried.append(_route.path),
                                                                         _original(scope))[1]
    answer = client.post("/slime/gsm8k").json()
    assert answer == {"route": "slime", "params": {"reward": "gsm8k"}, "template": "/slime/{reward}"}
    assert tried == ["/slime/{reward}"]
    assert ("GET", "/nowhere") not in router._first_full  # no full match: nothing remembered
    client.get("/nowhere")
    assert ("GET", "/nowhere") not in router._first_full


def test_the_memory_is_bounded(monkeypatch):
    monkeypatch.setattr("reward_service.http_door.routing.MAX_REMEMBERED_PATHS", 3)
    router = MatchCachingRouter(_routes())
    client = _client(router)
    for k in range(6):
        assert client.post(f"/slime/r{k}").json()["params"] == {"reward": f"r{k}"}
    assert len(router._first_full) == 3 < MAX_REMEMBERED_PATHS
