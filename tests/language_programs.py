"""Per-language programs for the sandbox's language tests (both backends use these tables).

* ``DOUBLE[lang]`` reads one integer from stdin and prints twice it: every language of
  sandbox/languages.toml that runs programs reading stdin has one.
* ``COMPILE_ERROR[lang]``: (a program that does not compile, a piece of the compiler's message), for
  every language with a compile step (and Python, whose syntax errors are compile errors too).
* ``RUNTIME_ERROR[lang]``: a program that compiles and then fails (an uncaught exception, a non-zero
  exit, verilog's ``$fatal``), for every language of the "all" set but the test-framework modes
  (their failing test files are the runtime errors).
* ``ENDLESS[lang]``: a program that never ends (a busy loop), for every language of the "all" set.
* ``TEST_FILES[lang]``: (a test file whose tests pass, one where a test fails) for the test-framework
  modes: the run passes (exit 0) when every test passes, and fails (non-zero exit) when one fails.
  verilog follows VerilogEval (top module ``tb``; a testbench fails when it prints
  "Mismatches: N in M samples" with N > 0, or ends with ``$fatal``).
* ``FIXED_OUTPUT[lang]``: (a program that reads no stdin, its exact stdout), for sql.

``require_language`` skips a test whose toolchain is not installed here, unless
``SANDBOX_REQUIRE_LANGUAGES=1`` (CI installs every language: there a missing toolchain is a
failure, not a skip).
"""

from __future__ import annotations

import os

import pytest

DOUBLE: dict[str, str] = {
    "python": "print(int(input()) * 2)",
    "cpp": "#include <iostream>\nint main(){long long x; std::cin >> x; std::cout << x * 2 << std::endl;}",
    "c": "#include <stdio.h>\nint main(){long long x; scanf(\"%lld\", &x); printf(\"%lld\\n\", x * 2);}",
    "bash": "read x; echo $((x * 2))",
    "go": "package main\nimport \"fmt\"\nfunc main(){var x int; fmt.Scan(&x); fmt.Println(x * 2)}",
    "java": ("import java.util.*;\npublic class Main { public static void main(String[] a) {"
             " Scanner s = new Scanner(System.in); long x = s.nextLong(); System.out.println(x * 2); } }"),
    "nodejs": "const l = require('fs').readFileSync(0, 'utf8').trim();\nconsole.log(Number(l) * 2);",
    "typescript": ("import * as fs from 'fs';\nconst l: string = fs.readFileSync(0, 'utf8').trim();\n"
                   "const twice = (n: number): number => n * 2;\nconsole.log(twice(Number(l)));"),
    "rust": ("use std::io::*;\nfn main(){ let mut s = String::new(); stdin().read_line(&mut s).unwrap();"
             " let x: i64 = s.trim().parse().unwrap(); println!(\"{}\", x * 2); }"),
    "ruby": "x = gets.to_i\nputs x * 2",
    "php": "<?php\n$x = intval(trim(fgets(STDIN)));\necho $x * 2, \"\\n\";",
    "perl": "my $x = <STDIN>; print $x * 2, \"\\n\";",
    "lua": "local x = io.read('n'); print(math.floor(x * 2))",
    "R": "x <- as.integer(readLines('stdin', n = 1)); cat(x * 2, '\\n', sep = '')",
    "scala": ("object Main { def main(args: Array[String]): Unit = {"
              " val x = scala.io.StdIn.readLine().trim.toLong; println(x * 2) } }"),
    "kotlin_script": "val x = readLine()!!.trim().toLong()\nprintln(x * 2)",
    "csharp": ("using System; class P { static void Main() {"
               " long x = long.Parse(Console.ReadLine().Trim()); Console.WriteLine(x * 2); } }"),
    "D": "import std.stdio, std.conv, std.string;\nvoid main(){ auto x = readln().strip.to!long; writeln(x * 2); }",
    "racket": "#lang racket/base\n(define x (read))\n(displayln (* x 2))",
}

#: Languages of the "all" set that read stdin (test frameworks, verilog and sql have tests of their own).
STDIN_LANGUAGES = tuple(DOUBLE)

_JAVA_TEST_IMPORTS = ("import org.junit.jupiter.api.Test;\n"
                      "import static org.junit.jupiter.api.Assertions.assertEquals;\n")

