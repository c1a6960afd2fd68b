"""A local OpenAI-compatible judge endpoint serving a Hugging Face causal LM (``reward-service serve-judge``).

    reward-service serve-judge --model PATH [--served-model-name NAME] [--host 127.0.0.1] [--port 8000]

``GET /v1/models``, ``POST /v1/chat/completions`` and ``POST /v1/responses`` (non-streaming), with
vLLM's ``guided_choice`` so that even a tiny random-weight model gives a parseable verdict. Errors
are OpenAI-shaped (``{"error": {...}}``) with the status an OpenAI client maps to the right
exception. It exists so tests and benchmarks call a *real* model over real HTTP (no canned replies):
``start_judge_server(path)`` serves it from a thread of this process on a free port. It is not a
production inference server: generation is serialised, one request at a time.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reward_core.keep_alive import SERVER_KEEP_ALIVE_S
from reward_service.judges.openai_errors import RequestError, error_response
from reward_service.judges.openai_requests import (
    JudgeRequest,
    chat_completion_body,
    parse_chat,
    parse_responses,
    response_body,
)

if TYPE_CHECKING:
    from reward_service.judges.local_model import Generation, LocalCausalLM
    from reward_service.judges.served import ServedApp

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 8 << 20


@dataclass(frozen=True)
class JudgeServerConfig:
    """Settings of ``serve-judge`` (and of :func:`start_judge_server`)."""

    model: str = field(metadata={"help": "a save_pretrained directory of a causal LM and its tokenizer"})
    served_model_name: str = field(default="", metadata={
        "help": "the name requests must give as 'model' (default: the directory's name)"})
    host: str = field(default="127.0.0.1", metadata={"help": "address to bind (non-loopback needs --api-key)"})
    port: int = field(default=8000, metadata={"help": "port to bind (0: any free port)"})
    api_key: str = field(default="", metadata={
        "help": "require 'Authorization: Bearer <key>' (default: no key)"}, repr=False)
    default_max_tokens: int = field(default=64, metadata={"help": "max_tokens of a request that gives none"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    device: str = field(default="cpu", metadata={"help": "torch device of the model"})

    @property
    def model_name(self) -> str:
        return self.served_model_name or Path(self.model).name

    def __post_init__(self) -> None:
        if self.default_max_tokens < 1:
            raise ValueError(f"default_max_tokens must be at least 1, got {self.default_max_tokens}")


class _Endpoint:
    """The request handlers: parse, check the model name, run the model in a worker thread, shape the reply."""

    def __init__(self, model: LocalCausalLM, config: JudgeServerConfig) -> None:
        self.model, self.config, self.name = model, config, config.model_name
        self.requests = 0  # requests answered with a reply (not an error)

    async def _body(self, request) -> Any:
        raw = await request.body()
        if len(raw) > MAX_BODY_BYTES:
            raise RequestError(f"the body has {len(raw)} bytes; the limit is {MAX_BODY_BYTES}", status=413)
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise RequestError(f"the body is not valid JSON: {exc}") from None

    def _authorize(self, request) -> None:
        if not self.config.api_key:
            return
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.encode(), self.config.api_key.encode()):
            raise RequestError("invalid API key: send 'Authorization: Bearer <key>'", status=401,
                               code="invalid_api_key")

    async def _run(self, judge_request: JudgeRequest) -> Generation:
        from starlette.concurrency import run_in_threadpool

        if judge_request.model != self.name:
            raise RequestError(f"The model `{judge_request.model}` does not exist; this endpoint serves "
                               f"`{self.name}`", status=404, code="model_not_found", param="model")
        try:
            if judge_request.choices:
                return await run_in_threadpool(self.model.choose, judge_request.messages, judge_request.choices)
            return await run_in_threadpool(self.model.generate, judge_request.messages, judge_request.params)
        except RequestError:
            raise
        except Exception as exc:
            # Answered here, not by an app-level Exception handler: Starlette re-raises after such a
            # handler replies, uvicorn then drops the connection, and a client that pooled it gets
            # "connection reset" on its next request.
            logger.exception("judge endpoint: the model failed")
            raise RequestError(f"the model failed: {type(exc).__name__}: {exc}", status=500,
                               code="internal_error") from None

    async def chat(self, request):
        from starlette.responses import JSONResponse

        try:
            self._authorize(request)
            judge_request = parse_chat(await self._body(request), self.config.default_max_tokens)
            reply = await self._run(judge_request)
        except RequestError as exc:
            return exc.response()
        self.requests += 1
        return JSONResponse(chat_completion_body(self.name, reply))

    async def responses(self, request):
        from starlette.responses import JSONResponse

        try:
            self._authorize(request)
            judge_request = parse_responses(await self._body(request), self.config.default_max_tokens)
            reply = await self._run(judge_request)
        except RequestError as exc:
            return exc.response()
        self.requests += 1
        return JSONResponse(response_body(self.name, judge_request, reply))

    async def models(self, request):
        from starlette.responses import JSONResponse

        try:
            self._authorize(request)
        except RequestError as exc:
            return exc.response()
        return JSONResponse({"object": "list", "data": [
            {"id": self.name, "object": "model", "created": int(time.time()), "owned_by": "reward-suite",
             "max_model_len": self.model.context_length}]})


async def _http_error(request, exc):
    return error_response(exc.status_code, str(exc.detail), code="not_found" if exc.status_code == 404 else None)


async def _server_error(request, exc):
    logger.exception("judge endpoint: %s %s failed", request.method, request.url.path)
    return error_response(500, f"the model failed: {type(exc).__name__}: {exc}", code="internal_error")


def create_judge_app(model: LocalCausalLM, config: JudgeServerConfig):
    """The Starlette app of the endpoint (``app.state.endpoint.requests``: replies so far)."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.routing import Route

    endpoint = _Endpoint(model, config)
    app = Starlette(routes=[Route("/v1/models", endpoint.models, methods=["GET"]),
                            Route("/v1/chat/completions", endpoint.chat, methods=["POST"]),
                            Route("/v1/responses", endpoint.responses, methods=["POST"])],
                    exception_handlers={HTTPException: _http_error, Exception: _server_error})
    app.state.endpoint = endpoint
    return app


