"""Ruby and PHP: what a program does to its own interpreter stays in its own execution.

Issue 20 cuts these languages' start-up with a per-language fork server (a warm interpreter of the
slot forks one child per execution: sandbox/runtime/fork_servers.py; process backend as root).
Whatever runs them, these properties must hold, on one slot (concurrency 1: every execution below
reuses the same sandbox, and the same server):

* a program that poisons its interpreter -- redefines ``Kernel#exit``/``puts``, registers exit hooks
  and output callbacks that print the expected answer, closes STDOUT, leaves a forked process and a
  thread that write the answer later -- changes nothing for the next execution: a correct program
  still passes with exactly its own output, a wrong one still fails with exactly its own output; nor
  does a fork bomb that fills its process limit;
* the verdict comes from the program's real end: printing the answer and then dying (an uncaught
  exception, ``exit!``/``exit`` with a non-zero status) fails even when an exit hook prints the
  answer again;
* the language's normal semantics: output written by an exit hook counts and is flushed, ``$0`` /
  ``$argv[0]`` is the source file (the ``__FILE__ == $0`` idiom), run arguments reach ``ARGV`` /
  ``$argv``, and relative file reads find the request's files in the working directory;
* the program's process holds what a B holds and no more: not root, every capability set empty
  (inheritable included), no_new_privs, seccomp, no descriptor but its pipes, its source and the
  interpreter's own eventfds (no socket to the server or the zygote), and it cannot signal its parent.

Skipped where the toolchain is missing (failed under SANDBOX_REQUIRE_LANGUAGES=1, as in CI).
"""

from __future__ import annotations

import shutil

import pytest

from reward_core.sandbox_contract import ExecutionRequest, ExecutionResult, Limits, Verdict
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox.factory import create_executor
from tests.language_programs import DOUBLE, require_language

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (apt-get install bubblewrap)"),
              pytest.mark.timeout(300)]

LIMITS = Limits(wall_s=20.0, cpu_s=20.0, memory_mb=256, max_processes=16)

