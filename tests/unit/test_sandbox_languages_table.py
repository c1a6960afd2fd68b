"""sandbox/languages.py: the language table as data (parsing, names, placeholders, sets, probes, overrides)."""

from __future__ import annotations

import pytest

from reward_core.sandbox_contract import (
    ExecutionRequest,
    InvalidExecutionRequest,
    Limits,
    UnsupportedLanguage,
)
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox.languages import (
    BUILTIN_LANGUAGES,
    LanguageTable,
    builtin_languages,
    language_from_spec,
    languages_in_set,
    load_languages,
    resolve_language,
    resolve_language_name,
)
from sandbox.zygote_client import build_wire

MINIMAL = {"source_file": "main.x", "run": ["x", "main.x"]}


# -- parsing a spec ------------------------------------------------------------------------------------
def test_a_minimal_spec_is_an_interpreted_language_with_no_floors():
    lang = language_from_spec("x", MINIMAL)
    assert (lang.name, lang.source_file, lang.run, lang.compile) == ("x", "main.x", ("x", "main.x"), ())
    assert not lang.compiled and lang.required_tools() == ("x",)
    assert (lang.min_processes, lang.min_memory_mb, lang.min_open_files, lang.address_space_mb) == (0, 0, 0, 0)


@pytest.mark.parametrize("spec, message", [
    ({**MINIMAL, "compiler": ["xc"]}, "unknown keys ['compiler']"),
    ({"source_file": "main.x"}, "needs 'source_file' and 'run'"),
    ({"run": ["x"]}, "needs 'source_file' and 'run'"),
    ({**MINIMAL, "run": []}, "run must not be empty"),
    ({**MINIMAL, "run": "x main.x"}, "must be a list of strings"),
    ({**MINIMAL, "set": "some"}, "set must be one of"),
    ({**MINIMAL, "env": ["A=1"]}, "env must be a table"),
    ({**MINIMAL, "min_open_files": -1}, "min_open_files must be a non-negative integer"),
    ({**MINIMAL, "min_processes": "64"}, "min_processes must be a non-negative integer"),
    ({**MINIMAL, "min_memory_mb": True}, "min_memory_mb must be a non-negative integer"),
    ({**MINIMAL, "fork_server": "x {runtime}/x_server"}, "fork_server must be a list of strings"),
    ("run = x", "expected a table of settings"),
])
def test_a_malformed_spec_says_what_is_wrong(spec, message):
    with pytest.raises(InvalidExecutionRequest, match=message.replace("[", r"\[").replace("]", r"\]")):
        language_from_spec("x", spec, "langs.yaml")


def test_every_builtin_language_parses_and_every_installable_one_names_its_packages():
    table = builtin_languages()
    assert {"python", "cpp", "java", "R", "kotlin_script", "racket", "verilog", "junit", "sql"} <= set(table)
    for lang in table.values():
        if lang.set:
            assert lang.packages, lang.name
        assert lang.version, lang.name


def test_runtime_floors_of_the_builtin_languages():
    """Limits that fit Python would kill these runtimes (threads, descriptors, a compiler's memory)."""
    assert BUILTIN_LANGUAGES["R"].min_open_files >= 256          # R refuses to start below
    assert BUILTIN_LANGUAGES["java"].min_processes >= 64         # a JVM's threads
    assert BUILTIN_LANGUAGES["go"].min_processes >= 32           # the Go runtime's threads
    assert BUILTIN_LANGUAGES["rust"].min_memory_mb >= 256        # rustc
    assert BUILTIN_LANGUAGES["racket"].paths == ("/etc/racket",)  # where its compiled .zo files are


def test_the_floors_are_applied_to_the_wire_limits_and_never_lower_a_request():
    tight = Limits(memory_mb=64, max_processes=4, open_files=16)
    case = (Case(stdin="", expected_stdout=""),)
    wire = build_wire(ExecutionRequest(code="cat(1)", style=Style.STDIO, language="R", cases=case, limits=tight),
                      BUILTIN_LANGUAGES["R"]).public["limits"]
    assert (wire["memory_mb"], wire["max_processes"], wire["open_files"]) == (256, 16, 256)
    generous = Limits(memory_mb=2048, max_processes=500, open_files=1000)
    wire = build_wire(ExecutionRequest(code="cat(1)", style=Style.STDIO, language="R", cases=case,
                                       limits=generous), BUILTIN_LANGUAGES["R"]).public["limits"]
    assert (wire["memory_mb"], wire["max_processes"], wire["open_files"]) == (2048, 500, 1000)
    wire = build_wire(ExecutionRequest(code="print(1)", style=Style.STDIO, language="python", cases=case,
                                       limits=tight), BUILTIN_LANGUAGES["python"]).public["limits"]
    assert (wire["memory_mb"], wire["max_processes"], wire["open_files"]) == (64, 4, 16)


