"""OpenRLHF's remote reward: ``POST /openrlhf/{reward}``, scored by our task (or composite) ``reward``.

The protocol, read from OpenRLHF's own client (``openrlhf/utils/agent.py``,
``SingleTurnAgentExecutor._fetch_rewards_via_http``, openrlhf 0.11; the older
``openrlhf/utils/remote_rm_utils.py``, ``request_api_wrapper``, speaks the same) and its
reference server (``openrlhf/cli/serve_rm.py``)::

    --reward.remote_url http://HOST:8080/openrlhf/gsm8k        (older releases: --remote_rm_url)

    POST {"query": [prompt+response, ...], "prompts": [...], "labels": [...]}
    200  {"rewards": [float, ...], "scores": [float, ...], "extra_logs": {component: [float, ...]}}

``query`` is ``tokenizer.decode(prompt_ids + response_ids, skip_special_tokens=False)``: one
sample per call after each generation (rarely several; an empty list is answered with empty
lists). The client reads ``rewards`` (the training reward), ``scores`` (dynamic filtering; it
falls back to ``rewards``) and ``extra_logs`` (each value logged per sample); we send the same
score in both, and our components in ``extra_logs``, as ``serve_rm.py`` does.

**The response is the query after its prompt** (:func:`response_from_query`), tried in order:
the query starts with the prompt; the prompt follows leading special-token text only (a BOS
such as ``<s>`` or ``<|begin_of_text|>``); the same match ignoring whitespace (the decode's
``clean_up_tokenization_spaces`` drops spaces before punctuation); the query starts with a tail
of at least 16 characters of the prompt (OpenRLHF keeps only the last ``max_prompt_length``
prompt tokens). Then end-of-sequence markers the decode kept at the end (:data:`EOS_MARKERS`)
are cut off. A query that matches none of these is a 400 naming the row: scoring prompt text as
the answer would be a wrong reward. With no prompt (an empty string or no ``prompts``) the whole
query is the response.

**The label is the reference** (:func:`reference_from_label`): a string holding a JSON object
is that object (``{"answer": "4"}``, ``{"tests": ...}``); any other string or number is
``{"answer": label}`` (the gold answer of ``math`` / ``gsm8k``); an object is used as it is.

**Groups** (for a groupwise reward such as ``kimi_length``): the rows of one call with the same
prompt and label are one group (OpenRLHF repeats a prompt ``n_samples_per_prompt`` times with its
label); a row alone in its group is refused for a groupwise reward (``groups.py``).

**Unscored rows are HTTP errors, never rewards.** OpenRLHF has no "could not score" value:
its client calls ``raise_for_status`` and retries any error status 5 times, 1 s apart, then
leaves the sample's reward ``None`` (0.11: the trainer then stops on the missing reward) or
raises (``remote_rm_utils``). So a call with an unscored row is answered as a whole
(:func:`unscored_answer`): 404 unknown reward, 400 invalid reference, 500 verifier error,
504 verifier timeout, 503 + ``Retry-After`` when the reward server was going away; the retry
may score it, and if it does not, training stops loudly instead of learning from a fake 0.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any

import grpc
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from reward_core.contract import InvalidRollout, Rollout, RolloutResult, RolloutStatus, normalize_reference
from reward_service.http_door.door import FrontDoor
from reward_service.http_door.errors import bad_request, error_response, retry_after_headers, upstream_response
from reward_service.http_door.groups import is_groupwise, lone_rows_refusal, prompt_groups, without_lone_groups
from reward_service.http_door.upstream import UpstreamError

#: End-of-sequence text a ``skip_special_tokens=False`` decode leaves after the response.
EOS_MARKERS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<|end|>", "</s>", "<eos>",
               "<end_of_turn>", "<｜end▁of▁sentence｜>")
#: Special-token text a decode may put before the prompt (BOS and the like): tags and whitespace.
_LEADING_TAGS = re.compile(r"(?:\s*<[^<>\s]{1,40}>)+")
#: The shortest prompt tail accepted as the start of a query whose prompt was cut on the left.
MIN_PROMPT_TAIL = 16

#: Each unscored status as the whole call's error, in the order a mixed call picks one (caller
#: mistakes first: retrying cannot fix them).
UNSCORED_CODES = {
    RolloutStatus.UNKNOWN_TASK: grpc.StatusCode.NOT_FOUND,
    RolloutStatus.INVALID_REFERENCE: grpc.StatusCode.INVALID_ARGUMENT,
    RolloutStatus.INVALID_ROLLOUT: grpc.StatusCode.INVALID_ARGUMENT,
    RolloutStatus.ERROR: grpc.StatusCode.INTERNAL,
    RolloutStatus.UNSPECIFIED: grpc.StatusCode.INTERNAL,
    RolloutStatus.JUDGE_UNPARSEABLE: grpc.StatusCode.INTERNAL,
    RolloutStatus.TIMEOUT: grpc.StatusCode.DEADLINE_EXCEEDED,
    RolloutStatus.JUDGE_FAILED: grpc.StatusCode.UNAVAILABLE,
    RolloutStatus.JUDGE_RATE_LIMITED: grpc.StatusCode.RESOURCE_EXHAUSTED,
    RolloutStatus.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
}


def _after_loose_prefix(query: str, prompt: str) -> str | None:
    """The query after ``prompt`` matched with whitespace ignored, or None."""
    qi = 0
    for ch in prompt:
        if ch.isspace():
            continue
        while qi < len(query) and query[qi].isspace():
            qi += 1
        if qi >= len(query) or query[qi] != ch:
            return None
        qi += 1
    trailing = len(prompt) - len(prompt.rstrip())
    end = qi
    while end < len(query) and end - qi < trailing and query[end].isspace():
        end += 1
    return query[end:]


def _after_prompt_tail(query: str, prompt: str) -> str | None:
    """The query after the longest tail of ``prompt`` it starts with (prompt cut on the left), or None."""
    probe = query[:MIN_PROMPT_TAIL]
    if len(probe) < MIN_PROMPT_TAIL:
        return None
    start = prompt.find(probe)
    while start >= 0:
        if query.startswith(prompt[start:]):
            return query[len(prompt) - start:]
        start = prompt.find(probe, start + 1)
    return None


def strip_eos(text: str) -> str:
    """``text`` without the end-of-sequence markers (and whitespace between them) at its end."""
    while True:
        stripped = text.rstrip()
        for marker in EOS_MARKERS:
            if stripped.endswith(marker):
                text = stripped[: -len(marker)]
                break
        else:
            return text


def response_from_query(query: str, prompt: str) -> str | None:
    """The response in OpenRLHF's ``query`` (prompt + response), by the rule of the module docstring."""
    if not prompt:
        return strip_eos(query)
    lead = _LEADING_TAGS.match(query)
    starts = [query] + ([query[lead.end():]] if lead else [])
    for text in starts:
        if text.startswith(prompt):
            return strip_eos(text[len(prompt):])
    for finder in (_after_loose_prefix, _after_prompt_tail):
        for text in starts:
            found = finder(text, prompt)
            if found is not None:
                return strip_eos(found)
    return None


