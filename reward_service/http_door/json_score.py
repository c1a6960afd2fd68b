"""Our own contract as JSON: ``POST /v1/score`` and ``GET /v1/tasks`` (gRPC-JSON transcoding).

Single calls are merged into batches like every adapter's (group statistics recomputed per
call); a call with its own ``itemTimeoutS`` or more rollouts than a merged batch holds goes
upstream as it is. The body of ``/v1/score`` is a ``ScoreRequest`` in protobuf's JSON mapping (field names in
lowerCamelCase or as in the .proto; ``reference`` any JSON object, or a bare gold string or number, which
becomes ``{"answer": ...}`` as the Python client makes it); the answer is the
``ScoreResponse`` the same way, every field present. Errors are transcoding's: the gRPC
status as HTTP status and a ``google.rpc.Status`` body. For curl users and languages
without gRPC::

    curl -s localhost:8080/v1/score -d '{"rollouts": [{"id": "a", "task": "gsm8k",
         "completion": "#### 4", "reference": {"answer": "4"}}]}'
"""

from __future__ import annotations

import json
import time

import grpc
from google.protobuf import json_format
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from reward.v1 import reward_pb2 as pb
from reward_core import convert
from reward_core.contract import InvalidRollout, ScoreBatchResult, group_stats, normalize_reference
from reward_core.grpc_common import RequestRejected, check_ids
from reward_service.http_door.door import FrontDoor
from reward_service.http_door.errors import bad_request, error_response, upstream_response
from reward_service.http_door.upstream import UpstreamError


def with_references_normalized(body: object) -> object:
    """``body`` with each rollout's ``reference`` as the Python client sends it: a bare gold (string or
    number) becomes ``{"answer": ...}`` (``normalize_reference``); raises InvalidRollout for another shape."""
    rollouts = body.get("rollouts") if isinstance(body, dict) else None
    if not isinstance(rollouts, list):
        return body
    normalized = []
    for i, rollout in enumerate(rollouts):
        if isinstance(rollout, dict) and "reference" in rollout:
            try:
                rollout = {**rollout, "reference": normalize_reference(rollout["reference"])}
            except InvalidRollout as exc:
                raise InvalidRollout(f"rollout {i} ({rollout.get('id', '')!r}): {exc}") from None
        normalized.append(rollout)
    return {**body, "rollouts": normalized}


def to_json(message) -> dict:
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


async def _score(door: FrontDoor, message: pb.ScoreRequest) -> pb.ScoreResponse:
    """Small requests with the server's default item limit join the micro-batcher (their group
    statistics are recomputed from their own results, exactly as the server computes them);
    others go upstream as they are."""
    rollouts = [convert.rollout_from_proto(r) for r in message.rollouts]
    if message.item_timeout_s or len(message.rollouts) > door.up.config.max_batch:
        return convert.batch_to_proto(await door.up.score_request(rollouts, message.request_id,
                                                                  message.item_timeout_s))
    check_ids((r.id for r in message.rollouts), "rollout")  # the batcher renames ids: check them here
    start = time.perf_counter()
    results = await door.up.score(rollouts)
    elapsed_ms = (time.perf_counter() - start) * 1000.0
    return convert.batch_to_proto(ScoreBatchResult(message.request_id, results, group_stats(results), elapsed_ms))


def routes(door: FrontDoor) -> list[BaseRoute]:
    async def score(request: Request) -> Response:
        try:
            body = with_references_normalized(json.loads(await request.body() or b"{}"))
            message = json_format.ParseDict(body, pb.ScoreRequest())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return bad_request(f"the body is not JSON: {exc}")
        except InvalidRollout as exc:
            return bad_request(f"the body is not a reward.v1.ScoreRequest: {exc}")
        except json_format.ParseError as exc:
            return bad_request(f"the body is not a reward.v1.ScoreRequest: {exc}")
        try:
            response = await _score(door, message)
        except UpstreamError as exc:
            return error_response(exc.code, str(exc))
        except RequestRejected as exc:
            return error_response(exc.code, str(exc))
        return JSONResponse(to_json(response))

    async def tasks(_: Request) -> Response:
        try:
            infos = await door.up.reward.list_tasks()
        except grpc.RpcError as exc:  # gRPC's own or a client's typed error: same code() and details()
            return upstream_response(exc)
        return JSONResponse(to_json(pb.ListTasksResponse(tasks=[convert.task_info_to_proto(t) for t in infos])))

    return [Route("/v1/score", score, methods=["POST"]), Route("/v1/tasks", tasks, methods=["GET"])]
