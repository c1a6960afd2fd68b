"""What ``ListLanguages`` reports: every known language, whether it can run here, its toolchain's version.

Availability is the language table's (:class:`sandbox.languages.LanguageTable`'s ``unavailable``,
probed where programs run). Versions come from the executor: an executor that runs programs
somewhere else than this host (the docker backend: its runner image) defines

    def language_versions(self) -> dict[str, str]: ...     # language name -> first line of its version command

and any other gets :func:`host_versions` (the version commands run on this host, as the process
backend's programs do). Both are computed once per server (the servicer caches the list).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from reward_core.sandbox_contract import LanguageInfo
from sandbox.languages import Language, host_version

#: Version commands run at once (a JVM's takes ~1 s, kotlinc's ~4 s).
VERSION_WORKERS = 8


def host_versions(languages: Mapping[str, Language]) -> dict[str, str]:
    """Language name -> the first line of its version command on this host, for the available languages."""
    unavailable = getattr(languages, "unavailable", {})
    todo = [lang for name, lang in languages.items() if name not in unavailable and lang.version]
    with ThreadPoolExecutor(max_workers=VERSION_WORKERS, thread_name_prefix="version") as pool:
        versions = list(pool.map(lambda lang: host_version(lang.version), todo))
    return {lang.name: version for lang, version in zip(todo, versions)}


def executor_versions(executor: object, languages: Mapping[str, Language]) -> dict[str, str]:
    """The executor's ``language_versions()`` when it has one, else :func:`host_versions`."""
    hook = getattr(executor, "language_versions", None)
    return dict(hook()) if callable(hook) else host_versions(languages)


def language_infos(languages: Mapping[str, Language], versions: Mapping[str, str]) -> list[LanguageInfo]:
    """One :class:`LanguageInfo` per language of the table, in its order."""
    unavailable = getattr(languages, "unavailable", {})
    out = []
    for name, lang in languages.items():
        reason = unavailable.get(name, "")
        out.append(LanguageInfo(name=name, aliases=lang.aliases, available=not reason,
                                version="" if reason else versions.get(name, ""), compiled=lang.compiled,
                                reason=reason, install_hint=lang.hint() if reason else "",
                                test_framework=lang.test_framework, set=lang.set, packages=lang.packages))
    return out


def format_table(infos: list[LanguageInfo]) -> str:
    """The languages as a text table (``python -m sandbox languages``): available ones first."""
    rows = [("language", "available", "kind", "set", "version / what to install", "aliases")]
    for info in sorted(infos, key=lambda i: not i.available):
        kind = "test framework" if info.test_framework else ("compiled" if info.compiled else "interpreted")
        rows.append((info.name, "yes" if info.available else "NO", kind, info.set or "-",
                     info.version if info.available else f"{info.reason}; {info.install_hint}",
                     ", ".join(info.aliases)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 2)]
    lines = []
    for row in rows:
        head = "  ".join(cell.ljust(w) for cell, w in zip(row, widths))
        lines.append(f"{head}  {row[-2]}" + (f"  [{row[-1]}]" if row[-1] else ""))
    return "\n".join(lines)
