"""Ruby, PHP, R, racket and node: what a program does to its own interpreter stays in its own execution.

Issue 20 cuts these languages' start-up with a per-language fork server (a warm interpreter of the
slot forks one child per execution: sandbox/runtime/fork_servers.py; process backend as root, and the
docker backend, whose child makes its own scratch directory and keeps the container's IPC namespace).
Whatever runs them, these properties must hold, on one slot of each backend (concurrency 1: every
execution below reuses the same sandbox, and the same server):

* a program that poisons its interpreter -- redefines ``Kernel#exit``/``puts``, registers exit hooks
  and output callbacks that print the expected answer, closes STDOUT, leaves a forked process and a
  thread that write the answer later -- changes nothing for the next execution: a correct program
  still passes with exactly its own output, a wrong one still fails with exactly its own output; nor
  does a fork bomb that fills its process limit; nor is any process the program started seen by the
  next execution -- not a detached one whose main thread exited (/proc calls it a zombie), not a zombie
  (python and bash too: their processes are the zygote's forks, not a server's);
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

import os
import re
import shutil
from dataclasses import replace

import pytest

from reward_core.sandbox_contract import ExecutionRequest, ExecutionResult, Limits, Verdict
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox import process_backend
from sandbox.factory import create_executor
from sandbox.language_list import executor_versions
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
""",
    "nodejs": """\
const fs = require("fs");
process.on("exit", () => { try { fs.writeSync(1, "42\\n"); } catch (e) {} });
process.exit = () => {};
console.log = () => fs.writeSync(1, "42\\n42\\n");
Object.prototype.poisoned = true;
Math.random = () => 0.5;
require("child_process").spawn("sh", ["-c", "sleep 3; echo 42"],
                               { detached: true, stdio: ["ignore", "inherit", "ignore"] }).unref();
setInterval(() => { try { fs.writeSync(1, "42\\n"); } catch (e) {} }, 50).unref();
new (require("worker_threads").Worker)("setInterval(() => {}, 1000)", { eval: true }).unref();
process.env.NODE_OPTIONS = "--require /scratch/poison.js";
fs.writeFileSync("poison.js", "console.log(42)");
fs.writeFileSync("main.js", "console.log(42)");
fs.closeSync(1);
""",}
#: Fills its process limit and leaves every process behind, blocked or spinning, until the wall limit.
FORK_BOMB = {
    "ruby": "loop { Process.fork { sleep } rescue sleep(0.01) }\n",
    "php": "<?php\nwhile (true) { if (@pcntl_fork() === 0) { sleep(100); exit(0); } }\n",
    "R": "repeat try(parallel:::mcfork(), silent = TRUE)\n",
    "racket": "#lang racket/base\n(require ffi/unsafe)\n(define fork (get-ffi-obj \"fork\" #f (_fun -> _int)))\n"
              "(let loop () (fork) (loop))\n",
    "nodejs": "const cp = require('child_process');\n"
              "for (;;) { try { cp.spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {stdio: 'ignore'}); }"
              " catch (e) { } }\n",
}
#: Reads 21, prints 41: wrong, and must stay wrong.
WRONG = {
    "ruby": "gets\nputs 41\n",
    "php": "<?php\nfgets(STDIN);\necho \"41\\n\";\n",
    "R": "invisible(readLines(file('stdin'), n = 1))\ncat('41\\n')\n",
    "racket": "#lang racket/base\n(void (read))\n(displayln 41)\n",
    "nodejs": "require('fs').readFileSync(0);\nconsole.log(41);\n",
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
    "nodejs": [
        "process.on('exit', () => console.log(42));\n"
        "console.log(Number(require('fs').readFileSync(0, 'utf8')) * 2);\nthrow new Error('boom');\n",
        "process.on('exit', () => console.log(42));\n"
        "console.log(Number(require('fs').readFileSync(0, 'utf8')) * 2);\nprocess.exit(3);\n",
        "console.log(Number(require('fs').readFileSync(0, 'utf8')) * 2);\nPromise.reject(new Error('late'));\n",
        "process.on('exit', () => { process.exitCode = 4; });\n"
        "console.log(Number(require('fs').readFileSync(0, 'utf8')) * 2);\n",
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
    "nodejs": {
        "exit hook output": "const x = Number(require('fs').readFileSync(0, 'utf8'));\n"
                            "process.on('exit', () => console.log(x * 2));\n",
        "main idiom": "if (require.main === module && __filename === require('path').resolve('main.js'))\n"
                      "  console.log(Number(require('fs').readFileSync(0, 'utf8')) * 2);\n",
        "arguments": "console.log(Number(process.argv[2]) + Number(require('fs').readFileSync(0, 'utf8')));\n",
        "relative file": "require('fs').readFileSync(0);\n"
                         "console.log(Number(require('fs').readFileSync('data.txt', 'utf8')) * 2);\n",
        "async I/O, timers and promises": "require('fs').readFile(0, 'utf8', (e, d) => setTimeout(() =>\n"
                                          "  Promise.resolve(Number(d) * 2).then(console.log), 10));\n",
        "stdin stream": "let s = '';\nprocess.stdin.on('data', (d) => { s += d; })"
                        ".on('end', () => console.log(Number(s) * 2));\n",
        "thread pool": "const x = Number(require('fs').readFileSync(0, 'utf8'));\n"
                       "require('crypto').pbkdf2('a', 'b', 1000, 16, 'sha256', () =>\n"
                       "  require('zlib').gzip('x', () => console.log(x * 2)));\n",
        "worker thread": "const { Worker } = require('worker_threads');\n"
                         "const x = Number(require('fs').readFileSync(0, 'utf8'));\n"
                         "new Worker('require(\"worker_threads\").parentPort.postMessage(2)', { eval: true })\n"
                         "  .on('message', (m) => console.log(x * m));\n",
        "garbage collection": "let a = [], n = 0;\nfor (let i = 0; i < 3e6; i++) {\n"
                              "  a.push({ i, s: 'x' + i });\n  if (a.length > 2e5) { n += a.length; a = []; }\n}\n"
                              "const big = Buffer.alloc(64 << 20, 1), arr = new Array(4e6).fill(1.5);\n"
                              "if (n > 0 && big[1] === 1 && arr[5] === 1.5) "
                              "console.log(Number(require('fs').readFileSync(0, 'utf8')) * 2);\n",
        "node runs node": "const cp = require('child_process');\n"
                          "const out = cp.execFileSync(process.execPath, ['-e', 'console.log(21)']);\n"
                          "console.log(Number(out) * 2);\n",
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
    "nodejs": """\
const fs = require("fs");
for (const l of fs.readFileSync("/proc/self/status", "utf8").split("\\n")) {
  if (/^(Uid|Cap\\w+|NoNewPrivs|Seccomp):/.test(l)) console.log(l);
}
for (const fd of fs.readdirSync("/proc/self/fd")) {
  let what = "gone";
  try { what = fs.readlinkSync("/proc/self/fd/" + fd); } catch (e) {}
  console.log("fd " + fd + " " + what);
}
let yes = true;
try { process.kill(process.ppid, 0); } catch (e) { yes = false; }
console.log("signal parent: " + (yes ? "yes" : "no"));
""",
}


#: Each test runs on both backends (docker: the runner image of SANDBOX_LANGUAGES, all in CI).
BACKENDS = [pytest.param("process", id="process"), pytest.param("docker", id="docker", marks=pytest.mark.docker)]


def backend_options(request, backend: str) -> dict:
    """create_executor's options for ``backend`` (docker: its runner image, or the test skips)."""
    return {"image": request.getfixturevalue("docker_runner_image")} if backend == "docker" else {}


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def executor(request, backend):
    # one slot: every execution follows the last one there; racket's server is opt-in
    ex = create_executor(backend, concurrency=1, fork_servers=("default", "racket"),
                         **backend_options(request, backend))
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


#: A detached process the way /proc hides one best: its main thread exits while another thread runs on
#: (/proc then says "Z", a zombie, for the whole process), holding four children it never reaps (zombies).
#: Prints 42 once it is in that state, then ends. Run by each language as ``python3 stray.py`` (an exec'd,
#: dumpable process: hidepid shows the next execution its zombies).
STRAY = """\
import ctypes, os, threading, time
os.unlink(__file__)                                # else the slot's file sweep (kill(-1) as the uid) kills it
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in (0, 1, 2):                       # the program's output ends with the program (php reads it)
            os.dup2(os.open(os.devnull, os.O_RDWR), fd)
        for _ in range(4):
            if os.fork() == 0:
                os._exit(0)
        threading.Thread(target=time.sleep, args=(3600,)).start()
        os.write(w, b"%d" % os.getpid())
        ctypes.CDLL(None).syscall({"x86_64": 60, "aarch64": 93}[os.uname().machine], 0)   # exit: this thread only
    os._exit(0)
pid = int(os.read(r, 16))
for _ in range(1000):
    try:
        with open(f"/proc/{pid}/status") as f:
            if "State:\\tZ" in f.read():
                print(42)
                break
    except OSError:
        pass
    time.sleep(0.01)
"""
RUN_STRAY = {
    "python": "import subprocess\nsubprocess.run(['python3', 'stray.py'])\n",
    "bash": "python3 stray.py\n",
    "ruby": "system('python3', 'stray.py')\n",
    "php": "<?php\nsystem('python3 stray.py');\n",
    "R": "invisible(system2('python3', 'stray.py'))\n",
    "racket": "#lang racket/base\n(require racket/system)\n"
              "(void (system* (find-executable-path \"python3\") \"stray.py\"))\n",
    "nodejs": "require('child_process').execFileSync('python3', ['stray.py'], {stdio: 'inherit'});\n",
}
#: Every process of its own uid that the next execution sees, zombies included.
SAME_UID = """\
import os
mine = []
for pid in [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]:
    try:
        with open(f"/proc/{pid}/status") as f:
            if f"\\nUid:\\t{os.getuid()}\\t" in f.read():
                mine.append(pid)
    except OSError:
        pass
print(mine)
"""


@pytest.mark.parametrize("language", ["python", "bash", *LANGUAGES])
def test_no_process_of_a_program_reaches_the_next_execution(executor, language) -> None:
    """Not one whose main thread exited, nor a zombie: the slot's sweep waits until the slot's init reaped
    them (python and bash: forked by the zygote; the others by their fork servers)."""
    require_language(executor.languages, language)
    for _ in range(3):
        stray = executor.execute(ExecutionRequest(
            code=RUN_STRAY[language], style=Style.STDIO, language=language, files={"stray.py": STRAY.encode()},
            limits=replace(LIMITS, max_processes=32), cases=(Case(stdin="", expected_stdout="42\n"),)))
        assert stray.verdict is Verdict.ACCEPTED, (stray.error, stray.stdout, stray.stderr)
        probe = executor.execute(ExecutionRequest(code=SAME_UID, style=Style.STDIO, limits=LIMITS,
                                                  cases=(Case(stdin="", expected_stdout="[]\n"),)))
        assert probe.verdict is Verdict.ACCEPTED, (probe.error, probe.stdout, probe.stderr)


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
                                "gone", "/memfd:")) or re.fullmatch(r"/scratch/(\d+/)?main\.\w+", what), what
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
    # R's exit (the server's child ends through runtime/fork_server_r.c's r_exit, then R's own)
    "exit steps warn": ".Last <- function() { cat('last', dir.exists(tempdir()), '\\n'); warning('from .Last') }\n"
                       "invisible(reg.finalizer(globalenv(), function(e) { cat('fin', dir.exists(tempdir()), '\\n')\n"
                       "  warning('from a finalizer') }, onexit = TRUE))\nwarning('top')\ncat('x\\n')\n",
    "warning pending at quit": "f <- function() { warning('pending'); quit(status = 2) }\nf()\n",
    "quit without .Last": ".Last <- function() cat('last\\n')\nquit(status = 4, runLast = FALSE)\n",
    "error in .Last": ".Last <- function() stop('in .Last')\ncat('x\\n')\n",
    "error after a warning": "warning('first')\nf <- function() { warning('w'); stop('e') }\nf()\n",
    "quit saving": "x <- 1\ninvisible(reg.finalizer(globalenv(), function(e) cat(file.exists('.RData'), '\\n'), "
                   "onexit = TRUE))\nquit(save = 'yes')\n",
    "temporary files": "f <- tempfile()\nwriteLines('a', f)\n"
                       "dir.create(file.path(tempdir(), 'd', 'e'), recursive = TRUE)\n"
                       "writeLines('b', file.path(tempdir(), 'd', 'e', 'g'))\nSys.chmod(f, '0400')\n"
                       "invisible(file.symlink(normalizePath('main.R'), file.path(tempdir(), 'link')))\n"
                       "cat(readLines(f), length(list.files(tempdir(), recursive = TRUE)), '\\n')\n",
    "removes its temporary directory": "unlink(tempdir(), recursive = TRUE)\ncat(dir.exists(tempdir()), '\\n')\n",
    "top-level on.exit": "on.exit(cat('bye\\n'))\ncat('x\\n')\n",
    "shell in .Last": ".Last <- function() system('echo from .Last')\ncat('x\\n')\n",
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
    # what the served child sets itself from getcwd (looked up in the server) and its HOME, as racket's start does
    "working directory and collections": "#lang racket/base\n(for-each displayln (list (current-directory)\n"
                                         "  (current-directory-for-user) (path->complete-path \"x.rkt\")\n"
                                         "  (find-system-path 'home-dir) (find-system-path 'addon-dir)\n"
                                         "  (current-library-collection-paths) (current-library-collection-links)))\n"
                                         "(with-output-to-file \"f.txt\" (lambda () (display 'w)) #:exists 'replace)\n"
                                         "(displayln (call-with-input-file \"f.txt\" read-line))\n",
    # the server covers the low 2 GB while racket loads (runtime/fork_server.rkt): none of it is left to a child
    "no covered address space": "#lang racket/base\n(displayln (for/sum ([l (call-with-input-file \"/proc/self/maps\"\n"
                                "  (lambda (in) (for/list ([l (in-lines in)]) l)))])\n"
                                "  (define m (regexp-match #px\"^([0-9a-f]+)-[0-9a-f]+ ---p 0+ 00:00 0\\\\s*$\" l))\n"
                                "  (if (and m (< #x3fffffff (string->number (cadr m) 16) #x80000000)) 1 0)))\n"
                                "(displayln (bytes-length (make-bytes (* 16 1024 1024) 1)))\n",
    # the languages SandboxFusion's programs use: #lang racket, #lang racket/base, a module form without #lang
    "#lang racket reads lines": "#lang racket\n(for ([l (in-lines)]) (printf \"<~a>\\n\" (string-upcase l)))\n"
                                "(write (port->string))\n",
    "racket/base prints values": "#lang racket/base\n1\n\"s\"\n'sym\n(values 1 2)\n(void)\n#\\a\n(list 'a \"b\" #t)\n"
                                 "(vector 1 'x)\n(define x (read))\nx\n(make-hash '((a . 1)))\n",
    "module form": "(module anything racket/base\n  (displayln (* 2 (read)))\n  (+ 1 2))\n",
    "module form in racket": "(module m racket\n  (displayln (string-join (list \"a\" \"b\")))\n  'q)\n",
    "exit status out of range": "#lang racket/base\n(display \"out\")\n(eprintf \"err\")\n(exit 300)\n",
    "exit with a symbol": "#lang racket\n(displayln 'x)\n(exit 'done)\n",
    "exit in a thread": "#lang racket/base\n(void (thread (lambda () (displayln 'thread) (exit 7))))\n(sleep 5)\n",
    "output flushed at exit": "#lang racket/base\n(for ([i 5000]) (write-string \"0123456789\"))\n"
                              "(write-string \"end\" (current-error-port))\n",
    "output flushed at an error": "#lang racket\n(display \"out\")\n(display \"err\" (current-error-port))\n"
                                  "(car '())\n",
    # an error's "context...:" lines name the procedures (the server's collections keep their names)
    "error in functions": "#lang racket\n(define (f n) (if (= n 0) (vector-ref (vector 1 2) 5) (+ 1 (f (- n 1)))))\n"
                          "(displayln 'start)\n(map (lambda (x) (f x)) '(3 2))\n",
    "syntax error": "#lang racket\n(define)\n",
    "unknown language": "#lang no-such-language\n(displayln 1)\n",
    "output at compile time, then a syntax error": "#lang racket\n(begin-for-syntax (displayln \"expanding\"))\n"
                                                   "(displayln 1)\n(let)\n",
    # racket runs the program's configure-runtime submodule before the program, its main submodule after
    "error in the main submodule": "#lang racket/base\n(displayln 'body)\n(module+ main (error 'in-main \"boom\"))\n",
    "main and test submodules": "#lang racket\n(module+ test (displayln 'test))\n"
                                "(module main racket/base (displayln (read)))\n(displayln 'body)\n",
    "configure-runtime submodule": "#lang racket/base\n"
                                   "(module configure-runtime racket/base (display \"configured \"))\n"
                                   "(displayln 'body)\n(module+ main (displayln 'main))\n",
    "configure-runtime sets printing": "#lang racket/base\n(module configure-runtime racket/base\n"
                                       "  (current-print (lambda (v) (unless (void? v) (printf \"=> ~s\\n\" v)))))\n"
                                       "'sym\n(list 1 \"a\")\n",
    "error in configure-runtime": "#lang racket/base\n(module configure-runtime racket/base (error 'cfg \"bad\"))\n"
                                  "(displayln 'body)\n",
    "exit in configure-runtime": "#lang racket/base\n(module configure-runtime racket/base (display (read)) (exit 4))\n"
                                 "(displayln 'body)\n",
}, "nodejs": {
    "uncaught error": "console.log('a');\nfunction f() { throw new Error('boom'); }\nf();\n",
    "syntax error": "console.log('a');\nlet x = ;\n",
    "unhandled rejection": "console.log('a');\nPromise.reject(new Error('r'));\n",
    "exit code": "console.log('q');\nprocess.exitCode = 3;\n",
    "exit in an exit handler": "process.on('exit', (c) => { console.log('exit', c); });\nprocess.exit(5);\n",
    "beforeExit": "let n = 0;\n"
                  "process.on('beforeExit', () => { if (n++ < 2) setTimeout(() => console.log('again', n), 1); });\n",
    "argv and main module": "console.log(process.argv.slice(1), process.execArgv, require.main === module,\n"
                            "  __filename,\n"
                            "  __dirname, module.id, process.argv0, process.title, Object.keys(require.cache));\n",
    "environment": "console.log(JSON.stringify(process.env));\n",
    "pid": "const stat = require('fs').readFileSync('/proc/self/stat', 'utf8');\n"
           "console.log(process.pid === Number(stat.split(' ')[0]));\n",
    "killed by a signal": "console.log('a');\nprocess.kill(process.pid, 'SIGTERM');\nsetTimeout(() => {}, 5000);\n",
    "dynamic import": "import('fs').then((m) => console.log(typeof m.readFileSync));\n",
    "lines": "const rl = require('readline').createInterface({ input: process.stdin });\n"
             "rl.on('line', (l) => console.log('line', l)).on('close', () => console.log('end'));\n",
    "large output": "process.stdout.write('x'.repeat(60000) + '\\n');\n",   # under the 64 KB output cap
    "child process fork": "const cp = require('child_process');\n"
                          "if (process.argv[2] === 'child') console.log('child', process.execArgv);\n"
                          "else cp.fork(__filename, ['child']).on('exit', (c) => console.log('forked', c));\n",
    # node's exit (the server's child ends once the 'exit' listeners have run: runtime/fork_server_node.c, 5)
    "exit code set in an exit listener": "process.on('exit', (c) => { console.log('exit', c);\n"
                                         "  process.exitCode = 9; });\nconsole.log('a');\n",
    "exit code set after process.exit": "process.on('exit', () => { process.exitCode = 7; });\nprocess.exit(2);\n",
    "process.exit in an exit listener": "process.on('exit', (c) => { console.log('in', c); process.exit(6); });\n"
                                        "console.log('x');\n",
    "exit code unset again": "process.exitCode = 3;\nprocess.exitCode = undefined;\nconsole.log('u');\n",
    "exit code out of range": "process.exitCode = 258;\nconsole.log('r');\n",
    "negative exit code": "process.exitCode = -2;\n",
    "uncaught error with an exit code": "process.exitCode = 5;\n"
                                        "process.on('exit', (c) => console.log('exit', c, process.exitCode));\n"
                                        "throw new Error('x');\n",
    "uncaught error, the listener sets the code": "process.on('exit', () => { process.exitCode = 8; });\n"
                                                  "throw new Error('x');\n",
    "error in an exit listener": "process.on('exit', () => { throw new Error('in exit'); });\nconsole.log(1);\n",
    "exit listeners write": "for (let i = 0; i < 3; i++) process.on('exit', () => {\n"
                            "  process.stdout.write(String(i).repeat(15000) + '\\n'); console.error('err', i); });\n"
                            "process.on('exit', () => process.on('exit', () => console.log('never')));\n"
                            "console.log('main');\n",
    "write callback and a tick at exit": "process.stdout.write('a\\n', () => console.error('cb'));\n"
                                         "process.on('exit', () => { process.nextTick(() => console.log('tick'));\n"
                                         "  console.log('exit'); });\n",
    "write after end": "process.stdout.end('a\\n');\nprocess.stdout.write('b\\n');\n",
    "stdout's descriptor closed": "require('fs').closeSync(1);\nconsole.error('e');\nconsole.log('x');\n",
    "beyond the output cap in an exit listener": "process.on('exit', () => {\n"
                                                 "  for (let i = 0; i < 20000; i++) console.log('line ' + i); });\n",
    "reallyExit": "console.log('r');\nprocess.reallyExit(4);\n",
    "a worker running at exit": "const { Worker } = require('worker_threads');\n"
                                "const w = new Worker('setInterval(() => {}, 1000)', { eval: true });\n"
                                "w.on('online', () => { console.log('online'); w.unref(); });\n",
    "a worker running at process.exit": "const { Worker } = require('worker_threads');\n"
                                        "const w = new Worker('setInterval(() => {}, 1000)', { eval: true });\n"
                                        "w.on('online', () => { console.log('online'); process.exit(3); });\n",
}}


