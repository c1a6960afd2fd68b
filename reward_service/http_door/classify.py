"""vLLM's pooling API onto our reward model: ``POST /classify`` (also ``/v1/classify``) and ``POST /score``.

A trainer that scores with a reward model served by ``vllm serve --runner pooling`` can point
at the front door instead (``--rm H:P`` names our ``reward-service serve-rm``). verl's reward
loop does exactly this: ``POST /classify`` with ``{"model", "input": <chat-templated text>,
"activation": false}`` and reads ``data[-1]["probs"][-1]`` (volcengine/verl,
``verl/experimental/reward_loop/reward_loop.py``, ``compute_score_disrm``). OpenRLHF's remote
RM speaks its own protocol (the ``openrlhf`` adapter), not vLLM's.

Shapes, field for field as vLLM writes them (vllm-project/vllm,
``vllm/entrypoints/pooling/classify/{protocol,serving,api_router}.py``,
``pooling/base/protocol.py``, ``pooling/score/protocol.py``,
``model_executor/layers/pooler/activations.py``)::

    POST /classify  {"model": "rm", "input": "text" | ["text", ...]}          (completion form)
                    {"model": "rm", "messages": [{"role": ..., "content": ...}, ...]}  (chat form)
      -> {"id": "classify-...", "object": "list", "created": 1764000000, "model": "rm",
          "data": [{"index": 0, "label": "LABEL_0", "probs": [p], "num_classes": 1}],
          "usage": {"prompt_tokens": n, "total_tokens": n, "completion_tokens": 0,
                    "prompt_tokens_details": null}}
    POST /score     {"text_1": prompt | [prompts], "text_2": completion | [completions]}
                    (or queries/documents, queries/items, data_1/data_2)
      -> {"id": "score-...", "object": "list", "created", "model",
          "data": [{"index": 0, "object": "score", "score": s}], "usage": {...}}

Our scalar reward in it: the model is a one-label head, so ``num_classes`` is 1, ``label`` is
``"LABEL_0"`` (transformers' default ``id2label`` for one label) and ``probs`` is ``[x]`` where
``x`` is what vLLM computes for one label: ``sigmoid(score)`` by default, the raw ``score``
(exactly gRPC ``Score``'s ``score``) when the call sets ``"use_activation": false`` (or the
older ``"activation"`` / ``"softmax"``: false), as verl does. ``/score`` follows the same rule.

How the RM's (prompt, completion) pair is built:
  * ``input`` string: prompt ``""``, completion = the whole string (vLLM's model also sees one
    sequence; our pair encoding then is ``[CLS] [SEP] text [SEP]``). Send ``messages`` or use
    ``/score`` to give the prompt separately, which is what our reward models are trained on.
  * ``messages``: the last message must be the assistant's: it is the completion; the earlier
    messages' text contents, joined with a blank line, are the prompt (no chat template: a
    one-turn chat gives exactly the user's question as the prompt, as in RM training).
  * ``/score``: ``text_1`` is the prompt, ``text_2`` the completion; one ``text_1`` is paired
    with every ``text_2`` (1:N), else the lists pair up (N:N), as vLLM pairs them.

Not supported, answered 400: token-id inputs, multimodal parts, ``truncate_prompt_tokens`` (the
RM server truncates by its own policy, see its ``Info``). Errors use vLLM's body
``{"error": {"message", "type", "param", "code"}}``; a door started without ``--rm`` answers
404 (a configuration error: verl retries 5xx, not 4xx). The RM server batches concurrent calls
itself, so each HTTP call is one ``RewardModelService.Score`` call (the core's reward-model client).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from reward_core.rm_contract import PairScore, RewardModelReplyError, ScoreReply
from reward_service.http_door.door import FrontDoor
from reward_service.http_door.errors import HTTP_STATUS

#: transformers' default ``id2label`` for a one-output head (what vLLM reports as ``label``).
ONE_LABEL = "LABEL_0"
#: ``/score``'s accepted (left, right) field pairs, in vLLM's order (pooling/score/protocol.py).
SCORE_FIELDS = (("queries", "documents"), ("queries", "items"), ("data_1", "data_2"), ("text_1", "text_2"))
_ERROR_TYPES = {400: "BadRequestError", 404: "NotFoundError", 429: "RateLimitError",
                503: "ServiceUnavailableError", 504: "TimeoutError"}


class PoolingRequestError(ValueError):
    """A body this adapter cannot turn into reward-model pairs; the message says what to change."""


@dataclass(frozen=True)
class PoolingCall:
    """What one ``/classify`` or ``/score`` call asks of the reward model."""

    model: str                        # echoed back ("" : the checkpoint's path)
    pairs: tuple[tuple[str, str], ...]  # (prompt, completion) per output row, in order
    activation: bool                  # sigmoid on the one-label output (vLLM's default) or raw
    request_id: str


def _texts(value: Any, field: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    if isinstance(value, list) and value and all(isinstance(v, (int, list)) for v in value):
        raise PoolingRequestError(f"'{field}' holds token ids; this reward model takes text: send strings")
    raise PoolingRequestError(f"'{field}' must be a string or a non-empty list of strings")


def _use_activation(body: dict) -> bool:
    """vLLM's rule: ``use_activation``, else the deprecated ``activation``/``softmax``; default on."""
    for key in ("use_activation", "activation", "softmax"):
        value = body.get(key)
        if value is not None:
            if not isinstance(value, bool):
                raise PoolingRequestError(f"'{key}' must be true, false or null")
            return value
    return True


