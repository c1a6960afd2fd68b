"""The Open Reward Standard (ORS) over an episode host: the routes of ``openreward``'s environment server.

Routes, bodies, headers and events are those of openreward 0.1.167 (``environments/server.py``,
``types.py``, ``reconnect.py``; its client ``api/environments/client.py``, ``api/_session/``), so the
``openreward`` client drives our environments unchanged. Served at the root of the door (the client
joins absolute paths onto its base URL): ``/health``, ``/version``, ``/ping``, ``/list_environments``,
``/create_session``, ``/delete_session``, ``/create``, ``/delete``, and per environment (``/{env}/...``,
or bare for the environment named by ``X-Deployment``, else the first): ``tools``, ``splits``,
``tasks``, ``num_tasks``, ``task``, ``task_range``, ``task_tools``, ``prompt``, ``messages``, ``call``
and ``score_group``. The session id travels in ``X-Session-ID``.

- An environment's tasks are its rows, addressed as ``{"split", "index"}`` task specs (the reference
  stays server-side); ``/create`` takes such a spec, a row of our shape (``prompt`` + ``reference``),
  or ``split`` + ``index``.
- ``/call`` and ``score_group`` stream SSE: ``task_id``, then the JSON result in ``chunk`` events and a
  last ``end`` (at most ``chunk_chars`` characters each), or one ``error`` event; a ``: ping`` comment
  every ``ping_s`` while the work runs. A POST naming a ``task_id`` resumes that run (its result is
  kept ``linger_s`` after it ends); an unknown id is an ``error`` event ``unknown task_id``.
- A tool result is ``RunToolOutput``: ``ok`` with blocks, ``reward`` (the final verification's on the
  finishing call), ``finished`` and our detail under ``metadata``; an unknown tool, arguments that fail
  the tool's schema, or a call after the end are ``ok: false`` with ORS's ``reason``.
- Unscored is never a reward: a failure of ours (the tool timed out, the sandbox died, the session was
  lost, the deadline passed, the verifier failed) is an ``error`` event naming the status — the client
  raises ``ToolFailed`` and ends the session. ``score_group`` scores each candidate with the
  environment's reward (``score_trajectory``); ``GroupScore`` has no failure field, so a group with an
  unscored candidate is an ``error`` event naming each failure (``ScoreGroupFailed``; the session lives).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
from prometheus_client import Gauge
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from reward_core.clients.errors import ClientError
from reward_core.episode_contract import (
    EnvironmentInfo,
    EpisodeError,
    EpisodeStatus,
    ToolCall,
    Trajectory,
)
from reward_service.http_door.door import FrontDoor, NoEpisodeHost, RouteFactory
from reward_service.http_door.errors import HTTP_STATUS, client_error_code
from reward_service.http_door.ors_messages import BadMessages, chat_to_ors, flatten, ors_to_chat
from reward_service.http_door.ors_sessions import OrsError, OrsSession, OrsSessions
from reward_service.http_door.ors_shapes import (
    CallFailed,
    episode_spec,
    group_scores,
    result_events,
    row_index,
    split_type,
    task_spec,
    tool_error,
    tool_output,
    tools_output,
)
from reward_service.http_door.resumable import ResumableTasks
from reward_service.http_door.sse import EventStream

#: The openreward release whose server these routes follow.
ORS_VERSION = "0.1.167"


@dataclass(frozen=True)
class OrsSettings:
    """Timings of the ORS door (ORS's own values by default)."""

    ping_s: float = 10.0          # keepalive comment while a streamed call runs (the client reads with 30 s)
    linger_s: float = 60.0        # a finished call's result is kept this long for a resuming client
    session_ttl_s: float = 900.0  # a session its client has not shown for this long is closed
    chunk_chars: int = 4096       # most characters per SSE data line
    default_environment: str = ""  # for paths without an environment and no X-Deployment ("": the first)
    environments_ttl_s: float = 5.0  # the host's environment list is asked again after this long


def routes(door: FrontDoor) -> list[BaseRoute]:
    """The ORS routes with ORS's timings."""
    return ors_routes()(door)


def ors_routes(settings: OrsSettings = OrsSettings()) -> RouteFactory:
    """An adapter serving ORS with ``settings`` (tests shorten the timings)."""

    def factory(door: FrontDoor) -> list[BaseRoute]:
        return OrsDoor(door, settings).routes()

    return factory


class OrsDoor:
    """The ORS routes' handlers and their state (sessions, resumable runs)."""

    def __init__(self, door: FrontDoor, settings: OrsSettings) -> None:
        self.door, self.settings = door, settings
        self._sessions: OrsSessions | None = None
        self._tasks: ResumableTasks | None = None
        self._validators: dict[str, Any] = {}
        self._infos: tuple[float, list[EnvironmentInfo]] | None = None
        self.open_sessions = Gauge("http_door_ors_sessions", "ORS sessions open at the door", registry=door.registry)
        self.open_sessions.set_function(lambda: len(self._sessions) if self._sessions is not None else 0)
        door.on_shutdown.append(self.aclose)

    @property
    def sessions(self) -> OrsSessions:
        if self._sessions is None:
            self._sessions = OrsSessions(self.door.host, self.settings.session_ttl_s)
        return self._sessions

    @property
    def tasks(self) -> ResumableTasks:
        if self._tasks is None:
            self._tasks = ResumableTasks(self.settings.linger_s)
        return self._tasks

    async def aclose(self) -> None:
        if self._tasks is not None:
            await self._tasks.aclose()
        if self._sessions is not None:
            await self._sessions.aclose()

    def routes(self) -> list[BaseRoute]:
        h = _answering
        root = [Route("/health", h(self.health), methods=["GET"]),
                Route("/version", h(self.version), methods=["GET"]),
                Route("/ping", h(self.ping), methods=["POST"]),
                Route("/list_environments", h(self.list_environments), methods=["GET"]),
                Route("/create_session", h(self.create_session), methods=["POST"]),
                Route("/delete_session", h(self.delete), methods=["POST"]),
                Route("/create", h(self.create), methods=["POST"]),
                Route("/delete", h(self.delete), methods=["POST"])]
        per_env = [("tools", self.tools, "GET"), ("splits", self.splits, "GET"), ("tasks", self.list_tasks, "POST"),
                   ("num_tasks", self.num_tasks, "POST"), ("task", self.task, "POST"),
                   ("task_range", self.task_range, "POST"), ("task_tools", self.task_tools, "GET"),
                   ("prompt", self.prompt, "GET"), ("messages", self.messages, "GET"),
                   ("call", self.call, "POST"), ("score_group", self.score_group, "POST")]
        bare = not self.door.config.nemo_gym_environment  # else the root is Gym's: ORS clients name a variant
        for name, handler, method in per_env:
            root.append(Route(f"/{{env_name}}/{name}", h(handler), methods=[method]))
            if bare:
                root.append(Route(f"/{name}", h(handler), methods=[method]))
        return root

    # -- the server ------------------------------------------------------------------------------------------

    async def health(self, _: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def version(self, _: Request) -> Response:
        return JSONResponse({"version": ORS_VERSION, "build_sha": None, "server": "reward-suite"})

    async def ping(self, request: Request) -> Response:
        self.sessions.get(_sid(request))
        return JSONResponse({"status": "ok"})

    async def list_environments(self, _: Request) -> Response:
        return JSONResponse([info.name for info in await self._environments()])

    async def create_session(self, _: Request) -> Response:
        sid = str(uuid.uuid4())

        async def events() -> AsyncIterator[tuple[str, str]]:
            yield "task_id", sid
            yield "end", ""

        return EventStream(events(), ping_s=self.settings.ping_s)

    async def delete(self, request: Request) -> Response:
        sid = _sid(request)
        await self.sessions.delete(sid)
        return JSONResponse({"sid": sid})

    async def create(self, request: Request) -> Response:
        sid = _sid(request)
        body = await _body(request, {"env_name": (str, type(None)), "task_spec": (dict, type(None)),
                                     "split": (str, type(None)), "index": (int, type(None)),
                                     "toolset_name": (str, type(None))})
        has_spec = body.get("task_spec") is not None
        if (body.get("split") is None) != (body.get("index") is None):
            raise OrsError(422, "split and index must both be provided together")
        if has_spec == (body.get("split") is not None):
            raise OrsError(422, "Provide either task_spec or both split and index, not both/neither")
        info = await self._environment(request, body.get("env_name"))
        if body.get("toolset_name") is not None:
            raise OrsError(400, f"unknown toolset {body['toolset_name']!r}; valid options are []")
        spec = body["task_spec"] if has_spec else {"split": body["split"], "index": body["index"]}
        await self.sessions.sweep()
        await self.sessions.open(sid, episode_spec(info, spec, client_id=request.headers.get("x-user-id", "")))
        if await request.is_disconnected():
            # The client gave up while the session waited for admission (cancelled inside its
            # ``async with env.session()``): nobody will ever delete it, so release its slot now.
            await self.sessions.delete(sid)
        return JSONResponse({"sid": sid})

    # -- an environment's description and rows ---------------------------------------------------------------

    async def tools(self, request: Request) -> Response:
        info = await self._environment(request, request.path_params.get("env_name"))
        return JSONResponse(tools_output(info.tools))

    async def splits(self, request: Request) -> Response:
        info = await self._environment(request, request.path_params.get("env_name"))
        return JSONResponse([{"name": name, "type": split_type(name)} for name in info.splits])

    async def list_tasks(self, request: Request) -> Response:
        info, split = await self._split(request, {"split": (str,)})
        return JSONResponse({"tasks": [task_spec(split, i) for i in range(info.splits[split])],
                             "env_name": request.path_params.get("env_name", info.name)})

    async def num_tasks(self, request: Request) -> Response:
        info, split = await self._split(request, {"split": (str,)})
        return JSONResponse({"num_tasks": info.splits[split]})

    async def task(self, request: Request) -> Response:
        info, split = await self._split(request, {"split": (str,), "index": (int,)})
        index = row_index(request.state.body["index"], info.splits[split])
        return JSONResponse({"task": task_spec(split, index),
                             "env_name": request.path_params.get("env_name", info.name)})

    async def task_range(self, request: Request) -> Response:
        info, split = await self._split(request, {"split": (str,), "start": (int, type(None)),
                                                  "stop": (int, type(None))})
        body = request.state.body
        indices = range(info.splits[split])[slice(body.get("start"), body.get("stop"))]
        return JSONResponse({"tasks": [task_spec(split, i) for i in indices],
                             "env_name": request.path_params.get("env_name", info.name)})

    # -- a session ---------------------------------------------------------------------------------------------

    async def task_tools(self, request: Request) -> Response:
        return JSONResponse(tools_output(self._session(request).start.tools))

    async def prompt(self, request: Request) -> Response:
        return JSONResponse(flatten(chat_to_ors(self._session(request).start.messages)))

    async def messages(self, request: Request) -> Response:
        return JSONResponse(chat_to_ors(self._session(request).start.messages))

    async def call(self, request: Request) -> Response:
        session = self._session(request)
        body = await _body(request, {"name": (str,), "input": (dict,), "task_id": (str, type(None))})
        return self._stream(session, body.get("task_id"), lambda: self._run_call(session, body["name"], body["input"]))

    async def score_group(self, request: Request) -> Response:
        session = self._session(request)
        body = await _body(request, {"candidates": (list,), "task_id": (str, type(None))})
        trajectories = []
        for i, candidate in enumerate(body["candidates"]):
            if not isinstance(candidate, Mapping) or set(candidate) - {"messages", "metadata"}:
                raise OrsError(422, f"candidates[{i}] must be {{'messages': [...], 'metadata': ...}}")
            try:
                messages = ors_to_chat(candidate.get("messages"))
            except BadMessages as exc:
                raise OrsError(422, f"candidates[{i}]: {exc}") from None
            spec = session.spec
            trajectories.append(Trajectory(spec.environment, spec.row or {}, messages, id=str(i), seed=spec.seed,
                                           split=spec.split, index=spec.index))
        return self._stream(session, body.get("task_id"), lambda: self._run_score_group(trajectories))

    # -- the work behind the streams -----------------------------------------------------------------------------

    def _stream(self, session: OrsSession, task_id: str | None, work: Callable[[], Awaitable[str]]) -> Response:
        if task_id is None:
            task_id = self.tasks.start(session.sid, work())
        run = self.tasks.get(session.sid, task_id)
        return EventStream(result_events(task_id, run, self.settings.chunk_chars), ping_s=self.settings.ping_s)

    async def _run_call(self, session: OrsSession, name: str, arguments: dict[str, Any]) -> str:
        if session.ended is not None:
            return _json(tool_error("episode_finished", f"{name!r} was not run: the episode has ended "
                                         f"({session.ended.name}), so no further tool calls are accepted."))
        if name not in session.tool_names:
            return _json(tool_error("not_found", f"{name!r} is not a valid tool"))
        problem = self._invalid_arguments(session, name, arguments)
        if problem:
            return _json(tool_error("input_validation", f"Tool input validation error: {problem}"))
        try:
            result = await self.door.host.call_tool(session.start.session_id,
                                                    ToolCall(name, arguments, session.next_call_id()))
        except EpisodeError as exc:
            session.ended = exc.status
            if exc.status is EpisodeStatus.FINISHED:
                return _json(tool_error("episode_finished", f"{name!r} was not run: {exc}"))
            raise CallFailed(f"{exc.status.name}: {exc}") from None
        return _json(tool_output(session, result))

    def _invalid_arguments(self, session: OrsSession, name: str, arguments: dict[str, Any]) -> str:
        schema = next(dict(t.parameters) for t in session.start.tools if t.name == name)
        key = json.dumps(schema, sort_keys=True)  # one validator per distinct schema
        validator = self._validators.get(key)
        if validator is None:
            validator = self._validators[key] = jsonschema.validators.validator_for(schema)(schema)
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        return "; ".join(f"{'/'.join(map(str, e.absolute_path)) or '(input)'}: {e.message}" for e in errors)

    async def _run_score_group(self, trajectories: list[Trajectory]) -> str:
        scores = await asyncio.gather(*(self.door.host.score_trajectory(t) for t in trajectories))
        return _json(group_scores(scores))

    # -- resolving what a call names -----------------------------------------------------------------------------

    async def _environment(self, request: Request, name: str | None) -> EnvironmentInfo:
        """The environment a call names: its path, else its X-Deployment, else the default."""
        infos = await self._environments()
        by_name = {info.name.lower(): info for info in infos}
        if name is None:
            deployment = request.headers.get("x-deployment", "").rsplit("/", 1)[-1].lower()
            name = deployment if deployment in by_name else self.settings.default_environment
            if not name:
                if not infos:
                    raise OrsError(404, "this server has no environments")
                return infos[0]
        info = by_name.get(name.lower())
        if info is None:
            raise OrsError(404, f"unknown environment {name!r}")
        return info

    async def _environments(self) -> list[EnvironmentInfo]:
        """The host's environments, asked at most every ``environments_ttl_s`` (each /create needs them)."""
        now = time.monotonic()
        if self._infos is None or now - self._infos[0] > self.settings.environments_ttl_s:
            self._infos = (now, await self.door.host.list_environments())
        return self._infos[1]

    async def _split(self, request: Request, fields: dict[str, tuple[type, ...]]) -> tuple[EnvironmentInfo, str]:
        info = await self._environment(request, request.path_params.get("env_name"))
        request.state.body = body = await _body(request, fields)
        if body["split"] not in info.splits:
            raise OrsError(400, "Invalid split")
        return info, body["split"]

    def _session(self, request: Request) -> OrsSession:
        session = self.sessions.get(_sid(request))
        named = request.path_params.get("env_name")
        if named is not None and named.lower() != session.spec.environment.lower():
            raise OrsError(404, f"session is in environment {session.spec.environment!r}, not {named!r}")
        return session


# -- request plumbing ----------------------------------------------------------------------------------------------


def _answering(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """The handler with its errors answered in ORS's shape."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except OrsError as exc:
            return exc.response()
        except EpisodeError as exc:
            return OrsError.of(exc).response()
        except NoEpisodeHost as exc:
            return OrsError(501, str(exc)).response()
        except ClientError as exc:  # the environment server: unreachable or draining (503, retried), a deadline...
            status = HTTP_STATUS.get(client_error_code(exc), 500)
            return OrsError(status, str(exc), {"Retry-After": "1"} if status in (429, 503) else None).response()

    return endpoint


def _json(value: Any) -> str:
    """Compact JSON (no whitespace outside strings: a chunk never starts with it but inside one)."""
    return json.dumps(value, separators=(",", ":"))


def _sid(request: Request) -> str:
    sid = request.headers.get("x-session-id", "").strip()
    if not sid:
        raise OrsError(400, "X-Session-ID header is required")
    return sid


async def _body(request: Request, fields: dict[str, tuple[type, ...]]) -> dict[str, Any]:
    """The JSON object body with exactly these fields (those whose types exclude None are required)."""
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError as exc:
        raise OrsError(422, f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise OrsError(422, "the body must be a JSON object")
    extra = set(body) - set(fields)
    if extra:
        raise OrsError(422, f"unexpected fields {sorted(extra)}; allowed: {sorted(fields)}")
    for name, types in fields.items():
        value = body.get(name)
        if name not in body and type(None) not in types:
            raise OrsError(422, f"field {name!r} is required")
        if name in body and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
            raise OrsError(422, f"field {name!r} must be {' or '.join(t.__name__ for t in types)}")
    return body
