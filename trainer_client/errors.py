"""The errors a trainer user can act on, in one place: ``from trainer_client.errors import ...``.

Client errors (re-exported from :mod:`reward_core.clients.errors`):

* :class:`EndpointUnreachable`: nothing answers at the reward endpoint (said within seconds, with why);
* :class:`ServerUnavailable`: the reward server went away (draining, shut down) and no replica answered;
* :class:`CallTimedOut` (a ``TimeoutError``): a call got no answer within its ``timeout_s`` (the message says
  what to raise or send less of);
* :class:`CallRejected`: the server refused a call (INVALID_ARGUMENT: a limit or an unknown name;
  RESOURCE_EXHAUSTED: its queue is full; UNAUTHENTICATED / PERMISSION_DENIED: the token), with what it said;
* :class:`CallFailed`: a call failed with any other code (their base; INTERNAL: the server log has the traceback).

Each of the last three, and ServerUnavailable (``code()`` UNAVAILABLE), is also a ``grpc.RpcError`` with
the call's ``code()`` and ``details()``.

The trainer's own (each a :class:`TrainerError`, and also the built-in kind it is):

* :class:`ModelPathError` (an ``OSError``): ``model.path`` is missing, not a checkpoint, or not a causal LM;
* :class:`PromptDataError` (a ``ValueError``): the prompts file is unreadable, a row is malformed, or the
  reward service cannot score a row (unknown task, reference fields missing): file and line named;
* :class:`ConfigChangeError` (a ``ValueError``): a resume with another config (``--allow-config-change``);
* :class:`NothingScoredError` (a ``RuntimeError``): a whole step came back unscored.

and :class:`MissingExtra` (an ``ImportError``): an optional stack is not installed (the extra named).
``trainer-client`` prints every one of :data:`USER_ERRORS` as ``error: ...`` with exit status 2, no
traceback. This module imports neither torch nor transformers.
"""

from __future__ import annotations

from reward_core.clients.errors import (
    CallFailed,
    CallRejected,
    CallTimedOut,
    ClientError,
    EndpointUnreachable,
    ServerUnavailable,
)
from reward_core.extras import MissingExtra

__all__ = [
    "USER_ERRORS",
    "CallFailed",
    "CallRejected",
    "CallTimedOut",
    "ClientError",
    "ConfigChangeError",
    "EndpointUnreachable",
    "MissingExtra",
    "ModelPathError",
    "NothingScoredError",
    "PromptDataError",
    "ServerUnavailable",
    "TrainerError",
]


class TrainerError(Exception):
    """Base of the trainer's own user-facing errors."""


class ModelPathError(TrainerError, OSError):
    """A model path that cannot be a policy: missing, not a checkpoint, or not a causal LM."""


class PromptDataError(TrainerError, ValueError):
    """A prompt file is missing or malformed, or holds rows the reward service cannot score; the message
    names the file and line."""


class ConfigChangeError(TrainerError, ValueError):
    """A resume with a config that differs from the run's in keys that change what is trained."""


class NothingScoredError(TrainerError, RuntimeError):
    """A whole step came back unscored: the reward service or the task setup is broken."""


#: What ``trainer-client`` reports as a one-line error (exit 2) instead of a traceback.
USER_ERRORS: tuple[type[BaseException], ...] = (TrainerError, ClientError, MissingExtra)
