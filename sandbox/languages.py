"""Languages are configuration: a file name, an optional compile command, a run command.

Python runs on the fast path (a pre-imported interpreter forks a child per
execution and ``exec``s the code there); every other language is compiled once
per execution and its binary is started once per test case. Adding one is an
entry in a YAML file (``--languages F`` on the CLIs), e.g.::

    rust:
      source_file: main.rs
      compile: ["rustc", "-O", "-o", "main", "main.rs"]
      run: ["./main"]

Commands run inside the sandbox's scratch directory, with the same limits as the
program (compilation gets ``Limits.compile_wall_s``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from reward_core.sandbox_contract import InvalidExecutionRequest


@dataclass(frozen=True)
class Language:
    name: str
    source_file: str
    run: tuple[str, ...]
    compile: tuple[str, ...] = ()
    #: Python only: run in the warm interpreter instead of ``run`` (no start-up per execution).
    fast_path_python: bool = False


BUILTIN_LANGUAGES: dict[str, Language] = {
    "python": Language(name="python", source_file="main.py", run=("python3", "-I", "main.py"),
                       fast_path_python=True),
    "cpp": Language(name="cpp", source_file="main.cpp",
                    compile=("g++", "-O2", "-std=c++17", "-pipe", "-o", "main", "main.cpp"), run=("./main",)),
}


def load_languages(path: str | Path | None = None) -> dict[str, Language]:
    """The built-in languages, plus (overriding) those of a YAML file."""
    languages = dict(BUILTIN_LANGUAGES)
    if path is None:
        return languages
    raw = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(raw, Mapping):
        raise InvalidExecutionRequest(f"{path}: expected a mapping of language name -> settings")
    for name, spec in raw.items():
        if not isinstance(spec, Mapping) or "source_file" not in spec or "run" not in spec:
            raise InvalidExecutionRequest(f"{path}: language {name!r} needs 'source_file' and 'run'")
        languages[str(name)] = Language(name=str(name), source_file=str(spec["source_file"]),
                                        run=tuple(str(a) for a in spec["run"]),
                                        compile=tuple(str(a) for a in spec.get("compile", ())))
    return languages


def resolve_language(name: str, languages: Mapping[str, Language] | None = None) -> Language:
    table = BUILTIN_LANGUAGES if languages is None else languages
    try:
        return table[name]
    except KeyError:
        raise InvalidExecutionRequest(f"unknown language {name!r}; known: {sorted(table)}") from None
