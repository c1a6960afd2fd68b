"""NeMo Gym resources server: ``/gym/{reward}/seed_session``, ``/verify``, ``/aggregate_metrics``.

A NeMo Gym agent (e.g. ``responses_api_agents/simple_agent/app.py``) POSTs the dataset row
to ``/seed_session``, runs the model, then POSTs ``row | {"response": <Responses API
response>}`` to ``/verify`` and reads ``reward`` from the echo; ``/aggregate_metrics``
takes ``{"verify_responses": [...]}``. Shapes are those of nemo-gym 0.7.0
(``nemo_gym/base_resources_server.py``: ``BaseVerifyRequest``/``BaseVerifyResponse``/
``BaseMultiRewardVerifyResponse``, ``SimpleResourcesServer.setup_webserver``;
``nemo_gym/config_types.py``: ``AggregateMetricsRequest``/``AggregateMetrics``;
``nemo_gym/reward_profile.py``: ``compute_aggregate_metrics``). Mapping of one row:

- completion: the ``output_text`` parts of the ``message`` items of ``response.output``,
  joined with "" (as ``resources_servers/math_with_judge/app.py`` does); reasoning and
  tool-call items are skipped.
- metadata: the ``function_call`` items (``{"name", "arguments"}`` each, as JSON under
  ``function_calls``; as ``resources_servers/xlam_fc/app.py`` reads them), when there are any.
- prompt: the last ``user`` message of ``responses_create_params.input`` (its text parts).
- reference: every other top-level field of the row, except Gym's own (``_ng_*``, ``agent_ref``,
  ``task_source``, ``instance_config``...); ``expected_answer`` and ``ground_truth`` become
  ``answer`` unless the row has ``answer`` itself.
- reply: the row echoed with ``reward`` (our score) and ``reward_components``.

A row of Gym's ``code_gen`` server (``verifier_metadata.unit_tests``: LiveCodeBench tests) is
mapped instead by ``gym_code_gen.py`` (Gym's code extraction, the tests as a ``code`` task
reference) and answered in its ``CompCodingVerifyResponse`` shape. Gym's server name ``code_gen``
is served by our ``code`` task when the reward server has no reward of that name
(:data:`REWARD_ALIASES`).

An unscored rollout (our failure) is never a reward. By default ``/verify`` answers an HTTP
error: 504/500/503 (timeout, verifier error, draining), 400 (reference unusable). The agent's
``raise_for_status`` (``nemo_gym/server_utils.py``) raises it, and NeMo-RL's
``_typed_gym_failure`` (``nemo_rl/environments/nemo_gym.py``) retries a 5xx as infrastructure
(``GymTransportError``) and gives up on a 4xx as a data failure. With ``?unscored=mask`` (or
``unscored="mask"`` for :func:`root_routes`) it answers 200 in the shape Gym's own
``judge_failsafe`` (``nemo_gym/judge.py``) uses: ``reward: 0.0`` with ``mask_sample: true``,
``failure_kind`` and ``failure_reason``, which Gym's metrics and NeMo-RL exclude. ``failure_kind``
is a name of Gym 0.7's shared vocabulary (``nemo_gym/failure_kinds.py``; :data:`FAILURE_KINDS`):
``judge_failed``, ``judge_unparseable``, ``verifier_error``, ``shutdown``.

A failed LLM judge (JUDGE_FAILED, JUDGE_RATE_LIMITED, JUDGE_UNPARSEABLE) is answered as Gym's own
judge servers answer one, unless ``?unscored=error`` asks for an HTTP error: 200 with the masked row,
plus the failures-sidecar keys ``judge_failsafe`` adds (``_ng_failure_class``: ``judge_failed``, or
``judge_invalid`` for an unparseable verdict as Gym's reverification labels it, and
``_ng_failure_judge_error``), so Gym's rollout collection files it under ``<output>_failures.jsonl``,
retryable on resume. An HTTP error for an unscored row carries ``failure_kind``/``failure_reason``
in its body too.

NeMo Gym's ``ServerClient`` calls ``http://{host}:{port}{url_path}`` with ``url_path="/verify"``
(no path prefix), so a stock Gym config reaches :func:`root_routes` (one reward at ``/``),
not the ``/gym/{reward}/`` routes.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from collections.abc import Mapping
from typing import Any, Literal

import grpc
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from reward_core.contract import Rollout, RolloutResult, RolloutStatus
from reward_service.http_door import gym_code_gen
from reward_service.http_door.door import FrontDoor, RouteFactory
from reward_service.http_door.errors import bad_request, error_response, retry_after_headers
from reward_service.http_door.groups import is_groupwise, no_group_refusal
from reward_service.http_door.upstream import UpstreamError, upstream_error

UnscoredPolicy = Literal["error", "mask"]

#: Row fields that are the protocol's, not the task's (never sent as reference).
PROTOCOL_FIELDS = frozenset({"responses_create_params", "response", "reward", "reward_components", "mask_sample",
                             "failure_kind", "failure_reason", "agent_ref", "task_source", "instance_config",
                             "ng_perf", "ng_trajectory", "verification_skipped"})
#: Row fields renamed into our reference (the row's own ``answer`` wins).
REFERENCE_RENAMES = {"expected_answer": "answer", "ground_truth": "answer"}
TASK_INDEX, ROLLOUT_INDEX = "_ng_task_index", "_ng_rollout_index"  # nemo_gym/global_config.py
#: Gym's resources-server names served by one of our rewards when the reward server has no reward of that name.
REWARD_ALIASES = {"code_gen": "code"}
#: Rollout metadata carrying the response's function calls as JSON (read by the ``tool_call`` task).
FUNCTION_CALLS_METADATA = "function_calls"

_UNSCORED_CODES = {RolloutStatus.TIMEOUT: grpc.StatusCode.DEADLINE_EXCEEDED,
                   RolloutStatus.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
                   RolloutStatus.INVALID_REFERENCE: grpc.StatusCode.FAILED_PRECONDITION,
                   RolloutStatus.UNKNOWN_TASK: grpc.StatusCode.INVALID_ARGUMENT,
                   RolloutStatus.INVALID_ROLLOUT: grpc.StatusCode.INVALID_ARGUMENT,
                   RolloutStatus.JUDGE_FAILED: grpc.StatusCode.UNAVAILABLE,
                   RolloutStatus.JUDGE_RATE_LIMITED: grpc.StatusCode.RESOURCE_EXHAUSTED}
#: Gym 0.7's ``failure_kind`` (``nemo_gym/failure_kinds.py``) for each unscored status it can mask. Gym has no
#: rate-limit kind for judges: its ``judge_failsafe`` files every failed judge call as ``judge_failed``.
FAILURE_KINDS = {RolloutStatus.JUDGE_FAILED: "judge_failed", RolloutStatus.JUDGE_RATE_LIMITED: "judge_failed",
                 RolloutStatus.JUDGE_UNPARSEABLE: "judge_unparseable", RolloutStatus.ERROR: "verifier_error",
                 RolloutStatus.TIMEOUT: "verifier_error", RolloutStatus.UNAVAILABLE: "shutdown",
                 RolloutStatus.UNSPECIFIED: "verifier_error"}
#: The failures-sidecar class Gym writes for a judge's failure (``judge_failsafe``; ``judge_invalid`` is what its
#: reverification calls an unparseable verdict).
JUDGE_FAILURE_CLASSES = {"judge_failed": "judge_failed", "judge_unparseable": "judge_invalid"}
#: Most characters of ``failure_reason`` (``judge_failsafe`` keeps 2000).
FAILURE_REASON_CHARS = 2000


class BadRow(ValueError):
    """The verify body is not a NeMo Gym verify request (answered 422, as FastAPI would)."""


class NotJson(BadRow):
    """The body is not JSON at all (answered 400)."""


def completion_text(response: Any) -> str:
    """The assistant's text: ``output_text`` parts of ``message`` items, joined with ""."""
    if not isinstance(response, Mapping) or not isinstance(response.get("output"), list):
        raise BadRow("'response' must be a Responses API response object with an 'output' list")
    texts = []
    for item in response["output"]:
        if isinstance(item, Mapping) and item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, Mapping) and part.get("type") == "output_text":
                    texts.append(str(part.get("text", "")))
    return "".join(texts)


