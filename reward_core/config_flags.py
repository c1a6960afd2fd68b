"""Command-line flags from a config dataclass: one builder for every program of the suite.

Each field becomes ``--field-name`` (``metadata["flag"]`` names another, ``metadata["metavar"]`` its
value in the help), with the field's ``metadata["help"]``, the field's type (``int``, ``float``,
``str``, or one of them ``| None``; a ``bool`` becomes a ``--flag`` switch, with ``--no-flag`` when
it defaults to on, or always with ``negatable=True``), and a default read from the environment
variable ``<PREFIX><FLAG_NAME>`` when it is set (for containers), else the field's own default.
The help shows both::

    parser = argparse.ArgumentParser()
    add_dataclass_flags(parser, ServerConfig, "REWARD_SERVICE_", skip=("security", "scorer.rewards"))
    args = parser.parse_args()
    config = ServerConfig(**dataclass_values(args, ServerConfig, given={"scorer.rewards": rewards}))

A field whose type is itself a dataclass is a nested config: its fields become flags too, named
``--<flag prefix><field-name>`` with variables ``<PREFIX><ENV PREFIX><FIELD_NAME>``. Declare the
field with :func:`nested` to choose the prefixes (by default none, so a config that moves its
fields into a sub-config keeps its flag names); undeclared, they are ``<field>-`` and ``<FIELD>_``.
``skip``, ``only`` and ``given`` name fields by dotted path (``"scorer.rewards"``), and
:func:`dataclass_values` rebuilds the nested objects, starting from the parent's default for
each. Fields of other types (tuples, mappings) must be skipped, or the builder raises
TypeError: they have flags of their own or come from a file.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import types
import typing
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

__all__ = ["add_dataclass_flags", "dataclass_from_values", "dataclass_values", "env_name", "env_names", "flag_name",
           "nested", "parse_bool"]

_TYPES: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool}
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")
FLAG = "flag"                # field metadata key: the field's flag name, when not its own ("out" for out_dir)
FLAG_PREFIX = "flag_prefix"  # field metadata keys of a nested config (see ``nested``)
ENV_PREFIX = "env_prefix"


def flag_name(field_name: str) -> str:
    """``item_timeout_s`` -> ``--item-timeout-s``."""
    return "--" + field_name.replace("_", "-")


def env_name(env_prefix: str, field_name: str) -> str:
    """``("REWARD_SERVICE_", "item_timeout_s")`` -> ``REWARD_SERVICE_ITEM_TIMEOUT_S``."""
    return env_prefix + field_name.upper()


def parse_bool(text: str) -> bool:
    """``1/true/yes/on`` -> True, ``0/false/no/off`` or empty -> False (any case); else ValueError."""
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{text!r} is not a boolean: use one of {', '.join(_TRUE)} or {', '.join(_FALSE[:-1])}")


def nested(factory: Callable[[], Any], *, flag_prefix: str = "", env_prefix: str = "", help: str = "") -> Any:
    """A field holding a sub-config (``factory()`` is its default) whose fields are flags of the parent's.

    ``--<flag_prefix><field-name>``, environment ``<parent's prefix><env_prefix><FIELD_NAME>``: the
    empty prefixes keep the names the fields had when they were the parent's own.
    """
    return dataclasses.field(default_factory=factory,
                             metadata={FLAG_PREFIX: flag_prefix, ENV_PREFIX: env_prefix, "help": help})


@dataclasses.dataclass(frozen=True)
class _Scope:
    """Where one (sub-)config's fields get their names and defaults."""

    path: str = ""           # dotted path of the config's fields ("" at the top)
    flag: str = ""           # flag-name prefix ("scorer-"; "" keeps the field names)
    env: str | None = None   # environment prefix (None: no environment defaults)
    defaults: Any = None     # the instance holding this config's defaults (None: the fields' own)

    def inner(self, f: dataclasses.Field, default: Any) -> _Scope:
        flag = f.metadata.get(FLAG_PREFIX, f.name.replace("_", "-") + "-")
        env = f.metadata.get(ENV_PREFIX, f.name.upper() + "_")
        return _Scope(self.path + f.name + ".", self.flag + flag, None if self.env is None else self.env + env,
                      default)


