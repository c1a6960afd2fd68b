"""Request ids on every log line: a context variable, a logging filter, two formats.

A handler wraps each call in ``request_context``; every record logged inside it, from any
module, carries ``request_id`` and ``client_id`` (empty strings outside a request)::

    with request_context(request.request_id, client_id=peer):
        logger.info("scoring %d rollouts", n)   # ... gsm8k [request_id=r1 client=ipv4:...]: scoring 4 rollouts

The values live in :mod:`contextvars`, so they follow a call across ``await`` and into the
asyncio tasks it creates (tasks copy the context); a thread started inside does not inherit
them (run it under ``contextvars.copy_context().run``). Worker processes have their own.

``configure_logging(level, "text" | "json")`` installs one stderr handler on the root logger
with the filter and the format: text for a person, JSON lines for a log pipeline.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import json
import logging
import sys
from collections.abc import Iterator
from typing import TextIO

__all__ = ["LOG_FORMATS", "JsonFormatter", "RequestContextFilter", "TextFormatter", "configure_logging",
           "current_client_id", "current_request_id", "request_context"]

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(processName)s %(levelname)s %(name)s%(request_tag)s: %(message)s"

_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("reward_request_id", default="")
_client_id: contextvars.ContextVar[str] = contextvars.ContextVar("reward_client_id", default="")


def current_request_id() -> str:
    """The request id of the call being handled here, or ""."""
    return _request_id.get()


def current_client_id() -> str:
    """The client id of the call being handled here, or ""."""
    return _client_id.get()


@contextlib.contextmanager
def request_context(request_id: str, client_id: str = "") -> Iterator[None]:
    """Tags every record logged inside (and in asyncio tasks created inside) with these ids."""
    tokens = (_request_id.set(request_id or ""), _client_id.set(client_id or ""))
    try:
        yield
    finally:
        _client_id.reset(tokens[1])
        _request_id.reset(tokens[0])


class RequestContextFilter(logging.Filter):
    """Adds ``request_id`` and ``client_id`` to every record (a record that has them keeps them).

    Attach it to a handler (as :func:`configure_logging` does), so records propagated from
    every logger pass through it. Never drops a record.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = _request_id.get()
        if not hasattr(record, "client_id"):
            record.client_id = _client_id.get()
        return True


class TextFormatter(logging.Formatter):
    """The suite's text format; `` [request_id=... client=...]`` after the logger name when set."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        parts = []
        if getattr(record, "request_id", ""):
            parts.append(f"request_id={record.request_id}")
        if getattr(record, "client_id", ""):
            parts.append(f"client={record.client_id}")
        record.request_tag = f" [{' '.join(parts)}]" if parts else ""
        return super().format(record)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, process, message, ids, exc_info."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
            .isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "process": record.processName,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", ""),
            "client_id": getattr(record, "client_id", ""),
        }
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exc_info"] = record.exc_text
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at emit time (so a replaced stderr is followed)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> TextIO:  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass  # StreamHandler.__init__ assigns it; the property always follows sys.stderr


def configure_logging(level: str | int = "INFO", fmt: str = "text") -> logging.Handler:
    """Installs the suite's stderr handler on the root logger (replacing one installed before).

    ``fmt`` is ``"text"`` or ``"json"``; raises ValueError for anything else, or for an
    unknown level name. Handlers others installed (a test runner's, say) are left alone.
    """
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log format {fmt!r}: use one of {', '.join(LOG_FORMATS)}")
    numeric = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    if not isinstance(numeric, int):
        raise ValueError(f"log level {level!r}: use DEBUG, INFO, WARNING, ERROR or CRITICAL")
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_reward_suite_handler", False)]:
        root.removeHandler(old)
    handler = _StderrHandler()
    handler._reward_suite_handler = True  # type: ignore[attr-defined]
    handler.addFilter(RequestContextFilter())
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root.addHandler(handler)
    root.setLevel(numeric)
    return handler