def prompt_text(params: Any) -> str:
    """The last user message of ``responses_create_params.input`` (a bare string is the prompt)."""
    if not isinstance(params, Mapping) or "input" not in params:
        raise BadRow("'responses_create_params' must be an object with an 'input'")
    items = params["input"]
    if isinstance(items, str):
        return items
    if not isinstance(items, list):
        raise BadRow("'responses_create_params.input' must be a string or a list of items")
    for item in reversed(items):
        if isinstance(item, Mapping) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            return "".join(str(p.get("text", "")) for p in content or []
                           if isinstance(p, Mapping) and p.get("type") == "input_text")
    return ""


def reference_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """The task fields of a row as our reference (see the module docstring)."""
    reference = {k: v for k, v in row.items() if k not in PROTOCOL_FIELDS and not k.startswith("_")}
    for theirs, ours in REFERENCE_RENAMES.items():
        if theirs in reference and ours not in reference:
            reference[ours] = reference.pop(theirs)
    return reference


def function_calls(response: Any) -> list[dict[str, Any]]:
    """The ``function_call`` items of ``response.output`` as ``{"name", "arguments"}`` (as sent), in order."""
    output = response.get("output") if isinstance(response, Mapping) else None
    return [{"name": item.get("name"), "arguments": item.get("arguments")} for item in output or []
            if isinstance(item, Mapping) and item.get("type") == "function_call"]


