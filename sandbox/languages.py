"""Languages are data: ``sandbox/languages.toml`` says how each one is compiled and run.

A language is a file name, an optional compile command, a run command, a version command and
the Debian packages of its toolchain (see the header of ``languages.toml`` for every key).
Adding one is a table there (or in a YAML file given with ``--languages``, same keys) plus its
toolchain on the machine or in the runner image; the backends never name a language.

Python runs on the fast path (a pre-imported interpreter forks a child per execution and
``exec``s the code there); a language with a ``fork_server`` (ruby, php, R, racket, nodejs) is forked from a warm
interpreter of its own per test case (sandbox/runtime/fork_servers.py: process backend as root, docker);
every other language is compiled once per execution and its binary (or interpreter) is started
once per test case.

A language is *known* when the table has it and *available* when its toolchain is present
where programs run: on this host for the process backend (looked up on the sandbox's own
``PATH``), in the runner image for the docker backend. A known language whose toolchain is
missing answers :class:`UnsupportedLanguage` (``UNSUPPORTED_LANGUAGE``: what to install),
never a crash and never a score.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from reward_core.sandbox_contract import InvalidExecutionRequest, UnsupportedLanguage

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SPEC_FILE = Path(__file__).resolve().parent / "languages.toml"
#: The PATH programs see inside the sandbox (sandbox/runtime/untrusted.py: SAFE_ENV).
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
#: The sets of scripts/system_setup.sh and the docker image (SANDBOX_LANGUAGES=core|all|a,b,...).
LANGUAGE_SETS = ("core", "all")
_KEYS = frozenset({"source_file", "compile", "run", "version", "packages", "set", "aliases", "tools", "env",
                   "paths", "min_processes", "min_memory_mb", "min_open_files", "address_space_mb",
                   "python_fast_path",
                   "class_pattern", "class_default", "install_hint", "test_framework", "npm_packages",
                   "artifacts", "call_harness", "fork_server", "fork_server_opt_in"})


@dataclass(frozen=True)
class Language:
    """How one language is compiled and run (one table of languages.toml)."""

    name: str
    source_file: str
    run: tuple[str, ...]
    compile: tuple[str, ...] = ()
    #: Python only: run in the warm interpreter instead of ``run`` (no start-up per execution).
    fast_path_python: bool = False
    version: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    set: str = ""                                   # "core", "all", or "" (in no set: not installable here)
    aliases: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()                     # empty: derived from compile/run (see required_tools)
    env: Mapping[str, str] = field(default_factory=dict)
    paths: tuple[str, ...] = ()
    min_processes: int = 0
    min_memory_mb: int = 0
    min_open_files: int = 0
    address_space_mb: int = 0
    class_pattern: str = ""
    class_default: str = "Main"
    install_hint: str = ""
    #: A test-framework mode (pytest, junit, go_test, jest): the program is a test file the framework runs.
    test_framework: bool = False
    #: npm packages that replace ``packages`` where node is not Debian's (scripts/language_packages.py).
    npm_packages: tuple[str, ...] = ()
    #: What the compile step leaves in the scratch directory for the run (names, or top-level globs such
    #: as ``*.class``): kept in the host's compile-artifact cache (sandbox/compile_artifacts.py). Empty:
    #: a successful compile of this language is not cached.
    artifacts: tuple[str, ...] = ()
    #: FUNCTION_CALL tests in a language other than Python: code appended to the program that reads one
    #: call (JSON ``{"args", "kwargs"}``) on stdin, calls ``{entry_point}`` and prints the returned value
    #: as JSON after the marker line (sandbox/call_harness.py). Empty: function calls need Python.
    call_harness: str = ""
    #: A warm interpreter per slot that forks one process per execution instead of starting ``run``
    #: (sandbox/runtime/fork_servers.py): its argv, ``{runtime}`` being the sandbox's runtime directory.
    #: Process backend as root, and docker; elsewhere, and for an override without it, ``run`` is used.
    fork_server: tuple[str, ...] = ()
    #: The fork server costs every slot more than it saves a typical user (racket's: ~1 s of CPU and
    #: ~120 MB per slot): started only when the executor's ``fork_servers`` names the language.
    fork_server_opt_in: bool = False

    @property
    def compiled(self) -> bool:
        return bool(self.compile)

    def required_tools(self) -> tuple[str, ...]:
        """Programs (or files, when absolute) that must exist for this language to run."""
        if self.tools:
            return self.tools
        if self.fast_path_python:
            return ()
        out: list[str] = []
        for argv in (self.compile, self.run):
            if argv and not argv[0].startswith("./") and argv[0] not in ("sh", "bash") and argv[0] not in out:
                out.append(argv[0])
        if (self.compile[:1] == ("sh",) or self.run[:1] == ("sh",)) and "sh" not in out:
            out.append("sh")
        return tuple(out) or (self.run[0],)

    def hint(self) -> str:
        """What to install for this language."""
        if self.install_hint:
            return self.install_hint
        if self.packages:
            return (f"install its toolchain: apt-get install {' '.join(self.packages)} "
                    f"(or scripts/system_setup.sh with SANDBOX_LANGUAGES={self.name})")
        return f"install a toolchain providing {', '.join(self.required_tools())}"

    def class_name(self, code: str) -> str:
        """The class/object the file and commands are named after ({class}), read from the source."""
        if self.class_pattern:
            match = re.search(self.class_pattern, code)
            if match:
                return match.group(1)
        return self.class_default

    def for_code(self, code: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """(source file, compile argv, run argv) for this program, placeholders filled in."""
        cls = self.class_name(code) if "{class}" in self._templates() else self.class_default

        def fill(text: str) -> str:       # only our two placeholders: shell text keeps its own braces
            return text.replace("{class}", cls).replace("{source}", source)

        source = self.source_file.replace("{class}", cls)
        return source, tuple(fill(a) for a in self.compile), tuple(fill(a) for a in self.run)

    def _templates(self) -> str:
        return " ".join((self.source_file, *self.compile, *self.run))


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise InvalidExecutionRequest(f"{where} must be a list of strings, got {value!r}")
    return tuple(str(v) for v in value)


def language_from_spec(name: str, spec: Mapping[str, Any], where: str = "") -> Language:
    """One table of a language file as a Language; raises InvalidExecutionRequest saying what is wrong."""
    at = f"{where}: language {name!r}" if where else f"language {name!r}"
    if not isinstance(spec, Mapping):
        raise InvalidExecutionRequest(f"{at}: expected a table of settings, got {type(spec).__name__}")
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise InvalidExecutionRequest(f"{at}: unknown keys {unknown}; known: {sorted(_KEYS)}")
    if "source_file" not in spec or "run" not in spec:
        raise InvalidExecutionRequest(f"{at} needs 'source_file' and 'run'")
    env = spec.get("env") or {}
    if not isinstance(env, Mapping):
        raise InvalidExecutionRequest(f"{at}: env must be a table of strings")
    set_name = str(spec.get("set", ""))
    if set_name and set_name not in LANGUAGE_SETS:
        raise InvalidExecutionRequest(f"{at}: set must be one of {LANGUAGE_SETS}, got {set_name!r}")
    ints = {}
    for key in ("min_processes", "min_memory_mb", "min_open_files", "address_space_mb"):
        value = spec.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidExecutionRequest(f"{at}: {key} must be a non-negative integer, got {value!r}")
        ints[key] = value
    run = _strings(spec["run"], f"{at}: run")
    if not run:
        raise InvalidExecutionRequest(f"{at}: run must not be empty")
    return Language(name=name, source_file=str(spec["source_file"]), run=run,
                    compile=_strings(spec.get("compile"), f"{at}: compile"),
                    fast_path_python=bool(spec.get("python_fast_path", False)),
                    version=_strings(spec.get("version"), f"{at}: version"),
                    packages=_strings(spec.get("packages"), f"{at}: packages"), set=set_name,
                    aliases=_strings(spec.get("aliases"), f"{at}: aliases"),
                    tools=_strings(spec.get("tools"), f"{at}: tools"),
                    env={str(k): str(v) for k, v in env.items()},
                    paths=_strings(spec.get("paths"), f"{at}: paths"),
                    class_pattern=str(spec.get("class_pattern", "")),
                    class_default=str(spec.get("class_default", "Main")),
                    install_hint=str(spec.get("install_hint", "")),
                    test_framework=bool(spec.get("test_framework", False)),
                    npm_packages=_strings(spec.get("npm_packages"), f"{at}: npm_packages"),
                    artifacts=_artifacts(spec.get("artifacts"), at),
                    call_harness=str(spec.get("call_harness", "")),
                    fork_server=_strings(spec.get("fork_server"), f"{at}: fork_server"),
                    fork_server_opt_in=bool(spec.get("fork_server_opt_in", False)), **ints)


def _artifacts(value: object, at: str) -> tuple[str, ...]:
    """``artifacts``: relative names inside the scratch directory (a glob matches its top level only)."""
    names = _strings(value, f"{at}: artifacts")
    for name in names:
        if not name or name.startswith("/") or any(part in ("", ".", "..") for part in name.split("/")) \
                or (any(c in name for c in "*?[") and "/" in name):
            raise InvalidExecutionRequest(f"{at}: artifact {name!r} must be a relative name without '.'/'..' "
                                          "(a glob only at the top level)")
    return names


@lru_cache(maxsize=1)
def _builtin() -> tuple[Language, ...]:
    with open(SPEC_FILE, "rb") as f:
        raw = tomllib.load(f)
    return tuple(language_from_spec(name, spec, str(SPEC_FILE.name)) for name, spec in raw.items())


def host_missing_tools(language: Language, path: str = SANDBOX_PATH) -> list[str]:
    """The tools of ``language`` that this host lacks on the sandbox's PATH (absolute ones as files)."""
    missing = []
    for tool in language.required_tools():
        if tool.startswith("/"):
            if not os.path.exists(tool):
                missing.append(tool)
        elif shutil.which(tool, path=path) is None:
            missing.append(tool)
    return missing