def test_a_fork_server_is_declared_as_data_and_named_on_the_wire_only_by_a_flag():
    ruby = BUILTIN_LANGUAGES["ruby"]
    assert ruby.fork_server == ("ruby", "{runtime}/fork_server.rb") and ruby.run == ("ruby", "main.rb")
    assert BUILTIN_LANGUAGES["php"].fork_server == ("php", "{runtime}/fork_server.php")
    assert BUILTIN_LANGUAGES["R"].fork_server == ("Rscript", "--vanilla", "{runtime}/fork_server.R")
    assert BUILTIN_LANGUAGES["racket"].fork_server == ("racket", "-t", "{runtime}/fork_server.rkt", "-u", "main.rkt")
    assert not BUILTIN_LANGUAGES["python"].fork_server and not BUILTIN_LANGUAGES["cpp"].fork_server
    case = (Case(stdin="", expected_stdout=""),)
    wire = build_wire(ExecutionRequest(code="puts 1", style=Style.STDIO, language="ruby", cases=case), ruby)
    assert wire.public["language"]["fork_server"] is True       # never an argv: the zygote has the host's
    assert "fork_server.rb" not in str(wire.public)
    assert language_from_spec("x", MINIMAL).fork_server == ()


# -- names and aliases ---------------------------------------------------------------------------------
@pytest.mark.parametrize("asked, name", [
    ("python", "python"), ("Python3", "python"), ("PY", "python"),
    ("nodejs", "nodejs"), ("javascript", "nodejs"), ("JS", "nodejs"),
    ("kotlin_script", "kotlin_script"), ("kotlin", "kotlin_script"),
    ("R", "R"), ("r", "R"), ("d", "D"), ("D_ut", "D_ut"), ("d_ut", "D_ut"),
    ("cpp", "cpp"), ("C++", "cpp"), ("golang", "go"), ("go_test", "go_test"), ("csharp", "csharp"), ("C#", "csharp"),
    ("typescript", "typescript"), ("rkt", "racket"), ("SystemVerilog", "verilog"), ("pytest", "pytest"),
])
def test_sandbox_fusion_names_and_aliases_resolve_case_insensitively(asked, name):
    assert resolve_language_name(asked) == name
    assert resolve_language(asked).name == name


def test_an_unknown_language_is_an_invalid_request_listing_the_known_ones():
    with pytest.raises(InvalidExecutionRequest, match="unknown language 'cobol'.*'python'") as err:
        resolve_language("cobol")
    assert not isinstance(err.value, UnsupportedLanguage)


# -- {class} and {source} ------------------------------------------------------------------------------
def test_junit_files_are_named_after_the_public_class():
    source, compile_argv, run_argv = BUILTIN_LANGUAGES["junit"].for_code(
        "import org.junit.jupiter.api.Test;\nclass Helper {}\npublic final class AddTest { @Test void t() {} }")
    assert source == "AddTest.java"
    assert "javac" in compile_argv[-1] and "--scan-class-path" in run_argv


def test_java_files_are_named_after_the_public_class_and_main_when_there_is_none():
    assert BUILTIN_LANGUAGES["java"].for_code("public class Solution { public static void main(String[] a) {} }") \
        == ("Solution.java", ("javac", "-encoding", "UTF-8", "Solution.java"),
            BUILTIN_LANGUAGES["java"].run[:-1] + ("Solution",))
    source, compile_argv, run_argv = BUILTIN_LANGUAGES["java"].for_code("class Main { }")
    assert (source, compile_argv[-1], run_argv[-1]) == ("Main.java", "Main.java", "Main")
    nested = "class Main {\n    public class Node {}\n    public static void main(String[] a) {}\n}"
    assert BUILTIN_LANGUAGES["java"].for_code(nested)[0] == "Main.java"        # an indented nested class
    assert BUILTIN_LANGUAGES["java"].for_code("import java.util.*;\npublic abstract class Sol {}")[0] == "Sol.java"


@pytest.mark.parametrize("code, runs", [
    ("object Main { def main(args: Array[String]): Unit = println(1) }", "Main"),
    ("object Helper { def f = 1 }\nobject Sol {\n  def main(args: Array[String]): Unit = println(Helper.f)\n}", "Sol"),
    ("object Solution extends App { println(1) }", "Solution"),
    ("object Helper { def f = 1 }", "Main"),
])
def test_scala_runs_the_object_with_a_main_method(code, runs):
    source, _, run_argv = BUILTIN_LANGUAGES["scala"].for_code(code)
    assert source == "main.scala" and run_argv[-1] == runs


def test_placeholders_are_the_only_braces_replaced():
    lang = language_from_spec("x", {"source_file": "{class}.x", "class_pattern": r"unit\s+(\w+)",
                                    "compile": ["sh", "-c", "xc {source} && echo ${HOME}"], "run": ["./{class}"]})
    assert lang.for_code("unit Foo;") == ("Foo.x", ("sh", "-c", "xc Foo.x && echo ${HOME}"), ("./Foo",))
    assert lang.for_code("nothing") == ("Main.x", ("sh", "-c", "xc Main.x && echo ${HOME}"), ("./Main",))


