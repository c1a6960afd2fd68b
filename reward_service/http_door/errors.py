"""gRPC status -> HTTP status, and the JSON error body every adapter answers with.

The mapping is the one gRPC-JSON transcoding uses (google/rpc/code.proto); the body is a
``google.rpc.Status`` as JSON: ``{"code": <grpc code number>, "message": ..., "details": []}``.
"""

from __future__ import annotations

import math

import grpc
from starlette.requests import Request
from starlette.responses import JSONResponse

from reward_core.clients.errors import ClientError
from reward_core.contract import retry_after_hint
from reward_service.http_door.upstream import upstream_message

HTTP_STATUS = {
    grpc.StatusCode.OK: 200,
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500,
}


def error_response(code: grpc.StatusCode, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The HTTP answer for a failed call: transcoding's status, a google.rpc.Status body.

    503 and 429 carry ``Retry-After`` (seconds) so HTTP clients that honour it back off.
    """
    status = HTTP_STATUS.get(code, 500)
    extra = dict(headers or {})
    if status in (429, 503):
        extra.setdefault("Retry-After", "1")
    return JSONResponse({"code": code.value[0], "message": message, "details": []}, status_code=status,
                        headers=extra)


def client_error_code(exc: ClientError | grpc.RpcError) -> grpc.StatusCode:
    """The status code of a failed upstream call: the call's own (every typed client error but
    EndpointUnreachable is a ``grpc.RpcError`` too), UNAVAILABLE for an upstream nothing answers at."""
    code = exc.code() if isinstance(exc, grpc.RpcError) else None
    return code if isinstance(code, grpc.StatusCode) else grpc.StatusCode.UNAVAILABLE


def upstream_response(exc: grpc.RpcError) -> JSONResponse:
    """The answer for a failed upstream call: its code's HTTP status, :func:`upstream_message`."""
    return error_response(exc.code(), upstream_message(exc))


async def upstream_failure(_: Request, exc: Exception) -> JSONResponse:
    """The app's last word on an upstream call that failed where no adapter answered it (e.g. an
    environment list while the EnvironmentService drains): transcoding's status for the call's code,
    the client's message in our words (naming the upstream), never a bare 500 page."""
    if not isinstance(exc, (ClientError, grpc.RpcError)):  # (registered for these two only)
        raise exc
    message = str(exc) if isinstance(exc, ClientError) else (exc.details() or "")
    return error_response(client_error_code(exc), message or "the upstream call failed")


def retry_after_headers(error: str) -> dict[str, str]:
    """``Retry-After`` (whole seconds, rounded up) from an unscored rollout's retry hint, or none."""
    hint = retry_after_hint(error)
    return {"Retry-After": str(max(1, math.ceil(hint)))} if hint is not None else {}


def bad_request(message: str) -> JSONResponse:
    """400 for a body this adapter cannot read (not JSON, wrong fields), saying what is wrong."""
    return error_response(grpc.StatusCode.INVALID_ARGUMENT, message)
