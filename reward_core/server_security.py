"""The server half of the suite's security, shared by the reward, reward-model and sandbox servers.

* TLS: ``--tls-cert``/``--tls-key`` (PEM), and ``--tls-client-ca`` for mutual TLS
  (``grpc.ssl_server_credentials``; clients must then present a certificate that CA signed).
* A bearer token (``--auth-token-file``, or ``REWARD_SUITE_AUTH_TOKEN`` for containers),
  checked by a ``grpc.ServerInterceptor`` on every call except health checks and reflection,
  which stay open for Kubernetes probes and ``grpcurl list``.
* A bind policy: a server refuses to listen on a non-loopback address (0.0.0.0, ::, a LAN IP)
  unless TLS or a token protects it, or ``--insecure`` says the network already does.

``prepare(config, host)`` reads the files, checks the policy and returns a
:class:`ServerSecurity`: its ``interceptors()`` go to ``grpc.server(...)``, its ``bind()``
adds the port. Call it before any worker process or port exists, so a refused start costs nothing.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import logging
import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import grpc.aio

from reward_core.channel_security import (
    AUTH_METADATA_KEY,
    ENV_PREFIX,
    TOKEN_ENV,
    read_token_file,
    token_from_env,
)

logger = logging.getLogger(__name__)

#: Services any caller may use without the token: health (probes) and reflection (grpcurl list).
OPEN_SERVICES = ("grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection",
                 "grpc.reflection.v1.ServerReflection")
HOW_TO_AUTHENTICATE = (f"send metadata '{AUTH_METADATA_KEY}: Bearer <token>' (our clients: --auth-token-file, "
                       f"or the {TOKEN_ENV} environment variable)")


@dataclass(frozen=True)
class ServerSecurityConfig:
    """TLS, token and bind policy of one server; the token itself is read at start, never stored here."""

    tls_cert: str = field(default="", metadata={"help": "PEM certificate chain: serve TLS (needs --tls-key)"})
    tls_key: str = field(default="", metadata={"help": "PEM private key of --tls-cert"})
    tls_client_ca: str = field(default="", metadata={
        "help": "PEM CA bundle: require client certificates it signed (mutual TLS; needs --tls-cert)"})
    auth_token_file: str = field(default="", metadata={
        "help": f"file holding the bearer token every call must carry (else the {TOKEN_ENV} variable; "
                "neither: no token)"})
    insecure: bool = field(default=False, metadata={
        "help": "allow a non-loopback bind with neither TLS nor a token (a trusted network only)"})

    def __post_init__(self) -> None:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("TLS needs both --tls-cert and --tls-key (PEM files), or neither")
        if self.tls_client_ca and not self.tls_cert:
            raise ValueError("--tls-client-ca (mutual TLS) needs TLS: add --tls-cert and --tls-key")

    @property
    def uses_tls(self) -> bool:
        return bool(self.tls_cert)


def is_loopback(host: str) -> bool:
    """True when ``host`` (an IP, ``[v6]`` or a name) can only be reached from this machine."""
    host = host.strip().strip("[]")
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    if host.lower() == "localhost":
        return True
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)


def check_bind_policy(host: str, *, tls: bool, token: bool, insecure: bool) -> None:
    """Raises ValueError when ``host`` is reachable from other machines and nothing protects the server."""
    if tls or token or insecure or is_loopback(host):
        return
    raise ValueError(
        f"refusing to listen on {host!r} without protection: anyone who can reach it could run calls "
        "(and, on the sandbox or the code task, code). Either serve TLS (--tls-cert and --tls-key), "
        f"require a token (--auth-token-file or the {TOKEN_ENV} environment variable), or pass --insecure "
        "if the network itself is trusted; or bind loopback (--host 127.0.0.1)")


class TokenAuthInterceptor(grpc.ServerInterceptor):
    """Answers UNAUTHENTICATED to calls without ``authorization: Bearer <token>``; open services pass."""

    def __init__(self, token: str, open_services: tuple[str, ...] = OPEN_SERVICES) -> None:
        if not token:
            raise ValueError("token is empty")
        self._token = token.encode()
        self._open = tuple(f"/{name}/" for name in open_services)

    def intercept_service(self, continuation: Callable, handler_call_details: grpc.HandlerCallDetails):
        method = handler_call_details.method
        if method.startswith(self._open):
            return continuation(handler_call_details)
        problem = self._problem(handler_call_details.invocation_metadata or ())
        handler = continuation(handler_call_details)
        if problem is None or handler is None:
            return handler
        logger.warning("refused %s: %s", method, problem)
        return _rejecting(handler, f"{problem}; {HOW_TO_AUTHENTICATE}")

    def _problem(self, metadata) -> str | None:
        values = [value for key, value in metadata if key == AUTH_METADATA_KEY]
        if not values:
            return "this server requires a bearer token and the call carried none"
        scheme, _, presented = values[0].partition(" ")
        if scheme.lower() != "bearer" or not presented:
            return f"the {AUTH_METADATA_KEY} metadata is not 'Bearer <token>'"
        if not hmac.compare_digest(presented.strip().encode(), self._token):
            return "the bearer token is not accepted"
        return None


class AioTokenAuthInterceptor(grpc.aio.ServerInterceptor):
    """The ``grpc.aio`` twin of :class:`TokenAuthInterceptor` (same checks, same messages)."""

    def __init__(self, token: str, open_services: tuple[str, ...] = OPEN_SERVICES) -> None:
        self._sync = TokenAuthInterceptor(token, open_services)

    async def intercept_service(self, continuation: Callable, handler_call_details: grpc.HandlerCallDetails):
        method = handler_call_details.method
        if method.startswith(self._sync._open):
            return await continuation(handler_call_details)
        problem = self._sync._problem(handler_call_details.invocation_metadata or ())
        handler = await continuation(handler_call_details)
        if problem is None or handler is None:
            return handler
        logger.warning("refused %s: %s", method, problem)
        return _rejecting_aio(handler, f"{problem}; {HOW_TO_AUTHENTICATE}")


def _rejecting_aio(handler: grpc.RpcMethodHandler, message: str) -> grpc.RpcMethodHandler:
    """An aio handler of the same kind as ``handler`` that aborts every call UNAUTHENTICATED."""
    async def reject(_request, context: grpc.aio.ServicerContext):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    async def reject_stream(_request, context: grpc.aio.ServicerContext):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
        yield  # pragma: no cover -- makes this an async generator, as streaming handlers are

    kwargs = dict(request_deserializer=handler.request_deserializer,
                  response_serializer=handler.response_serializer)
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(reject_stream, **kwargs)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(reject, **kwargs)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(reject_stream, **kwargs)
    return grpc.unary_unary_rpc_method_handler(reject, **kwargs)


def _rejecting(handler: grpc.RpcMethodHandler, message: str) -> grpc.RpcMethodHandler:
    """A handler of the same kind as ``handler`` that aborts every call UNAUTHENTICATED."""

    def reject(_request, context: grpc.ServicerContext):
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    kwargs = dict(request_deserializer=handler.request_deserializer,
                  response_serializer=handler.response_serializer)
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(reject, **kwargs)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(reject, **kwargs)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(reject, **kwargs)
    return grpc.unary_unary_rpc_method_handler(reject, **kwargs)


@dataclass(frozen=True)
class ServerSecurity:
    """Security ready to apply: TLS credentials (or None: plaintext) and the token (or "": none)."""

    credentials: grpc.ServerCredentials | None = None
    token: str = field(default="", repr=False)
    mutual_tls: bool = False

    def interceptors(self) -> list[grpc.ServerInterceptor]:
        return [TokenAuthInterceptor(self.token)] if self.token else []

    def aio_interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        return [AioTokenAuthInterceptor(self.token)] if self.token else []

    def bind(self, server: grpc.Server, host: str, port: int) -> int:
        """Binds ``host:port`` (port 0: any free one), TLS or plaintext; returns the port, OSError if it cannot."""
        address = f"{host}:{port}"
        try:
            if self.credentials is None:
                bound = server.add_insecure_port(address)
            else:
                bound = server.add_secure_port(address, self.credentials)
        except RuntimeError as exc:
            raise OSError(f"could not bind {address}: {exc}") from exc
        if bound == 0:
            raise OSError(f"could not bind {address}")
        return bound

    def describe(self) -> str:
        transport = "mutual TLS" if self.mutual_tls else "TLS" if self.credentials is not None else "plaintext"
        return f"{transport}, {'bearer token required' if self.token else 'no token'}"


def prepare(config: ServerSecurityConfig, host: str, environ: Mapping[str, str] | None = None) -> ServerSecurity:
    """Reads the PEM files and the token, and checks the bind policy for ``host``.

    Raises ValueError (policy, empty token file) or OSError (unreadable file) with the file named.
    """
    token = read_token_file(config.auth_token_file) if config.auth_token_file else token_from_env(
        os.environ if environ is None else environ)
    check_bind_policy(host, tls=config.uses_tls, token=bool(token), insecure=config.insecure)
    credentials = None
    if config.uses_tls:
        pair = (_read_pem(config.tls_key, "--tls-key"), _read_pem(config.tls_cert, "--tls-cert"))
        client_ca = _read_pem(config.tls_client_ca, "--tls-client-ca") if config.tls_client_ca else None
        credentials = grpc.ssl_server_credentials([pair], root_certificates=client_ca,
                                                  require_client_auth=client_ca is not None)
    if not token and not config.uses_tls and not is_loopback(host):
        logger.warning("serving plaintext without a token on %s (--insecure): anyone who reaches it can call it",
                       host)
    return ServerSecurity(credentials, token, mutual_tls=bool(config.tls_client_ca))


def _read_pem(path: str, flag: str) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise OSError(f"cannot read {flag} {path}: {exc.strerror or exc}") from exc
    if b"-----BEGIN" not in data:
        raise ValueError(f"{flag} {path} is not a PEM file (no '-----BEGIN' line)")
    return data


# --- command-line flags ----------------------------------------------------------------------

def add_server_security_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per ServerSecurityConfig field; each defaults to ``REWARD_SUITE_<FIELD>`` (for containers)."""
    env = os.environ
    group = parser.add_argument_group("security (default: plaintext, no token; loopback binds only)")
    for f in ServerSecurityConfig.__dataclass_fields__.values():
        name = ENV_PREFIX + f.name.upper()
        flag = "--" + f.name.replace("_", "-")
        if f.type in (bool, "bool"):
            group.add_argument(flag, action="store_true", default=env.get(name, "").lower() in ("1", "true", "yes"),
                               help=f"{f.metadata['help']} (env {name})")
        else:
            group.add_argument(flag, default=env.get(name, ""), help=f"{f.metadata['help']} (env {name})")


def server_security_from_args(args: argparse.Namespace) -> ServerSecurityConfig:
    return ServerSecurityConfig(**{name: getattr(args, name) for name in ServerSecurityConfig.__dataclass_fields__})

