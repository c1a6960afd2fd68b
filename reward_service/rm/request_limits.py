"""What a reward-model call may carry, checked before any tokenization: named errors, named flags.

Every rejection is INVALID_ARGUMENT and its message names the limit, the request's value and
the ``reward-service serve-rm`` flag that sets it, so a person can act on it:

    request has 9 items; the limit is 8 (--max-items-per-request): split it into smaller calls

Requests are decoded by the server shell (``reward_core.server_shell``), which answers a malformed
one (corrupt wire format, invalid UTF-8 in a string field) INVALID_ARGUMENT itself; the checks
here run on the decoded message. The transport accepts up to twice ``--max-message-mb`` so that
:func:`check_message_size` can refuse a request over the limit with this message, not grpc's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import grpc
from google.protobuf.message import Message

from reward.v1 import reward_model_pb2 as pb
from reward_core.grpc_common import DEFAULT_MAX_CALL_S, RequestRejected, check_ids

MIB = 1024 * 1024


@dataclass(frozen=True)
class RequestLimits:
    """Limits checked on every call, each a flag of ``reward-service serve-rm``."""

    max_items_per_request: int = dataclasses.field(default=1024, metadata={"help": "larger requests: INVALID_ARGUMENT"})
    max_prompt_chars: int = dataclasses.field(default=100_000, metadata={
        "help": "characters per prompt, before tokenization; longer: INVALID_ARGUMENT"})
    max_completion_chars: int = dataclasses.field(default=100_000, metadata={
        "help": "characters per completion, before tokenization; longer: INVALID_ARGUMENT"})
    max_message_mb: int = dataclasses.field(default=64, metadata={
        "help": "largest request in MiB; larger: INVALID_ARGUMENT (over twice this the transport refuses it)"})
    max_call_s: float = dataclasses.field(default=DEFAULT_MAX_CALL_S, metadata={
        "help": "longest a call waits for its scores, with or without a client deadline; then DEADLINE_EXCEEDED"})

    def __post_init__(self) -> None:
        if min(self.max_items_per_request, self.max_prompt_chars, self.max_completion_chars, self.max_message_mb) < 1:
            raise ValueError(f"every request limit must be >= 1, got {self}")
        if not self.max_call_s > 0:
            raise ValueError(f"max_call_s must be > 0 seconds, got {self.max_call_s}")


def _too_large(what: str, value: str, limit: str, flag: str, advice: str) -> RequestRejected:
    return RequestRejected(grpc.StatusCode.INVALID_ARGUMENT,
                           f"{what} {value}; the limit is {limit} ({flag}): {advice}")


def check_message_size(request: Message, limits: RequestLimits) -> None:
    """Raises RequestRejected (INVALID_ARGUMENT) when ``request`` is over ``--max-message-mb``."""
    size = request.ByteSize()
    if size > limits.max_message_mb * MIB:
        raise _too_large("request is", f"{size} bytes ({size / MIB:.1f} MiB)", f"{limits.max_message_mb} MiB",
                         "--max-message-mb", "send fewer or shorter items per call")


def validate_score_request(request: pb.RewardModelRequest, limits: RequestLimits) -> None:
    """Raises RequestRejected (INVALID_ARGUMENT): too many items, an empty or duplicate id, or a
    prompt or completion over its character limit (counted before tokenization)."""
    n = len(request.items)
    if n > limits.max_items_per_request:
        raise _too_large("request has", f"{n} items", str(limits.max_items_per_request), "--max-items-per-request",
                         "split it into smaller calls")
    check_ids((item.id for item in request.items), "item")
    for i, item in enumerate(request.items):
        for field, text, limit, flag in (("prompt", item.prompt, limits.max_prompt_chars, "--max-prompt-chars"),
                                         ("completion", item.completion, limits.max_completion_chars,
                                          "--max-completion-chars")):
            if len(text) > limit:
                raise _too_large(f"item {item.id!r} (index {i}) has a {field} of", f"{len(text)} characters",
                                 str(limit), flag, f"shorten the {field} or raise the server's limit")


def validate_step_request(request: pb.StepScoreRequest, limits: RequestLimits) -> None:
    """Raises RequestRejected (INVALID_ARGUMENT) as ``validate_score_request`` does, for step scoring:
    too many items, an empty or duplicate id, a prompt or the steps together over the character limits."""
    n = len(request.items)
    if n > limits.max_items_per_request:
        raise _too_large("request has", f"{n} items", str(limits.max_items_per_request), "--max-items-per-request",
                         "split it into smaller calls")
    check_ids((item.id for item in request.items), "item")
    for item in request.items:
        steps_chars = sum(len(step) for step in item.steps)
        for field, size, limit, flag in (("prompt", len(item.prompt), limits.max_prompt_chars, "--max-prompt-chars"),
                                         ("steps", steps_chars, limits.max_completion_chars,
                                          "--max-completion-chars")):
            if size > limit:
                raise _too_large(f"item {item.id!r} has a {field} of", f"{size} characters", str(limit), flag,
                                 "shorten it")
