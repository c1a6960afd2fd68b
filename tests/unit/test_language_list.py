"""ListLanguages' pure parts (sandbox/language_list.py), UNSUPPORTED_LANGUAGE's wire form, and
scripts/language_packages.py (the toolchains a SANDBOX_LANGUAGES set installs)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import reward_core.sandbox_contract as ex
from sandbox.language_list import executor_versions, format_table, language_infos
from sandbox.languages import LanguageTable, builtin_languages, languages_in_set, version_line

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "language_packages.py"


@pytest.fixture(scope="module")
def lp():
    spec = importlib.util.spec_from_file_location("language_packages", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_unsupported_language_round_trips_through_its_message():
    sent = ex.UnsupportedLanguage("julia", "julia not found; install Julia")
    got = ex.UnsupportedLanguage.from_message(str(sent) + "; request 0")
    assert got is not None and (got.language, got.hint) == ("julia", "julia not found; install Julia; request 0")
    assert str(got).startswith("UNSUPPORTED_LANGUAGE:")


def test_other_refusals_are_not_unsupported_language():
    assert ex.UnsupportedLanguage.from_message("request 0: unknown language 'x'; known: [...]") is None


def test_version_line_skips_a_runtimes_warning():
    text = "\nOpenJDK 64-Bit Server VM warning: Options -Xverify:none are deprecated\ninfo: kotlinc-jvm 1.3\n"
    assert version_line(text) == "info: kotlinc-jvm 1.3"
    assert version_line("\n  Python 3.11.2\n") == "Python 3.11.2"
    assert version_line("") == ""


def table_with_missing(name: str) -> LanguageTable:
    table = builtin_languages()
    return LanguageTable(table.values(), {name: "rustc not found"})


def test_language_infos_mark_a_missing_toolchain_unavailable_with_what_to_install():
    infos = {i.name: i for i in language_infos(table_with_missing("rust"), {"rust": "rustc 1.63", "go": "go1.19"})}
    assert (infos["rust"].available, infos["rust"].version, infos["rust"].reason) == (False, "", "rustc not found")
    assert "apt-get install rustc" in infos["rust"].install_hint
    assert (infos["go"].available, infos["go"].version, infos["go"].install_hint) == (True, "go1.19", "")
    assert infos["go"].compiled and infos["go_test"].test_framework and not infos["go"].test_framework


def test_an_executor_with_its_own_versions_is_asked_for_them():
    class ImageExecutor:
        def language_versions(self) -> dict[str, str]:
            return {"python": "Python 3.11.2 (image)"}

    assert executor_versions(ImageExecutor(), builtin_languages()) == {"python": "Python 3.11.2 (image)"}


def test_the_table_lists_available_languages_first_and_says_what_to_install():
    lines = format_table(language_infos(table_with_missing("rust"), {})).splitlines()
    assert lines[0].split()[:3] == ["language", "available", "kind"]
    assert lines[-1].startswith("rust") and "rustc not found" in lines[-1]


# --- scripts/language_packages.py -----------------------------------------------------------


def test_the_core_set_installs_python_c_cpp_and_bash(lp):
    assert lp.packages(lp.read_spec(), lp.select(lp.read_spec(), "core"), "apt") == ["python3", "g++", "gcc", "bash"]


@pytest.mark.parametrize("selection", ["core", "all", "go,ts", "kotlin,R"])
def test_the_script_selects_what_languages_in_set_selects(lp, selection):
    spec = lp.read_spec()
    expected = [lang.name for lang in languages_in_set(selection, builtin_languages())]
    assert lp.select(spec, selection) == expected


def test_all_installs_every_declared_package_of_the_installable_languages(lp):
    spec = lp.read_spec()
    apt = set(lp.packages(spec, lp.select(spec, "all"), "apt"))
    declared = {p for lang in builtin_languages().values() if lang.set for p in lang.packages}
    assert apt == declared
    assert {"python3-pytest", "sqlite3", "jest"} <= apt


def test_where_node_is_not_debians_jest_comes_from_npm_instead_of_apt(lp):
    spec = lp.read_spec()
    chosen = lp.select(spec, "all")
    assert "jest" not in lp.packages(spec, chosen, "apt", node_not_debian=True)
    assert "nodejs" in lp.packages(spec, chosen, "apt", node_not_debian=True)
    assert lp.packages(spec, chosen, "npm", node_not_debian=True) == ["jest@29"]
    assert lp.packages(spec, chosen, "npm", node_not_debian=False) == []


def test_the_subset_reader_reads_what_tomllib_reads(lp):
    full, subset = lp.read_spec(), lp._read_subset(SCRIPT.parent.parent.joinpath("sandbox/languages.toml").read_text())
    for name, lang in full.items():
        for key in ("packages", "npm_packages", "set", "aliases"):
            assert subset[name].get(key) == lang.get(key), (name, key)


def test_the_script_prints_one_package_a_line_and_refuses_an_unknown_language():
    ok = subprocess.run([sys.executable, str(SCRIPT), "npm", "jest"], capture_output=True, text=True, timeout=60)
    assert (ok.returncode, ok.stdout) == (0, "jest@29\n")
    bad = subprocess.run([sys.executable, str(SCRIPT), "apt", "--node-not-debian", "cobol"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode != 0 and "unknown language 'cobol'" in bad.stderr


def test_a_language_without_packages_cannot_be_chosen_and_says_what_to_install(lp):
    with pytest.raises(SystemExit, match="install Julia"):
        lp.select(lp.read_spec(), "julia")