@pytest.fixture(scope="module")
def run_command_executor(request, backend):
    """The same languages without their fork servers: each execution runs the language's run command."""
    table = load_languages()
    plain = LanguageTable([replace(lang, fork_server=()) for lang in table.values()], table.unavailable)
    ex = create_executor(backend, concurrency=1, languages=plain, **backend_options(request, backend))
    yield ex
    ex.close()


#: A program that prints a fact telling a fork server's child from the run command's process, and that fact
#: under each: where R reads its program from (Rscript opens it on its first free descriptor, 3; the server's
#: child reads it on the server's script descriptor); racket's warm-up module, declared in the server only;
#: ruby's Fiddle and php's server functions, loaded by the server only.
SERVED = {
    "ruby": ("p defined?(Fiddle).nil?\n", "true\n", "false\n"),
    "php": ("<?php var_dump(function_exists('SandboxForkServer\\\\libc'));\n", "bool(false)\n", "bool(true)\n"),
    "R": ("cat(identical(basename(Sys.readlink('/proc/self/fd/3')), 'main.R'), '\\n')\n", "TRUE \n", "FALSE \n"),
    "racket": ("#lang racket/base\n(displayln (module-declared? ''sandbox-fork-server-warm-up #f))\n", "#f\n", "#t\n"),
    "nodejs": ("console.log(require('fs').readFileSync('/proc/self/cmdline', 'utf8').includes('fork_server.js'));\n",
               "false\n", "true\n"),
}


