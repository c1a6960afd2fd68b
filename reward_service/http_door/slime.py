"""slime's remote reward: ``POST /slime/{reward}``, scored by our task (or composite) ``reward``.

The protocol, read from slime's own client (``slime/rollout/rm_hub/__init__.py``,
``remote_rm``; the Sample in ``slime/utils/types.py``)::

    --rm-type remote_rm --rm-url http://HOST:8080/slime/gsm8k
    POST {"prompt": str | [{"role": ..., "content": ...}], "response": str, "label": str | null}
    200  1.0                                        (a JSON number: the sample's reward)

    --rm-type remote_rm --rm-url 'http://HOST:8080/slime/gsm8k?key=reward' --reward-key reward
    200  {"reward": 1.0, "<component>": 0.2, ...}   (read with sample.reward[args.reward_key])

slime posts one sample per call (its whole batch at once, up to 64 connections) and stores
``await resp.json()`` as ``sample.reward`` unchanged. Without ``--reward-key`` it uses that
value as the number, so the plain answer is a bare JSON number; with ``--reward-key K`` it
reads ``reward[K]``, so ``?key=K`` answers an object whose ``K`` is the score, next to our
components by name (``K`` wins a name clash) for ``--eval-reward-key`` or logging.

The ``response`` is scored as it is (slime sends the generated text alone); ``prompt`` is
passed to the task (a message list as its contents, one per line) and ``label`` is the
reference by OpenRLHF's rule (:func:`reward_service.http_door.openrlhf.reference_from_label`).

A groupwise reward (``kimi_length``) is refused with a 400 saying why: the call holds one sample and
no group (``groups.py``).

**Unscored rows are HTTP errors, never rewards** (the same statuses as OpenRLHF's door: 404
unknown reward, 400 invalid reference, 500 verifier error, 504 timeout, 503 + ``Retry-After``).
slime's client calls ``raise_for_status`` and retries any failure 10 times with exponential
backoff (1 s doubling, capped at 30 s), then raises, which stops the rollout: loud, not a 0.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from reward_core.contract import InvalidRollout, Rollout, RolloutResult
from reward_service.http_door.door import FrontDoor
from reward_service.http_door.errors import bad_request, error_response
from reward_service.http_door.groups import is_groupwise, no_group_refusal
from reward_service.http_door.openrlhf import reference_from_label, score_rows, unscored_answer
from reward_service.http_door.upstream import UpstreamError


def prompt_text(prompt: Any) -> str:
    """slime's prompt as text: a string as it is, a chat message list as its contents, one per line."""
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and all(isinstance(m, dict) for m in prompt):
        return "\n".join(str(m.get("content", "")) for m in prompt)
    raise InvalidRollout(f"'prompt' must be a string or a list of chat messages, not {type(prompt).__name__}")


def rollout_from_body(body: Any, reward: str) -> Rollout:
    """One slime sample as a rollout of ``reward``; raises InvalidRollout naming the problem."""
    if not isinstance(body, dict):
        raise InvalidRollout(f"the body must be a JSON object with 'response', not {type(body).__name__}")
    response = body.get("response")
    if not isinstance(response, str):
        raise InvalidRollout(f"'response' must be a string, got {type(response).__name__}")
    try:
        reference = reference_from_label(body.get("label"))
    except InvalidRollout as exc:
        raise InvalidRollout(f"label: {exc}") from None
    return Rollout("0", reward, response, reference, prompt_text(body.get("prompt")))


def reward_answer(result: RolloutResult, key: str) -> float | dict[str, float]:
    """The bare score, or with ``key`` an object of the components and the score under ``key``."""
    if not key:
        return float(result.score)
    answer = {name: float(value) for name, value in result.components.items()}
    answer[key] = float(result.score)
    return answer


def routes(door: FrontDoor) -> list[BaseRoute]:
    async def score(request: Request) -> Response:
        reward = request.path_params["reward"]
        try:
            rollout = rollout_from_body(json.loads(await request.body() or b"null"), reward)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return bad_request(f"the body is not JSON: {exc}")
        except InvalidRollout as exc:
            return bad_request(f"not a slime reward call: {exc}")
        try:
            if await is_groupwise(door, reward):
                return no_group_refusal(reward, "slime", "remote_rm posts one sample per call, with its prompt, "
                                        "response and label only (no group index)")
            results = await score_rows(door, [rollout])
        except UpstreamError as exc:
            return error_response(exc.code, str(exc))
        return unscored_answer(results, reward) or JSONResponse(
            reward_answer(results[0], request.query_params.get("key", "")))

    return [Route("/slime/{reward}", score, methods=["POST"])]
