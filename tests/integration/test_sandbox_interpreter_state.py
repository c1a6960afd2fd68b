"""Ruby, PHP, R and racket: what a program does to its own interpreter stays in its own execution.

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
  interpreter's own eventfds and (racket) its fresh epoll instance (no socket to the server or the
  zygote), and it cannot signal its parent;
* R and racket (whose servers' system calls are C: sandbox/runtime/fork_server_native.c): a program gives
  exactly what ``Rscript --vanilla main.R`` / ``racket main.rkt`` gives -- stdout, stderr, exit status
  and verdict, compared with the same program run without the fork server (R: auto-printing, warnings,
  errors and "Execution halted", quit statuses, .Last, commandArgs, tempdir, the environment, stdin()
  being the script, a syntax error; racket: printing, errors with their context, exit handlers, the main
  submodule, run-file, threads, subprocesses, read errors, the environment); and a fact that only the
  server's child shows proves the server is in use; without the C helper R runs Rscript.

Skipped where the toolchain is missing (failed under SANDBOX_REQUIRE_LANGUAGES=1, as in CI).
"""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

from reward_core.sandbox_contract import ExecutionRequest, ExecutionResult, Limits, Verdict
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox import process_backend
from sandbox.factory import create_executor
from sandbox.languages import LanguageTable, load_languages
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
    "R": """\
for (name in c("cat", "print", "quit", "q", "readLines", "scan", "writeLines")) {
    unlockBinding(name, baseenv())
    assign(name, function(...) base::write("42\\n42", stdout()), envir = baseenv())
}
.Last <- function() base::write("42", stdout())
reg.finalizer(globalenv(), function(e) base::write("42", stdout()), onexit = TRUE)
options(error = function() base::write("42", stdout()))
if (inherits(parallel:::mcfork(estranged = TRUE), "masterProcess")) {
    Sys.sleep(3); base::write("42", stdout()); parallel:::mcexit(0L)
}
Sys.setenv(R_PROFILE_USER = "poison.R", R_ENVIRON_USER = "poison.R", R_LIBS_USER = "/tmp")
base::write("cat('42\\n')", "poison.R")
base::write("cat('42\\n')", ".Rprofile")
base::write("cat('42\\n')", "main.R", append = TRUE)
sink(file("/dev/null", "w"))
""",
    "racket": """\
#lang racket/base
(require ffi/unsafe)
(define _exit (get-ffi-obj "_exit" #f (_fun _int -> _void)))
(void (plumber-add-flush! (current-plumber) (lambda (h) (write-string "42\\n42\\n"))))
(exit-handler (lambda (c) (write-string "42\\n") (flush-output) (_exit 0)))
(when (zero? ((get-ffi-obj "fork" #f (_fun -> _int))))
  (sleep 3) (write-string "42\\n") (flush-output) (_exit 0))
(void (thread (lambda () (let loop () (write-string "42\\n") (sleep 0.05) (loop)))))
(putenv "PLTUSERHOME" "/tmp")
(putenv "PLT_CS_COMPILE_LIMIT" "1")
(with-output-to-file "poison.rkt" (lambda () (write-string "#lang racket/base\\n(displayln 42)\\n")) #:exists 'replace)
(with-output-to-file "main.rkt" (lambda () (write-string "#lang racket/base\\n(displayln 42)\\n")) #:exists 'replace)
(make-directory "compiled")
(close-output-port (current-output-port))
""",}
#: Fills its process limit and leaves every process behind, blocked or spinning, until the wall limit.
FORK_BOMB = {
    "ruby": "loop { Process.fork { sleep } rescue sleep(0.01) }\n",
    "php": "<?php\nwhile (true) { if (@pcntl_fork() === 0) { sleep(100); exit(0); } }\n",
    "R": "repeat try(parallel:::mcfork(), silent = TRUE)\n",
    "racket": "#lang racket/base\n(require ffi/unsafe)\n(define fork (get-ffi-obj \"fork\" #f (_fun -> _int)))\n"
              "(let loop () (fork) (loop))\n",
}
#: Reads 21, prints 41: wrong, and must stay wrong.
WRONG = {
    "ruby": "gets\nputs 41\n",
    "php": "<?php\nfgets(STDIN);\necho \"41\\n\";\n",
    "R": "invisible(readLines(file('stdin'), n = 1))\ncat('41\\n')\n",
    "racket": "#lang racket/base\n(void (read))\n(displayln 41)\n",
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
    "R": [
        '.Last <- function() cat("42\\n")\ncat(2 * scan(file("stdin"), quiet = TRUE), "\\n")\nstop("boom")\n',
        'reg.finalizer(globalenv(), function(e) cat("42\\n"), onexit = TRUE)\n'
        'cat(2 * scan(file("stdin"), quiet = TRUE), "\\n")\nquit(status = 3)\n',
        '.Last <- function() quit(status = 0)\ncat(2 * scan(file("stdin"), quiet = TRUE), "\\n")\n'
        'f <- function() stop("late")\nf()\n',
        'options(warn = 2)\n.Last <- function() cat("42\\n")\ncat(2 * scan(file("stdin"), quiet = TRUE), "\\n")\n'
        'as.integer("x")\n',
    ],
    "racket": [
        '#lang racket/base\n(void (plumber-add-flush! (current-plumber) (lambda (h) (display "42\\n"))))\n'
        '(displayln (* 2 (read)))\n(error \'boom "late")\n',
        '#lang racket/base\n(displayln (* 2 (read)))\n(flush-output)\n(exit 3)\n',
        '#lang racket\n(displayln (* 2 (read)))\n(raise \'oops)\n',
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
    "R": {
        "exit hook output": "x <- scan(file('stdin'), quiet = TRUE)\n.Last <- function() cat(x * 2, '\\n', sep = '')\n",
        "finalizer at exit": "x <- scan(file('stdin'), quiet = TRUE)\n"
                             "invisible(reg.finalizer(globalenv(), function(e) cat(x * 2, '\\n', sep = ''), "
                             "onexit = TRUE))\n",
        "main idiom": "main <- function() cat(2 * scan(file('stdin'), quiet = TRUE), '\\n', sep = '')\n"
                      "if (sys.nframe() == 0L && !interactive() && '--file=main.R' %in% commandArgs()) main()\n",
        "arguments": "cat(as.integer(commandArgs(trailingOnly = TRUE)) + scan(file('stdin'), quiet = TRUE), "
                     "'\\n', sep = '')\n",
        "relative file": "invisible(readLines(file('stdin')))\n"
                         "cat(2 * scan('data.txt', quiet = TRUE), '\\n', sep = '')\n",
        "warnings on stderr": "x <- scan(file('stdin'), quiet = TRUE)\nwarning('careful')\n"
                              "cat(x * 2, '\\n', sep = '')\n",
        "temporary file": "f <- tempfile()\nwriteLines(readLines(file('stdin'), n = 1), f)\n"
                          "cat(2 * scan(f, quiet = TRUE), '\\n', sep = '')\nstopifnot(dirname(f) == tempdir())\n",
        "forked workers": "x <- scan(file('stdin'), quiet = TRUE)\n"
                          "cat(sum(unlist(parallel::mclapply(1:2, function(i) x, mc.cores = 2))), '\\n', sep = '')\n",
        "quit status 0": "cat(2 * scan(file('stdin'), quiet = TRUE), '\\n', sep = '')\nquit(status = 0)\n"
                         "cat('not reached\\n')\n",
    },
    "racket": {
        "main submodule": "#lang racket/base\n(module+ main (displayln (* 2 (read))))\n",
        "#lang racket": "#lang racket\n(define (solve x) (* 2 x))\n(displayln (solve (read)))\n",
        "arguments": "#lang racket/base\n"
                     "(displayln (+ (string->number (vector-ref (current-command-line-arguments) 0)) (read)))\n",
        "relative file": "#lang racket/base\n(void (read))\n"
                         "(displayln (* 2 (call-with-input-file \"data.txt\" read)))\n",
        "threads": "#lang racket/base\n(define ch (make-channel))\n"
                   "(void (thread (lambda () (channel-put ch (* 2 (read))))))\n(displayln (channel-get ch))\n",
        "exit 0 after the answer": "#lang racket/base\n(displayln (* 2 (read)))\n(exit 0)\n(displayln 0)\n",
        "read-line": "#lang racket/base\n(displayln (* 2 (string->number (read-line))))\n",
        "run file": "#lang racket/base\n(when (equal? (find-system-path 'run-file) (string->path \"main.rkt\"))\n"
                    "  (displayln (* 2 (read))))\n",
        "subprocess": "#lang racket/base\n(require racket/system)\n(define x (read))\n(void (system \"true\"))\n"
                      "(displayln (* 2 x))\n",
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
    "R": """\
writeLines(grep("^(Uid|Cap[A-Za-z]+|NoNewPrivs|Seccomp):", readLines("/proc/self/status"), value = TRUE))
for (fd in list.files("/proc/self/fd")) {
    what <- Sys.readlink(file.path("/proc/self/fd", fd))
    cat(sprintf("fd %s %s\\n", fd, if (is.na(what) || what == "") "gone" else what))
}
ppid <- as.integer(strsplit(readLines("/proc/self/stat"), " ")[[1]][4])
cat("signal parent:", if (isTRUE(tools::pskill(ppid, 0L))) "yes" else "no", "\\n")
""",
    "racket": """\
#lang racket/base
(require ffi/unsafe racket/file racket/string)
(for ([l (file->lines "/proc/self/status")] #:when (regexp-match? #rx"^(Uid|Cap[A-Za-z]+|NoNewPrivs|Seccomp):" l))
  (displayln l))
(for ([fd (directory-list "/proc/self/fd")])
  (printf "fd ~a ~a\\n" fd (with-handlers ([void (lambda (e) "gone")])
                              (path->string (resolve-path (build-path "/proc/self/fd" fd))))))
(define ppid (string->number (list-ref (string-split (file->string "/proc/self/stat")) 3)))
(define kill (get-ffi-obj "kill" #f (_fun _int _int -> _int)))
(printf "signal parent: ~a\\n" (if (zero? (kill ppid 0)) "yes" "no"))
""",
}


@pytest.fixture(scope="module")
def executor():
    # one slot: every execution follows the last one there; racket's server is opt-in
    ex = create_executor("process", concurrency=1, fork_servers=("default", "racket"))
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
    for what in fds.values():    # its pipes, its source, the interpreter's eventfds/epoll: no socket
        assert not what.startswith(("socket:", "anon_inode:[pidfd]", "/dev/pts")), result.stdout
        assert what.startswith(("pipe:", "anon_inode:[eventfd]", "anon_inode:[eventpoll]", "/dev/null", "/proc/",
                                "gone", "/memfd:",
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


#: Programs whose whole outcome (stdout, stderr, exit status, verdict) must be what the language's run command
#: gives (``Rscript --vanilla main.R``, ``racket main.rkt``) without the fork server.
AS_THE_RUN_COMMAND = {"R": {
    "auto-printing": "x <- 21\nx\ninvisible(3)\n(y <- x * 2)\nlist(a = 1, b = 'c')\n",
    "warnings": "f <- function() warning('w1')\nf()\ncat('after\\n')\nfor (i in 1:3) warning(paste('w', i))\n"
                "cat('x\\n')\n",
    "error in a function": "cat('a\\n')\nf <- function() stop('boom')\nf()\ncat('never\\n')\n",
    "top-level error": "stop('top')\n",
    "incomplete expression": "cat('a\\n')\nx <- (1 +\n",
    "syntax error": "cat('a\\n')\nx <- 1 2\ncat('b\\n')\n",
    "quit status": "cat('q\\n')\nquit(status = 3)\n",
    "error handler quits": "options(error = function() { cat('handler\\n'); q(status = 7) })\nstop('x')\n",
    ".Last": ".Last <- function() cat('last\\n')\ncat('x\\n')\n",
    "commandArgs": "print(commandArgs())\nprint(commandArgs(TRUE))\n",
    "stdin() is the script": "x <- readLines(stdin(), n = 1)\nprint(x)\nprint(2)\n",
    "readline": "print(readline())\n",
    "tempdir": "cat(file.exists(tempdir()), grepl('^/scratch/Rtmp', tempdir()), "
               "Sys.getenv('R_SESSION_TMPDIR') == tempdir(), '\\n')\n",
    "environment": "e <- Sys.getenv()\nprint(e[names(e) != 'R_SESSION_TMPDIR'])\n",
    "session": "print(search())\nprint(ls(all.names = TRUE))\nprint(loadedNamespaces())\n"
               "print(getLoadedDLLs()[, 'Filename'])\ncat(interactive(), exists('.Random.seed'), '\\n')\n"
               "print(options()[c('warn', 'digits', 'keep.source', 'echo', 'encoding')])\n",
    "shell": "system('echo hi; id -u | grep -qv \"^0$\" && echo not-root')\n",
    "killed by a signal": "cat('a\\n')\ninvisible(tools::pskill(Sys.getpid(), tools::SIGTERM))\n",
}, "racket": {
    "racket/base": "#lang racket/base\n(define x (read))\n(displayln (* x 2))\n",
    "printing": "#lang racket\n(define x (read))\n(displayln (* x 2))\n(list 1 \"a\" 'b)\n\"str\"\n"
                "(struct p (x) #:transparent)\n(p 3)\n(print (vector 1 2))\n",
    "arguments and run file": "#lang racket/base\n(write (current-command-line-arguments))\n"
                              "(write (find-system-path 'run-file))\n",
    "error": "#lang racket\n(displayln 1)\n(error 'f \"boom ~a\" 3)\n(displayln 2)\n",
    "raise": "#lang racket/base\n(raise 'oops)\n",
    "exit status": "#lang racket/base\n(display \"q\")\n(exit 3)\n",
    "exit handler": "#lang racket/base\n"
                    "(exit-handler (let ([old (exit-handler)]) (lambda (c) (display \"bye\") (old 5))))\n"
                    "(display \"a\")\n",
    "main submodule": "#lang racket/base\n(module+ main (displayln \"in main\"))\n(displayln \"body\")\n",
    "threads": "#lang racket/base\n(define ch (make-channel))\n"
               "(void (thread (lambda () (channel-put ch (* 2 (read))))))\n"
               "(displayln (channel-get ch))\n(sleep 0.1)\n(displayln 'done)\n",
    "subprocess": "#lang racket/base\n(require racket/system)\n(void (system \"echo hi\"))\n"
                  "(displayln (system/exit-code \"exit 4\"))\n",
    "lines": "#lang racket/base\n(displayln (read-line))\n(displayln (read-line))\n",
    "top-level eval": "#lang racket/base\n(displayln (with-handlers ([void exn-message]) (eval '(+ 1 2))))\n",
    "read error": "#lang racket/base\n(define (f x) x\n",
    "unbound identifier": "#lang racket/base\n(displayln y)\n",
    "not a module": "(displayln 5)\n",
    "environment": "#lang racket/base\n(for ([n (environment-variables-names (current-environment-variables))])\n"
                   "  (printf \"~a=~a\\n\" n (getenv (bytes->string/utf-8 n))))\n",
}}


@pytest.fixture(scope="module")
def run_command_executor():
    """The same languages without their fork servers: each execution runs the language's run command."""
    table = load_languages()
    plain = LanguageTable([replace(lang, fork_server=()) for lang in table.values()], table.unavailable)
    ex = create_executor("process", concurrency=1, languages=plain)
    yield ex
    ex.close()


#: A program that prints a fact telling a fork server's child from the run command's process, and that fact
#: under each: where R reads its program from (Rscript opens it on its first free descriptor, 3; the server's
#: child reads it on the server's script descriptor); racket's warm-up module, declared in the server only.
SERVED = {
    "R": ("cat(identical(Sys.readlink('/proc/self/fd/3'), '/scratch/main.R'), '\\n')\n", "TRUE \n", "FALSE \n"),
    "racket": ("#lang racket/base\n(displayln (module-declared? ''sandbox-fork-server-warm-up #f))\n", "#f\n", "#t\n"),
}


@pytest.mark.parametrize("language", sorted(SERVED))
def test_the_language_runs_in_its_fork_server(executor, run_command_executor, language) -> None:
    """Guards the comparison below against comparing the run command with itself (a server that silently
    failed to start)."""
    require_language(executor.languages, language)
    code, plain, served = SERVED[language]
    assert run(run_command_executor, language, code).stdout == plain
    assert run(executor, language, code).stdout == served


@pytest.mark.parametrize(("language", "what"),
                         [(lang, what) for lang in sorted(AS_THE_RUN_COMMAND) for what in AS_THE_RUN_COMMAND[lang]])
def test_programs_run_as_the_run_command_runs_them(executor, run_command_executor, language, what) -> None:
    require_language(executor.languages, language)
    args = {"args": ("a", "b c")} if what in ("commandArgs", "arguments and run file") else {}
    code = AS_THE_RUN_COMMAND[language][what]
    served = run(executor, language, code, **args)
    plain = run(run_command_executor, language, code, **args)
    assert plain.verdict is not Verdict.SANDBOX_ERROR, plain.error
    assert (served.verdict, served.exit_code, served.signal, served.stdout, served.stderr) == \
           (plain.verdict, plain.exit_code, plain.signal, plain.stdout, plain.stderr)


def test_without_its_c_helper_r_runs_rscript(monkeypatch) -> None:
    """No C compiler (or a failed build): R's server cannot start, and R runs its run command, still correct."""
    monkeypatch.setattr(process_backend, "built_helpers", lambda: ())
    ex = create_executor("process", concurrency=1)
    try:
        require_language(ex.languages, "R")
        result = run(ex, "R", "cat(identical(Sys.readlink('/proc/self/fd/3'), '/scratch/main.R'), file = stderr())\n"
                              "cat(2 * scan(file('stdin'), quiet = TRUE), '\\n', sep = '')\n")
        assert result.verdict is Verdict.ACCEPTED, (result.error, result.stdout, result.stderr)
        assert result.stdout == "42\n" and result.stderr == "TRUE"       # Rscript's descriptor 3
    finally:
        ex.close()