def node_is_served(executor) -> bool:
    """Whether the executor's node is the one its fork server supports (runtime/fork_server.js: node 20)."""
    return executor_versions(executor, executor.languages).get("nodejs", "").startswith("v20.")


@pytest.mark.parametrize("language", sorted(SERVED))
def test_the_language_runs_in_its_fork_server(executor, run_command_executor, language) -> None:
    """Guards the comparison below against comparing the run command with itself (a server that silently
    failed to start)."""
    require_language(executor.languages, language)
    if language == "nodejs" and not node_is_served(executor):
        pytest.skip("node's fork server is checked on node 20 only: under another node `node main.js` runs")
    code, plain, served = SERVED[language]
    assert run(run_command_executor, language, code).stdout == plain
    assert run(executor, language, code).stdout == served


@pytest.mark.parametrize(("language", "what"),
                         [(lang, what) for lang in sorted(AS_THE_RUN_COMMAND) for what in AS_THE_RUN_COMMAND[lang]])
def test_programs_run_as_the_run_command_runs_them(executor, run_command_executor, language, what) -> None:
    require_language(executor.languages, language)
    args = {"args": ("a", "b c")} if what in ("commandArgs", "arguments and run file", "argv and main module") else {}
    code = AS_THE_RUN_COMMAND[language][what]
    served = run(executor, language, code, **args)
    plain = run(run_command_executor, language, code, **args)
    assert plain.verdict is not Verdict.SANDBOX_ERROR, plain.error
    assert (served.verdict, served.exit_code, served.signal, scratch_named(served.stdout),
            scratch_named(served.stderr)) == \
           (plain.verdict, plain.exit_code, plain.signal, scratch_named(plain.stdout), scratch_named(plain.stderr))


