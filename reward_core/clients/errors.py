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
    took the call; ``detail`` is gRPC's last word (e.g. ``server is draining``, ``Connection refused``)."""

    def __init__(self, endpoint: str, detail: str, service: str = "server") -> None:
        self.endpoint, self.detail, self.service = endpoint, detail, service
        super().__init__(f"the {service} at {endpoint} is unavailable: the server is draining or shut down "
                         f"and no other replica answered ({detail})")
