"""NeMo Gym multi-turn resources server over an :class:`~reward_core.episode_contract.EpisodeHost`.

Two shapes of Gym's, for one environment (``/gym-env/{environment}/...``, or at the root for the one
``--nemo-gym-environment`` names, which is what a stock Gym config reaches):

- **Tools** (``SimpleResourcesServer`` + ``simple_agent``): ``POST /seed_session`` with the dataset row
  (or Gym's newer ``ResourcesSeedSessionRequest``) opens a session; ``POST /<tool>`` with the tool's
  JSON arguments runs one call and answers ``{"output", "reward", "done"}`` (the raw body is what the
  model sees; ``done`` serves ``use_done_flag``); ``POST /verify`` with ``row | {"response"}`` ends the
  episode (the final message is the response's text, unless a tool such as ``submit_answer`` ended it)
  and answers the row with ``reward`` and ``reward_components``. Without a session ``/verify`` scores
  the response's items as a trajectory (``EpisodeHost.score_trajectory``). ``/close_session``;
  ``GET /tools`` lists the tools as Responses function tools (for the rows' ``responses_create_params.tools``).
- **Gymnasium** (``resources_servers/gymnasium`` + ``gymnasium_agent``): ``POST /reset`` with the row
  answers ``{"observation", "info"}`` (``info.tools``: our tools as Responses function tools;
  ``supports_explicit_close``: the agent then calls ``POST /close``); ``POST /step`` with
  ``row | {"response": <this turn>}`` runs the turn's function calls (their outputs in
  ``info.tool_outputs``, as the agent reads them) or, with none, ends the episode on the turn's text,
  and answers ``{"observation", "reward", "terminated", "truncated", "info"}``. A step's reward is the
  sum of its calls' per-step rewards; the step that ends the episode adds the final verification's.

The session rides in a cookie (``reward_suite_gym_session___<environment>``), set on every answer as
Gym's ``SessionMiddleware`` does (``simple_agent`` keeps only the cookies of the last answer), or in the
``X-Reward-Session-Id`` header. Every route is also served under Gym's rollout prefix
``/ng-rollout/{rollout_id}/``. Shapes from NeMo Gym's source: ``nemo_gym/base_resources_server.py``,
``nemo_gym/server_utils.py`` (``SESSION_ID_KEY``, ``setup_session_middleware``),
``responses_api_agents/simple_agent/app.py``, ``resources_servers/gymnasium/__init__.py``,
``responses_api_agents/gymnasium_agent/app.py``.

An unscored ending (a tool failed on our side, the sandbox died, the session was lost or ran past its
deadline) is never reward 0: ``/step`` and tool calls answer an HTTP error (``episode_errors.py``: 5xx,
or 429 for an admission refusal) with ``failure_kind``/``failure_reason``; ``/verify`` too, or with
``?unscored=mask`` Gym's masked row (``mask_sample: true``, which Gym's metrics and NeMo-RL exclude).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import grpc
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from reward_core.episode_contract import (
    EpisodeError,
    EpisodeOutcome,
    EpisodeSpec,
    EpisodeStart,
    EpisodeStatus,
    ToolCall,
    Trajectory,
)
from reward_service.http_door import gym_items
from reward_service.http_door.door import FrontDoor, NoEpisodeHost, RouteFactory
from reward_service.http_door.episode_errors import GYM_FAILURE_KINDS, episode_error_response, failure_reason
from reward_service.http_door.episode_errors import from_episode_error as _episode_error
from reward_service.http_door.errors import bad_request, error_response
from reward_service.http_door.nemo_gym import (
    BadRow,
    NotJson,
    aggregate_metrics,
    completion_text,
    json_body,
    unprocessable,
)

COOKIE_PREFIX = "reward_suite_gym_session___"
SESSION_HEADER = "x-reward-session-id"
#: Most resources-session ids remembered (seeded, or closed before their seed: Gym's race rule).
REMEMBERED_IDS = 100_000


def cookie_name(environment: str) -> str:
    """The session cookie of one environment (a cookie name allows only token characters)."""
    return COOKIE_PREFIX + re.sub(r"[^A-Za-z0-9_.-]", "_", environment)


class _ResourcesIds:
    """Gym's caller-assigned ``resources_session_id`` -> our session id; a closed id stays closed."""

    CLOSED = ""

    def __init__(self) -> None:
        self._ids: OrderedDict[str, str] = OrderedDict()

    def get(self, resources_id: str) -> str | None:
        return self._ids.get(resources_id)

    def put(self, resources_id: str, session_id: str) -> None:
        self._ids[resources_id] = session_id
        self._ids.move_to_end(resources_id)
        while len(self._ids) > REMEMBERED_IDS:
            self._ids.popitem(last=False)