def scratch_named(text: str) -> str:
    """The docker backend's per-execution scratch directory (/scratch/<pid>) under one name: the pids differ."""
    return re.sub(r"/scratch/\d+(?=/|\b)", "/scratch/<pid>", text)


def test_r_leaves_no_session_directory_to_the_next_execution(executor) -> None:
    """A served R child removes its tempdir() itself at exit (runtime/fork_server_r.c, not R's `rm -Rf`):
    files, a subdirectory, a read-only file and a link to the program go; the program's file stays."""
    require_language(executor.languages, "R")
    first = run(executor, "R", AS_THE_RUN_COMMAND["R"]["temporary files"] + "cat(tempdir(), file = stderr())\n")
    assert first.stdout == "a 3 \n" and "/Rtmp" in first.stderr, (first.error, first.stderr)
    listing = "cat(sort(list.files(dirname(tempdir()), all.files = TRUE, no.. = TRUE)), tempdir(), sep = '\\n')\n"
    second = run(executor, "R", listing)
    *names, own = second.stdout.splitlines()
    assert os.path.basename(first.stderr) not in names
    assert [n for n in names if n.startswith("Rtmp")] == [os.path.basename(own)]


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


def test_each_node_execution_has_its_own_randomness(executor) -> None:
    """A forked node reseeds V8's generator (Math.random) and OpenSSL's, as a new node seeds them."""
    require_language(executor.languages, "nodejs")
    code = "console.log(Math.random(), require('crypto').randomBytes(8).toString('hex'));\n"
    outputs = [run(executor, "nodejs", code).stdout for _ in range(3)]
    assert all(outputs) and len(set(outputs)) == 3, outputs