COMPILE_ERROR: dict[str, tuple[str, str]] = {
    "python": ("print(int(input() * 2)\n", "SyntaxError"),
    "cpp": ("int main() { return undefined_name; }\n", "undefined_name"),
    "c": ("int main(void) { return undefined_name; }\n", "undefined_name"),
    "go": ("package main\nfunc main() { var x int = \"s\" }\n", "cannot use"),
    "java": ("public class Main { public static void main(String[] a) { int x = \"s\"; } }\n",
             "incompatible types"),
    "junit": (_JAVA_TEST_IMPORTS + "public class AddTest { @Test void t() { int x = \"s\"; } }\n",
              "incompatible types"),
    "typescript": ("function f( {\nconsole.log(1);\n", "TS1005"),
    "rust": ("fn main() { let x: i32 = \"s\"; }\n", "mismatched types"),
    "scala": ("object Main { def main(args: Array[String]): Unit = { val x: Int = \"s\" } }\n", "type mismatch"),
    "kotlin_script": ("val x: Int = \"s\"\nprintln(x)\n", "type mismatch"),
    "csharp": ("class P { static void Main() { int x = \"s\"; } }\n", "CS0029"),
    "D": ("void main() { int x = \"s\"; }\n", "cannot implicitly convert"),
    "D_ut": ("unittest { int x = \"s\"; }\n", "cannot implicitly convert"),
    "verilog": ("module tb;\n  initial begin\n    $display(\"x\")\n  end\nendmodule\n", "syntax error"),
}

RUNTIME_ERROR: dict[str, str] = {
    "python": "raise ValueError('boom')",
    "cpp": "#include <stdexcept>\nint main() { throw std::runtime_error(\"boom\"); }",
    "c": "#include <stdlib.h>\nint main(void) { exit(3); }",
    "bash": "echo boom >&2; exit 3",
    "go": "package main\nfunc main() { panic(\"boom\") }",
    "java": "public class Main { public static void main(String[] a) { throw new RuntimeException(\"boom\"); } }",
    "nodejs": "throw new Error('boom');",
    "typescript": "const f = (): never => { throw new Error('boom'); };\nf();",
    "rust": "fn main() { panic!(\"boom\"); }",
    "ruby": "raise 'boom'",
    "php": "<?php\nthrow new Exception('boom');",
    "perl": "die \"boom\\n\";",
    "lua": "error('boom')",
    "R": "stop('boom')",
    "scala": "object Main { def main(args: Array[String]): Unit = throw new RuntimeException(\"boom\") }",
    "kotlin_script": "throw RuntimeException(\"boom\")",
    "csharp": "using System; class P { static void Main() { throw new Exception(\"boom\"); } }",
    "D": "void main() { throw new Exception(\"boom\"); }",
    "racket": "#lang racket/base\n(error 'boom \"failed\")",
    "sql": "SELECT * FROM no_such_table;",
    "verilog": "module tb;\n  initial begin\n    #1 $fatal(1, \"boom\");\n  end\nendmodule",
}

ENDLESS: dict[str, str] = {
    "python": "while True:\n    pass",
    "cpp": "int main() { volatile unsigned long x = 0; for (;;) x++; }",
    "c": "int main(void) { volatile unsigned long x = 0; for (;;) x++; }",
    "bash": "while :; do :; done",
    "go": "package main\nfunc main() { x := 0\n for { x++ } }",
    "go_test": "package main\nimport \"testing\"\nfunc TestLoop(t *testing.T) { x := 0\n for { x++ } }",
    "java": "public class Main { public static void main(String[] a) { while (true) {} } }",
    "junit": _JAVA_TEST_IMPORTS + "public class LoopTest { @Test void t() { while (true) {} } }",
    "nodejs": "while (true) {}",
    "typescript": "let n: number = 0;\nwhile (true) { n++; }",
    "jest": "test('loops', () => { while (true) {} });",
    "rust": ("fn main() { let mut x: u64 = 0;\n"
             "  loop { x = x.wrapping_add(1); if x == u64::MAX { println!(\"{}\", x); } } }"),
    "ruby": "loop {}",
    "php": "<?php\nwhile (true) {}",
    "perl": "1 while 1;",
    "lua": "while true do end",
    "R": "repeat {}",
    "scala": "object Main { def main(args: Array[String]): Unit = { while (true) {} } }",
    "kotlin_script": "while (true) {}",
    "csharp": "class P { static void Main() { while (true) {} } }",
    "D": "void main() { size_t x; for (;;) { x++; } }",
    "D_ut": "unittest { size_t x; for (;;) { x++; } }",
    "racket": "#lang racket/base\n(let loop () (loop))",
    "verilog": "module tb;\n  reg clk = 0;\n  always #1 clk = ~clk;\nendmodule",
    "pytest": "def test_loops():\n    while True:\n        pass",
    "sql": ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)\n"
            "SELECT count(*) FROM c;"),
}