class GymEnvironmentDoor:
    """The handlers for one prefix: a fixed environment, or the path's ``{environment}``."""

    def __init__(self, door: FrontDoor, environment: str | None) -> None:
        self.door, self.fixed = door, environment
        self.resources = _ResourcesIds()
        self.outcomes: OrderedDict[str, EpisodeOutcome] = OrderedDict()  # episodes a tool call ended, until /verify

    # --- plumbing -------------------------------------------------------------------------
    def environment(self, request: Request) -> str:
        return self.fixed or request.path_params["environment"]

    def session_of(self, request: Request) -> str | None:
        return request.cookies.get(cookie_name(self.environment(request))) or request.headers.get(SESSION_HEADER)

    def answer(self, request: Request, response: Response, session_id: str | None) -> Response:
        """``response`` carrying the session cookie (on every answer, as Gym's middleware sets it)."""
        if session_id:
            response.set_cookie(cookie_name(self.environment(request)), session_id, httponly=True, samesite="lax")
            response.headers[SESSION_HEADER] = session_id
        return response

    async def guarded(self, request: Request, work: Callable[[Any], Awaitable[Response]]) -> Response:
        session = self.session_of(request)
        try:
            return await work(await json_body(request))
        except NotJson as exc:
            return self.answer(request, bad_request(str(exc)), session)
        except BadRow as exc:
            return self.answer(request, unprocessable(str(exc)), session)
        except EpisodeError as exc:
            return self.answer(request, _episode_error(exc, gym=True), session)
        except NoEpisodeHost as exc:
            return error_response(grpc.StatusCode.UNIMPLEMENTED, str(exc))

    async def open(self, request: Request, row: Any, *, replaces_cookie: bool = True) -> EpisodeStart:
        """A new episode for ``row``; ``replaces_cookie``: the caller's cookie session (a client seeding
        again has left its previous episode) is closed."""
        if not isinstance(row, Mapping):
            raise BadRow("the body must be a JSON object (a dataset row)")
        old = self.session_of(request) if replaces_cookie else None
        if old:
            await self.door.host.close(old)
        start = await self.door.host.open(EpisodeSpec(self.environment(request), row=gym_items.episode_row(row),
                                                      seed=gym_items.row_seed(row), client_id="nemo-gym"))
        return start

    def require_session(self, request: Request) -> str:
        session = self.session_of(request)
        if not session:
            raise EpisodeError(EpisodeStatus.SESSION_LOST, "this call carries no session (no cookie "
                               f"{cookie_name(self.environment(request))!r}, no {SESSION_HEADER} header): POST "
                               "/seed_session or /reset first")
        return session

    # --- SimpleResourcesServer ------------------------------------------------------------
    async def seed_session(self, request: Request) -> Response:
        async def work(body: Any) -> Response:
            resources_id = body.get("resources_session_id") if isinstance(body, Mapping) else None
            if isinstance(resources_id, str) and resources_id:  # ResourcesSeedSessionRequest: idempotent
                known = self.resources.get(resources_id)
                if known == _ResourcesIds.CLOSED:
                    raise EpisodeError(EpisodeStatus.CLOSED, f"resources session {resources_id!r} was closed")
                session = known or (await self.open(request, body.get("task_data"), replaces_cookie=False)).session_id
                self.resources.put(resources_id, session)
                return self.answer(request, JSONResponse({"resources_session_id": resources_id}), session)
            return self.answer(request, JSONResponse({}), (await self.open(request, body)).session_id)
        return await self.guarded(request, work)

    async def close_session(self, request: Request) -> Response:
        async def work(body: Any) -> Response:
            resources_id = body.get("resources_session_id") if isinstance(body, Mapping) else None
            if not isinstance(resources_id, str) or not resources_id:
                raise BadRow("the close_session body must carry 'resources_session_id'")
            session = self.resources.get(resources_id)
            self.resources.put(resources_id, _ResourcesIds.CLOSED)
            if session:
                await self.door.host.close(session)
            return JSONResponse({"resources_session_id": resources_id})
        return await self.guarded(request, work)

    async def tool(self, request: Request) -> Response:
        async def work(body: Any) -> Response:
            session = self.require_session(request)
            name = request.path_params["tool"]
            if not isinstance(body, Mapping):
                return self.answer(request, unprocessable(f"the arguments of {name!r} must be a JSON object"),
                                   session)
            result = await self.door.host.call_tool(session, ToolCall(name, dict(body)))
            if result.finished and result.outcome is not None:
                self.outcomes[session] = result.outcome
                while len(self.outcomes) > REMEMBERED_IDS:
                    self.outcomes.popitem(last=False)
            if not result.status.scored and result.status is not EpisodeStatus.RUNNING:
                return self.answer(request, episode_error_response(result.status, result.error, gym=True), session)
            return self.answer(request, JSONResponse({"output": result.output, "reward": result.reward,
                                                      "done": result.finished}), session)
        return await self.guarded(request, work)

    async def verify(self, request: Request) -> Response:
        policy = request.query_params.get("unscored", "error")
        if policy not in ("error", "mask"):
            return bad_request(f"unscored={policy!r}: use 'error' (HTTP error) or 'mask' (mask_sample row)")

        async def work(row: Any) -> Response:
            if not isinstance(row, Mapping):
                raise BadRow("the verify body must be a JSON object (a dataset row plus 'response')")
            session = self.session_of(request)
            if not session:
                return await self.verify_trajectory(request, row, policy)
            try:
                outcome = self.outcomes.pop(session, None) or await self._final(session, row)
            except EpisodeError as exc:
                outcome = EpisodeOutcome(session, exc.status, error=str(exc))
            finally:
                await self.door.host.close(session)
            reply = verify_reply(row, outcome.status, outcome.reward, outcome.components, outcome.error, policy)
            return self.answer(request, reply, session)
        return await self.guarded(request, work)

    async def _final(self, session: str, row: Mapping[str, Any]) -> EpisodeOutcome:
        """The episode's outcome: the one it ended with, else its verification on the response's text."""
        state = await self.door.host.state(session)
        if state.outcome is not None:
            return state.outcome
        return await self.door.host.finish(session, completion_text(row.get("response")))

    async def verify_trajectory(self, request: Request, row: Mapping[str, Any], policy: str) -> Response:
        messages = gym_items.chat_messages(row.get("responses_create_params"), row.get("response"))
        score = await self.door.host.score_trajectory(Trajectory(
            self.environment(request), gym_items.episode_row(row), messages, seed=gym_items.row_seed(row)))
        return verify_reply(row, score.status, score.reward, score.components, score.error, policy)

    # --- GymnasiumServer ------------------------------------------------------------------
    async def reset(self, request: Request) -> Response:
        async def work(row: Any) -> Response:
            start = await self.open(request, row)
            info = {"tools": gym_items.responses_tools(start.tools), "supports_explicit_close": True}
            # The row's own input is the prompt (the agent sends it); a row without one gets the environment's.
            own_prompt = gym_items.prompt_messages(row.get("responses_create_params"))
            observation = None if own_prompt else gym_items.last_user_text(start.messages)
            return self.answer(request, JSONResponse({"observation": observation, "info": info}), start.session_id)
        return await self.guarded(request, work)

    async def step(self, request: Request) -> Response:
        async def work(body: Any) -> Response:
            session = self.require_session(request)
            if not isinstance(body, Mapping):
                raise BadRow("the step body must be a JSON object (the row plus 'response')")
            reply = await run_step(self.door, session, body.get("response"))
            return self.answer(request, reply, session)
        return await self.guarded(request, work)

    async def close(self, request: Request) -> Response:
        session = self.session_of(request)
        if session:
            try:
                await self.door.host.close(session)
            except NoEpisodeHost as exc:
                return error_response(grpc.StatusCode.UNIMPLEMENTED, str(exc))
        return JSONResponse({})

    async def aggregate(self, request: Request) -> Response:
        async def work(body: Any) -> Response:
            rows = body.get("verify_responses") if isinstance(body, Mapping) else None
            if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
                raise BadRow("the aggregate_metrics body must be {'verify_responses': [<verify response>, ...]}")
            return JSONResponse(aggregate_metrics(rows))
        return await self.guarded(request, work)

    async def tools(self, request: Request) -> Response:
        """The environment's tools as Responses function tools (for a row's ``responses_create_params.tools``)."""
        try:
            for info in await self.door.host.list_environments():
                if info.name == self.environment(request):
                    return JSONResponse({"tools": gym_items.responses_tools(info.tools)})
        except NoEpisodeHost as exc:
            return error_response(grpc.StatusCode.UNIMPLEMENTED, str(exc))
        return error_response(grpc.StatusCode.NOT_FOUND, f"unknown environment {self.environment(request)!r}")

    async def reverify_mode(self, _: Request) -> Response:
        return JSONResponse("unsupported")  # ReverifyMode.UNSUPPORTED: /verify ends a stateful session


