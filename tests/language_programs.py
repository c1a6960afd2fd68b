"""Per-language programs for the sandbox's language tests (both backends use this table).

``DOUBLE[lang]`` reads one integer from stdin and prints twice it; every language of
sandbox/languages.toml that runs programs from stdin has one. ``require_language`` skips a test
whose toolchain is not installed here, unless ``SANDBOX_REQUIRE_LANGUAGES=1`` (CI installs every
language: there a missing toolchain is a failure, not a skip).
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
    "typescript": ("const l: string = require('fs').readFileSync(0, 'utf8').trim();\n"
                   "console.log(Number(l) * 2);"),
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

#: Languages of the "all" set that read stdin (test frameworks and verilog have tests of their own).
STDIN_LANGUAGES = tuple(DOUBLE)


def require_language(table, name: str) -> None:
    """Skip (or, under SANDBOX_REQUIRE_LANGUAGES=1, fail) when ``name`` cannot run with ``table``."""
    reason = getattr(table, "unavailable", {}).get(name, "")
    if not reason:
        return
    if os.environ.get("SANDBOX_REQUIRE_LANGUAGES") == "1":
        pytest.fail(f"{name}: toolchain missing although SANDBOX_REQUIRE_LANGUAGES=1: {reason}")
    pytest.skip(f"{name}: {reason} (scripts/system_setup.sh with SANDBOX_LANGUAGES=all installs it)")