# -- sets ----------------------------------------------------------------------------------------------
def test_language_sets():
    core = [lang.name for lang in languages_in_set("core")]
    assert core == ["python", "cpp", "c", "bash"]
    everything = {lang.name for lang in languages_in_set("all")}
    assert {"python", "go", "go_test", "java", "junit", "nodejs", "typescript", "jest", "rust", "ruby", "php",
            "perl", "lua", "R", "scala", "kotlin_script", "csharp", "D", "D_ut", "racket", "verilog", "pytest",
            "sql"} <= everything
    assert not everything & {"julia", "swift", "lean", "cuda"}          # no package installs them here
    assert {lang.name for lang in languages_in_set("go,rust")} == {"python", "cpp", "c", "bash", "go", "rust"}
    assert {lang.name for lang in languages_in_set(" golang , JS ")} == {"python", "cpp", "c", "bash", "go",
                                                                        "nodejs"}
    assert languages_in_set("") == languages_in_set("core")
    with pytest.raises(InvalidExecutionRequest, match="unknown language 'cobol'"):
        languages_in_set("go,cobol")


# -- availability ----------------------------------------------------------------------------------------
def test_a_language_whose_probe_fails_is_unsupported_and_says_what_to_install():
    table = load_languages(probe=lambda lang: "rustc not found" if lang.name == "rust" else "")
    assert set(table.unavailable) == {"rust"}
    assert [lang.name for lang in table.available()] == [n for n in table if n != "rust"]
    with pytest.raises(UnsupportedLanguage) as err:
        resolve_language("RS", table)
    assert err.value.language == "rust"
    assert str(err.value).startswith("UNSUPPORTED_LANGUAGE:")
    assert "rustc not found" in err.value.hint and "apt-get install rustc" in err.value.hint
    assert resolve_language("go", table).name == "go"


def test_a_language_without_packages_hints_at_its_own_install_instructions():
    table = load_languages(probe=lambda lang: "julia not found" if lang.name == "julia" else "")
    with pytest.raises(UnsupportedLanguage, match="julialang.org"):
        resolve_language("julia", table)


def test_no_probe_counts_every_language_as_available():
    assert load_languages(probe=None).unavailable == {}


def test_restricting_a_table_keeps_the_rest_known_but_off():
    table = LanguageTable(BUILTIN_LANGUAGES.values()).restricted_to(["python", "golang"])
    assert resolve_language("go", table).name == "go"
    with pytest.raises(UnsupportedLanguage, match="not enabled on this server"):
        resolve_language("java", table)


# -- YAML / TOML overrides -----------------------------------------------------------------------------
def test_a_yaml_file_overrides_a_builtin_and_adds_a_language(tmp_path):
    path = tmp_path / "langs.yaml"
    path.write_text("python:\n  source_file: prog.py\n  run: [python3, prog.py]\n"
                    "zig:\n  source_file: main.zig\n  compile: [zig, build-exe, main.zig]\n  run: [./main]\n"
                    "  aliases: [ziglang]\n  min_open_files: 128\n")
    table = load_languages(path, probe=None)
    python = table["python"]
    assert python.run == ("python3", "prog.py") and python.source_file == "prog.py"
    assert not python.fast_path_python                                    # the override's own settings
    assert (python.packages, python.set, python.aliases) == (BUILTIN_LANGUAGES["python"].packages, "core",
                                                             BUILTIN_LANGUAGES["python"].aliases)   # kept
    assert python.version == BUILTIN_LANGUAGES["python"].version
    zig = resolve_language("ZigLang", table)
    assert zig.name == "zig" and zig.compiled and zig.min_open_files == 128 and zig.set == ""
    assert table["go"] == BUILTIN_LANGUAGES["go"]                          # the rest untouched


def test_an_override_may_give_its_own_packages_and_set(tmp_path):
    path = tmp_path / "langs.toml"
    path.write_text('[go]\nsource_file = "main.go"\nrun = ["go", "run", "main.go"]\npackages = ["golang-1.22"]\n')
    go = load_languages(path, probe=None)["go"]
    assert go.packages == ("golang-1.22",) and go.set == "all" and not go.compiled


@pytest.mark.parametrize("text, message", [
    ("python: [unclosed\n", "cannot parse"),
    ("- just\n- a list\n", "expected a mapping"),
    ("ruby:\n  run: [ruby, main.rb]\n", "needs 'source_file' and 'run'"),
    ("ruby:\n  source_file: main.rb\n  run: [ruby, main.rb]\n  sett: all\n", "unknown keys"),
])
def test_a_bad_override_file_is_refused_saying_where(tmp_path, text, message):
    path = tmp_path / "langs.yaml"
    path.write_text(text)
    with pytest.raises(InvalidExecutionRequest, match=message) as err:
        load_languages(path, probe=None)
    assert "langs.yaml" in str(err.value)