def reference_from_label(label: Any) -> dict[str, Any]:
    """A trainer's label as our reference (see the module docstring); raises InvalidRollout."""
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            parsed = json.loads(label)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return normalize_reference(label)


def unscored_answer(results: Sequence[RolloutResult], reward: str) -> Response | None:
    """The error answering a call with an unscored result (None when every result is scored)."""
    unscored = [(i, r) for i, r in enumerate(results) if not r.scored]
    if not unscored:
        return None
    order = list(UNSCORED_CODES)
    unscored.sort(key=lambda item: order.index(item[1].status) if item[1].status in order else len(order))
    code = UNSCORED_CODES.get(unscored[0][1].status, grpc.StatusCode.INTERNAL)
    rows = "; ".join(f"row {i}: {r.status.name} ({r.error or 'no detail'})" for i, r in unscored[:5])
    more = f" and {len(unscored) - 5} more" if len(unscored) > 5 else ""
    hint = " (GET /v1/tasks lists the rewards)" if code == grpc.StatusCode.NOT_FOUND else ""
    return error_response(code, f"reward {reward!r} could not score {len(unscored)} of {len(results)} "
                                f"rows, so none is answered: {rows}{more}{hint}",
                          retry_after_headers(unscored[0][1].error))


async def score_rows(door: FrontDoor, rollouts: list[Rollout]) -> list[RolloutResult]:
    """Results in order, sent in chunks of at most the door's batch size, a group never split (a group
    larger than that goes alone); raises UpstreamError."""
    size = door.up.config.max_batch
    members: dict[str, list[int]] = {}
    for i, rollout in enumerate(rollouts):
        members.setdefault(rollout.group_id or f"row {i}", []).append(i)
    chunks: list[list[int]] = [[]]
    for group in members.values():
        if chunks[-1] and len(chunks[-1]) + len(group) > size:
            chunks.append([])
        chunks[-1].extend(group)
    if len(chunks) == 1:  # the usual call (one sample): no task per chunk
        answers = [await door.up.score([rollouts[i] for i in chunks[0]])]
    else:
        answers = await asyncio.gather(*(door.up.score([rollouts[i] for i in chunk]) for chunk in chunks))
    results: dict[int, RolloutResult] = {}
    for chunk, answer in zip(chunks, answers):
        results.update(zip(chunk, answer))
    return [results[i] for i in range(len(rollouts))]