#: A probe says why a language cannot run where programs run ("" when it can).
Probe = Callable[[Language], str]


def host_probe(language: Language) -> str:
    """The process backend's probe: the toolchain must be on this host, on the sandbox's PATH."""
    missing = host_missing_tools(language)
    return f"{', '.join(missing)} not found on {SANDBOX_PATH}" if missing else ""


class LanguageTable(dict):
    """Language name -> Language, plus aliases and which languages cannot run here (and why)."""

    def __init__(self, languages: Iterable[Language] = (), unavailable: Mapping[str, str] | None = None) -> None:
        super().__init__((lang.name, lang) for lang in languages)
        self.unavailable: dict[str, str] = dict(unavailable or {})

    def alias_map(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for lang in self.values():
            for alias in lang.aliases:
                out.setdefault(alias, lang.name)
        return out

    def with_probe(self, probe: Probe) -> LanguageTable:
        """A copy whose ``unavailable`` says, per language, why ``probe`` found it cannot run."""
        reasons = {}
        for lang in self.values():
            reason = probe(lang)
            if reason:
                reasons[lang.name] = reason
        return LanguageTable(self.values(), reasons)

    def restricted_to(self, names: Iterable[str]) -> LanguageTable:
        """A copy where only ``names`` (languages or aliases) are available; the rest are known but off."""
        keep = {resolve_language_name(n, self) for n in names}
        reasons = {name: f"not enabled on this server (enabled: {', '.join(sorted(keep))})"
                   for name in self if name not in keep}
        return LanguageTable(self.values(), {**self.unavailable, **reasons})

    def available(self) -> list[Language]:
        return [lang for name, lang in self.items() if name not in self.unavailable]


def builtin_languages() -> LanguageTable:
    """Every language of languages.toml, none probed (all counted as available)."""
    return LanguageTable(_builtin())


BUILTIN_LANGUAGES: Mapping[str, Language] = builtin_languages()


def load_languages(path: str | Path | None = None, probe: Probe | None = host_probe) -> LanguageTable:
    """The built-in languages plus (overriding) those of a YAML or TOML file, probed with ``probe``.

    ``probe`` None: every language counts as available (a remote sandbox decides).
    """
    languages = {lang.name: lang for lang in _builtin()}
    if path is not None:
        text = Path(path).read_bytes()
        try:
            raw = tomllib.loads(text.decode()) if str(path).endswith(".toml") else yaml.safe_load(text)
        except (yaml.YAMLError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InvalidExecutionRequest(f"{path}: cannot parse: {exc}") from None
        raw = raw or {}
        if not isinstance(raw, Mapping):
            raise InvalidExecutionRequest(f"{path}: expected a mapping of language name -> settings")
        for name, spec in raw.items():
            base = languages.get(str(name))
            lang = language_from_spec(str(name), spec, str(path))
            languages[lang.name] = lang if base is None else _merged(base, lang, spec)
    table = LanguageTable(languages.values())
    return table.with_probe(probe) if probe is not None else table


def _merged(base: Language, new: Language, spec: Mapping[str, Any]) -> Language:
    """An override keeps the built-in's packages, set, version, aliases and test-framework flag unless it
    gives its own, and the built-in's artifacts unless it gives its own or another compile command."""
    keep = {k: getattr(base, k) for k in ("packages", "set", "version", "aliases", "test_framework", "npm_packages")
            if k not in spec}
    if "artifacts" not in spec and "compile" not in spec:
        keep["artifacts"] = base.artifacts
    return replace(new, **keep)


def resolve_language_name(name: str, languages: Mapping[str, Language] | None = None) -> str:
    table = BUILTIN_LANGUAGES if languages is None else languages
    if name in table:
        return name
    aliases = table.alias_map() if isinstance(table, LanguageTable) else {}
    if name in aliases:
        return aliases[name]
    lowered = {k.lower(): k for k in table} | {k.lower(): v for k, v in aliases.items()}
    if name.lower() in lowered:
        return lowered[name.lower()]
    raise InvalidExecutionRequest(f"unknown language {name!r}; known: {sorted(table)}")


def resolve_language(name: str, languages: Mapping[str, Language] | None = None) -> Language:
    """The language called ``name`` (or an alias of it); raises InvalidExecutionRequest for an unknown
    name and UnsupportedLanguage for a known one whose toolchain is missing here."""
    table = BUILTIN_LANGUAGES if languages is None else languages
    lang = table[resolve_language_name(name, table)]
    reason = getattr(table, "unavailable", {}).get(lang.name)
    if reason:
        raise UnsupportedLanguage(lang.name, f"{reason}; {lang.hint()}")
    return lang


def started_fork_servers(table: Mapping[str, Language], wanted: Sequence[str] | None) -> dict[str, tuple[str, ...]]:
    """Language name -> the argv of its fork server, for the servers each slot of either backend starts:
    those ``wanted`` names (``"default"``: every server not opt-in), or by default every one not opt-in;
    an available language only (of this host, or of the runner image), in languages.toml's order (the
    order the zygote starts them). A language's ``env`` reaches its server (and so every child it forks)
    through ``env NAME=VALUE ...`` in front of the server's argv. A wanted name without a fork server is a
    ValueError."""
    servers = {lang.name: lang for lang in table.values() if lang.fork_server}
    names = set(wanted) if wanted is not None else {"default"}
    unknown = names - set(servers) - {"default"}
    if unknown:
        raise ValueError(f"fork_servers: {sorted(unknown)} have no fork server; those that do: {sorted(servers)}")
    if "default" in names:
        names |= {name for name, lang in servers.items() if not lang.fork_server_opt_in}
    unavailable = getattr(table, "unavailable", {})
    return {name: (("env", *(f"{k}={v}" for k, v in lang.env.items()), *lang.fork_server) if lang.env
                   else lang.fork_server)
            for name, lang in servers.items() if name in names and name not in unavailable}


def languages_in_set(selection: str, table: Mapping[str, Language] | None = None) -> list[Language]:
    """SANDBOX_LANGUAGES: "core", "all" (every installable language) or a comma-separated list."""
    table = BUILTIN_LANGUAGES if table is None else table
    selection = (selection or "core").strip()
    if selection == "core":
        return [lang for lang in table.values() if lang.set == "core"]
    if selection == "all":
        return [lang for lang in table.values() if lang.set in LANGUAGE_SETS]
    names = [n.strip() for n in selection.split(",") if n.strip()]
    chosen = {resolve_language_name(n, table) for n in names} | {lang.name for lang in table.values()
                                                                   if lang.set == "core"}
    return [lang for lang in table.values() if lang.name in chosen]


@lru_cache(maxsize=64)
def host_version(argv: tuple[str, ...], timeout_s: float = 30.0) -> str:
    """The first non-empty line a version command prints on this host ("" when it fails)."""
    if not argv:
        return ""
    env = {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8", "HOME": "/tmp"}
    try:
        proc = subprocess.run(list(argv), capture_output=True, timeout=timeout_s, env=env, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return version_line((proc.stdout + b"\n" + proc.stderr).decode("utf-8", "replace"))


def version_line(text: str) -> str:
    """The first non-empty line of a version command's output that is not a runtime's warning
    (kotlinc prints the JVM's deprecation warning before its version)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return next((line for line in lines if "warning:" not in line.lower()), lines[0] if lines else "")
