#!/usr/bin/env python3
"""The toolchain packages of a language set, read from sandbox/languages.toml: one package a line.

    python3 scripts/language_packages.py apt core                    # Debian packages of the core set
    python3 scripts/language_packages.py apt all --node-not-debian   # ... every language's; npm ones left out
    python3 scripts/language_packages.py npm all                     # npm packages (where node is not Debian's)

The set is SANDBOX_LANGUAGES's syntax: ``core``, ``all`` (every language some set installs) or a
comma-separated list of names or aliases (the core set comes too); default: $SANDBOX_LANGUAGES, else
core. A language with ``npm_packages`` (jest) gets those from npm instead of its Debian ``packages``
where node is not Debian's (``--node-not-debian``: NodeSource's nodejs conflicts with Debian's node-*
packages). scripts/system_setup.sh runs this with the system python3, before any virtualenv exists:
standard library only (tomllib on Python >= 3.11; on older ones, a reader of the subset the file uses).
Its selection is sandbox/languages.py's ``languages_in_set``, on the built-in table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

SPEC = Path(__file__).resolve().parent.parent / "sandbox" / "languages.toml"
SETS = ("core", "all")


def read_spec(path: Path = SPEC) -> dict[str, dict]:
    """Language name -> its table."""
    text = path.read_text(encoding="utf-8")
    try:
        import tomllib
    except ImportError:  # Python < 3.11: the file's subset (one-line keys, JSON-compatible values)
        return _read_subset(text)
    return tomllib.loads(text)


def _read_subset(text: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    table: dict | None = None
    for line in text.splitlines():
        line = line.strip()
        header = re.fullmatch(r"\[([\w.-]+)\]", line)
        if header:
            table = out.setdefault(header.group(1), {})
            continue
        match = re.fullmatch(r"(\w+)\s*=\s*(\".*\"|\[.*\]|true|false|\d+)", line)
        if table is not None and match:
            try:
                table[match.group(1)] = json.loads(match.group(2))
            except ValueError:
                pass  # a value outside the subset (a literal string): not one this script reads
    return out


def select(spec: dict[str, dict], selection: str) -> list[str]:
    """The languages of ``selection`` (see the module docstring), in the file's order."""
    selection = (selection or "core").strip()
    if selection == "core":
        return [name for name, lang in spec.items() if lang.get("set") == "core"]
    if selection == "all":
        return [name for name, lang in spec.items() if lang.get("set") in SETS]
    names = {}
    for name, lang in spec.items():
        for alias in (name, *lang.get("aliases", ())):
            names.setdefault(alias, name)
            names.setdefault(alias.lower(), name)
    chosen = set()
    for wanted in (n.strip() for n in selection.split(",")):
        if not wanted:
            continue
        if wanted not in names and wanted.lower() not in names:
            raise SystemExit(f"language_packages: unknown language {wanted!r} in SANDBOX_LANGUAGES={selection!r}; "
                             f"known: core, all, {', '.join(spec)}")
        name = names.get(wanted) or names[wanted.lower()]
        if not spec[name].get("packages") and not spec[name].get("npm_packages"):
            raise SystemExit(f"language_packages: {name!r} has no packages to install: "
                             f"{spec[name].get('install_hint') or 'install its toolchain by hand'}")
        chosen.add(name)
    return [name for name, lang in spec.items() if name in chosen or lang.get("set") == "core"]


def packages(spec: dict[str, dict], languages: list[str], kind: str, node_not_debian: bool = False) -> list[str]:
    """The ``apt`` or ``npm`` packages of ``languages``, each once, in order."""
    out: list[str] = []
    for name in languages:
        lang = spec[name]
        via_npm = bool(lang.get("npm_packages")) and node_not_debian
        if kind == "npm":
            wanted = lang.get("npm_packages", []) if via_npm else []
        else:
            wanted = [] if via_npm else lang.get("packages", [])
        out.extend(p for p in wanted if p not in out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("apt", "npm"), help="Debian packages (apt) or npm packages (npm)")
    parser.add_argument("set", nargs="?", default=os.environ.get("SANDBOX_LANGUAGES", "core"),
                        help="core | all | name,name,... (default: $SANDBOX_LANGUAGES, else core)")
    parser.add_argument("--node-not-debian", action="store_true",
                        help="node here is not Debian's: languages with npm_packages use npm, not apt")
    parser.add_argument("--spec", type=Path, default=SPEC, help=f"the language table (default: {SPEC})")
    args = parser.parse_intermixed_args(argv)
    spec = read_spec(args.spec)
    # npm packages exist only where node is not Debian's: asking for them implies it
    node_not_debian = args.node_not_debian or args.kind == "npm"
    for package in packages(spec, select(spec, args.set), args.kind, node_not_debian):
        print(package)
    return 0


if __name__ == "__main__":
    sys.exit(main())