#: Everything the program can do to its interpreter and process, aimed at the *next* execution and at
#: its own verdict. The forked process and the thread outlive the main program's end.
POISON = {
    "ruby": """\
module Kernel
  def exit(*) = nil
  def puts(*) = $stdout.write("42\\n42\\n")
  def gets(*) = "21\\n"
end
at_exit { $stdout.write("42\\n") rescue nil }
Process.detach(Process.fork { sleep 3; $stdout.write("42\\n") rescue nil })
Thread.new { loop { ($stdout.write("42\\n") rescue nil); sleep 0.05 } }
$stdout.sync = true
ENV["RUBYOPT"] = "-e puts(42)"
File.write("poison.rb", "puts 42") rescue nil
$stdout.close
exit 0
""",
    "php": """<?php
register_shutdown_function(function () { echo "42\\n"; });
ob_start(function ($buffer) { return "42\\n42\\n"; });
if (function_exists('pcntl_fork')) {
    $pid = pcntl_fork();
    if ($pid === 0) { sleep(3); fwrite(STDOUT, "42\\n"); exit(0); }
}
putenv("PHP_INI_SCAN_DIR=/tmp");
@file_put_contents("poison.php", "<?php echo 42;");
fclose(STDOUT);
""",
}
#: Fills its process limit and leaves every process behind, blocked or spinning, until the wall limit.
FORK_BOMB = {
    "ruby": "loop { Process.fork { sleep } rescue sleep(0.01) }\n",
    "php": "<?php\nwhile (true) { if (@pcntl_fork() === 0) { sleep(100); exit(0); } }\n",
}
#: Reads 21, prints 41: wrong, and must stay wrong.
WRONG = {
    "ruby": "gets\nputs 41\n",
    "php": "<?php\nfgets(STDIN);\necho \"41\\n\";\n",
}
#: Prints the right answer, then ends badly; an exit hook prints the answer once more.
DIES_AFTER_ANSWER = {
    "ruby": [
        'at_exit { puts 42 }\nputs gets.to_i * 2\nraise "boom"\n',
        'at_exit { puts 42 }\nputs gets.to_i * 2\n$stdout.flush\nexit! 3\n',
        'module Kernel\n  def exit(*) = nil\nend\nputs gets.to_i * 2\nProcess.exit(4)\n',
    ],
    "php": [
        '<?php\nregister_shutdown_function(function () { echo "42\\n"; });\n'
        'echo intval(fgets(STDIN)) * 2, "\\n";\nthrow new Exception("boom");\n',
        '<?php\nregister_shutdown_function(function () { echo "42\\n"; });\n'
        'echo intval(fgets(STDIN)) * 2, "\\n";\nexit(3);\n',
    ],
}
#: Correct programs that rely on the language's normal end and start-up.
SEMANTICS = {
    "ruby": {
        "exit hook output": "x = gets.to_i\nat_exit { print x * 2, \"\\n\" }\n",
        "main idiom": "def solve = gets.to_i * 2\nputs solve if __FILE__ == $0 && $0 == \"main.rb\"\n",
        "arguments": "puts ARGV[0].to_i + $stdin.gets.to_i\n",   # gets would read ARGV's files
        "relative file": "puts File.read(\"data.txt\").to_i * 2 if gets\n",
        "closes stdout after writing": "puts gets.to_i * 2\n$stdout.close\n",
        "leaves a thread": "Thread.new { sleep }\nputs gets.to_i * 2\n",
        "data section": "puts DATA.read.to_i * 2 if gets\n__END__\n21\n",
        "top-level return": "puts gets.to_i * 2\nreturn\nputs 0\n",
    },
    "php": {
        "exit hook output": "<?php\n$x = intval(fgets(STDIN));\n"
                            "register_shutdown_function(function () use ($x) { echo $x * 2, \"\\n\"; });\n",
        "main idiom": "<?php\nif (basename($argv[0]) === 'main.php' && realpath($argv[0]) === __FILE__) "
                      "{ echo intval(fgets(STDIN)) * 2, \"\\n\"; }\n",
        "arguments": "<?php\necho intval($argv[1]) + intval(fgets(STDIN)), \"\\n\";\n",
        "relative file": "<?php\nfgets(STDIN);\necho intval(file_get_contents('data.txt')) * 2, \"\\n\";\n",
        "closes stdout after writing": "<?php\necho intval(fgets(STDIN)) * 2, \"\\n\";\nfclose(STDOUT);\n",
        "output buffer": "<?php\nob_start();\necho intval(fgets(STDIN)) * 2, \"\\n\";\n",
    },
}
LANGUAGES = sorted(POISON)
#: What the program's own process holds (a fork server's child must hold no more than a fresh B): its
#: status lines, what each of its descriptors is, and whether it may signal its parent.
PROCESS_FACTS = {
    "ruby": """puts File.read("/proc/self/status").lines.grep(/^(Uid|Cap\\w+|NoNewPrivs|Seccomp):/)
Dir.children("/proc/self/fd").each { |fd| puts "fd #{fd} #{File.readlink("/proc/self/fd/#{fd}") rescue "gone"}" }
begin
  Process.kill(0, Process.ppid)
  puts "signal parent: yes"
rescue SystemCallError
  puts "signal parent: no"
end
""",
    "php": """<?php
foreach (file("/proc/self/status") as $line) {
    if (preg_match('/^(Uid|Cap\\w+|NoNewPrivs|Seccomp):/', $line)) echo $line;
}
foreach (scandir("/proc/self/fd") as $fd) {
    if ($fd[0] !== '.') echo "fd $fd ", @readlink("/proc/self/fd/$fd") ?: "gone", "\n";
}
echo "signal parent: ", posix_kill(posix_getppid(), 0) ? "yes" : "no", "\n";
""",
}


@pytest.fixture(scope="module")
def executor():
    ex = create_executor("process", concurrency=1)       # one slot: every execution follows the last one there
    yield ex
    ex.close()


