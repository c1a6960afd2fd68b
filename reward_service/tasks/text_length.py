"""How shaping tasks count a completion: characters by default, tokens of a tokenizer file when the
task's ``tokenizer`` option names one (a ``tokenizer.json``, or a folder holding one).

Tokens are counted without special tokens and without the file's padding or truncation, so a
count can differ from a trainer's by the end-of-sequence token it appends.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from reward_service.task_api import InvalidTaskOptions


@functools.lru_cache(maxsize=8)
def _load_tokenizer(path: str) -> Any:
    """One tokenizer per file per process, however many tasks name it."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise InvalidTaskOptions(f"option 'tokenizer' ({path}) needs the 'tokenizers' package: "
                                 "pip install 'reward-suite[tokens]'") from None
    file = Path(path)
    if file.is_dir():
        file = file / "tokenizer.json"
    if not file.is_file():
        raise InvalidTaskOptions(f"option 'tokenizer': no tokenizer file at {path!r} "
                                 "(give a tokenizer.json or a folder holding one)")
    try:
        tokenizer = Tokenizer.from_file(str(file))
    except Exception as exc:  # noqa: BLE001 -- the tokenizers library raises its own Exception types
        raise InvalidTaskOptions(f"option 'tokenizer': cannot load {file}: {exc}") from None
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


class TextLength:
    """Counts characters, or tokens of ``tokenizer`` (a path; "" for characters)."""

    def __init__(self, tokenizer: Any = "") -> None:
        if not isinstance(tokenizer, str):
            raise InvalidTaskOptions(f"option 'tokenizer' must be a path string, got {tokenizer!r}")
        self.path = tokenizer
        self._tokenizer = _load_tokenizer(str(Path(tokenizer).expanduser().resolve())) if tokenizer else None

    def version_inputs(self) -> tuple[str, ...]:
        """The tokenizer file, for the verifier version of the task counting with it (none for characters)."""
        if not self.path:
            return ()
        file = Path(self.path).expanduser()
        return (str(file / "tokenizer.json" if file.is_dir() else file),)

    @property
    def unit(self) -> str:
        return "tokens" if self._tokenizer is not None else "chars"

    @property
    def has_tokenizer(self) -> bool:
        return self._tokenizer is not None

    def token_ids(self, text: str) -> list[int]:
        """The token ids of ``text`` (no special tokens); needs a tokenizer."""
        if self._tokenizer is None:
            raise RuntimeError("token_ids() needs a tokenizer")
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids) if text else []

    def __call__(self, text: str) -> int:
        """The length of ``text`` in this unit."""
        if self._tokenizer is None:
            return len(text)
        return len(self.token_ids(text))
