"""Verifier version hashes: which code, options and data decided a reward.

Every task gets a short hex hash (16 characters of a SHA-256) stamped on each of its results
(``RolloutResult.verifier_version``) and reported by ListTasks (``TaskInfo.verifier_version``),
so stored rewards can be re-scored and the changes reported (``reward-service rescore``), and
the server's reward cache (``router/reward_cache.py``) never answers from an older verifier.

What goes into a task's hash (the rule, stable across processes and machines):

- **code**: the source of the module that defines the task's class, and of every module it imports,
  transitively (``import`` statements anywhere in the file, lazy ones and ``TYPE_CHECKING`` ones
  included, read with ``ast``, nothing executed), that belongs to our packages (``reward_service``,
  ``reward_core``, ``sandbox``) or to the task module's own top-level package (a plugin); package
  ``__init__`` files on the way count too. Any other non-standard-library package it imports counts
  by its installed distribution's name and version (``sympy==1.13.3``); the standard library counts
  by the Python version (``major.minor``).
- **options**: the task's configured options as canonical JSON (sorted keys), except ``endpoint``
  (where a service runs is the deployment's choice, not the verifier's); an option that is a task
  (a shaping task's ``base``) counts by that task's own hash. A family member adds its member name.
- **data files**: the bytes of each file the task names in ``Task.version_inputs()`` (a tokenizer,
  a word list); a folder counts by every file under it.
- A **composite reward** hashes its components' names, hashes and weights.

What it cannot see: a remote model behind a task's endpoint (``rm``, ``prm``: such tasks are
never cached, ``Task.cacheable``), data a third-party package downloads at run time (nltk
corpora), and instance state of a task added to a registry as a ready instance (``options``
unknown: its class code and data files only).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

#: Our own top-level packages, always hashed by their source.
FIRST_PARTY = ("reward_service", "reward_core", "sandbox")
#: Characters of the hex digest a version keeps.
VERSION_CHARS = 16
#: Options left out of the hash (deployment, not verifier).
UNHASHED_OPTIONS = frozenset({"endpoint"})

_CONFIG_ATTR = "_reward_version_config"
_VERSION_ATTR = "_reward_verifier_version"


def short_hash(*parts: str | bytes) -> str:
    """SHA-256 over length-prefixed parts, as ``VERSION_CHARS`` hex characters."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()[:VERSION_CHARS]


# ---------------------------------------------------------------------------------------- code


@functools.lru_cache(maxsize=256)
def _package_root(top: str) -> Path | None:
    """The folder that holds top-level package ``top`` (found without importing it); None if none."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).parent
    return Path(spec.origin).parent if spec.origin and spec.origin.endswith(".py") else None


def _module_file(name: str, roots: Mapping[str, Path | None]) -> Path | None:
    """The source file of first-party module ``name`` (``a.b`` -> ``a/b.py`` or ``a/b/__init__.py``)."""
    root = roots.get(name.partition(".")[0])
    if root is None:
        return None
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    """Every statement of ``tree``, nested ones included (function bodies, ``if``, ``try``...), without
    walking expressions: imports are statements."""
    pending: list[Any] = [tree]
    while pending:
        node = pending.pop()
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, name, None)
            if isinstance(children, list):
                pending.extend(children)


def _imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every module name ``tree`` imports (``from a import b`` gives ``a`` and ``a.b``)."""
    found: set[str] = set()
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[:max(keep, 0)])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            if source:
                found.add(source)
                found.update(f"{source}.{alias.name}" for alias in node.names if alias.name != "*")
    return found


@functools.lru_cache(maxsize=4096)
def _file_facts(path: str, mtime_ns: int, size: int, module: str) -> tuple[str, frozenset[str]]:
    """(sha256 of the source, the modules it imports); cached per file state."""
    data = Path(path).read_bytes()
    try:
        tree = ast.parse(data)
    except SyntaxError:
        return hashlib.sha256(data).hexdigest(), frozenset()
    return hashlib.sha256(data).hexdigest(), frozenset(_imports(tree, module, path.endswith("__init__.py")))


@functools.lru_cache(maxsize=1)
def _distributions() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


@functools.lru_cache(maxsize=1)
def _own_distributions() -> frozenset[str]:
    """The distributions our packages come from (an editable or installed reward-suite)."""
    found = set()
    for top in FIRST_PARTY:
        root = _package_root(top)
        for info in (root.glob("*.egg-info") if root else ()):
            found.add(info.name.partition(".egg-info")[0].replace("_", "-"))
    try:
        found.add(importlib.metadata.distribution("reward-suite").metadata["Name"])
    except importlib.metadata.PackageNotFoundError:
        pass
    return frozenset(found)


