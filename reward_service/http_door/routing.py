"""The front door's router: Starlette's, with each path's first matching route remembered.

Starlette's ``Router`` tries every route's regular expression in order on every call; the door has
dozens of routes (one adapter after another, ORS's ``/{env}/...`` last), so a call to a late route
pays for every earlier one. :class:`MatchCachingRouter` remembers, per method and path, which route
matched in full first, and next time matches that route alone (for its path parameters). What is
not a full match (405, redirects, 404) takes Starlette's own path, so every answer is the same.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Match, Route, Router, WebSocketRoute, get_route_path
from starlette.types import Receive, Scope, Send

#: Paths remembered at most (paths carry reward and environment names: keep the cache bounded).
MAX_REMEMBERED_PATHS = 10_000


class MatchCachingRouter(Router):
    """A ``Router`` that remembers the first full match of each (method, path) of an HTTP call.

    Only when every route is a plain ``Route`` or ``WebSocketRoute`` (their match depends on the
    method and path alone); with a ``Mount`` or ``Host`` it is Starlette's router unchanged.
    """

    def __init__(self, routes: list[BaseRoute], **kwargs) -> None:
        super().__init__(routes, **kwargs)
        self._cacheable = all(type(r) in (Route, WebSocketRoute) for r in self.routes)
        self._first_full: dict[tuple[str, str], Route] = {}

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self._cacheable and "path_params" not in scope:
            key = (scope["method"], get_route_path(scope))
            route = self._first_full.get(key)
            if route is None:
                route = self._first_full_match(scope)
                if route is not None and len(self._first_full) < MAX_REMEMBERED_PATHS:
                    self._first_full[key] = route
            if route is not None:
                match, child_scope = route.matches(scope)
                if match is Match.FULL:  # always, for a plain Route: the same method and path
                    scope.setdefault("router", self)
                    scope["route"] = route
                    scope.update(child_scope)
                    await route.handle(scope, receive, send)
                    return
        await super().app(scope, receive, send)

    def _first_full_match(self, scope: Scope) -> Route | None:
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return route if isinstance(route, Route) else None
        return None
