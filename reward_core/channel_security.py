"""The client half of the suite's security: TLS and a bearer token on every channel we open.

Every channel of the suite (trainer -> reward server, reward server -> sandbox, reward
server -> reward model, CLI clients) is opened by :func:`open_channel` /
:func:`open_aio_channel` with a :class:`ClientSecurity`:

* TLS (``tls_ca``, or ``tls`` for the system roots): ``grpc.ssl_channel_credentials``; the
  token rides as call credentials (``grpc.access_token_call_credentials`` composed onto the
  channel credentials), so gRPC itself sends ``authorization: Bearer <token>``.
* plaintext (the default): a client interceptor adds the same ``authorization`` metadata
  (gRPC refuses call credentials on an insecure channel).

Nothing configured is today's behaviour: a plaintext channel and no token.
``ClientSecurity.from_env()`` reads the ``REWARD_SUITE_*`` variables below, so one secret
set in a container's environment configures its servers and its clients alike.
Imports only grpc: the client library uses it without the server packages or torch.
"""

from __future__ import annotations

import argparse
import collections
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

#: The bearer token itself (containers); a token file, where given, takes precedence.
TOKEN_ENV = "REWARD_SUITE_AUTH_TOKEN"
#: A file holding the bearer token (its first line, whitespace stripped).
TOKEN_FILE_ENV = "REWARD_SUITE_AUTH_TOKEN_FILE"
ENV_PREFIX = "REWARD_SUITE_"
AUTH_METADATA_KEY = "authorization"

ChannelOptions = Sequence[tuple[str, Any]]


def read_token_file(path: str) -> str:
    """The token in ``path`` (surrounding whitespace stripped); raises ValueError when it is empty."""
    token = Path(path).read_text(encoding="utf-8").strip()
    if not token:
        raise ValueError(f"auth token file {path} is empty; write the bearer token into it")
    if any(c.isspace() for c in token):
        raise ValueError(f"auth token file {path} holds whitespace inside the token; write one token, one line")
    return token


def token_from_env(environ: Mapping[str, str]) -> str:
    """The token named by ``REWARD_SUITE_AUTH_TOKEN_FILE``, else ``REWARD_SUITE_AUTH_TOKEN``, else ""."""
    path = environ.get(TOKEN_FILE_ENV, "")
    return read_token_file(path) if path else environ.get(TOKEN_ENV, "").strip()


@dataclass(frozen=True)
class ClientSecurity:
    """How a client reaches a server: plaintext or TLS, with or without a bearer token."""

    auth_token: str = field(default="", repr=False, metadata={
        "help": f"bearer token sent as 'authorization: Bearer <token>' (env {TOKEN_ENV})"})
    tls: bool = field(default=False, metadata={"help": "use TLS (implied by --tls-ca); without a CA: system roots"})
    tls_ca: str = field(default="", metadata={"help": "PEM file of the CA that signed the server's certificate"})
    tls_client_cert: str = field(default="", metadata={"help": "PEM certificate for mutual TLS"})
    tls_client_key: str = field(default="", metadata={"help": "PEM private key for mutual TLS"})
    tls_server_name: str = field(default="", metadata={
        "help": "name to check the server's certificate against (default: the target's host)"})

    def __post_init__(self) -> None:
        if bool(self.tls_client_cert) != bool(self.tls_client_key):
            raise ValueError("mutual TLS needs both --tls-client-cert and --tls-client-key (or neither)")
        if (self.tls_client_cert or self.tls_server_name) and not self.uses_tls:
            raise ValueError("--tls-client-cert and --tls-server-name need TLS: add --tls-ca (or --tls)")
        if any(c.isspace() for c in self.auth_token):
            raise ValueError("auth token contains whitespace; a bearer token is one word")

    @property
    def uses_tls(self) -> bool:
        return self.tls or bool(self.tls_ca)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ClientSecurity:
        """From ``REWARD_SUITE_AUTH_TOKEN[_FILE]``, ``REWARD_SUITE_TLS``, ``REWARD_SUITE_TLS_CA``,
        ``REWARD_SUITE_TLS_CLIENT_CERT``/``_KEY``, ``REWARD_SUITE_TLS_SERVER_NAME``; none set: plaintext."""
        env = os.environ if environ is None else environ
        return cls(auth_token=token_from_env(env),
                   tls=env.get(ENV_PREFIX + "TLS", "").lower() in ("1", "true", "yes"),
                   tls_ca=env.get(ENV_PREFIX + "TLS_CA", ""),
                   tls_client_cert=env.get(ENV_PREFIX + "TLS_CLIENT_CERT", ""),
                   tls_client_key=env.get(ENV_PREFIX + "TLS_CLIENT_KEY", ""),
                   tls_server_name=env.get(ENV_PREFIX + "TLS_SERVER_NAME", ""))

    def channel_credentials(self) -> grpc.ChannelCredentials:
        """TLS credentials (PEM files read now), with the token as call credentials when there is one."""
        credentials = grpc.ssl_channel_credentials(
            root_certificates=_read(self.tls_ca), private_key=_read(self.tls_client_key),
            certificate_chain=_read(self.tls_client_cert))
        if self.auth_token:
            credentials = grpc.composite_channel_credentials(
                credentials, grpc.access_token_call_credentials(self.auth_token))
        return credentials

    def options(self) -> list[tuple[str, Any]]:
        return [("grpc.ssl_target_name_override", self.tls_server_name)] if self.tls_server_name else []

    def auth_metadata(self) -> tuple[str, str]:
        return AUTH_METADATA_KEY, f"Bearer {self.auth_token}"