@dataclasses.dataclass(frozen=True)
class _Leaf:
    """One flag: its field, dotted path, type, names and default."""

    field: dataclasses.Field
    path: str
    kind: type
    flag: str
    dest: str
    env: str | None
    default: Any
    required: bool


def _field_default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None  # a required field: required flag unless the environment sets it


def _has_default(f: dataclasses.Field) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


def _hints(cls: type) -> dict[str, Any]:
    """The fields' types, resolved (annotations stay strings when a name cannot be resolved)."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):
        return {f.name: f.type for f in dataclasses.fields(cls)}


def _unwrap_optional(hint: Any) -> Any:
    """``int | None`` -> ``int``; anything else unchanged."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def _flag_type(hint: Any, default: Any) -> type | None:
    """The field's scalar type, from its annotation (resolved, or a string) or else its default."""
    hint = _unwrap_optional(hint)
    if hint in _TYPES.values():
        return hint
    if isinstance(hint, str) and hint.split("|")[0].strip() in _TYPES:
        return _TYPES[hint.split("|")[0].strip()]
    return type(default) if type(default) in _TYPES.values() else None


def _nested_type(hint: Any) -> type | None:
    hint = _unwrap_optional(hint)
    return hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None


def _wanted(path: str, skip: Collection[str], only: Collection[str] | None, *, group: bool = False) -> bool:
    """Whether the field at ``path`` gets flags (a group: whether any field under it may)."""
    parts = path.split(".")
    ancestors = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    if ancestors & set(skip):
        return False
    if only is None or ancestors & set(only):
        return True
    return group and any(name.startswith(path + ".") for name in only)


def _own_name(f: dataclasses.Field) -> str:
    """The field's flag name without prefix, underscored: ``metadata["flag"]`` or the field's name."""
    return f.metadata.get(FLAG, f.name).replace("-", "_")


def _dest(scope: _Scope, f: dataclasses.Field) -> str:
    """The argparse destination of a field's flag: the flag's name, underscored (``--pool-workers``: pool_workers)."""
    return scope.flag.replace("-", "_") + _own_name(f)


def _leaves(cls: type, scope: _Scope, skip: Collection[str], only: Collection[str] | None,
            environ: Mapping[str, str], strict: bool = True) -> Iterator[_Leaf]:
    """The flags of ``cls``'s fields, nested configs' included (``strict``: TypeError for a field
    that can have none; else it is passed over)."""
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        path = scope.path + f.name
        inner_cls = _nested_type(hints[f.name])
        if inner_cls is not None:
            if _wanted(path, skip, only, group=True):
                inner_default = getattr(scope.defaults, f.name) if scope.defaults is not None else _field_default(f)
                yield from _leaves(inner_cls, scope.inner(f, inner_default), skip, only, environ, strict)
            continue
        if not _wanted(path, skip, only):
            continue
        default = getattr(scope.defaults, f.name) if scope.defaults is not None else _field_default(f)
        kind = _flag_type(hints[f.name], default)
        if kind is None and not strict:
            continue
        if kind is None:
            raise TypeError(f"{cls.__name__}.{f.name} ({f.type}) has no flag type: int, float, str and bool "
                            "have; pass it in skip= and set it another way")
        dest = _dest(scope, f)
        variable = None if scope.env is None else env_name(scope.env, _own_name(f))
        required = scope.defaults is None and not _has_default(f)
        text = environ.get(variable) if variable is not None else None
        if text is not None:
            default = _parse_env(variable, text, parse_bool if kind is bool else kind)
            required = False
        yield _Leaf(f, path, kind, flag_name(dest), dest, variable, default, required)


