"""What programs of other projects' datasets take for granted in their language, on both backends.

SandboxFusion's runtime and MultiPL-E's tests import a few libraries beyond each language's standard
one: luaunit (Lua), Test::Deep and Data::Compare (Perl), javatuples (Java), testify (Go tests) and
lodash (node, TypeScript). languages.toml installs them with each language's toolchain (its ``packages``: the
host's `scripts/system_setup.sh` and the runner images) and puts them where the language looks
(``env``: GOPATH, CLASSPATH, NODE_PATH; node's fork server gets the same environment). And a program
that serves on loopback and connects to it by name finds ``localhost`` and its own hostname, as on any
Linux machine: the process backend writes the sandbox's /etc/hosts (docker writes a container's).

C# programs written for .NET 6+ (SandboxFusion runs `dotnet run`) use Console, List<T> or LINQ without a
using directive (the SDK's implicit global usings); mcs compiles them the same, and its messages still name
main.cs at the program's own line and column.

Each library is checked both ways: a test it runs passes, and one that fails makes the execution fail
(so a missing library cannot pass unnoticed). Skipped where the toolchain is missing (failed under
SANDBOX_REQUIRE_LANGUAGES=1, as in CI).
"""

from __future__ import annotations

import pytest

from reward_core.sandbox_contract import ExecutionRequest, Limits, Verdict
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from tests.language_programs import require_language

#: Generous: a Go test that imports testify builds it and net/http from source in every execution (~10-20 s).
LIMITS = Limits(wall_s=180.0, cpu_s=180.0, memory_mb=1024, compile_wall_s=180.0)

#: language -> (a program whose library check passes, the same check made to fail); the passing one
#: prints "ok" last.
PROGRAMS = {
    "lua": ("local lu = require('luaunit')\n"
            "lu.assertEquals({2 * 2, 'x', {1}}, {4, 'x', {1}})\n"
            "print('ok')\n",
            "local lu = require('luaunit')\n"
            "function testDouble() lu.assertEquals({2 * 2, 'x'}, {5, 'x'}) end\n"
            "os.exit(lu.LuaUnit.run())\n"),
    "perl": ("use strict; use Test::Deep; use Data::Compare;\n"
             "die 'deep' unless eq_deeply([1, {a => [2]}], [1, {a => [2]}]);\n"
             "die 'compare' unless Compare({x => [1, 2]}, {x => [1, 2]});\n"
             "print \"ok\\n\";\n",
             "use strict; use Test::Deep;\n"
             "die 'not deeply equal' unless eq_deeply([1, {a => [2]}], [1, {a => [3]}]);\n"
             "print \"ok\\n\";\n"),
    "java": ("import org.javatuples.*;\n"
             "public class Main { public static void main(String[] a) {\n"
             "  Pair<Integer, String> p = Pair.with(1, \"x\");\n"
             "  if (!p.equals(Pair.with(1, \"x\"))) throw new AssertionError();\n"
             "  System.out.println(p.getValue0() == 1 ? \"ok\" : \"no\");\n} }\n",
             "import org.javatuples.*;\n"
             "public class Main { public static void main(String[] a) {\n"
             "  if (!Pair.with(1, \"x\").equals(Pair.with(2, \"x\"))) throw new AssertionError(\"differ\");\n} }\n"),
    "go_test": ("package main\n\nimport (\n\t\"testing\"\n\n\t\"github.com/stretchr/testify/assert\"\n)\n\n"
                "func TestDouble(t *testing.T) {\n\tassert.Equal(t, []int{2, 4}, []int{1 * 2, 2 * 2})\n}\n",
                "package main\n\nimport (\n\t\"testing\"\n\n\t\"github.com/stretchr/testify/assert\"\n)\n\n"
                "func TestDouble(t *testing.T) {\n\tassert.Equal(t, []int{2, 4}, []int{1 * 2, 2 * 3})\n}\n"),
    "typescript": ("import _ = require('lodash');\n"
                   "const chunks: number[][] = _.chunk([1, 2, 3], 2);\n"
                   "if (!_.isEqual(chunks, [[1, 2], [3]])) throw new Error('chunk');\n"
                   "console.log('ok');\n",
                   "const _ = require('lodash');\n"
                   "if (!_.isEqual(_.chunk([1, 2, 3], 2), [[1, 2, 3]])) throw new Error('chunk');\n"),
    "nodejs": ("const _ = require('lodash');\n"
               "if (!_.isEqual(_.chunk([1, 2, 3], 2), [[1, 2], [3]])) throw new Error('chunk');\n"
               "console.log('ok');\n",
               "const _ = require('lodash');\n"
               "if (!_.isEqual(_.chunk([1, 2, 3], 2), [[1, 2, 3]])) throw new Error('chunk');\n"),
}

