"""The ``code`` task's file and argument fields: a reference's ``files``, ``args`` and ``expected_files``.

Pure parsing and comparison, no I/O. A file's content in a reference is JSON-shaped:

* a string: the file's text (written as UTF-8);
* ``{"base64": "..."}``: binary content;
* null: no file (as SandboxFusion's ``files`` treats a null entry).

Names are relative paths inside the program's scratch directory (``check_file_name``). ``files`` are
written before the compile step and before every test case; ``args`` are appended to the run
command of every case; ``expected_files`` are read back after the last case (the sandbox's
``fetch_files``) and must each hold exactly the given content, else the completion fails its tests
(a missing file fails too). Stdin/stdout references only (the sandbox writes files for STDIO runs).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from reward_core.sandbox_contract import ExecutionResult, InvalidExecutionRequest, check_file_name
from reward_service.task_api import InvalidReference

FIELDS = ("files", "args", "expected_files")


def file_content(value: Any, where: str) -> bytes | None:
    """One file's content from its JSON shape (see the module doc); None for a null entry."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, Mapping) and set(value) == {"base64"} and isinstance(value["base64"], str):
        try:
            return base64.b64decode(value["base64"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidReference(f"{where}: 'base64' is not valid base64: {exc}") from None
    raise InvalidReference(f"{where} must be the file's text (a string), {{\"base64\": \"...\"}} or null, "
                           f"got {type(value).__name__}")


def parse_files(value: Any, field: str = "files") -> dict[str, bytes]:
    """``{name: content}`` of a reference field (a missing field: no files); raises InvalidReference."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidReference(f"reference '{field}' must be an object of file name -> content, "
                               f"got {type(value).__name__}")
    out: dict[str, bytes] = {}
    for name, content in value.items():
        try:
            check_file_name(name, f"reference '{field}'")
        except InvalidExecutionRequest as exc:
            raise InvalidReference(str(exc)) from None
        data = file_content(content, f"reference '{field}' {name!r}")
        if data is not None:
            out[name] = data
    return out


def parse_args(value: Any) -> tuple[str, ...]:
    """A reference's ``args``: a list of strings (a missing field: none); raises InvalidReference."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise InvalidReference(f"reference 'args' must be a list of strings, got {value!r}"[:300])
    return tuple(value)


def wrong_files(result: ExecutionResult, expected: Mapping[str, bytes]) -> list[str]:
    """The expected files the program did not write as expected (missing or different), in name order."""
    return [name for name in sorted(expected) if result.files.get(name) != expected[name]]