async def run_step(door: FrontDoor, session: str, response: Any) -> Response:
    """One gymnasium ``/step``: the turn's function calls, or (none) the end of the episode on its text."""
    calls = gym_items.function_calls(response)
    reward, outputs, outcome = 0.0, [], None
    for call in calls:
        call_id = str(call.get("call_id", ""))
        arguments = gym_items.parse_arguments(call.get("arguments"))
        if arguments is None:  # the model's malformed call: answered, scored as the episode goes on
            outputs.append({"call_id": call_id, "output": "error: the arguments are not a JSON object"})
            continue
        result = await door.host.call_tool(session, ToolCall(str(call.get("name", "")), arguments, call_id))
        if not result.status.scored and result.status is not EpisodeStatus.RUNNING:
            await door.host.close(session)
            return episode_error_response(result.status, result.error, gym=True)
        outputs.append({"call_id": call_id, "output": result.output})
        if result.finished:
            outcome = result.outcome or EpisodeOutcome(session, result.status, reward=result.reward)
            break
        reward += result.reward or 0.0
    if not calls:
        outcome = await door.host.finish(session, completion_text(response))
    info: dict[str, Any] = {"tool_outputs": outputs, "episode_status": EpisodeStatus.RUNNING.name}
    if outcome is None:
        return JSONResponse({"observation": None, "reward": reward, "terminated": False, "truncated": False,
                             "info": info})
    await door.host.close(session)
    if not outcome.status.scored:
        return episode_error_response(outcome.status, outcome.error, gym=True)
    info.update(episode_status=outcome.status.name, final_reward=outcome.reward,
                reward_components=dict(outcome.components), step_rewards=list(outcome.step_rewards),
                detail=outcome.detail)
    return JSONResponse({"observation": None, "reward": reward + (outcome.reward or 0.0), "terminated": True,
                         "truncated": False, "info": info})