#: Serves on localhost and connects by name: localhost, and the sandbox's own hostname.
LOOPBACK = {
    "python": ("import socket, threading\n"
               "srv = socket.create_server(('localhost', 0))\n"
               "port = srv.getsockname()[1]\n"
               "def answer():\n"
               "    conn, _ = srv.accept()\n"
               "    conn.sendall(conn.recv(16) * 2)\n"
               "    conn.close()\n"
               "threading.Thread(target=answer).start()\n"
               "with socket.create_connection(('localhost', port), timeout=10) as c:\n"
               "    c.sendall(b'ok')\n"
               "    got = c.recv(16)\n"
               "socket.gethostbyname(socket.gethostname())\n"
               "print(got.decode()[:2])\n"),
    "bash": "getent hosts localhost >/dev/null && getent hosts \"$(hostname)\" >/dev/null && echo ok\n",
}


@pytest.fixture(scope="module", params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def executor(request):
    if request.param == "docker":
        yield request.getfixturevalue("docker_executor")
        return
    from sandbox.factory import create_executor

    ex = create_executor("process", concurrency=1)
    yield ex
    ex.close()


def run(executor, language: str, code: str):
    request = ExecutionRequest(code=code, language=language, style=Style.STDIO, limits=LIMITS,
                               cases=(Case(stdin="", expected_stdout="ok\n"),))
    return executor.execute(request)


def output_of(result) -> str:
    """The first case's output heads (or the compile step's), for an assertion's message."""
    compiled = getattr(result, "compile", None)
    heads = [f"{t.stdout_head!r} {t.stderr_head[-600:]!r}" for t in result.tests]
    return f"{result.verdict.value}: {result.error[:300]} {heads} {compiled.stderr[-600:] if compiled else ''}"


@pytest.mark.parametrize("language", sorted(PROGRAMS))
def test_the_library_is_there_and_its_checks_decide(executor, language) -> None:
    require_language(executor.languages, language)
    passing, failing = PROGRAMS[language]
    result = run(executor, language, passing)
    if language == "go_test":      # a test framework: its report is the output, its exit status the verdict
        assert result.exit_code == 0 and result.verdict in (Verdict.ACCEPTED, Verdict.WRONG_ANSWER), \
            output_of(result)
    else:
        assert result.verdict is Verdict.ACCEPTED, output_of(result)
    failed = run(executor, language, failing)   # found the library (no compile error), and its check failed
    assert failed.verdict is Verdict.RUNTIME_ERROR and failed.exit_code not in (0, None), output_of(failed)


@pytest.mark.parametrize("language", sorted(LOOPBACK))
def test_localhost_and_the_hostname_resolve_to_loopback(executor, language) -> None:
    require_language(executor.languages, language)
    result = run(executor, language, LOOPBACK[language])
    assert result.verdict is Verdict.ACCEPTED, output_of(result)


CSHARP_IMPLICIT = ("public class P { public static void Main() {\n"
                   "  var xs = new List<int> { 1, 2 };\n"
                   "  bool io = Path.GetFileName(\"a/b.txt\") == \"b.txt\";\n"
                   "  Console.WriteLine(xs.Sum() == 3 && io ? \"ok\" : \"no\");\n} }\n")
CSHARP_DEFINE = ("#define LOCAL\nusing System;\n"
                 "class P { static void Main() {\n#if LOCAL\nConsole.WriteLine(\"ok\");\n#endif\n} }\n")
CSHARP_ERROR = "class P {\n  static void Main() {\n    Console.WriteLine(undefined_x);\n  }\n}\n"


def test_csharp_has_dotnets_implicit_usings_and_its_messages_stay_the_programs(executor) -> None:
    require_language(executor.languages, "csharp")
    for code in (CSHARP_IMPLICIT, CSHARP_DEFINE):      # (a #define must come first: compiled as it is)
        result = run(executor, "csharp", code)
        assert result.verdict is Verdict.ACCEPTED, output_of(result)
    failed = run(executor, "csharp", CSHARP_ERROR)
    assert failed.verdict is Verdict.COMPILE_ERROR, output_of(failed)
    assert failed.compile.stderr.startswith("main.cs(3,23): error CS0103"), output_of(failed)
    assert "CS0105" not in failed.compile.stderr and ".implicit" not in failed.compile.stderr