def _common(body: Any) -> tuple[str, bool, str]:
    if not isinstance(body, dict):
        raise PoolingRequestError("the body must be a JSON object")
    if body.get("truncate_prompt_tokens") not in (None, -1):
        raise PoolingRequestError("'truncate_prompt_tokens' is not supported: the reward-model server truncates "
                                  "over-long pairs by its own policy (prompt_left); leave it out")
    model = body.get("model") or ""
    if not isinstance(model, str):
        raise PoolingRequestError("'model' must be a string")
    request_id = body.get("request_id") or uuid.uuid4().hex
    return model, _use_activation(body), str(request_id)


def _message_text(message: Any, k: int) -> str:
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise PoolingRequestError(f"messages[{k}] must be an object with a 'role' and a 'content'")
    content = message.get("content")
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    raise PoolingRequestError(f"messages[{k}].content must be text (a string or 'text' parts)")


def parse_classify(body: Any) -> PoolingCall:
    """The (prompt, completion) pairs of a ``/classify`` body (see the module doc for the split)."""
    model, activation, request_id = _common(body)
    if "messages" in body:
        messages = body["messages"]
        if not isinstance(messages, list) or not messages:
            raise PoolingRequestError("'messages' must be a non-empty list")
        texts = [_message_text(m, k) for k, m in enumerate(messages)]
        if messages[-1]["role"] != "assistant":
            raise PoolingRequestError("the last message must be the assistant's: it is the completion scored")
        prompt = "\n\n".join(t for t in texts[:-1] if t)
        return PoolingCall(model, ((prompt, texts[-1]),), activation, request_id)
    if "input" not in body:
        raise PoolingRequestError("give 'input' (a string or a list of strings) or 'messages'")
    return PoolingCall(model, tuple(("", text) for text in _texts(body["input"], "input")), activation, request_id)


def parse_score(body: Any) -> PoolingCall:
    """The pairs of a ``/score`` body: left texts are prompts, right texts completions (1:N or N:N)."""
    model, activation, request_id = _common(body)
    for left_key, right_key in SCORE_FIELDS:
        if left_key in body and right_key in body:
            left, right = _texts(body[left_key], left_key), _texts(body[right_key], right_key)
            if len(left) == 1:
                left = left * len(right)
            if len(left) != len(right):
                raise PoolingRequestError(f"'{left_key}' has {len(left)} texts and '{right_key}' {len(right)}: "
                                          "give one left text or as many as right texts")
            return PoolingCall(model, tuple(zip(left, right)), activation, request_id)
    raise PoolingRequestError("give 'text_1' and 'text_2' (or queries/documents, queries/items, data_1/data_2)")


def output_value(score: float, activation: bool) -> float:
    """What vLLM reports for a one-label head: ``sigmoid(score)``, or ``score`` without activation."""
    if not activation:
        return score
    if score >= 0:
        return 1.0 / (1.0 + math.exp(-score))
    e = math.exp(score)
    return e / (1.0 + e)


def _usage(results: Sequence[PairScore]) -> dict:
    tokens = sum(r.num_tokens for r in results)
    return {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0, "prompt_tokens_details": None}


def classification_response(call: PoolingCall, reply: ScoreReply, created: int) -> dict:
    """vLLM's ``ClassificationResponse`` for the RM's answer to ``call``."""
    data = [{"index": k, "label": ONE_LABEL, "probs": [output_value(r.score, call.activation)], "num_classes": 1}
            for k, r in enumerate(reply.results)]
    return {"id": f"classify-{call.request_id}", "object": "list", "created": created,
            "model": call.model or reply.checkpoint, "data": data, "usage": _usage(reply.results)}


def score_response(call: PoolingCall, reply: ScoreReply, created: int) -> dict:
    """vLLM's ``ScoreResponse`` for the RM's answer to ``call``."""
    data = [{"index": k, "object": "score", "score": output_value(r.score, call.activation)}
            for k, r in enumerate(reply.results)]
    return {"id": f"score-{call.request_id}", "object": "list", "created": created,
            "model": call.model or reply.checkpoint, "data": data, "usage": _usage(reply.results)}


def vllm_error(status: int, message: str) -> JSONResponse:
    """vLLM's ``ErrorResponse`` body; 429/503 carry ``Retry-After`` like the door's other errors."""
    headers = {"Retry-After": "1"} if status in (429, 503) else {}
    body = {"error": {"message": message, "type": _ERROR_TYPES.get(status, "InternalServerError"),
                      "param": None, "code": status}}
    return JSONResponse(body, status_code=status, headers=headers)


def routes(door: FrontDoor) -> list[BaseRoute]:
    async def answer(request: Request, parse: Callable[[Any], PoolingCall],
                     build: Callable[[PoolingCall, ScoreReply, int], dict]) -> Response:
        if door.up.rm is None:
            return vllm_error(404, "this front door has no reward model: start `reward-service serve-http` "
                                   "with --rm HOST:PORT of `reward-service serve-rm`")
        try:
            call = parse(await request.json())
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, PoolingRequestError
            return vllm_error(400, str(exc) if isinstance(exc, PoolingRequestError) else f"the body is not JSON: {exc}")
        try:
            reply = await door.up.rm.score(call.pairs)
        except grpc.RpcError as exc:  # gRPC's own or a client's typed error: same code() and details()
            return vllm_error(HTTP_STATUS.get(exc.code(), 500), exc.details() or exc.code().name)
        except RewardModelReplyError as exc:
            return vllm_error(502, str(exc))
        return JSONResponse(build(call, reply, int(time.time())))

    async def classify(request: Request) -> Response:
        return await answer(request, parse_classify, classification_response)

    async def score(request: Request) -> Response:
        return await answer(request, parse_score, score_response)

    return [Route("/classify", classify, methods=["POST"]), Route("/v1/classify", classify, methods=["POST"]),
            Route("/score", score, methods=["POST"])]