def _read(path: str) -> bytes | None:
    return Path(path).read_bytes() if path else None


def open_channel(target: str, options: ChannelOptions = (), security: ClientSecurity | None = None) -> grpc.Channel:
    """A blocking channel to ``target``; ``security`` None: :meth:`ClientSecurity.from_env`."""
    security = ClientSecurity.from_env() if security is None else security
    options = [*options, *security.options()]
    if security.uses_tls:
        return grpc.secure_channel(target, security.channel_credentials(), options=options)
    channel = grpc.insecure_channel(target, options=options)
    if security.auth_token:
        return grpc.intercept_channel(channel, _TokenInterceptor(security.auth_metadata()))
    return channel


def open_aio_channel(target: str, options: ChannelOptions = (),
                     security: ClientSecurity | None = None) -> grpc.aio.Channel:
    """The asyncio counterpart of :func:`open_channel`."""
    security = ClientSecurity.from_env() if security is None else security
    options = [*options, *security.options()]
    if security.uses_tls:
        return grpc.aio.secure_channel(target, security.channel_credentials(), options=options)
    interceptors = [_AioTokenInterceptor(security.auth_metadata())] if security.auth_token else None
    return grpc.aio.insecure_channel(target, options=options, interceptors=interceptors)


class _CallDetails(collections.namedtuple(
        "_CallDetails", ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression")),
        grpc.ClientCallDetails):
    pass


class _TokenInterceptor(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                        grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds the ``authorization`` metadata to every call of a plaintext channel."""

    def __init__(self, entry: tuple[str, str]) -> None:
        self._entry = entry

    def _details(self, details: grpc.ClientCallDetails) -> _CallDetails:
        return _CallDetails(details.method, details.timeout, [*(details.metadata or ()), self._entry],
                            details.credentials, details.wait_for_ready, getattr(details, "compression", None))

    def intercept_unary_unary(self, continuation, client_call_details, request):
        return continuation(self._details(client_call_details), request)

    def intercept_unary_stream(self, continuation, client_call_details, request):
        return continuation(self._details(client_call_details), request)

    def intercept_stream_unary(self, continuation, client_call_details, request_iterator):
        return continuation(self._details(client_call_details), request_iterator)

    def intercept_stream_stream(self, continuation, client_call_details, request_iterator):
        return continuation(self._details(client_call_details), request_iterator)


class _AioTokenInterceptor(grpc.aio.UnaryUnaryClientInterceptor, grpc.aio.UnaryStreamClientInterceptor,
                           grpc.aio.StreamUnaryClientInterceptor, grpc.aio.StreamStreamClientInterceptor):
    """The asyncio counterpart of :class:`_TokenInterceptor`."""

    def __init__(self, entry: tuple[str, str]) -> None:
        self._entry = entry

    def _details(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        return details._replace(metadata=grpc.aio.Metadata(*(details.metadata or ()), self._entry))

    async def intercept_unary_unary(self, continuation, client_call_details, request):
        return await continuation(self._details(client_call_details), request)

    async def intercept_unary_stream(self, continuation, client_call_details, request):
        return await continuation(self._details(client_call_details), request)

    async def intercept_stream_unary(self, continuation, client_call_details, request_iterator):
        return await continuation(self._details(client_call_details), request_iterator)

    async def intercept_stream_stream(self, continuation, client_call_details, request_iterator):
        return await continuation(self._details(client_call_details), request_iterator)


# --- command-line flags ----------------------------------------------------------------------

def add_client_security_flags(parser: argparse.ArgumentParser) -> None:
    """``--auth-token-file``, ``--tls``, ``--tls-ca``, ``--tls-client-cert/-key``, ``--tls-server-name``;
    each defaults to its ``REWARD_SUITE_*`` variable (the token itself: ``REWARD_SUITE_AUTH_TOKEN``)."""
    env = os.environ
    group = parser.add_argument_group("connection security (default: plaintext, no token)")
    group.add_argument("--auth-token-file", default=env.get(TOKEN_FILE_ENV, ""),
                       help=f"file holding the server's bearer token (env {TOKEN_FILE_ENV}; "
                            f"or the token itself in {TOKEN_ENV})")
    group.add_argument("--tls", action="store_true", default=env.get(ENV_PREFIX + "TLS", "").lower()
                       in ("1", "true", "yes"), help=ClientSecurity.__dataclass_fields__["tls"].metadata["help"])
    for name in ("tls_ca", "tls_client_cert", "tls_client_key", "tls_server_name"):
        group.add_argument("--" + name.replace("_", "-"), default=env.get(ENV_PREFIX + name.upper(), ""),
                           help=f"{ClientSecurity.__dataclass_fields__[name].metadata['help']} "
                                f"(env {ENV_PREFIX + name.upper()})")


def client_security_from_args(args: argparse.Namespace) -> ClientSecurity:
    """The ClientSecurity the flags of :func:`add_client_security_flags` describe."""
    token = read_token_file(args.auth_token_file) if args.auth_token_file else os.environ.get(TOKEN_ENV, "").strip()
    return ClientSecurity(auth_token=token, tls=args.tls, tls_ca=args.tls_ca, tls_client_cert=args.tls_client_cert,
                          tls_client_key=args.tls_client_key, tls_server_name=args.tls_server_name)
