"""The clients' own exceptions: what a caller can act on, named, without a gRPC object to decode.

``EndpointUnreachable`` is raised within seconds when nothing answers at the address (a closed
port, a name that does not resolve, a host that drops packets, a port that speaks something other
than gRPC), instead of a call waiting out its whole deadline and ending in a bare
``DEADLINE_EXCEEDED``. ``ServerUnavailable`` is raised within seconds when a server that was
connected went away (it drains on SIGTERM, or has shut down) and no other replica took the call.
Both are ``ConnectionError``s, so ``except OSError`` catches them too.
"""

from __future__ import annotations


class ClientError(Exception):
    """Base of the clients' own exceptions."""


class EndpointUnreachable(ClientError, ConnectionError):
    """No server answered at ``endpoint`` within the connect timeout; ``reason`` says what was found."""

    def __init__(self, endpoint: str, reason: str, service: str = "server") -> None:
        self.endpoint, self.reason, self.service = endpoint, reason, service
        super().__init__(f"cannot connect to the {service} at {endpoint}: {reason}")


class ServerUnavailable(ClientError, ConnectionError):
    """The server at ``endpoint`` answered UNAVAILABLE (draining) or went away, and no other replica
    took the call. The message says so in our words (:func:`unavailable_message`); ``detail`` keeps
    gRPC's raw last word (e.g. ``server is draining``, ``... Failed to connect ...: Connection refused``)."""

    def __init__(self, endpoint: str, detail: str, service: str = "server") -> None:
        self.endpoint, self.detail, self.service = endpoint, detail, service
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
