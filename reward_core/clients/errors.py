"""The clients' own exceptions: what a caller can act on, named, without a gRPC object to decode.

``EndpointUnreachable`` is raised within seconds when nothing answers at the address (a closed
port, a name that does not resolve, a host that drops packets, a port that speaks something other
than gRPC), instead of a call waiting out its whole deadline and ending in a bare
``DEADLINE_EXCEEDED``. ``ServerUnavailable`` is raised within seconds when a call is answered
UNAVAILABLE after the channel's retries: the server that was connected went away (it drains on
SIGTERM, or has shut down) and no other replica took the call. Both are ``ConnectionError``s, so
``except OSError`` catches them too. ``ServerUnavailable``, the answer of a call, is also a
``grpc.RpcError`` whose ``code()`` is UNAVAILABLE and ``details()`` gRPC's own words, so code that
catches ``grpc.RpcError`` and reads the code (a front door answering 503) keeps working;
``EndpointUnreachable`` comes from the connect check before any call, and is not.

Any other failed call is said in our words too, naming the endpoint: :class:`CallTimedOut`
(DEADLINE_EXCEEDED, naming the ``timeout_s`` that bounded the call and what to change; a
``TimeoutError``), :class:`CallRejected` (the server refused the call: INVALID_ARGUMENT,
RESOURCE_EXHAUSTED, UNAUTHENTICATED, ...; with what it said) and :class:`CallFailed` (their base, for
any other code). These three are also ``grpc.RpcError``s whose ``code()`` and ``details()`` are the
server's, so code that catches ``grpc.RpcError`` and reads the code keeps working; the raw error is
their ``__cause__``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import grpc


class ClientError(Exception):
    """Base of the clients' own exceptions."""


class EndpointUnreachable(ClientError, ConnectionError):
    """No server answered at ``endpoint`` within the connect timeout; ``reason`` says what was found."""

    def __init__(self, endpoint: str, reason: str, service: str = "server") -> None:
        self.endpoint, self.reason, self.service = endpoint, reason, service
        super().__init__(f"cannot connect to the {service} at {endpoint}: {reason}")


class _RpcStatus(grpc.RpcError):
    """The ``grpc.RpcError`` face of a client exception: the status code and message the call ended
    with, and the raw error's trailing metadata."""

    _code: grpc.StatusCode
    _details: str
    _raw: grpc.RpcError | None = None

    def code(self) -> grpc.StatusCode:
        """The status code the call ended with."""
        return self._code

    def details(self) -> str:
        """The server's (or gRPC's) own message."""
        return self._details

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        """The raw error's trailing metadata (e.g. a retry hint), () when none."""
        trailing = getattr(self._raw, "trailing_metadata", None)
        return tuple(trailing() or ()) if callable(trailing) else ()


class ServerUnavailable(ClientError, ConnectionError, _RpcStatus):
    """The server at ``endpoint`` answered UNAVAILABLE (draining) or went away, and no other replica
    took the call. The message says so in our words (:func:`unavailable_message`); ``detail`` (and
    ``details()``) keeps gRPC's raw last word (e.g. ``server is draining``, ``... Failed to connect ...:
    Connection refused``); ``code()`` is UNAVAILABLE."""

    def __init__(self, endpoint: str, detail: str, service: str = "server", raw: grpc.RpcError | None = None) -> None:
        self.endpoint, self.detail, self.service = endpoint, detail, service
        self._code, self._details, self._raw = grpc.StatusCode.UNAVAILABLE, detail, raw
        super().__init__(unavailable_message(endpoint, detail, service))


def unavailable_message(endpoint: str, detail: str, service: str = "server") -> str:
    """What an UNAVAILABLE answer with gRPC's ``detail`` means, in our words, naming ``endpoint``."""
    said = detail.lower()
    if "draining" in said:
        what = "it is draining (shutting down) and takes no new calls"
    elif any(s in said for s in ("connection refused", "failed to connect", "connections to all backends failing")):
        what = "it no longer accepts connections (shutting down or shut down)"
    else:
        what = "it went away (draining or shut down)"
    return f"the {service} at {endpoint} is unavailable: {what}, and no other replica answered"


class CallFailed(ClientError, _RpcStatus):
    """A call the server answered with an error status, said in our words (the base of
    :class:`CallTimedOut` and :class:`CallRejected`; raised as itself for the other codes: INTERNAL, a
    server bug with the server log holding the traceback; UNIMPLEMENTED, an older server...).

    Also a ``grpc.RpcError``, so code that catches that keeps working: ``code()`` and ``details()``
    return the server's status code and its own message, and the raw error is ``__cause__``.
    """

    def __init__(self, endpoint: str, code: grpc.StatusCode, details: str, message: str = "",
                 service: str = "server", raw: grpc.RpcError | None = None) -> None:
        self.endpoint, self.service, self._code, self._details, self._raw = endpoint, service, code, details, raw
        super().__init__(message or f"the {service} at {endpoint} failed the call: {code.name}: {details}")