@functools.lru_cache(maxsize=1024)
def _third_party(top: str, own_dists: frozenset[str]) -> str | None:
    """``dist==version`` for an installed package's top-level name; None for ours or the stdlib."""
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        return None
    try:  # most distributions are named for their package (sympy); the full scan is slow (~0.5 s)
        names = [importlib.metadata.distribution(top).metadata["Name"]]
    except importlib.metadata.PackageNotFoundError:
        names = _distributions().get(top, [])
    names = [d for d in names if d not in own_dists]
    if not names:
        return None
    out = []
    for dist in sorted(set(names)):
        try:
            out.append(f"{dist}=={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return ";".join(out) or None


#: module -> (its closure, the (path, mtime_ns, size) of each file in it): reused while no file changed.
_CLOSURES: dict[str, tuple[tuple[dict[str, str], set[str]], list[tuple[str, int, int]]]] = {}


def _unchanged(files: list[tuple[str, int, int]]) -> bool:
    try:
        return all((st := os.stat(path)).st_mtime_ns == mtime and st.st_size == size for path, mtime, size in files)
    except OSError:
        return False


def module_closure(module: str) -> tuple[dict[str, str], set[str]]:
    """Source hashes of ``module`` and every first-party module it imports, transitively (name ->
    sha256), and the third-party distributions on the way (``dist==version``, read once per process)."""
    cached = _CLOSURES.get(module)
    if cached is not None and _unchanged(cached[1]):
        return cached[0]
    scope = set(FIRST_PARTY) | {module.partition(".")[0]}
    roots = {top: _package_root(top) for top in scope}
    own_dists = _own_distributions()
    sources: dict[str, str] = {}
    third: set[str] = set()
    pending = [module]
    seen: set[str] = set()
    files: list[tuple[str, int, int]] = []
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        top = name.partition(".")[0]
        if top not in scope:
            dist = _third_party(top, own_dists)
            if dist:
                third.add(dist)
            continue
        parts = name.split(".")
        pending.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # the packages' __init__ run too
        path = _module_file(name, roots)
        if path is None:
            continue  # ``from pkg import name`` where name is not a module
        stat = path.stat()
        files.append((str(path), stat.st_mtime_ns, stat.st_size))
        digest, imported = _file_facts(str(path), stat.st_mtime_ns, stat.st_size, name)
        sources[name] = digest
        pending.extend(imported - seen)
    _CLOSURES[module] = ((sources, third), files)
    return sources, third


def code_hash(cls: type) -> str:
    """The hash of ``cls``'s code: its module's first-party closure and the third-party versions it uses."""
    sources, third = module_closure(cls.__module__)
    lines = [f"python {sys.version_info.major}.{sys.version_info.minor}", f"class {cls.__module__}:{cls.__qualname__}"]
    lines += [f"{name} {digest}" for name, digest in sorted(sources.items())]
    lines += sorted(third)
    return short_hash("\n".join(lines))


# ---------------------------------------------------------------------------------- options, data


def _canonical_default(value: Any) -> Any:
    if _is_task(value):
        return {"task_version": version_of(value)}
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return dict(value)
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))  # no memory address: stable across processes


def canonical_options(options: Mapping[str, Any]) -> str:
    """The options as canonical JSON (sorted keys, no spaces), without ``UNHASHED_OPTIONS``."""
    kept = {str(k): v for k, v in options.items() if k not in UNHASHED_OPTIONS}
    return json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_canonical_default)


def files_hash(paths: Iterable[str | os.PathLike]) -> str:
    """The hash of the named files' bytes (a folder: every file under it); "" for none. A missing
    file counts as missing (the task itself reports it)."""
    parts: list[str | bytes] = []
    for entry in paths:
        path = Path(entry).expanduser()
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            parts.append(file.name)
            parts.append(file.read_bytes() if file.is_file() else b"<missing>")
    return short_hash(*parts) if parts else ""


# -------------------------------------------------------------------------------------- tasks


def _is_task(value: Any) -> bool:
    from reward_service.task_api import Task

    return isinstance(value, Task)


def remember_config(task: Any, options: Mapping[str, Any], member: str | None = None) -> None:
    """Records the options (and family member) ``task`` was built with; the registry calls it."""
    setattr(task, _CONFIG_ATTR, (dict(options), member))
    if _VERSION_ATTR in vars(task):
        delattr(task, _VERSION_ATTR)


def version_of(task: Any) -> str:
    """The task's verifier version (computed once per instance; see the module docstring)."""
    cached = vars(task).get(_VERSION_ATTR)
    if cached:
        return cached
    from reward_service.router.composite import CompositeTask

    if isinstance(task, CompositeTask):
        parts = [f"{name} {version_of(part)} {weight!r}" for name, (part, weight) in sorted(task.parts.items())]
        version = short_hash("composite", "\n".join(parts))
    else:
        options, member = vars(task).get(_CONFIG_ATTR, ({}, None))
        version = short_hash("task", code_hash(type(task)), canonical_options(options), member or "",
                             files_hash(task.version_inputs()))
    setattr(task, _VERSION_ATTR, version)
    return version


def is_cacheable(task: Any) -> bool:
    """Whether ``task``'s outcomes may be cached: its ``cacheable``, and that of every task it uses
    (a composite's components, a shaping task's base)."""
    from reward_service.router.composite import CompositeTask

    if isinstance(task, CompositeTask):
        return all(is_cacheable(part) for part, _ in task.parts.values())
    if not getattr(task, "cacheable", True):
        return False
    options, _ = vars(task).get(_CONFIG_ATTR, ({}, None))
    return all(is_cacheable(value) for value in options.values() if _is_task(value))
