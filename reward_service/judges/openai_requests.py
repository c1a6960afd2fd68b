"""The OpenAI wire format of the local judge endpoint: request bodies in, reply bodies out (pure).

Chat completions (``messages``, ``max_tokens``/``max_completion_tokens``, ``temperature``, ``top_p``,
``seed``, ``stop``, ``n`` = 1) and the Responses API (``input`` as a string or messages,
``instructions``, ``max_output_tokens``) both become one :class:`JudgeRequest`; vLLM's
``guided_choice`` (or ``structured_outputs: {"choice": [...]}``) asks for exactly one of the given
strings. What the endpoint cannot honour (streaming, ``n`` > 1, tools) is refused with a 400, never
silently ignored; unknown fields are ignored, as OpenAI-compatible servers do.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reward_service.judges.local_model import Generation, SamplingParams
from reward_service.judges.openai_errors import RequestError

ROLES = ("system", "developer", "user", "assistant", "tool")
TEXT_PARTS = ("text", "input_text", "output_text")
OPENAI_DEFAULT_TEMPERATURE = 1.0


@dataclass(frozen=True)
class JudgeRequest:
    """What a chat-completions or responses body asks of the model."""

    model: str
    messages: tuple[Mapping[str, str], ...]
    params: SamplingParams
    choices: tuple[str, ...] = ()  # non-empty: reply with exactly one of these


def _content_text(content: Any, where: str) -> str:
    """A message's content: a string, or a list of text parts (``{"type": "text", "text": ...}``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, Mapping) or part.get("type") not in TEXT_PARTS or not isinstance(
                    part.get("text"), str):
                raise RequestError(f"{where}: only text content parts are supported "
                                   f"(type one of {', '.join(TEXT_PARTS)})", param=where)
            texts.append(part["text"])
        return "".join(texts)
    raise RequestError(f"{where}: content must be a string or a list of text parts", param=where)


def _messages(raw: Any, where: str) -> list[dict[str, str]]:
    if not isinstance(raw, list) or not raw:
        raise RequestError(f"'{where}' must be a non-empty list of messages", param=where)
    messages = []
    for i, message in enumerate(raw):
        if not isinstance(message, Mapping) or message.get("role") not in ROLES:
            raise RequestError(f"{where}[{i}] needs a 'role' (one of {', '.join(ROLES)})", param=f"{where}[{i}]")
        messages.append({"role": message["role"], "content": _content_text(message.get("content", ""),
                                                                           f"{where}[{i}].content")})
    return messages


def _number(body: Mapping[str, Any], name: str, default: float, low: float, high: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise RequestError(f"'{name}' must be a number in [{low}, {high}], got {value!r}", param=name)
    return float(value)


def _max_tokens(body: Mapping[str, Any], names: tuple[str, ...], default: int) -> int:
    for name in names:
        value = body.get(name)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RequestError(f"'{name}' must be a positive integer, got {value!r}", param=name)
            return value
    return default


def _stop(body: Mapping[str, Any]) -> tuple[str, ...]:
    stop = body.get("stop")
    if stop is None:
        return ()
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops) or len(stops) > 4:
        raise RequestError("'stop' must be a string or a list of up to 4 strings", param="stop")
    return tuple(stops)


def _choices(body: Mapping[str, Any]) -> tuple[str, ...]:
    structured = body.get("structured_outputs")
    raw = body.get("guided_choice")
    if raw is None and isinstance(structured, Mapping):
        raw = structured.get("choice")
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw or not all(isinstance(c, str) and c for c in raw):
        raise RequestError("'guided_choice' must be a non-empty list of non-empty strings", param="guided_choice")
    return tuple(raw)


def _refuse_unsupported(body: Mapping[str, Any]) -> None:
    if body.get("stream"):
        raise RequestError("streaming is not supported by this endpoint: send stream=false", param="stream")
    if body.get("n", 1) != 1:
        raise RequestError("only n=1 is supported", param="n")
    if body.get("tools"):
        raise RequestError("tools are not supported by this endpoint", param="tools")


def _model(body: Mapping[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise RequestError("'model' is required", param="model")
    return model


def _params(body: Mapping[str, Any], max_names: tuple[str, ...], default_max_tokens: int,
            stop: tuple[str, ...] = ()) -> SamplingParams:
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise RequestError(f"'seed' must be an integer, got {seed!r}", param="seed")
    return SamplingParams(max_tokens=_max_tokens(body, max_names, default_max_tokens),
                          temperature=_number(body, "temperature", OPENAI_DEFAULT_TEMPERATURE, 0.0, 2.0),
                          top_p=_number(body, "top_p", 1.0, 0.0, 1.0), seed=seed, stop=stop)


def parse_chat(body: Any, default_max_tokens: int) -> JudgeRequest:
    """A ``/v1/chat/completions`` body as a JudgeRequest; RequestError (400) when malformed."""
    if not isinstance(body, Mapping):
        raise RequestError("the body must be a JSON object")
    _refuse_unsupported(body)
    params = _params(body, ("max_completion_tokens", "max_tokens"), default_max_tokens, _stop(body))
    return JudgeRequest(_model(body), tuple(_messages(body.get("messages"), "messages")), params, _choices(body))


def parse_responses(body: Any, default_max_tokens: int) -> JudgeRequest:
    """A ``/v1/responses`` body as a JudgeRequest; RequestError (400) when malformed."""
    if not isinstance(body, Mapping):
        raise RequestError("the body must be a JSON object")
    _refuse_unsupported(body)
    raw = body.get("input")
    messages = [{"role": "user", "content": raw}] if isinstance(raw, str) else _messages(raw, "input")
    instructions = body.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise RequestError("'instructions' must be a string", param="instructions")
        messages.insert(0, {"role": "system", "content": instructions})
    params = _params(body, ("max_output_tokens",), default_max_tokens)
    return JudgeRequest(_model(body), tuple(messages), params, _choices(body))


def chat_completion_body(model: str, reply: Generation) -> dict[str, Any]:
    """A ``chat.completion`` object holding ``reply``."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text},
                     "finish_reason": reply.finish_reason, "logprobs": None}],
        "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                  "total_tokens": reply.prompt_tokens + reply.completion_tokens},
    }


def response_body(model: str, request: JudgeRequest, reply: Generation) -> dict[str, Any]:
    """A ``response`` object (Responses API) holding ``reply`` as one assistant message."""
    complete = reply.finish_reason != "length"
    return {
        "id": f"resp_{uuid.uuid4().hex}", "object": "response", "created_at": int(time.time()),
        "status": "completed" if complete else "incomplete",
        "incomplete_details": None if complete else {"reason": "max_output_tokens"},
        "error": None, "model": model, "instructions": None,
        "max_output_tokens": request.params.max_tokens, "temperature": request.params.temperature,
        "top_p": request.params.top_p, "parallel_tool_calls": False, "tool_choice": "auto", "tools": [],
        "output": [{"type": "message", "id": f"msg_{uuid.uuid4().hex}", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}],
        "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens,
                  "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                  "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
    }
