"""OpenAI-shaped error replies (``{"error": {"message", "type", "param", "code"}}``) for the local
judge endpoint and the fault proxy, so an OpenAI client maps each to its exception class."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The error ``type`` OpenAI's API gives each HTTP status (the client maps the status, not the type).
ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
               405: "invalid_request_error", 413: "invalid_request_error", 429: "requests",
               500: "server_error", 502: "server_error", 503: "server_error"}


def error_body(status: int, message: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """The JSON body of an error reply with HTTP ``status``."""
    return {"error": {"message": message, "type": ERROR_TYPES.get(status, "server_error"),
                      "param": param, "code": code}}


def error_response(status: int, message: str, code: str | None = None, param: str | None = None,
                   headers: Mapping[str, str] | None = None):
    """A Starlette JSONResponse of :func:`error_body`."""
    from starlette.responses import JSONResponse

    return JSONResponse(error_body(status, message, code, param), status_code=status, headers=dict(headers or {}))


class RequestError(ValueError):
    """A request the endpoint refuses: answered with ``status`` and an OpenAI-shaped body."""

    def __init__(self, message: str, *, status: int = 400, code: str | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.param = status, code, param

    def response(self):
        return error_response(self.status, str(self), self.code, self.param)