class CallTimedOut(CallFailed, TimeoutError):
    """DEADLINE_EXCEEDED: no answer within the client's ``timeout_s`` (or the server's own cap)."""

    def __init__(self, endpoint: str, details: str, timeout_s: float, service: str = "server",
                 advice: str = "", raw: grpc.RpcError | None = None) -> None:
        self.timeout_s = timeout_s
        message = (f"the {service} at {endpoint} did not answer within {timeout_s:g} s (timeout_s; gRPC: {details}): "
                   f"raise timeout_s, {advice or 'send less work per call'}, or check the server's load")
        super().__init__(endpoint, grpc.StatusCode.DEADLINE_EXCEEDED, details, message, service, raw)


#: What each refusal means, in our words; the server's own message follows it.
_REFUSALS = {
    grpc.StatusCode.INVALID_ARGUMENT: "refused the request as invalid (a limit, an unknown name, a malformed item)",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "is full (its queue or this client's share): retry later or send less at once",
    grpc.StatusCode.FAILED_PRECONDITION: "cannot do this in its current state",
    grpc.StatusCode.PERMISSION_DENIED: "denied the call",
    grpc.StatusCode.UNAUTHENTICATED: ("did not accept the credentials: check the token "
                                      "(REWARD_SUITE_AUTH_TOKEN / ClientSecurity(auth_token=...))"),
    grpc.StatusCode.OUT_OF_RANGE: "refused an argument out of range",
    grpc.StatusCode.NOT_FOUND: "does not know what the call names",
}


class CallRejected(CallFailed):
    """The server refused the call: INVALID_ARGUMENT (a limit, an unknown task or language),
    RESOURCE_EXHAUSTED (queue full), FAILED_PRECONDITION, PERMISSION_DENIED / UNAUTHENTICATED (the
    token), OUT_OF_RANGE, NOT_FOUND. The message says which, followed by what the server said."""

    def __init__(self, endpoint: str, code: grpc.StatusCode, details: str, service: str = "server",
                 raw: grpc.RpcError | None = None) -> None:
        what = _REFUSALS.get(code, "refused the call")
        message = f"the {service} at {endpoint} {what} ({code.name}): {details}"
        super().__init__(endpoint, code, details, message, service, raw)


def rpc_code(exc: BaseException) -> grpc.StatusCode | None:
    """The status code of a gRPC error (blocking or asyncio), None when it has none."""
    code = getattr(exc, "code", None)
    return code() if callable(code) else None


def rpc_details(exc: BaseException) -> str:
    """The message of a gRPC error, else its code's name."""
    details = getattr(exc, "details", None)
    return (details() if callable(details) else "") or str(rpc_code(exc) or exc)


def typed_call_error(exc: grpc.RpcError, endpoint: str, timeout_s: float, service: str = "server",
                     advice: str = "") -> BaseException:
    """The client exception for a failed call's raw ``exc`` (raise it ``from exc``): ServerUnavailable for
    UNAVAILABLE, CallTimedOut naming ``timeout_s`` (``advice`` completes "raise timeout_s, ..."), CallRejected
    for a refusal, else CallFailed; each keeps ``exc``'s code() and details(). An error that is already the
    clients' own comes back as it is."""
    if isinstance(exc, ClientError):
        return exc
    code, details = rpc_code(exc), rpc_details(exc)
    if code is grpc.StatusCode.UNAVAILABLE:
        return ServerUnavailable(endpoint, details, service, exc)
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return CallTimedOut(endpoint, details, timeout_s, service, advice, exc)
    if code in _REFUSALS:
        return CallRejected(endpoint, code, details, service, exc)
    return CallFailed(endpoint, code or grpc.StatusCode.UNKNOWN, details, service=service, raw=exc)


@contextlib.contextmanager
def typed_errors(endpoint: str, timeout_s: float, service: str = "server", advice: str = "") -> Iterator[None]:
    """Raises a gRPC error from the block as :func:`typed_call_error` says, the raw error as ``__cause__``."""
    try:
        yield
    except grpc.RpcError as exc:
        typed = typed_call_error(exc, endpoint, timeout_s, service, advice)
        if typed is exc:
            raise
        raise typed from exc