def verify_reply(row: Mapping[str, Any], status: EpisodeStatus, reward: float | None,
                 components: Mapping[str, float], error: str, policy: str) -> Response:
    """The row with ``reward`` (a scored ending), else an HTTP error or (``mask``) Gym's masked row."""
    comps = {k: float(v) for k, v in components.items()}
    if status.scored and reward is not None:
        return JSONResponse({**row, "reward": float(reward), "reward_components": comps})
    if policy == "mask":
        return JSONResponse({**row, "reward": 0.0, "reward_components": comps, "mask_sample": True,
                             "failure_kind": GYM_FAILURE_KINDS.get(status, "environment_server_failed"),
                             "failure_reason": failure_reason(status, error), "episode_status": status.name})
    return episode_error_response(status, error, gym=True)


def _routes(door: FrontDoor, prefix: str, environment: str | None) -> list[BaseRoute]:
    h = GymEnvironmentDoor(door, environment)
    posts = {"seed_session": h.seed_session, "verify": h.verify, "close_session": h.close_session,
             "aggregate_metrics": h.aggregate, "reset": h.reset, "step": h.step, "close": h.close}
    routes: list[BaseRoute] = []
    for base in (prefix, f"{prefix}/ng-rollout/{{rollout_id}}"):
        routes += [Route(f"{base}/{name}", handler, methods=["POST"]) for name, handler in posts.items()]
        routes.append(Route(f"{base}/reverify_mode", h.reverify_mode, methods=["GET"]))
        routes.append(Route(f"{base}/tools", h.tools, methods=["GET"]))
        routes.append(Route(f"{base}/{{tool}}", h.tool, methods=["POST"]))  # last: any other name is a tool
    return routes


def routes(door: FrontDoor) -> list[BaseRoute]:
    """``/gym-env/{environment}/...``: every environment of the episode host."""
    return _routes(door, "/gym-env/{environment}", None)


def root_routes(environment: str) -> RouteFactory:
    """One environment at ``/seed_session``, ``/verify``, ``/reset``, ``/step``, ``/<tool>``: what a stock
    NeMo Gym config reaches (it calls ``http://host:port/<path>``, no prefix). A tool named like another
    adapter's single-segment POST route is shadowed by it (the root routes come last)."""
    return lambda door: _routes(door, "", environment)
