"""The ``code`` task: run the completion's code against the reference's tests in the sandbox.

Reference, one of::

    {"tests": "<check code>", "entry_point": "has_close_elements", "prompt"?: "<code prompt>"}   # HumanEval
    {"cases": [{"stdin": "1 2\\n", "expected_stdout": "3\\n"}, ...], "style"?: "stdio"}            # stdin/stdout
    {"cases": [{"args": [1, 2], "expected": 3}, ...], "entry_point": "add"}                        # function call

plus ``"language"?`` ("python" by default; every language of the sandbox's table:
sandbox/languages.toml). ``test`` is accepted for ``tests``, so rows of the HumanEval
dataset convert as they are; ``cases`` may also be a JSON string.

Stdin/stdout references may also carry files and arguments (reward_service/tasks/code_files.py)::

    "files"?: {"data/in.txt": "text", "blob.bin": {"base64": "AAE="}, "skipped": null}
    "args"?: ["--fast"]                       # appended to the run command of every case
    "expected_files"?: {"out.txt": "42\n"}    # the program must write these, byte for byte

``files`` are written into the program's scratch directory before it compiles and before every
case; ``expected_files`` are read back after the last case and count as one more test (passed
only when every one exists with exactly that content).

Stdin/stdout cases are judged by ``"compare"?`` (reference) or the ``compare``
option: a mode name -- ``tokens`` (default: whitespace-insensitive), ``float``,
``exact``, ``lines``, ``lines_unordered`` (sandbox/output_compare.py) -- or an
object ``{"mode"?, "float_tolerance"?, "checker"?, "checker_language"?}`` where
``checker`` is a checker program's source (a special judge, testlib-style:
sandbox/checker.py), e.g. ``{"checker": "<python source>"}`` or
``{"checker": "<C++ source>", "checker_language": "cpp"}``. A checker that fails
(does not compile; crashes or exits other than 0/1/2/8 on the expected answer
too) is a sandbox error, so ERROR (unscored), never a 0.

Code extraction (:func:`extract_code`): the last fenced block of the language
(```` ```python ````, ```` ```py ````, ```` ```cpp ````, the language's name or an alias
from the sandbox's table such as ```` ```javascript ```` for nodejs, or an unlabeled
fence; an unclosed final fence counts up to the end), else the whole
completion. For HumanEval style, with ``prepend_prompt`` (default true), the
code prompt -- ``reference["prompt"]`` when given, else the rollout's prompt --
goes first: directly before an unfenced completion (a base model continues the
prompt), on its own lines before a fenced block (the prompt's imports stay
defined; a full definition in the block replaces the prompt's stub). When the
rollout's prompt is chat-formatted text, put the code prompt in the reference
or set ``prepend_prompt: false``. A code prompt that compiles on its own (a
HumanEval prompt does) is also sent as the execution's trusted ``prompt``: the
helpers it defines (HumanEval/38's ``encode_cyclic``, /32's ``poly``) are then
the dataset's when the check calls them, whatever the completion redefines.

Options (``tasks: {code: {options: {...}}}`` in the rewards config)::

    reward: binary | fraction   # 1 only when every test passes | tests passed / tests total
    backend: process | docker   # the local executor: one in the reward server, shared by every request
    endpoint: "host:port"       # a SandboxService (python -m sandbox serve) instead of a local executor;
                                #   default: the server's --sandbox-endpoint (REWARD_SERVICE_SANDBOX_ENDPOINT);
                                #   TLS and token from the REWARD_SUITE_* environment
                                #   (reward_core/channel_security.py)
    concurrency: N              # programs at once in the whole server (default: the CPUs available)
    timeout_s: 10               # wall and CPU limit of one program (all its tests)
    memory_mb: 512              # memory limit of one program
    prepend_prompt: true        # see above (HumanEval style only)
    language: python            # for references that name none
    compare: tokens             # stdio comparator for references that name none (not checker)
    float_tolerance: null       # with compare float (default 1e-6) or for function-call values
    languages: path.yaml        # extra languages (sandbox/languages.py), local executor only
    batch_size: 0               # completions per job (0: 4 x concurrency, at least 16)

How outcomes map to rollout statuses -- the model is scored for what its code
did; the verifier's own failures are never a 0:

=============================================================  ==================================
the code                                                       rollout
=============================================================  ==================================
passes every test (``accepted``)                               OK, 1
fails a test, crashes, times out, exceeds memory/output,       OK, 0 (``fraction``: the share of
doesn't compile (``wrong_answer``, ``runtime_error``,          tests passed)
``timeout``, ``memory_limit``, ``output_limit``,
``compile_error``)
no code at all (empty completion)                              NO_ANSWER, 0
the sandbox failed (``sandbox_error``), the endpoint is        ERROR, unscored
unreachable, the executor could not start
the reference is unusable (no tests, unknown language)         INVALID_REFERENCE, unscored
a known language whose toolchain the sandbox lacks             ERROR, unscored (``UNSUPPORTED_LANGUAGE:
(``UNSUPPORTED_LANGUAGE``)                                     ...``: what to install)
=============================================================  ==================================

A ``timeout`` verdict is the *program* running past ``timeout_s``: a scored 0.
The rollout status TIMEOUT is something else: the verifier job itself ran past
the reward server's hard limit (this task raises that limit to fit a whole
batch, ``time_limit_s``). A result's ``extracted`` field carries the verdict and
test counts, e.g. ``"wrong_answer (3/5 tests)"``; its ``explanation`` the first failing
test's detail or the compiler's error line (:func:`explain_execution`).

Sandbox errors are raised (:class:`SandboxFailure`), not returned: the reward
server then retries the job's items one by one, and answers ERROR only for the
items that fail again.
"""