TEST_FILES: dict[str, tuple[str, str]] = {
    "pytest": ("def add(a, b):\n    return a + b\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
               "def add(a, b):\n    return a + b\n\n\ndef test_add():\n    assert add(2, 3) == 6\n"),
    "junit": (_JAVA_TEST_IMPORTS + "public class AddTest {\n    static int add(int a, int b) { return a + b; }\n"
              "    @Test void adds() { assertEquals(5, add(2, 3)); }\n}\n",
              _JAVA_TEST_IMPORTS + "public class AddTest {\n    static int add(int a, int b) { return a + b; }\n"
              "    @Test void adds() { assertEquals(6, add(2, 3)); }\n}\n"),
    "go_test": ("package main\n\nimport \"testing\"\n\nfunc add(a, b int) int { return a + b }\n\n"
                "func TestAdd(t *testing.T) {\n\tif add(2, 3) != 5 {\n\t\tt.Fatal(\"add(2, 3) != 5\")\n\t}\n}\n",
                "package main\n\nimport \"testing\"\n\nfunc add(a, b int) int { return a + b }\n\n"
                "func TestAdd(t *testing.T) {\n\tif add(2, 3) != 6 {\n\t\tt.Fatal(\"add(2, 3) != 6\")\n\t}\n}\n"),
    "jest": ("function add(a, b) { return a + b; }\n\ntest('adds', () => {\n  expect(add(2, 3)).toBe(5);\n});\n",
             "function add(a, b) { return a + b; }\n\ntest('adds', () => {\n  expect(add(2, 3)).toBe(6);\n});\n"),
    "D_ut": ("int add(int a, int b) { return a + b; }\n\nunittest\n{\n    assert(add(2, 3) == 5);\n}\n",
             "int add(int a, int b) { return a + b; }\n\nunittest\n{\n    assert(add(2, 3) == 6);\n}\n"),
    # VerilogEval's testbenches report "Mismatches: N in M samples" and $finish; $fatal fails as well.
    "verilog": tuple(
        "module adder(input [7:0] a, input [7:0] b, output [7:0] y);\n  assign y = a + b;\nendmodule\n\n"
        "module tb;\n  reg [7:0] a, b;\n  wire [7:0] y;\n  integer errors = 0;\n  adder dut(.a(a), .b(b), .y(y));\n"
        f"  initial begin\n    a = 2; b = 3; #1;\n    if (y !== 8'd{want}) errors = errors + 1;\n"
        "    $display(\"Mismatches: %1d in %1d samples\", errors, 1);\n    $finish;\n  end\nendmodule\n"
        for want in (5, 6)),
}

FIXED_OUTPUT: dict[str, tuple[str, str]] = {
    "sql": ("CREATE TABLE t(x INTEGER);\nINSERT INTO t VALUES (1), (2), (3);\nSELECT SUM(x) * 7 FROM t;\n", "42\n"),
}


def require_language(table, name: str) -> None:
    """Skip (or, under SANDBOX_REQUIRE_LANGUAGES=1, fail) when ``name`` cannot run with ``table``."""
    reason = getattr(table, "unavailable", {}).get(name, "")
    if not reason:
        return
    if os.environ.get("SANDBOX_REQUIRE_LANGUAGES") == "1":
        pytest.fail(f"{name}: toolchain missing although SANDBOX_REQUIRE_LANGUAGES=1: {reason}")
    pytest.skip(f"{name}: {reason} (scripts/system_setup.sh with SANDBOX_LANGUAGES=all installs it)")