def load_model(config: JudgeServerConfig) -> LocalCausalLM:
    from reward_service.judges.local_model import LocalCausalLM

    if not Path(config.model).is_dir():
        raise OSError(f"--model {config.model!r} is not a directory: give a save_pretrained directory "
                      "(config.json, the weights and the tokenizer files)")
    return LocalCausalLM(config.model, threads=config.threads, device=config.device)


class JudgeServer:
    """The endpoint served from a thread of this process: ``base_url`` (``http://127.0.0.1:PORT/v1``),
    ``model_name``, ``requests`` (replies so far) and ``stop()``."""

    def __init__(self, config: JudgeServerConfig, model: LocalCausalLM | None = None) -> None:
        from reward_service.judges.served import ServedApp

        self.config = config
        self.model = model or load_model(config)
        self.app = create_judge_app(self.model, config)
        self._served: ServedApp = ServedApp(self.app, host=config.host, port=config.port, name="judge-endpoint")
        self.base_url = f"{self._served.url}/v1"
        self.model_name = config.model_name

    @property
    def requests(self) -> int:
        return self.app.state.endpoint.requests

    def stop(self) -> None:
        self._served.stop()

    def __enter__(self) -> JudgeServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_judge_server(model_path: str, port: int = 0, **options: Any) -> tuple[JudgeServer, str]:
    """Serves the causal LM at ``model_path`` on 127.0.0.1:``port`` (0: any free port) from a thread;
    returns ``(server, base_url)``; ``options`` are :class:`JudgeServerConfig` fields."""
    server = JudgeServer(JudgeServerConfig(model=str(model_path), port=port, **options))
    return server, server.base_url


def serve_judge(config: JudgeServerConfig, *, insecure: bool = False) -> None:
    """Serves the endpoint in the foreground until SIGTERM/SIGINT."""
    import uvicorn

    from reward_core.server_security import is_loopback

    if not (config.api_key or insecure or is_loopback(config.host)):
        raise ValueError(f"refusing to serve the judge on {config.host!r} without a key: anyone who can reach it "
                         "could run the model. Require a key (--api-key-file or REWARD_SERVICE_JUDGE_API_KEY), "
                         "pass --insecure if the network itself is trusted, or bind loopback (--host 127.0.0.1)")
    model = load_model(config)
    logger.info("judge endpoint on http://%s:%d/v1 serving %r: %s", config.host, config.port, config.model_name,
                config)
    uvicorn.run(create_judge_app(model, config), host=config.host, port=config.port, log_level="info",
                timeout_graceful_shutdown=5, timeout_keep_alive=SERVER_KEEP_ALIVE_S)