def add_dataclass_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup, cls: type,
                        env_prefix: str | None, skip: Collection[str] = (), only: Collection[str] | None = None,
                        environ: Mapping[str, str] | None = None, *, negatable: bool = False) -> None:
    """Adds one flag per field of the dataclass ``cls``, nested configs' fields included.

    ``skip`` and ``only`` name fields (or whole nested configs) by dotted path. ``env_prefix``
    None: no environment defaults (nor ``env`` in the help). A bool is a ``--flag`` switch, with
    ``--no-flag`` when its default is on; ``negatable`` gives every bool both (one help entry).
    Raises TypeError for a field that is not int/float/str/bool (or ``| None``) and not skipped,
    and ValueError when an environment default does not parse as the field's type (the message
    names the variable).
    """
    env = os.environ if environ is None else environ
    for leaf in _leaves(cls, _Scope(env=env_prefix), skip, only, env):
        parts = [] if leaf.required and leaf.env is None else ["required" if leaf.required else
                                                               f"default: {leaf.default}"]
        parts += [f"env {leaf.env}"] if leaf.env is not None else []
        suffix = f" ({'; '.join(parts)})" if parts else ""
        help_text = (leaf.field.metadata.get("help", "") + suffix).lstrip().replace("%", "%%")
        if leaf.kind is bool and negatable:
            parser.add_argument(leaf.flag, dest=leaf.dest, action=argparse.BooleanOptionalAction,
                                default=leaf.default, help=help_text)
        elif leaf.kind is bool:  # a switch; its negation too when the default (maybe from env) is on
            parser.add_argument(leaf.flag, dest=leaf.dest, action="store_true", default=bool(leaf.default),
                                help=help_text)
            if leaf.default:
                parser.add_argument("--no-" + leaf.flag[2:], dest=leaf.dest, action="store_false",
                                    help=f"turn {leaf.flag} off")
        else:
            parser.add_argument(leaf.flag, dest=leaf.dest, type=leaf.kind, default=leaf.default,
                                required=leaf.required, help=help_text, metavar=leaf.field.metadata.get("metavar"))


def env_names(cls: type, env_prefix: str, skip: Collection[str] = (), only: Collection[str] | None = None) -> set[str]:
    """The environment variables the flags of ``add_dataclass_flags(parser, cls, env_prefix, ...)`` read."""
    return {leaf.env for leaf in _leaves(cls, _Scope(env=env_prefix), skip, only, {})
            if leaf.env is not None}


def _parse_env(variable: str, text: str, parse: Callable[[str], Any]) -> Any:
    try:
        return parse(text)
    except ValueError as exc:
        raise ValueError(f"environment variable {variable}={text!r}: {exc}") from None


def dataclass_values(args: argparse.Namespace, cls: type, skip: Collection[str] = (),
                     given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The parsed values of ``cls``'s fields found in ``args`` (minus ``skip``), as constructor kwargs.

    A nested config is rebuilt from its parsed fields over its default (left out when none of
    its fields was parsed or given). ``given`` supplies values for fields without flags by
    dotted path (``{"scorer.rewards": rewards, "security": security}``).
    """
    return _values(args, cls, _Scope(), skip, given or {})


def _values(args: argparse.Namespace, cls: type, scope: _Scope, skip: Collection[str],
            given: Mapping[str, Any]) -> dict[str, Any]:
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        path = scope.path + f.name
        if path in given:
            values[f.name] = given[path]
            continue
        if not _wanted(path, skip, None):
            continue
        inner_cls = _nested_type(hints[f.name])
        if inner_cls is None:
            dest = _dest(scope, f)
            if hasattr(args, dest):
                values[f.name] = getattr(args, dest)
            continue
        base = getattr(scope.defaults, f.name) if scope.defaults is not None else (
            _field_default(f) if _has_default(f) else None)
        inner = _values(args, inner_cls, scope.inner(f, base), skip, given)
        if inner:
            values[f.name] = dataclasses.replace(base, **inner) if base is not None else inner_cls(**inner)
    return values


def dataclass_from_values(cls: type, values: Mapping[str, Any]) -> Any:
    """``cls`` built from values named as its flags are (``max_queue``, not ``scorer.max_queue``) or by
    dotted path (``"scorer.rewards"``), each into its nested config: what the command line would
    build, from a mapping (tests, programs that start a server in-process).

    Raises TypeError for a name that is neither.
    """
    by_dest = {leaf.dest: leaf.path for leaf in _leaves(cls, _Scope(), (), None, {}, strict=False)}
    given = {by_dest.get(name, name): value for name, value in values.items()}
    unknown = sorted(path for path in given if not _is_field_path(cls, path))
    if unknown:
        raise TypeError(f"{cls.__name__} has no flag or field {', '.join(unknown)}")
    return cls(**_values(argparse.Namespace(), cls, _Scope(), (), given))


def _is_field_path(cls: type, path: str) -> bool:
    head, _, rest = path.partition(".")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if head not in fields:
        return False
    if not rest:
        return True
    inner_cls = _nested_type(_hints(cls)[head])
    return inner_cls is not None and _is_field_path(inner_cls, rest)
