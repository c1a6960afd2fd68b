"""The model being served, and hot reload: load the new checkpoint beside the old, then swap.

The holder only swaps a reference under a lock; requests keep the model they were
encoded with (see ``dynamic_batcher``), so calls already queued finish on the old model
and the old one is freed when the last of them is answered.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from reward_service.rm.checkpoint import CheckpointError, LoadedRewardModel

logger = logging.getLogger(__name__)

Loader = Callable[[str], LoadedRewardModel]


class ModelNotReady(RuntimeError):
    """No model is loaded yet (still loading, or the initial load failed)."""


class ReloadInProgress(RuntimeError):
    """Another Reload call is loading a checkpoint; only one runs at a time."""


class ModelHolder:
    """Holds the current :class:`LoadedRewardModel`; loads, warms up and swaps checkpoints."""

    def __init__(self, loader: Loader, on_loaded: Callable[[LoadedRewardModel], None] | None = None) -> None:
        self._loader = loader
        self._on_loaded = on_loaded
        self._current: LoadedRewardModel | None = None
        self._lock = threading.Lock()
        self._reload_lock = threading.Lock()
        self._error = ""
        #: Set once the initial load has finished, successfully or not.
        self.settled = threading.Event()

    def current(self) -> LoadedRewardModel:
        """The model serving now; raises ModelNotReady with the reason when there is none."""
        with self._lock:
            model, error = self._current, self._error
        if model is not None:
            return model
        if error:
            raise ModelNotReady(f"no reward model is loaded: {error}; fix the checkpoint and call Reload")
        raise ModelNotReady("the reward model is still loading; retry shortly")

    @property
    def loaded(self) -> bool:
        with self._lock:
            return self._current is not None

    @property
    def load_error(self) -> str:
        with self._lock:
            return self._error

    def load_initial(self, path: str) -> None:
        """Loads and warms the first checkpoint (run on a background thread); records a failure."""
        try:
            self.reload(path)
        except (CheckpointError, ReloadInProgress) as exc:
            logger.error("initial reward model load failed: %s", exc)
            with self._lock:
                if self._current is None:
                    self._error = str(exc)
        finally:
            self.settled.set()

    def reload(self, path: str) -> tuple[LoadedRewardModel, LoadedRewardModel | None]:
        """Loads ``path``, warms it up, swaps it in; returns ``(new, previous)``.

        Raises CheckpointError (the old model keeps serving) or ReloadInProgress.
        """
        if not self._reload_lock.acquire(blocking=False):
            raise ReloadInProgress("another Reload is in progress; wait for it to finish and retry")
        try:
            model = self._loader(path)
            _warm_up(model)
            with self._lock:
                previous, self._current, self._error = self._current, model, ""
        finally:
            self._reload_lock.release()
        logger.info("now serving reward model %s (previous: %s)", model.path, previous.path if previous else "none")
        if self._on_loaded is not None:
            self._on_loaded(model)
        return model, previous


def _warm_up(model: LoadedRewardModel) -> None:
    try:
        model.warm_up()
    except Exception as exc:  # whatever a broken checkpoint raises, it must not replace the serving model
        raise CheckpointError(f"{model.path}: the warm-up forward pass failed: {type(exc).__name__}: {exc}") from exc