def run(executor, language: str, code: str, **extra) -> ExecutionResult:
    request = ExecutionRequest(code=code, style=Style.STDIO, language=language, limits=LIMITS,
                               cases=(Case(stdin="21\n", expected_stdout="42\n"),), **extra)
    return executor.execute(request)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_poisoned_interpreter_changes_nothing_for_the_next_execution(executor, language) -> None:
    require_language(executor.languages, language)
    for _ in range(2):
        poisoned = run(executor, language, POISON[language])
        assert poisoned.verdict is not Verdict.SANDBOX_ERROR, poisoned.error
        correct = run(executor, language, DOUBLE[language])
        assert correct.verdict is Verdict.ACCEPTED, (correct.error, correct.stdout, correct.stderr)
        assert correct.stdout == "42\n"
        wrong = run(executor, language, WRONG[language])
        assert wrong.verdict is Verdict.WRONG_ANSWER, (wrong.error, wrong.stdout, wrong.stderr)
        assert wrong.stdout == "41\n"


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_fork_bomb_leaves_nothing_for_the_next_execution(executor, language) -> None:
    require_language(executor.languages, language)
    request = ExecutionRequest(code=FORK_BOMB[language], style=Style.STDIO, language=language,
                               limits=Limits(wall_s=1.0, cpu_s=1.0, memory_mb=256, max_processes=16),
                               cases=(Case(stdin="", expected_stdout="42\n"),))
    bombed = executor.execute(request)
    assert bombed.verdict not in (Verdict.ACCEPTED, Verdict.SANDBOX_ERROR), (bombed.verdict, bombed.error)
    correct = run(executor, language, DOUBLE[language])
    assert correct.verdict is Verdict.ACCEPTED and correct.stdout == "42\n", (correct.error, correct.stderr)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_program_holds_no_privilege_and_no_descriptor_of_the_sandbox(executor, language) -> None:
    require_language(executor.languages, language)
    result = run(executor, language, PROCESS_FACTS[language])
    lines = result.stdout.splitlines()
    facts = dict(line.split(":", 1) for line in lines if ":" in line and not line.startswith(("fd ", "signal")))
    assert "0" not in facts["Uid"].split(), result.stdout
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(facts[cap], 16) == 0, (cap, result.stdout)
    assert facts["NoNewPrivs"].strip() == "1" and facts["Seccomp"].strip() == "2", result.stdout
    fds = dict(line.split(" ", 2)[1:] for line in lines if line.startswith("fd "))
    assert set(fds) >= {"0", "1", "2"}, result.stdout
    for what in fds.values():    # its pipes, its source, the interpreter's eventfds: no socket
        assert not what.startswith(("socket:", "anon_inode:[pidfd]", "/dev/pts")), result.stdout
        assert what.startswith(("pipe:", "anon_inode:[eventfd]", "/dev/null", "/proc/", "gone", "/memfd:",
                                "/scratch/main.")), what
    assert "signal parent: no" in result.stdout


@pytest.mark.parametrize(("language", "index"),
                         [(lang, i) for lang in LANGUAGES for i in range(len(DIES_AFTER_ANSWER[lang]))])
def test_printing_the_answer_then_dying_fails(executor, language, index) -> None:
    require_language(executor.languages, language)
    result = run(executor, language, DIES_AFTER_ANSWER[language][index])
    assert result.verdict is Verdict.RUNTIME_ERROR, (result.error, result.stdout, result.stderr)
    assert result.exit_code not in (None, 0)


@pytest.mark.parametrize(("language", "what"), [(lang, what) for lang in LANGUAGES for what in SEMANTICS[lang]])
def test_the_languages_own_semantics_hold(executor, language, what) -> None:
    require_language(executor.languages, language)
    extra = {"args": ("21",)} if what == "arguments" else {}
    if what == "relative file":
        extra = {"files": {"data.txt": b"21"}}
    result = run(executor, language, SEMANTICS[language][what], **extra)
    assert result.verdict is Verdict.ACCEPTED, (result.error, result.stdout, result.stderr)
    assert result.stdout == "42\n"
