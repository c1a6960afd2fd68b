"""Judge prompt templates: the messages a judge is sent, the parser that reads its reply, and their version.

A template is data (``templates/*.yaml`` ship the defaults; a task's ``template`` option overrides any
field, or names another file)::

    system: You are a strict grader ...
    user: |
      Question: $prompt
      Gold answer: $gold
      Candidate answer: $completion
      Reply with exactly "yes" or "no".
    parser: {kind: yes_no}
    max_tokens: 8

Placeholders are ``$name`` (``string.Template``: ``$$`` is a literal dollar, and braces need no
escaping, so JSON examples can be written as they are); each task says which names it fills
(``fields``), and a placeholder outside them is refused when the template is loaded. ``version`` is a
hash of everything that decides a verdict (messages, parser, choices, max_tokens): it is the judge
call's ``template_version`` (part of the verdict cache key) and goes into the task's version.
"""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from reward_service.verifiers.judging.verdicts import InvalidParserSpec, ParserSpec, VerdictParser, build_parser

#: Template fields, and the keys a template file or override may set.
TEMPLATE_KEYS = ("system", "user", "parser", "max_tokens", "description")
#: The shipped templates (``templates/<name>.yaml``).
BUILTIN_PACKAGE = "reward_service.verifiers.judging"


class InvalidTemplate(ValueError):
    """A template that cannot be used (missing file, unknown key or placeholder, bad parser)."""


@dataclass(frozen=True)
class JudgeTemplate:
    """The messages to a judge and how its reply is read. Build with :func:`load_template`."""

    user: str
    parser: ParserSpec
    system: str = ""
    max_tokens: int = 16
    description: str = ""
    #: The file it was read from ("" for one given inline): part of the task's version inputs.
    source: str = ""

    @property
    def version(self) -> str:
        """16 hex characters of a SHA-256 over what decides a verdict (not ``description``/``source``)."""
        canonical = json.dumps({"system": self.system, "user": self.user, "parser": self.parser.to_config(),
                                "choices": list(self.choices), "max_tokens": self.max_tokens},
                               sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    @property
    def verdict_parser(self) -> VerdictParser:
        return build_parser(self.parser)

    @property
    def choices(self) -> tuple[str, ...]:
        """The parser's closed set of replies (empty when its verdicts are open, e.g. a JSON number)."""
        return build_parser(self.parser).choices

    def placeholders(self) -> set[str]:
        """The ``$names`` the system and user messages use."""
        found: set[str] = set()
        for text in (self.system, self.user):
            for match in string.Template.pattern.finditer(text):
                name = match.group("named") or match.group("braced")
                if name:
                    found.add(name)
                elif match.group("invalid") is not None:
                    raise InvalidTemplate(f"template has a stray '$' at {match.start('invalid')} of {text[:60]!r}...: "
                                          "write $$ for a literal dollar")
        return found

    def render(self, fields: Mapping[str, str]) -> tuple[dict[str, str], ...]:
        """The chat messages with every placeholder filled from ``fields`` (a missing one is a KeyError)."""
        messages = []
        if self.system:
            messages.append({"role": "system", "content": string.Template(self.system).substitute(fields)})
        messages.append({"role": "user", "content": string.Template(self.user).substitute(fields)})
        return tuple(messages)


def _read_file(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidTemplate(f"cannot read judge template {str(path)!r}: {exc}") from None
    except yaml.YAMLError as exc:
        raise InvalidTemplate(f"judge template {str(path)!r} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidTemplate(f"judge template {str(path)!r} must be a mapping of {list(TEMPLATE_KEYS)}")
    return data


def builtin_path(name: str) -> Path:
    """The file of the shipped template ``name`` (``templates/<name>.yaml``)."""
    path = Path(str(resources.files(BUILTIN_PACKAGE).joinpath("templates", f"{name}.yaml")))
    if not path.is_file():
        raise InvalidTemplate(f"no shipped judge template {name!r}; shipped: {builtin_names()}")
    return path


def builtin_names() -> list[str]:
    """The names of the shipped templates."""
    folder = Path(str(resources.files(BUILTIN_PACKAGE).joinpath("templates")))
    return sorted(p.stem for p in folder.glob("*.yaml"))


def load_template(default: str, override: Any = None, *, fields: Collection[str]) -> JudgeTemplate:
    """The shipped template ``default``, with ``override`` applied, checked against ``fields``.

    ``override``: None; a string (a shipped template's name, or a path to a YAML file); or a mapping of
    template keys, with an optional ``base`` (a name or path, instead of ``default``) whose other keys
    replace that template's. Raises InvalidTemplate saying what is wrong.
    """
    base, changes = default, {}
    if isinstance(override, str):
        base = override
    elif isinstance(override, Mapping):
        changes = dict(override)
        base = changes.pop("base", default)
    elif override is not None:
        raise InvalidTemplate(f"a template override must be a name, a file path or a mapping of "
                              f"{list(TEMPLATE_KEYS)}, got {override!r}")
    if not isinstance(base, str) or not base:
        raise InvalidTemplate(f"template 'base' must be a template name or a file path, got {base!r}")
    path = Path(base) if base.endswith((".yaml", ".yml")) or "/" in base else builtin_path(base)
    data = {**_read_file(path), **changes}
    return _build(data, str(path), fields)


def _build(data: Mapping[str, Any], source: str, fields: Collection[str]) -> JudgeTemplate:
    unknown = set(data) - set(TEMPLATE_KEYS)
    if unknown:
        raise InvalidTemplate(f"judge template {source!r}: unknown keys {sorted(unknown)}; "
                              f"known: {list(TEMPLATE_KEYS)}")
    user, system = data.get("user"), data.get("system", "") or ""
    if not isinstance(user, str) or not user.strip() or not isinstance(system, str):
        raise InvalidTemplate(f"judge template {source!r}: 'user' must be a non-empty string (and 'system' a string)")
    max_tokens = data.get("max_tokens", 16)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise InvalidTemplate(f"judge template {source!r}: 'max_tokens' must be an integer >= 1, got {max_tokens!r}")
    try:
        parser = ParserSpec.from_config(data.get("parser"))
    except InvalidParserSpec as exc:
        raise InvalidTemplate(f"judge template {source!r}: {exc}") from None
    template = JudgeTemplate(user=user, parser=parser, system=system, max_tokens=max_tokens,
                             description=str(data.get("description", "")), source=source)
    extra = template.placeholders() - set(fields)
    if extra:
        raise InvalidTemplate(f"judge template {source!r}: unknown placeholders {sorted('$' + n for n in extra)}; "
                              f"this task fills {sorted('$' + n for n in fields)}")
    return template