from __future__ import annotations

import atexit
import functools
import math
import multiprocessing.util
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import yaml

from reward_core.contract import RolloutStatus
from reward_core.sandbox_contract import (
    COMPARE_MODES,
    CaseOutcome,
    ExecutionRequest,
    ExecutionResult,
    Executor,
    InvalidExecutionRequest,
    LimitHit,
    Limits,
    OutputCompare,
    TestStyle,
    UnsupportedLanguage,
    Verdict,
)
from reward_service.task_api import (
    InvalidReference,
    InvalidTaskOptions,
    Task,
    TaskInput,
    TaskOutcome,
    current_cancel_token,
)
from reward_service.tasks.code_files import FIELDS as FILE_FIELDS
from reward_service.tasks.code_files import parse_args, parse_files, wrong_files
from reward_service.tasks.explanation import cap
from sandbox import (
    BACKENDS,
    build_request,
    create_executor,
    create_remote_executor,
    load_languages,
    prompt_compiles,
    validate_request,
)

REWARDS = ("binary", "fraction")

# ```lang ... ``` at line starts; the label is the first word after the opening fence.
FENCE_RE = re.compile(r"^[ \t]*```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL)
OPEN_FENCE_RE = re.compile(r"^[ \t]*```[ \t]*([\w+#.-]*)[^\n]*\n(.*)\Z", re.MULTILINE | re.DOTALL)
FENCE_LABELS = {"python": ("python", "py", "python3"), "cpp": ("cpp", "c++", "cc", "cxx")}

# Deadlines: a job of batch_size programs runs in ceil(batch_size / concurrency)
# waves of at most (wall + compile + margin) each, after the executor starts.
EXECUTOR_START_S = 60.0
PER_PROGRAM_MARGIN_S = 3.0
MIN_BATCH_SIZE = 16


class SandboxFailure(RuntimeError):
    """The sandbox could not judge some code (SANDBOX_ERROR, unreachable endpoint): unscored ERROR."""


def fence_labels(language: str) -> tuple[str, ...]:
    """The fence labels that mark code in ``language``: its name and its aliases in the sandbox's table
    (```` ```javascript ```` for nodejs), plus the usual spellings of FENCE_LABELS."""
    names = (*FENCE_LABELS.get(language, ()), language, *_builtin_aliases().get(language, ()))
    return tuple(dict.fromkeys(name.lower() for name in names))


@functools.lru_cache(maxsize=1)
def _builtin_aliases() -> dict[str, tuple[str, ...]]:
    """Language name -> its aliases in the sandbox's built-in table (read once, on first use)."""
    return {name: lang.aliases for name, lang in load_languages(probe=None).items()}


def extract_code(completion: str, language: str = "python") -> tuple[str, bool]:
    """The code in a completion, and whether it came from a fenced block.

    The last fenced block labelled with the language (or unlabelled) wins; a
    final fence left open (generation cut off) runs to the end; with no such
    block the whole completion is the code.
    """
    labels = fence_labels(language)
    blocks = []
    end = 0
    for match in FENCE_RE.finditer(completion):
        blocks.append((match.group(1).lower(), match.group(2)))
        end = match.end()
    tail = OPEN_FENCE_RE.search(completion, end)
    if tail is not None:
        blocks.append((tail.group(1).lower(), tail.group(2)))
    for wanted in (lambda label: label in labels, lambda label: label == ""):
        chosen = [body for label, body in blocks if wanted(label)]
        if chosen:
            return chosen[-1], True
    return completion, False


def program_code(completion: str, reference: Mapping[str, Any], prompt: str, *, language: str,
                 humaneval: bool, prepend_prompt: bool) -> str:
    """What runs: the extracted code, after the code prompt for HumanEval style (see the module doc)."""
    code, fenced = extract_code(completion, language)
    if not code.strip():
        return ""
    if not (humaneval and prepend_prompt):
        return code
    prefix = code_prompt(reference, prompt)
    if not prefix:
        return code
    if fenced:
        return prefix.rstrip("\n") + "\n\n" + code
    return prefix + code


def code_prompt(reference: Mapping[str, Any], prompt: str) -> str:
    """The HumanEval code prompt: ``reference["prompt"]`` when given, else the rollout's prompt."""
    return reference.get("prompt") if isinstance(reference.get("prompt"), str) else prompt


def trusted_prompt(reference: Mapping[str, Any], prompt: str) -> str:
    """The code prompt as the execution's trusted ``prompt``, or "" when it does not compile on its own."""
    prefix = code_prompt(reference, prompt)
    return prefix if prompt_compiles(prefix) else ""


def with_files(request: ExecutionRequest, reference: Mapping[str, Any]) -> ExecutionRequest:
    """``request`` with the reference's ``files``, ``args`` and ``expected_files`` (fetched after the run);
    raises InvalidReference for malformed ones or for a style other than stdin/stdout."""
    files = parse_files(reference.get("files"))
    args = parse_args(reference.get("args"))
    expected = parse_files(reference.get("expected_files"), "expected_files")
    if not (files or args or expected):
        return request
    if TestStyle(request.style) is not TestStyle.STDIO:
        raise InvalidReference("reference 'files', 'args' and 'expected_files' apply to stdin/stdout cases only, "
                               f"not to {TestStyle(request.style).value} tests")
    return replace(request, files=files, args=args, fetch_files=tuple(sorted(expected)))


def explain_execution(result: ExecutionResult) -> str:
    """One line on a verdict on the code: the verdict and test counts, then the compiler's error or the
    first failing test's detail (expected/got, the exception)."""
    counts = f"{result.tests_passed}/{result.tests_total} tests passed"
    if result.passed:
        return f"accepted: {counts}"
    if result.verdict is Verdict.COMPILE_ERROR:
        text = (result.compile.stderr if result.compile and result.compile.stderr else "") or result.error
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        head = next((line for line in lines if "error" in line.lower()), lines[-1] if lines else "no compiler output")
        return cap(f"compile_error: {head} ({counts})")
    failing = next((t for t in result.tests if t.outcome is not CaseOutcome.PASSED), None)
    limit = f" ({result.limit_hit.value} limit)" if result.limit_hit is not LimitHit.NONE else ""
    if failing is None:
        return cap(f"{result.verdict.value}{limit}: {counts}" + (f"; {result.error}" if result.error else ""))
    why = failing.detail or (failing.verdict.value if failing.verdict else failing.outcome.value)
    return cap(f"{result.verdict.value}{limit}: {counts}; first failure, test {failing.index}: {why}")


def unsupported_language(exc: UnsupportedLanguage) -> TaskOutcome:
    """The sandbox cannot run the reference's language: our failure, unscored (never a 0)."""
    return TaskOutcome(0.0, RolloutStatus.ERROR, detail=str(exc))


def _check_number(name: str, value: Any, *, integer: bool = False, zero_ok: bool = False) -> None:
    ok = not isinstance(value, bool) and isinstance(value, int if integer else (int, float))
    if not ok or not (0 <= value if zero_ok else 0 < value) or not value < math.inf:
        kind = "an integer" if integer else "a number"
        raise InvalidTaskOptions(f"code option {name!r} must be {kind} {'>=' if zero_ok else '>'} 0, got {value!r}")


def _default_concurrency() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class CodeTask(Task):
    """Runs the completion's program against the reference's tests in an isolated sandbox."""

    name = "code"
    runs_in_server = True  # one executor for the whole server: concurrency programs at once in all
    cacheable = False  # verdicts near a time or memory limit vary from run to run: never cached
    description = ("1 if the completion's code passes every test of the reference (HumanEval check code, "
                   "stdin/stdout cases, or function-call cases), run in the sandbox; 'fraction': share passed")
    reference_fields = ("tests", "entry_point", "prompt", "cases", "style", "language", "compare", *FILE_FIELDS)
    endpoint_field = "sandbox_endpoint"

    def __init__(self, reward: str = "binary", backend: str = "process", endpoint: str | None = "",
                 concurrency: int = 0, timeout_s: float = 10.0, memory_mb: int = 512, prepend_prompt: bool = True,
                 language: str = "python", languages: str | None = None, batch_size: int = 0,
                 compare: str = "tokens", float_tolerance: float | None = None) -> None:
        super().__init__()
        if reward not in REWARDS:
            raise InvalidTaskOptions(f"code option 'reward' must be one of {REWARDS}, got {reward!r}")
        if backend not in BACKENDS:
            raise InvalidTaskOptions(f"code option 'backend' must be one of {BACKENDS}, got {backend!r}")
        endpoint = "" if endpoint is None else endpoint
        if not isinstance(endpoint, str):
            raise InvalidTaskOptions(f"code option 'endpoint' must be a 'host:port' string, got {endpoint!r}")
        if not isinstance(prepend_prompt, bool):
            raise InvalidTaskOptions(f"code option 'prepend_prompt' must be true or false, got {prepend_prompt!r}")
        for key, value in (("language", language), ("languages", languages or "")):
            if not isinstance(value, str):
                raise InvalidTaskOptions(f"code option {key!r} must be a string, got {value!r}")
        _check_number("timeout_s", timeout_s)
        _check_number("memory_mb", memory_mb, integer=True)
        _check_number("concurrency", concurrency, integer=True, zero_ok=True)
        _check_number("batch_size", batch_size, integer=True, zero_ok=True)
        modes = [m for m in COMPARE_MODES if m != "checker"]
        if compare not in modes:
            raise InvalidTaskOptions(f"code option 'compare' must be one of {modes} (a checker belongs in the "
                                     f"reference's 'compare'), got {compare!r}")
        if float_tolerance is not None:
            _check_number("float_tolerance", float_tolerance, zero_ok=True)
        self.compare = OutputCompare(mode=compare, float_tolerance=None if float_tolerance is None
                                     else float(float_tolerance))
        self.reward = reward
        self.backend = backend
        self.endpoint = endpoint.strip()
        self.concurrency = concurrency or _default_concurrency()
        self.prepend_prompt = prepend_prompt
        self.language = language or "python"
        self.languages = languages or None
        try:
            self._language_table = load_languages(self.languages) if self.languages else None
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise InvalidTaskOptions(f"code option 'languages': cannot load {languages!r}: {exc}") from None
        self.limits = Limits(wall_s=float(timeout_s), cpu_s=float(timeout_s), memory_mb=memory_mb)
        self.batch_size = batch_size or max(MIN_BATCH_SIZE, 4 * self.concurrency)
        waves = math.ceil(self.batch_size / self.concurrency)
        per_program = self.limits.wall_s + self.limits.compile_wall_s + PER_PROGRAM_MARGIN_S
        self.time_limit_s = EXECUTOR_START_S + waves * per_program  # the reward server's hard limit per job

    # --- references -----------------------------------------------------------------------

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        if not any(reference.get(k) not in (None, "", []) for k in ("tests", "test", "cases")):
            raise InvalidReference(f"task {self.name!r} needs reference 'tests' (check code, with 'entry_point') "
                                   f"or 'cases' (a list of test cases); got {sorted(reference)}")

    def build_request(self, item: TaskInput, request_id: str) -> ExecutionRequest | None:
        """The execution for one completion; None when it holds no code. Raises InvalidReference, or
        UnsupportedLanguage when the local sandbox lacks the language's toolchain."""
        reference = item.reference
        self.check_reference(reference)
        language = reference.get("language") or self.language
        tests = reference.get("tests") or reference.get("test")
        if tests in (None, "", []):
            tests = {"cases": reference.get("cases"), "style": reference.get("style")}
        humaneval = isinstance(tests, str) and reference.get("style") in (None, "", "humaneval")
        if not isinstance(language, str):
            raise InvalidReference(f"reference 'language' must be a string, got {language!r}")
        code = program_code(item.completion, reference, item.prompt, language=language, humaneval=humaneval,
                            prepend_prompt=self.prepend_prompt)
        try:
            prompt = trusted_prompt(reference, item.prompt) if humaneval and self.prepend_prompt and code else ""
            request = build_request(code, tests, entry_point=reference.get("entry_point") or "", language=language,
                                    style=reference.get("style"), limits=self.limits, request_id=request_id,
                                    prompt=prompt, compare=reference.get("compare") or self.compare)
            request = with_files(request, reference)
            if not self.endpoint:  # the local executor's own checks (a remote server checks its own)
                validate_request(request, self._language_table)
        except UnsupportedLanguage:
            raise
        except InvalidExecutionRequest as exc:
            raise InvalidReference(f"task {self.name!r}: {exc}") from None
        return request if code else None

    # --- scoring --------------------------------------------------------------------------

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return self.score_batch([TaskInput(completion, reference, prompt)])[0]

    def score_batch(self, items: Sequence[TaskInput]) -> list[TaskOutcome]:
        """Runs the batch's programs concurrently; raises SandboxFailure when the sandbox failed on any."""
        outcomes: list[TaskOutcome | None] = [None] * len(items)
        requests: list[ExecutionRequest] = []
        for i, item in enumerate(items):
            try:
                request = self.build_request(item, str(i))
            except InvalidReference as exc:
                outcomes[i] = TaskOutcome(0.0, RolloutStatus.INVALID_REFERENCE, detail=str(exc))
                continue
            except UnsupportedLanguage as exc:
                outcomes[i] = unsupported_language(exc)
                continue
            if request is None:
                outcomes[i] = TaskOutcome.no_answer("the completion holds no code")
            else:
                requests.append(request)
        failed: list[str] = []
        for request, result in zip(requests, self._run(requests)):
            i = int(request.id)
            expected = parse_files(items[i].reference.get("expected_files"), "expected_files")
            if isinstance(result, UnsupportedLanguage):
                outcomes[i] = unsupported_language(result)
            elif isinstance(result, InvalidExecutionRequest):
                outcomes[i] = TaskOutcome(0.0, RolloutStatus.INVALID_REFERENCE, detail=f"task {self.name!r}: {result}")
            elif not result.verdict.is_verdict_on_code:
                failed.append(result.error or "no detail")
            else:
                outcomes[i] = self.outcome(result, expected)
        if failed:
            where = "" if self.endpoint else f" ({self.backend} backend)"
            raise SandboxFailure(f"sandbox error on {len(failed)} of {len(requests)} programs{where}: {failed[0]}")
        return [o for o in outcomes if o is not None]

    def outcome(self, result: ExecutionResult, expected_files: Mapping[str, bytes] | None = None) -> TaskOutcome:
        """A verdict on the code as a scored outcome (see the module doc); ``expected_files`` count as one
        more test, passed when the program wrote every one with exactly that content."""
        passed, total, explanation = result.tests_passed, result.tests_total, explain_execution(result)
        verdict = result.verdict.value
        if expected_files:
            wrong = wrong_files(result, expected_files)
            passed, total = passed + (not wrong), total + 1
            if wrong and result.passed:
                verdict = Verdict.WRONG_ANSWER.value
                explanation = cap(f"wrong_answer: {passed}/{total} tests passed; expected files not written as "
                                  f"expected: {', '.join(wrong)}")
        fraction = passed / total if total else 0.0
        score = fraction if self.reward == "fraction" else (1.0 if passed == total and result.passed else 0.0)
        return TaskOutcome(score=score, components={"code": score, "pass_fraction": fraction},
                           extracted=f"{verdict} ({passed}/{total} tests)",
                           detail=result.error[:500], explanation=explanation)

    def explain(self, item: TaskInput, outcome: TaskOutcome) -> dict[str, Any]:
        """The program as run and every test's result (one more sandbox run)."""
        try:
            request = self.build_request(item, "explain")
        except (InvalidReference, UnsupportedLanguage) as exc:
            return {"request": str(exc)}
        if request is None:
            return {"code": ""}
        result = self._run([request])[0]
        if isinstance(result, InvalidExecutionRequest):
            return {"code": request.code, "request": str(result)}
        return {"language": request.language, "code": request.code, **result.summary(),
                "tests": [{"index": t.index, "outcome": t.outcome.value,
                           "verdict": t.verdict.value if t.verdict else "", "detail": t.detail,
                           "stdout_head": t.stdout_head, "stderr_head": t.stderr_head}
                          for t in result.tests],
                **({"compile_stderr": result.compile.stderr} if result.compile and result.compile.stderr else {})}

    def _run(self, requests: Sequence[ExecutionRequest]) -> list[ExecutionResult | InvalidExecutionRequest]:
        """One result per request; a request the executor refuses gets its InvalidExecutionRequest instead."""
        if not requests:
            return []
        executor = self._get_executor()
        cancel = current_cancel_token()
        # A local sandbox runs each program under the call's token (a cancelled call kills them); a remote one
        # gets the whole batch in one call, which its own deadline bounds.
        cancellable = cancel is not None and not self.endpoint
        if not cancellable:
            try:
                return list(executor.execute_batch(requests))
            except InvalidExecutionRequest:
                pass  # one of them is unusable (refused before anything ran): find it, run the others

        def one(request: ExecutionRequest) -> ExecutionResult | InvalidExecutionRequest:
            try:
                # in the server, the call's token: a cancelled or expired call kills its running programs
                return executor.execute(request, cancel=cancel) if cancellable else executor.execute(request)
            except InvalidExecutionRequest as exc:
                return exc

        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="code-task") as pool:
            return list(pool.map(one, requests))

    # --- the executor, one per process ------------------------------------------------------

    def _executor_key(self) -> tuple:
        return ("remote", self.endpoint) if self.endpoint else (self.backend, self.concurrency, self.languages)

    def executor(self) -> Executor:
        """This process's executor for these settings (see ``_get_executor``)."""
        return self._get_executor()

    def language_table(self) -> dict:
        """The languages this task's local executor runs (the built-in table plus ``languages``), with
        the ones whose toolchain is missing here marked unavailable (``LanguageTable.unavailable``)."""
        return self._language_table if self._language_table else load_languages(None)

    def _get_executor(self) -> Executor:
        """This process's executor: created on first use (in the worker, after the fork), closed at exit.

        Variants of the task with the same sandbox settings share it, so their slots are not multiplied.
        """
        key = self._executor_key()
        with _EXECUTORS_LOCK:
            entry = _EXECUTORS.get(key)
            if entry is None or entry[0] != os.getpid():  # one inherited through a fork is the parent's
                executor = self._create_executor()
                close = _close_once(executor)
                atexit.register(close)  # a plain process
                multiprocessing.util.Finalize(None, close, exitpriority=10)  # a multiprocessing worker
                entry = _EXECUTORS[key] = (os.getpid(), executor, close)
            return entry[1]

    def _create_executor(self) -> Executor:
        if self.endpoint:
            return create_remote_executor(self.endpoint, call_timeout_s=max(5.0, self.time_limit_s - 5.0))
        try:
            return create_executor(self.backend, concurrency=self.concurrency, languages=self._language_table)
        except (OSError, RuntimeError) as exc:
            raise SandboxFailure(f"could not start the {self.backend} sandbox: {exc}") from exc

    def close(self) -> None:
        """Closes this process's executor for these settings (tests; workers close theirs at exit)."""
        with _EXECUTORS_LOCK:
            entry = _EXECUTORS.pop(self._executor_key(), None)
        if entry is not None and entry[0] == os.getpid():
            entry[2]()


# (settings) -> (pid, executor, close): the executors of this process, created on first use.
_EXECUTORS: dict[tuple, tuple[int, Executor, Callable[[], None]]] = {}
_EXECUTORS_LOCK = threading.Lock()


def _close_once(executor: Executor) -> Callable[[], None]:
    done = threading.Event()

    def close() -> None:
        if not done.is_set():
            done.set()
            executor.close()

    return close

