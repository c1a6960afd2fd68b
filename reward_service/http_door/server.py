"""``reward-service serve-http``: the front door as a uvicorn server.

    reward-service serve-http --upstream localhost:50051 --port 8080 [--sandbox H:P] [--rm H:P]

Binds loopback by default; like the gRPC servers it refuses a non-loopback address unless a
token (``--auth-token-file`` / ``REWARD_SUITE_AUTH_TOKEN``, checked as ``Authorization:
Bearer``), TLS (``--tls-cert/--tls-key``, served by uvicorn) or ``--insecure`` protects it.
The calls it makes upstream carry a token too: the ``REWARD_SUITE_*`` client settings' when they
name one, else the door's own (the same ``--auth-token-file``), so a door and the servers behind it
can share one secret.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reward_core.channel_security import ClientSecurity, read_token_file, token_from_env
from reward_core.config_flags import nested
from reward_core.keep_alive import SERVER_KEEP_ALIVE_S
from reward_core.server_security import ServerSecurityConfig, check_bind_policy
from reward_service.http_door.upstream import UpstreamConfig

if TYPE_CHECKING:  # the ASGI stack is imported only to serve (an extra: reward-suite[http])
    from reward_service.http_door.door import DoorConfig

logger = logging.getLogger(__name__)


#: Settings of the front door's upstream calls that are not flags (set by the program, not the user).
UPSTREAM_RUNTIME_FIELDS = ("upstream.client_id", "upstream.security")


@dataclass(frozen=True)
class HttpServerConfig:
    """Flags of ``serve-http`` (each also ``REWARD_SERVICE_<FLAG>``)."""

    upstream: UpstreamConfig = nested(lambda: UpstreamConfig("127.0.0.1:50051"))  # --upstream, --sandbox, --rm, ...
    host: str = field(default="127.0.0.1", metadata={"help": "address to bind (non-loopback needs a token/TLS)"})
    port: int = field(default=8080, metadata={"help": "port to bind"})
    nemo_gym_reward: str = field(default="", metadata={
        "help": "also serve this reward as a NeMo Gym resources server at the root (/verify, /seed_session, ...)"})
    nemo_gym_environment: str = field(default="", metadata={
        "help": "or serve this environment as a multi-turn NeMo Gym resources server at the root (/seed_session, "
                "/<tool>, /verify, /reset, /step)"})

    def door_config(self, token: str) -> DoorConfig:
        from reward_service.http_door.door import DoorConfig

        return DoorConfig(self.upstream, token=token, nemo_gym_reward=self.nemo_gym_reward,
                          nemo_gym_environment=self.nemo_gym_environment)


def resolved_door_config(config: HttpServerConfig, security: ServerSecurityConfig,
                         environ: Mapping[str, str] | None = None) -> DoorConfig:
    """The door's settings with its callers' token (``--auth-token-file``, else the environment) and its
    upstream channels' security: the ``REWARD_SUITE_*`` client settings, carrying the door's own token
    when they name none (without it a caller with the right token got the reward server's 401
    "carried none"). Checks the bind policy."""
    env = os.environ if environ is None else environ
    token = read_token_file(security.auth_token_file) if security.auth_token_file else token_from_env(env)
    check_bind_policy(config.host, tls=security.uses_tls, token=bool(token), insecure=security.insecure)
    upstream = config.upstream.security or ClientSecurity.from_env(env)
    if token and not upstream.auth_token:
        upstream = dataclasses.replace(upstream, auth_token=token)
    config = dataclasses.replace(config, upstream=dataclasses.replace(config.upstream, security=upstream))
    return config.door_config(token)


def serve_http(config: HttpServerConfig, security: ServerSecurityConfig) -> None:
    """Runs the front door until SIGTERM/SIGINT (uvicorn drains open connections)."""

    import uvicorn

    from reward_service.http_door.app import create_app

    app = create_app(resolved_door_config(config, security))
    upstream = config.upstream
    logger.info("HTTP front door on %s:%d -> reward %s, sandbox %s, rm %s, environments %s", config.host,
                config.port, upstream.reward, upstream.sandbox or upstream.reward, upstream.rm or "(none)",
                upstream.environments or upstream.reward)
    uvicorn.run(app, host=config.host, port=config.port, log_level="info", timeout_graceful_shutdown=10,
                timeout_keep_alive=SERVER_KEEP_ALIVE_S,
                ssl_certfile=security.tls_cert or None, ssl_keyfile=security.tls_key or None,
                ssl_ca_certs=security.tls_client_ca or None,
                ssl_cert_reqs=2 if security.tls_client_ca else 0)