def rollout_of(reward: str, row: Any) -> Rollout:
    """One rollout from one verify body; raises BadRow when it is not one."""
    if not isinstance(row, Mapping):
        raise BadRow("the verify body must be a JSON object (a dataset row plus 'response')")
    calls = function_calls(row.get("response"))
    return Rollout(id="0", task=reward, completion=completion_text(row.get("response")),
                   reference=reference_of(row), prompt=prompt_text(row.get("responses_create_params")),
                   metadata={FUNCTION_CALLS_METADATA: json.dumps(calls)} if calls else {})


def answer_fields(row: Mapping[str, Any], result: RolloutResult) -> dict[str, Any]:
    """``extracted_answer`` as Gym's answer-checking servers reply it (``math_with_judge``'s and ``mcqa``'s
    verify responses: the answer read from the response, null when none was): for a row with an
    ``expected_answer``, from our result's ``extracted``; nothing for other rows."""
    return {"extracted_answer": result.extracted or None} if "expected_answer" in row else {}


def verify_reply(row: Mapping[str, Any], result: RolloutResult, unscored: UnscoredPolicy | None) -> Response:
    """The row echoed with the reward, or (unscored) Gym's masked-failure row or an HTTP error.

    ``unscored`` None (no ``?unscored=``): a judge's failure is masked, as Gym's ``judge_failsafe`` does,
    and any other unscored row is an HTTP error.
    """
    components = {k: float(v) for k, v in result.components.items()}
    if result.scored:
        return JSONResponse({**row, "reward": result.score, "reward_components": components,
                             **answer_fields(row, result)})
    reason = f"rollout unscored ({result.status.name}): {result.error or 'no detail'}"[:FAILURE_REASON_CHARS]
    kind = FAILURE_KINDS.get(result.status)
    judge_class = JUDGE_FAILURE_CLASSES.get(kind or "")
    if kind is not None and (unscored == "mask" or (unscored is None and judge_class is not None)):
        instance = row.get("instance_config")
        masked = {**row, "reward": 0.0, "reward_components": components, "mask_sample": True,
                  "failure_kind": kind, "failure_reason": reason,
                  "instance_config": {**(instance if isinstance(instance, dict) else {}), "mask_sample": True}}
        if judge_class is not None:
            masked.update({"_ng_failure_class": judge_class, "_ng_failure_judge_error": reason})
        return JSONResponse(masked)
    response = error_response(_UNSCORED_CODES.get(result.status, grpc.StatusCode.INTERNAL), reason,
                              retry_after_headers(result.error))
    if kind is None:
        return response
    body = {**json.loads(bytes(response.body)), "failure_kind": kind, "failure_reason": reason}
    return JSONResponse(body, status_code=response.status_code, headers={
        k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-type")})


def _stats(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "max": max(values), "min": min(values),
            "median": statistics.median(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0}


def _numeric_fields(row: Mapping[str, Any]) -> dict[str, float]:
    out = {k: float(v) for k, v in row.items()
           if not k.startswith("_") and isinstance(v, (int, float)) and k != "mask_sample"}
    for name, value in (row.get("reward_components") or {}).items():
        if isinstance(value, (int, float)):
            out[f"reward_components.{name}"] = float(value)
    return out


def _describe(rows: list[Mapping[str, Any]]) -> dict[str, float]:
    columns: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        for key, value in _numeric_fields(row).items():
            columns[key].append(value)
    return {f"{stat}/{key}": value for key, values in columns.items() for stat, value in _stats(values).items()}


def aggregate_metrics(verify_responses: list[Mapping[str, Any]]) -> dict[str, Any]:
    """``AggregateMetrics`` as Gym's ``compute_aggregate_metrics`` builds its baseline.

    mean/max/min/median/std (sample std, 0 for one value) of every top-level numeric field
    (and each ``reward_components`` entry), per ``_ng_task_index`` and overall; masked rows
    are left out of the statistics and counted under ``coverage/*``. Not reproduced:
    histograms, repeat-level confidence intervals, ``perf_summary``.
    """
    if not verify_responses:
        return {"group_level_metrics": [], "agent_metrics": {}, "key_metrics": {}, "repeat_level_metrics": []}
    scored = [r for r in verify_responses if not r.get("mask_sample")]
    masked = len(verify_responses) - len(scored)
    coverage = {} if not masked else {
        "coverage/measured_rollouts": len(scored), "coverage/masked_rollouts": masked,
        "coverage/measured_tasks": len({r.get(TASK_INDEX, 0) for r in scored}),
        "coverage/fully_masked_tasks": len({r.get(TASK_INDEX, 0) for r in verify_responses}
                                           - {r.get(TASK_INDEX, 0) for r in scored})}
    by_task: dict[Any, list[Mapping[str, Any]]] = defaultdict(list)
    for row in scored:
        by_task[row.get(TASK_INDEX, 0)].append(row)
    groups = [{TASK_INDEX: task, "num_rollouts": len(rows), **_describe(rows)}
              for task, rows in sorted(by_task.items())]
    agent = {**_describe(scored), **coverage}
    agent["num_repeats"] = len({r.get(ROLLOUT_INDEX, 0) for r in verify_responses})
    key = {**{k: v for k, v in agent.items() if k.startswith("mean/")}, **coverage}
    return {"group_level_metrics": groups, "agent_metrics": agent, "key_metrics": key, "repeat_level_metrics": []}


async def json_body(request: Request) -> Any:
    """The request's JSON body (an empty body is ``{}``); NotJson when it is not JSON."""
    try:
        return json.loads(await request.body() or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise NotJson(f"the body is not JSON: {exc}") from None


def unprocessable(message: str) -> JSONResponse:
    """Gym's 422 for a request it cannot use (the gRPC-style error body its clients read)."""
    return JSONResponse({"code": grpc.StatusCode.INVALID_ARGUMENT.value[0], "message": message, "details": []},
                        status_code=422)


def _handlers(door: FrontDoor, fixed_reward: str | None, default_unscored: UnscoredPolicy | None) -> dict[str, Any]:
    """The endpoint functions, for a reward from the path (``fixed_reward`` None) or a fixed one."""

    async def reward_name(request: Request) -> str:
        name = fixed_reward or request.path_params["reward"]
        try:
            known = await door.up.tasks_by_name()
        except grpc.RpcError as exc:  # gRPC's own or a client's typed error: same code() and details()
            raise upstream_error(exc) from None
        if name not in known and REWARD_ALIASES.get(name) in known:
            name = REWARD_ALIASES[name]
        if name not in known:
            raise LookupError(f"unknown reward {name!r}: the reward server has {sorted(known)}")
        return name

    async def guarded(request: Request, work) -> Response:
        try:
            return await work(await reward_name(request), await json_body(request))
        except LookupError as exc:
            return bad_request(str(exc))
        except BadRow as exc:
            return bad_request(str(exc)) if isinstance(exc, NotJson) else unprocessable(str(exc))
        except gym_code_gen.InvalidUnitTests as exc:
            return unprocessable(str(exc))
        except UpstreamError as exc:
            return error_response(exc.code, str(exc))

    async def verify(request: Request) -> Response:
        policy = request.query_params.get("unscored", default_unscored)
        if policy not in ("error", "mask", None):
            return bad_request(f"unscored={policy!r}: use 'error' (HTTP error) or 'mask' (mask_sample row)")

        async def work(name: str, row: Any) -> Response:
            if gym_code_gen.is_code_gen_row(row):
                return await verify_code_gen(name, row, policy)
            if await is_groupwise(door, name):
                return no_group_refusal(name, "NeMo Gym", "/verify scores one row per call, and a row has no "
                                        "group field")
            [result] = await door.up.score([rollout_of(name, row)])
            return verify_reply(row, result, policy)
        return await guarded(request, work)

    async def verify_code_gen(name: str, row: Mapping[str, Any], policy: UnscoredPolicy | None) -> Response:
        """A NeMo Gym ``code_gen`` row: LiveCodeBench tests on our ``code`` task (``gym_code_gen.py``)."""
        job = gym_code_gen.rollout_of(name, row, completion_text(row.get("response")),
                                      prompt_text(row.get("responses_create_params")))
        start = time.monotonic()
        [result] = await door.up.score([job.rollout])
        if not result.scored:
            return verify_reply(row, result, policy)
        return JSONResponse(gym_code_gen.verify_response(row, job, result, time.monotonic() - start))

    async def seed_session(request: Request) -> Response:
        async def work(_: str, body: Any) -> Response:
            if not isinstance(body, Mapping):
                raise BadRow("the seed_session body must be a JSON object")
            session = body.get("resources_session_id")  # ResourcesSeedSessionRequest; else the legacy row
            return JSONResponse({"resources_session_id": session} if isinstance(session, str) and session else {})
        return await guarded(request, work)

    async def close_session(request: Request) -> Response:
        async def work(_: str, body: Any) -> Response:
            session = body.get("resources_session_id") if isinstance(body, Mapping) else None
            if not isinstance(session, str):
                raise BadRow("the close_session body must carry 'resources_session_id'")
            return JSONResponse({"resources_session_id": session})
        return await guarded(request, work)

    async def aggregate(request: Request) -> Response:
        async def work(_: str, body: Any) -> Response:
            rows = body.get("verify_responses") if isinstance(body, Mapping) else None
            if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
                raise BadRow("the aggregate_metrics body must be {'verify_responses': [<verify response>, ...]}")
            return JSONResponse(aggregate_metrics(rows))
        return await guarded(request, work)

    async def reverify_mode(request: Request) -> Response:
        try:
            await reward_name(request)
        except LookupError as exc:
            return bad_request(str(exc))
        return JSONResponse("stateless")  # ReverifyMode.STATELESS: /verify keeps no state

    return {"verify": verify, "seed_session": seed_session, "close_session": close_session,
            "aggregate_metrics": aggregate, "reverify_mode": reverify_mode}


def _routes(door: FrontDoor, prefix: str, fixed_reward: str | None,
            unscored: UnscoredPolicy | None) -> list[BaseRoute]:
    h = _handlers(door, fixed_reward, unscored)
    posts = [Route(f"{prefix}/{name}", h[name], methods=["POST"])
             for name in ("seed_session", "verify", "close_session", "aggregate_metrics")]
    # Gym with observability on prefixes /verify with the rollout id (nemo_gym/server_utils.py)
    posts.append(Route(f"{prefix}/ng-rollout/{{rollout_id}}/verify", h["verify"], methods=["POST"]))
    return [*posts, Route(f"{prefix}/reverify_mode", h["reverify_mode"], methods=["GET"])]


def routes(door: FrontDoor) -> list[BaseRoute]:
    """``/gym/{reward}/...``: every task and composite of the reward server."""
    return _routes(door, "/gym/{reward}", None, None)


def root_routes(reward: str, unscored: UnscoredPolicy | None = None) -> RouteFactory:
    """One reward at ``/seed_session``, ``/verify``... : what a stock NeMo Gym config can reach (``unscored``
    None: judge failures masked, other unscored rows HTTP errors; see :func:`verify_reply`)."""
    return lambda door: _routes(door, "", reward, unscored)