async def known_reward(door: FrontDoor, reward: str) -> Response | None:
    """404 when the reward server has no task or composite ``reward`` (None when it has)."""
    try:
        names = await door.up.tasks_by_name()
    except grpc.RpcError as exc:  # gRPC's own or a client's typed error: same code() and details()
        return upstream_response(exc)
    if reward in names:
        return None
    return error_response(grpc.StatusCode.NOT_FOUND,
                          f"unknown reward {reward!r}; registered: {', '.join(sorted(names))}")


def _string_list(body: dict[str, Any], key: str, n: int | None) -> list[Any]:
    value = body.get(key)
    if value is None and n is not None:
        return [None] * n
    if not isinstance(value, list) or (n is not None and len(value) != n):
        want = "a list" if n is None else f"a list of {n} (one per query)"
        raise InvalidRollout(f"'{key}' must be {want}, got {type(value).__name__}"
                             + (f" of {len(value)}" if isinstance(value, list) else ""))
    return value


def rollouts_from_body(body: Any, reward: str) -> list[Rollout]:
    """The rows of an OpenRLHF call as rollouts of ``reward``; raises InvalidRollout naming the problem."""
    if not isinstance(body, dict):
        raise InvalidRollout(f"the body must be a JSON object with 'query', not {type(body).__name__}")
    queries = _string_list(body, "query", None)
    prompts = _string_list(body, "prompts", len(queries))
    labels = _string_list(body, "labels", len(queries))
    rollouts = []
    for i, (query, prompt, label) in enumerate(zip(queries, prompts, labels)):
        if not isinstance(query, str) or not isinstance(prompt, (str, type(None))):
            raise InvalidRollout(f"row {i}: 'query' and 'prompts' entries must be strings")
        response = response_from_query(query, prompt or "")
        if response is None:
            raise InvalidRollout(f"row {i}: the query does not start with its prompt (nor after a BOS, with "
                                 f"whitespace ignored, or with a tail of it), so the response cannot be told apart")
        try:
            reference = reference_from_label(label)
        except InvalidRollout as exc:
            raise InvalidRollout(f"row {i}: label: {exc}") from None
        rollouts.append(Rollout(str(i), reward, response, reference, prompt or ""))
    return rollouts


def rewards_body(results: Sequence[RolloutResult]) -> dict[str, Any]:
    """OpenRLHF's answer: rewards, scores, and each component per row (0.0 where a row lacks it)."""
    scores = [float(r.score) for r in results]
    names = sorted({name for r in results for name in r.components})
    logs = {name: [float(r.components.get(name, 0.0)) for r in results] for name in names}
    return {"rewards": scores, "scores": scores, "extra_logs": logs}


def routes(door: FrontDoor) -> list[BaseRoute]:
    async def score(request: Request) -> Response:
        reward = request.path_params["reward"]
        try:
            body = json.loads(await request.body() or b"null")
            rollouts = rollouts_from_body(body, reward)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return bad_request(f"the body is not JSON: {exc}")
        except InvalidRollout as exc:
            return bad_request(f"not an OpenRLHF reward call: {exc}")
        if not rollouts:
            return await known_reward(door, reward) or JSONResponse(rewards_body([]))
        rollouts = prompt_groups(rollouts)
        try:
            refused = lone_rows_refusal(rollouts, reward) if await is_groupwise(door, reward) else None
            results = [] if refused else await score_rows(door, without_lone_groups(rollouts))
        except UpstreamError as exc:
            return error_response(exc.code, str(exc))
        return refused or unscored_answer(results, reward) or JSONResponse(rewards_body(results))

    return [Route("/openrlhf/{reward}", score, methods=["POST"])]
