"""OpenEnv over an :class:`~reward_core.episode_contract.EpisodeHost`: ``/openenv/{environment}/...``.

The routes of OpenEnv's ``HTTPEnvServer`` (``openenv/core/env_server/http_server.py``, 0.10.0), so the
``openenv`` package's own clients work with ``base_url=<door>/openenv/<environment>``:

- ``WS /ws``: one session per connection (``GenericEnvClient``, ``MCPToolClient``), messages
  ``reset``/``step``/``state``/``close``/``mcp`` answered ``observation``/``state``/``mcp``/``error``;
  ``?session_id=`` attaches to a session made over HTTP, as ``MCPToolClient`` does.
- ``POST /mcp``: JSON-RPC ``openenv/session/create``/``close``, ``tools/list``, ``tools/call``
  (``MCPToolClient``'s HTTP path: direct tool calls within a session).
- ``POST /reset``, ``POST /step``, ``GET /state``: OpenEnv's own server makes a fresh environment per HTTP
  call; ours keep the episode: ``/reset`` answers ``metadata.session_id``, which ``/step`` takes in its body
  (``StepRequest`` allows extra fields) and ``/state`` as ``?session_id=`` (or the ``X-Reward-Session-Id``
  header). ``POST /close`` ends it. ``GET /health``, ``/metadata``, ``/schema``.

Reset parameters: ``seed``, ``episode_id`` (OpenEnv's), and ours: ``split``/``index`` or ``row``,
``deadline_s``. Actions, observations and unscored endings: ``openenv_wire.py``. A refused or lost session
is a protocol error (HTTP status, WebSocket ``error`` frame, JSON-RPC error), never a reward.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import grpc
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from reward_core.episode_contract import EpisodeError, EpisodeSpec, EpisodeSpecError, EpisodeStatus, ToolCall
from reward_service.http_door import openenv_wire as wire
from reward_service.http_door.door import FrontDoor, NoEpisodeHost
from reward_service.http_door.episode_errors import from_episode_error
from reward_service.http_door.errors import error_response

SESSION_HEADER = "x-reward-session-id"
#: Most sessions the door addresses at once (the oldest is closed past it).
MAX_SESSIONS = 100_000
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, SERVER_ERROR = -32700, -32600, -32601, -32602, -32000


class UnknownEnvironment(LookupError):
    """The path names an environment the host does not serve (HTTP 404)."""


class NoEpisode(EpisodeError):
    """A step before any reset in this session."""

    def __init__(self) -> None:
        super().__init__(EpisodeStatus.UNSPECIFIED, "no episode in this session yet: reset first")


@dataclass
class _Slot:
    """One OpenEnv session: the episode it runs now (reset replaces it) and whether a WebSocket holds it."""

    environment: str
    episode: str | None = None
    episode_id: str | None = None
    attached: bool = False
    close_on_detach: bool = False  # closed over HTTP while a WebSocket held it (OpenEnv's "closing")
    resetting: asyncio.Lock = field(default_factory=asyncio.Lock)  # one reset at a time: none leaks an episode


class OpenEnvDoor:
    """Sessions by OpenEnv session id, and the operations every transport shares."""

    def __init__(self, door: FrontDoor) -> None:
        self.door = door
        self.slots: OrderedDict[str, _Slot] = OrderedDict()

    async def create(self, environment: str) -> str:
        session_id = uuid.uuid4().hex
        self.slots[session_id] = _Slot(environment)
        while len(self.slots) > MAX_SESSIONS:
            _, slot = self.slots.popitem(last=False)
            if slot.episode:
                await self.door.host.close(slot.episode)
        return session_id

    def slot(self, session_id: str, environment: str) -> _Slot:
        slot = self.slots.get(session_id)
        if slot is None or slot.environment != environment:
            raise EpisodeError(EpisodeStatus.SESSION_LOST, f"unknown session_id {session_id!r} (closed, or never "
                               "created here)")
        return slot

    async def close(self, session_id: str) -> None:
        slot = self.slots.pop(session_id, None)
        if slot is not None and slot.episode:
            await self.door.host.close(slot.episode)

    async def reset(self, environment: str, session_id: str, params: Mapping[str, Any]) -> dict[str, Any]:
        slot = self.slot(session_id, environment)
        choice = wire.reset_choice(params)
        async with slot.resetting:
            if slot.episode:
                await self.door.host.close(slot.episode)
                slot.episode = None
            start = await self.door.host.open(EpisodeSpec(environment, client_id="openenv", **choice))
            if self.slots.get(session_id) is not slot:  # the session was closed while its episode opened
                await self.door.host.close(start.session_id)
                raise EpisodeError(EpisodeStatus.CLOSED, f"session {session_id!r} was closed during its reset")
            episode_id = params.get("episode_id")
            slot.episode, slot.episode_id = start.session_id, episode_id if isinstance(episode_id, str) else None
        return wire.reset_payload(start, session_id, slot.episode_id or start.session_id)

    async def tools(self, environment: str) -> list:
        for info in await self.door.host.list_environments():
            if info.name == environment:
                return list(info.tools)
        raise UnknownEnvironment(f"unknown environment {environment!r}")

    async def step(self, environment: str, session_id: str, data: Any) -> dict[str, Any]:
        action = wire.parse_action(data)
        if action.kind == "list_tools":
            return wire.tools_payload(await self.tools(environment))
        slot = self.slot(session_id, environment)
        if not slot.episode:
            raise NoEpisode()
        if action.kind == "call_tool":
            call = ToolCall(action.tool_name, action.arguments or {}, call_id=uuid.uuid4().hex[:12])
            return wire.tool_payload(action.tool_name, await self.door.host.call_tool(slot.episode, call), session_id)
        return wire.final_payload(await self.door.host.finish(slot.episode, action.content), action.content,
                                  session_id)

    async def state(self, environment: str, session_id: str) -> dict[str, Any]:
        slot = self.slot(session_id, environment)
        if not slot.episode:
            return wire.state_payload(None, session_id, slot.episode_id)
        try:
            state = await self.door.host.state(slot.episode)
        except EpisodeError as exc:
            return {**wire.state_payload(None, session_id, slot.episode_id or slot.episode),
                    "episode_status": exc.status.name, "error": str(exc)}
        return wire.state_payload(state, session_id, slot.episode_id or slot.episode)

    # --- MCP JSON-RPC ---------------------------------------------------------------------
    async def mcp(self, environment: str, body: Any, ws_session: str | None = None) -> dict[str, Any]:
        if not isinstance(body, Mapping) or body.get("jsonrpc") != "2.0" or not isinstance(body.get("method"), str):
            return _rpc_error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 request")
        request_id, method, params = body.get("id"), body["method"], body.get("params") or {}
        if not isinstance(params, Mapping):
            return _rpc_error(request_id, INVALID_PARAMS, "params must be an object")
        try:
            result = await self._mcp_method(environment, method, params, ws_session)
        except _RpcFailure as exc:
            return _rpc_error(request_id, exc.code, str(exc), exc.data)
        except EpisodeSpecError as exc:
            return _rpc_error(request_id, INVALID_PARAMS, str(exc))
        except EpisodeError as exc:
            return _rpc_error(request_id, SERVER_ERROR, str(exc), {"episode_status": exc.status.name,
                                                                    "retry_after_s": exc.retry_after_s})
        except UnknownEnvironment as exc:
            return _rpc_error(request_id, INVALID_PARAMS, str(exc))
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _mcp_method(self, environment: str, method: str, params: Mapping[str, Any],
                          ws_session: str | None) -> Any:
        if method == "openenv/session/create":
            await self.tools(environment)  # an unknown environment is refused here
            return {"session_id": ws_session or await self.create(environment)}
        if method == "tools/list":
            return {"tools": [{"name": t.name, "description": t.description, "inputSchema": dict(t.parameters)}
                              for t in await self.tools(environment)]}
        target = params.get("session_id") or ws_session
        if not isinstance(target, str) or not target:
            raise _RpcFailure(INVALID_PARAMS, "Invalid params - 'session_id' is required")
        if method == "openenv/session/close":
            if target == ws_session:
                raise _RpcFailure(INVALID_REQUEST, "Cannot close the active WebSocket's own session via MCP")
            slot = self.slot(target, environment)
            if slot.attached:  # as OpenEnv does: closed once its WebSocket lets go
                slot.close_on_detach = True
                return {"session_id": target, "closed": False, "closing": True}
            await self.close(target)
            return {"session_id": target, "closed": True}
        if method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments", {})
            if not isinstance(name, str) or not name or not isinstance(arguments, Mapping):
                raise _RpcFailure(INVALID_PARAMS, "Missing 'name' (a string) or 'arguments' (an object) in params")
            payload = await self.step(environment, target, {"type": "call_tool", "tool_name": name,
                                                            "arguments": dict(arguments)})
            observation, metadata = payload["observation"], payload["metadata"]
            if observation.get("error"):
                raise _RpcFailure(SERVER_ERROR, observation["error"]["message"], metadata)
            text = str(observation.get("result", ""))
            return {"content": [{"type": "text", "text": text}], "data": text, "isError": False,
                    "reward": payload["reward"], "done": payload["done"], "metadata": metadata}
        raise _RpcFailure(METHOD_NOT_FOUND, f"Method not found: {method}")


class _RpcFailure(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.data = code, data


def _rpc_error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error = {"code": code, "message": message, **({"data": data} if data is not None else {})}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _unprocessable(message: str) -> JSONResponse:
    return JSONResponse({"detail": message}, status_code=422)


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        body = json.loads(raw) if raw.strip() else {}
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise wire.BadAction(f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise wire.BadAction("the body must be a JSON object")
    return body


def _http_session(request: Request, body: Mapping[str, Any]) -> str | None:
    value = body.get("session_id") or request.query_params.get("session_id") or request.headers.get(SESSION_HEADER)
    return value if isinstance(value, str) and value else None


def _http_routes(h: OpenEnvDoor) -> list[BaseRoute]:
    async def guarded(request: Request, work) -> Response:
        try:
            return await work(request.path_params["environment"])
        except wire.BadAction as exc:
            return _unprocessable(str(exc))
        except NoEpisode as exc:
            return error_response(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        except EpisodeError as exc:
            return from_episode_error(exc)
        except NoEpisodeHost as exc:
            return error_response(grpc.StatusCode.UNIMPLEMENTED, str(exc))
        except UnknownEnvironment as exc:
            return error_response(grpc.StatusCode.NOT_FOUND, str(exc))

    async def reset(request: Request) -> Response:
        async def work(environment: str) -> Response:
            body = await _body(request)
            session = _http_session(request, body)
            if session is None:
                await h.tools(environment)
                session = await h.create(environment)
            return JSONResponse(await h.reset(environment, session, body))
        return await guarded(request, work)

    async def step(request: Request) -> Response:
        async def work(environment: str) -> Response:
            body = await _body(request)
            session = _http_session(request, body)
            if session is None:
                raise wire.BadAction("a step needs the 'session_id' its /reset answered (in the body, or the "
                                     f"{SESSION_HEADER} header)")
            return JSONResponse(await h.step(environment, session, body.get("action")))
        return await guarded(request, work)

    async def state(request: Request) -> Response:
        async def work(environment: str) -> Response:
            session = _http_session(request, {})
            if session is None:
                raise wire.BadAction("give ?session_id= (what /reset answered)")
            return JSONResponse(await h.state(environment, session))
        return await guarded(request, work)

    async def close(request: Request) -> Response:
        async def work(environment: str) -> Response:
            session = _http_session(request, await _body(request))
            if session is not None:
                h.slot(session, environment)
                await h.close(session)
            return JSONResponse({})
        return await guarded(request, work)

    async def mcp(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return JSONResponse(_rpc_error(None, PARSE_ERROR, "Parse error"))
        try:
            return JSONResponse(await h.mcp(request.path_params["environment"], body))
        except NoEpisodeHost as exc:
            return error_response(grpc.StatusCode.UNIMPLEMENTED, str(exc))

    async def health(_: Request) -> Response:
        return JSONResponse({"status": "healthy"})

    async def metadata(request: Request) -> Response:
        async def work(environment: str) -> Response:
            for info in await h.door.host.list_environments():
                if info.name == environment:
                    return JSONResponse({"name": info.name, "description": info.description,
                                         "version": info.version or None, "readme_content": None, "author": None,
                                         "documentation_url": None})
            raise UnknownEnvironment(f"unknown environment {environment!r}")
        return await guarded(request, work)

    async def schema(request: Request) -> Response:
        async def work(environment: str) -> Response:
            await h.tools(environment)
            return JSONResponse({"action": wire.ACTION_SCHEMA, "observation": wire.OBSERVATION_SCHEMA,
                                 "state": wire.STATE_SCHEMA})
        return await guarded(request, work)

    prefix = "/openenv/{environment}"
    return [Route(f"{prefix}/reset", reset, methods=["POST"]), Route(f"{prefix}/step", step, methods=["POST"]),
            Route(f"{prefix}/state", state, methods=["GET"]), Route(f"{prefix}/close", close, methods=["POST"]),
            Route(f"{prefix}/mcp", mcp, methods=["POST"]), Route(f"{prefix}/health", health, methods=["GET"]),
            Route(f"{prefix}/metadata", metadata, methods=["GET"]), Route(f"{prefix}/schema", schema, methods=["GET"])]


def _ws_error(message: str, code: str, **extra: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code, **extra}}


async def _ws_answer(h: OpenEnvDoor, environment: str, session: str, message: Any) -> dict[str, Any] | None:
    """The answer to one WebSocket message (None: the client closed the session)."""
    kind = message.get("type") if isinstance(message, Mapping) else None
    try:
        if kind == "reset":
            data = message.get("data") or {}
            if not isinstance(data, Mapping):
                raise wire.BadAction("reset data must be an object")
            return {"type": "observation", "data": await h.reset(environment, session, data)}
        if kind == "step":
            return {"type": "observation", "data": await h.step(environment, session, message.get("data"))}
        if kind == "state":
            return {"type": "state", "data": await h.state(environment, session)}
        if kind == "mcp":
            return {"type": "mcp", "data": await h.mcp(environment, message.get("data"), ws_session=session)}
        if kind == "close":
            return None
        return _ws_error(f"Unknown message type: {kind}", "UNKNOWN_TYPE")
    except (wire.BadAction, EpisodeSpecError) as exc:
        return _ws_error(str(exc), "VALIDATION_ERROR")
    except EpisodeError as exc:
        code = "CAPACITY_REACHED" if exc.status is EpisodeStatus.REFUSED else "SESSION_ERROR"
        return _ws_error(str(exc), code, episode_status=exc.status.name, retry_after_s=exc.retry_after_s)
    except (UnknownEnvironment, NoEpisodeHost) as exc:
        return _ws_error(str(exc), "EXECUTION_ERROR")


def _ws_route(h: OpenEnvDoor) -> BaseRoute:
    async def endpoint(websocket: WebSocket) -> None:
        environment = websocket.path_params["environment"]
        await websocket.accept()
        requested = websocket.query_params.get("session_id")
        session, owned, attached = requested or "", False, None
        try:
            if requested:
                slot = h.slot(requested, environment)
                if slot.attached:
                    raise EpisodeError(EpisodeStatus.UNSPECIFIED, f"session {requested} already has a WebSocket")
                slot.attached, attached = True, slot
            else:
                await h.tools(environment)
                session, owned = await h.create(environment), True
            while True:
                raw = await websocket.receive_text()
                try:
                    message = json.loads(raw)
                except json.JSONDecodeError as exc:
                    await websocket.send_text(json.dumps(_ws_error(f"Invalid JSON: {exc}", "INVALID_JSON")))
                    continue
                answer = await _ws_answer(h, environment, session, message)
                if answer is None:
                    break
                await websocket.send_text(json.dumps(answer))
        except WebSocketDisconnect:
            pass
        except (EpisodeError, UnknownEnvironment, NoEpisodeHost) as exc:
            await websocket.send_text(json.dumps(_ws_error(str(exc), "SESSION_ERROR")))
        finally:
            if owned or (attached is not None and attached.close_on_detach):
                await h.close(session)
            elif attached is not None:
                attached.attached = False
            try:
                await websocket.close()
            except RuntimeError:  # already closed by the client
                pass

    return WebSocketRoute("/openenv/{environment}/ws", endpoint)


def routes(door: FrontDoor) -> list[BaseRoute]:
    """Every OpenEnv route, for every environment of the episode host."""
    h = OpenEnvDoor(door)

    async def release() -> None:
        for session in list(h.slots):
            await h.close(session)

    door.on_shutdown.append(release)
    return [*_http_routes(h), _ws_route(h)]
