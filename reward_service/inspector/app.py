"""The inspector's ASGI app: the page (static HTML, JS, CSS shipped in the package) and three JSON routes.

    GET /                   the page; its filters live in the query string (?status=ERROR&task=gsm8k&step=3-5)
    GET /api/summary        counts per status and task, step and reward ranges (the filters' choices)
    GET /api/groups         one page of matching groups, every member with its text (page, page_size, filters)
    GET /api/histograms     reward histograms per step of the matching rollouts (bins, filters)

Filtering and paging run on the server, over the index's columns (``index.py``): the browser only
ever holds one page of groups, whatever the file's size.
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from reward_service.inspector.filters import Filters
from reward_service.inspector.index import HISTOGRAM_BINS, RolloutIndex

STATIC_DIR = Path(__file__).parent / "static"
MAX_PAGE_SIZE = 200
MAX_BINS = 50


def _int(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.query_params.get(name, "")
    try:
        value = int(raw) if raw else default
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    return min(max(value, lo), hi)


def create_app(index: RolloutIndex) -> Starlette:
    """The app serving ``index`` (the caller closes the index when the server stops)."""

    async def page(_: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-store"})

    def query(handler):
        async def endpoint(request: Request) -> Response:
            try:  # a filter walks up to every row: off the event loop
                return JSONResponse(await run_in_threadpool(handler, request))
            except ValueError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
        return endpoint

    def summary(_: Request) -> dict:
        return index.summary()

    def groups(request: Request) -> dict:
        filters = Filters.from_query(request.query_params)
        return index.page(filters, _int(request, "page", 0, 0, 10**9),
                          _int(request, "page_size", 20, 1, MAX_PAGE_SIZE))

    def histograms(request: Request) -> dict:
        filters = Filters.from_query(request.query_params)
        return index.histograms(filters, _int(request, "bins", HISTOGRAM_BINS, 1, MAX_BINS))

    return Starlette(routes=[
        Route("/", page),
        Route("/api/summary", query(summary)),
        Route("/api/groups", query(groups)),
        Route("/api/histograms", query(histograms)),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ])
