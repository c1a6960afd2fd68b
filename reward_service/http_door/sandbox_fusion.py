"""SandboxFusion's own HTTP API at the root, run on our sandbox: ``POST /run_code``, ``GET /v1/ping``;
and ours beside it, ``GET /v1/languages`` (the sandbox's ListLanguages as JSON).

verl (``reward_model.sandbox_fusion.url``: ``http://HOST:PORT/run_code``) and other SandboxFusion
clients work unchanged. Each call is one ``SandboxService.Execute`` through the door's sandbox
client (the core's): the program as one STDIO case with the call's stdin, whose stdout, stderr, exit
status and timings come back in SandboxFusion's ``RunCodeResponse``.

Read from SandboxFusion's source (github.com/bytedance/SandboxFusion):
``sandbox/server/sandbox_api.py`` (``RunCodeRequest``, ``RunCodeResponse``, ``RunStatus``,
``parse_run_status``, the catch-all that turns any failure into ``SandboxError``),
``sandbox/runners/types.py`` (``CommandRunStatus``, ``CommandRunResult``, ``Language``),
``sandbox/runners/base.py`` (``restore_files``: each ``files`` entry base64-decoded into the
work dir, parent directories made, a null or non-string entry skipped; ``fetch_files`` read back
as base64 after the run, a name that is not a file left out; a timed-out command has no return
code but keeps its partial stdout/stderr; output captured up to 1 MiB), ``sandbox/runners/major.py``
and ``minor.py`` (one runner per language: which have a compile step, ``args`` appended to
pytest's command, PHP's ``<?php`` tag added when missing), ``sandbox/server/server.py``
(``GET /v1/ping`` -> ``"pong"``); and verl's client, ``verl/utils/reward_score/sandbox_fusion/
utils.py`` (``call_sandbox_api`` posts one case per call and retries only on 504;
``_process_single_case`` reads ``status``, ``compile_result.{status, return_code, stderr,
execution_time}`` and ``run_result.{status, return_code, stdout, stderr, execution_time}``, and
ignores any other key).

Languages: every name of their ``Language`` literal is a language (or an alias) of our table,
``sandbox/languages.toml``; it is sent as it is. One whose toolchain is not installed on the
sandbox answers ``SandboxError`` with the sandbox's ``UNSUPPORTED_LANGUAGE: ...`` message (what
to install). A language with a compile step in our table answers ``compile_result``: the
compiler's real return code, stdout, stderr and duration.

Mapping of our verdicts (``reward_core.sandbox_contract.Verdict``):

* SANDBOX_ERROR (and any call our sandbox refuses, e.g. a language it cannot run or a
  limit above its caps) -> ``SandboxError`` with the reason in ``message``: never ``Failed``.
* COMPILE_ERROR -> ``Failed``; compiled languages get ``compile_result`` ``Finished`` with the
  compiler's return code (``TimeLimitExceeded`` and no code when compilation timed out) and no
  ``run_result``; Python (no compile step) gets ``run_result`` ``Finished``, code 1 and the
  SyntaxError's traceback, like CPython.
* TIMEOUT -> ``Failed``, ``run_result`` ``TimeLimitExceeded`` with no return code and the
  output the program wrote before it was stopped.
* RUNTIME_ERROR / MEMORY_LIMIT / OUTPUT_LIMIT -> ``Failed``, ``run_result`` ``Finished`` with
  the exit status (a signal as ``-N``, as asyncio reports it; a program our limits stopped
  without a status of its own as ``-9``: we stop programs with SIGKILL).
* ACCEPTED / WRONG_ANSWER (the case's expected stdout is a placeholder: the caller compares)
  -> ``Success``, ``run_result`` ``Finished``, code 0, the program's stdout.

Beyond SandboxFusion (its open issue #43 asks for a memory-limit status): a ``CommandRunResult``
stopped by a limit that SandboxFusion has no status for carries one more key,
``"limit_exceeded": "MemoryLimitExceeded"`` (or ``"OutputLimitExceeded"``); its ``status``
stays ``Finished`` with the kill's return code, so verl and every other client read it exactly as
before (verl: a runtime error), and the key is absent from every other response.

Differences, by necessity: ``files`` names must be relative paths inside the work dir (no
``..``, no absolute path: SandboxFusion would write outside its temporary directory), and so must
``fetch_files`` names; another name is a ``SandboxError``. Each file is written by the sandboxed
program's own user before the compile step and the run; a file larger than 16 MiB raises the run's
file size limit to fit (the sandbox's caps apply). Fetched files are capped (each at the file size
limit, 32 MiB together); a bigger one is left out like a missing one. ``args`` are appended to the
run command of every language (SandboxFusion uses them for ``pytest`` only). ``memory_limit_MB``
-1 (none) takes the sandbox's default limit. Output beyond 1 MiB is an OUTPUT_LIMIT
(SandboxFusion truncates). Body errors are FastAPI's 422 ``{"detail": [...]}``; an overloaded,
draining or too-slow upstream is 429/503/504 (``Retry-After``), which gateways and verl's 504
retry understand. ``POST /submit`` (SandboxFusion's dataset evaluation) and ``/run_jupyter`` are
not served.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import asdict, dataclass
from typing import Any

import grpc
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from reward_core.sandbox_contract import (
    CaseOutcome,
    CompileResult,
    ExecutionRequest,
    ExecutionResult,
    InvalidExecutionRequest,
    LimitHit,
    Limits,
    TestCase,
    TestStyle,
    UnsupportedLanguage,
    Verdict,
)
from reward_service.http_door.door import FrontDoor
from reward_service.http_door.errors import error_response

#: SandboxFusion's ``Language`` literal (sandbox/runners/types.py), in its order.
LANGUAGES = ("python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash", "typescript", "sql",
             "rust", "cuda", "lua", "R", "perl", "D_ut", "ruby", "scala", "julia", "pytest", "junit",
             "kotlin_script", "jest", "verilog", "python_gpu", "lean", "swift", "racket")
#: Languages SandboxFusion runs without a compile step, although ours has one: Python on our warm interpreter
#: (its parse), kotlin_script compiled once per submission (SandboxFusion runs the script). Their compile error is
#: the interpreter's exit 1 in a ``run_result``, not a ``compile_result``.
NO_COMPILE_STEP = frozenset({"python", "python_gpu", "kotlin_script"})
#: A limit SandboxFusion has no status for -> the ``limit_exceeded`` key of the command it stopped (issue #43).
LIMIT_EXCEEDED = {LimitHit.MEMORY: "MemoryLimitExceeded", LimitHit.OUTPUT: "OutputLimitExceeded",
                  LimitHit.FILE_SIZE: "OutputLimitExceeded"}
_MB = 1 << 20
#: Output captured per stream: SandboxFusion's ``_MAX_CAPTURED_OUTPUT_BYTES`` (our default cap).
OUTPUT_BYTES = 1 << 20
#: Upstream statuses answered as HTTP statuses (retry later), not as a ``SandboxError`` body.
RETRY_LATER = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.DEADLINE_EXCEEDED)
#: A program stopped by one of our limits with no exit status of its own was SIGKILLed.
KILLED = -9


@dataclass(frozen=True)
class RunCode:
    """A valid ``RunCodeRequest`` (defaults as in sandbox_api.py)."""

    code: str
    language: str
    compile_timeout: float = 10.0
    run_timeout: float = 10.0
    memory_limit_MB: int = -1
    stdin: str | None = None
    files: dict[str, str | None] | None = None
    fetch_files: tuple[str, ...] = ()
    args: tuple[str, ...] = ()

    def unsupported(self) -> str:
        """Why our sandbox cannot run this as asked ("" when it can)."""
        if not (self.run_timeout > 0 and self.compile_timeout > 0):
            return "run_timeout and compile_timeout must be > 0 on this sandbox"
        return ""

    def decoded_files(self) -> dict[str, bytes]:
        """``files`` as restore_files writes them: base64-decoded, a null (non-string) entry skipped.

        Raises InvalidExecutionRequest for content that is not base64."""
        out = {}
        for name, content in (self.files or {}).items():
            if not isinstance(content, str) or "IGNORE_THIS_FILE" in name:   # restore_files skips both
                continue
            try:
                out[name] = base64.b64decode(content)
            except (binascii.Error, ValueError) as exc:
                raise InvalidExecutionRequest(f"file {name!r} is not base64: {exc}") from None
        return out


# --- the request body (FastAPI/pydantic's lax validation and its 422 shape) ----------------------


def _error(kind: str, loc: tuple, msg: str, value: Any, ctx: dict | None = None) -> dict:
    out = {"type": kind, "loc": ["body", *loc], "msg": msg, "input": value}
    return {**out, "ctx": ctx} if ctx else out


def _number(value: Any, loc: tuple, integer: bool, errors: list[dict]) -> Any:
    if isinstance(value, str):
        try:
            value = float(value.strip()) if not integer else int(value.strip())
        except ValueError:
            what = "an integer, unable to parse string as an integer" if integer else \
                "a number, unable to parse string as a number"
            errors.append(_error("int_parsing" if integer else "float_parsing", loc, f"Input should be a valid {what}",
                                 value))
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        errors.append(_error("int_type" if integer else "float_type", loc,
                             f"Input should be a valid {'integer' if integer else 'number'}", value))
        return None
    if integer and isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            errors.append(_error("int_from_float", loc,
                                 "Input should be a valid integer, got a number with a fractional part", value))
            return None
        return int(value)
    return value if integer else float(value)


def _string(value: Any, loc: tuple, errors: list[dict]) -> str | None:
    if not isinstance(value, str):
        errors.append(_error("string_type", loc, "Input should be a valid string", value))
        return None
    return value


def _literal_text() -> str:
    quoted = [f"'{name}'" for name in LANGUAGES]
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _containers(body: dict, errors: list[dict]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    files = body.get("files", {})
    if not isinstance(files, dict):
        errors.append(_error("dict_type", ("files",), "Input should be a valid dictionary", files))
    else:
        out["files"] = {k: (None if v is None else _string(v, ("files", k), errors)) for k, v in files.items()}
    for name in ("fetch_files", "args"):
        items = body.get(name, [])
        if not isinstance(items, list):
            errors.append(_error("list_type", (name,), "Input should be a valid list", items))
        else:
            out[name] = tuple(_string(v, (name, i), errors) or "" for i, v in enumerate(items))
    return out


def parse_run_code(raw: bytes) -> RunCode | list[dict]:
    """The request, or the 422 ``detail`` list FastAPI would answer for this body."""
    if not raw.strip():
        return [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}]
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        pos = getattr(exc, "pos", getattr(exc, "start", 0))
        return [_error("json_invalid", (pos,), "JSON decode error", {}, {"error": getattr(exc, "msg", str(exc))})]
    if not isinstance(body, dict):
        return [{"type": "model_attributes_type", "loc": ["body"],
                 "msg": "Input should be a valid dictionary or object to extract fields from", "input": body}]
    errors: list[dict] = []
    fields: dict[str, Any] = {}
    for name in ("code", "language"):
        if name not in body:
            errors.append(_error("missing", (name,), "Field required", body))
    if "code" in body:
        fields["code"] = _string(body["code"], ("code",), errors)
    if "language" in body:
        if body["language"] in LANGUAGES:
            fields["language"] = body["language"]
        else:
            text = _literal_text()
            errors.append(_error("literal_error", ("language",), f"Input should be {text}", body["language"],
                                 {"expected": text}))
    for name, integer in (("compile_timeout", False), ("run_timeout", False), ("memory_limit_MB", True)):
        if name in body:
            fields[name] = _number(body[name], (name,), integer, errors)
    if body.get("stdin") is not None:
        fields["stdin"] = _string(body["stdin"], ("stdin",), errors)
    fields.update(_containers(body, errors))
    return errors if errors else RunCode(**fields)


def execution_request(call: RunCode) -> ExecutionRequest:
    """One STDIO case with the call's stdin, files, fetch_files and args; its expected stdout is a
    placeholder (the caller compares).

    The limits the call does not set (a ``memory_limit_MB`` of -1 or 0 among them) are the
    contract's defaults, which are also what the sandbox gives a limit left unset; the file size
    and scratch limits grow to fit the call's files. Raises InvalidExecutionRequest (a file that
    is not base64, a name outside the work dir).
    """
    defaults = Limits()
    files = call.decoded_files()
    largest_mb = -(-max((len(c) for c in files.values()), default=0) // _MB)
    total_mb = -(-sum(len(c) for c in files.values()) // _MB)
    memory_mb = call.memory_limit_MB if call.memory_limit_MB > 0 else defaults.memory_mb
    limits = Limits(wall_s=call.run_timeout, cpu_s=call.run_timeout, compile_wall_s=call.compile_timeout,
                    memory_mb=memory_mb, output_bytes=OUTPUT_BYTES,
                    file_size_mb=max(defaults.file_size_mb, largest_mb),
                    scratch_mb=max(defaults.scratch_mb, total_mb + defaults.scratch_mb))
    code = call.code
    if call.language == "php" and not code.lstrip().startswith("<?php"):   # SandboxFusion's ensure_php_tag
        code = "<?php\n" + code.lstrip()
    return ExecutionRequest(code=code, language=call.language, style=TestStyle.STDIO, limits=limits,
                            cases=(TestCase(stdin=call.stdin or "", expected_stdout=""),),
                            files=files, fetch_files=call.fetch_files, args=call.args)


# --- the response ----------------------------------------------------------------------------------


def _command(status: str, seconds: float | None, code: int | None, stdout: str, stderr: str,
             limit: str = "") -> dict:
    """A ``CommandRunResult`` (+ ``limit_exceeded`` when a limit without a status of its own stopped it)."""
    out = {"status": status, "execution_time": seconds, "return_code": code, "stdout": stdout, "stderr": stderr}
    return {**out, "limit_exceeded": limit} if limit else out


def _run_status(compile_result: dict | None, run_result: dict | None) -> str:
    """SandboxFusion's ``parse_run_status`` (sandbox_api.py), on our commands."""
    commands = [c for c in (compile_result, run_result) if c is not None]
    if any(c["status"] == "Error" for c in commands):
        return "SandboxError"
    if any(c["status"] == "TimeLimitExceeded" for c in commands):
        return "Failed"
    if any(c["return_code"] not in (None, 0) for c in commands):
        return "Failed"
    return "Success"


def response(status: str, message: str = "", compile_result: dict | None = None,
             run_result: dict | None = None, files: dict[str, str] | None = None) -> dict:
    """A ``RunCodeResponse``, every field present as FastAPI serializes it."""
    return {"status": status, "message": message, "compile_result": compile_result, "run_result": run_result,
            "executor_pod_name": None, "files": files or {}}


def sandbox_error(message: str) -> dict:
    return response("SandboxError", message)


def _exit_status(result: ExecutionResult) -> int:
    """The run's return code as asyncio reports it (a signal as -N); never 0 unless the program ran clean."""
    clean = result.verdict in (Verdict.ACCEPTED, Verdict.WRONG_ANSWER)  # exited 0; only its output is judged
    if result.exit_code is not None:
        code = result.exit_code
    elif result.signal:
        code = -result.signal
    else:
        code = 0 if clean else KILLED
    return KILLED if code == 0 and not clean else code  # a limit stopped it after a clean status


def _compile_command(step: CompileResult | None, fallback_s: float, failed: ExecutionResult | None) -> dict:
    """The compile step's ``CommandRunResult``: the compiler's own code, output and time."""
    if step is None:        # a sandbox that reports no compile step: its time is what the case did not use
        if failed is None:
            return _command("Finished", round(fallback_s, 6), 0, "", "")
        timed_out = failed.limit_hit in (LimitHit.WALL_TIME, LimitHit.CPU_TIME)
        return _command("TimeLimitExceeded" if timed_out else "Finished", failed.wall_s, None if timed_out else 1,
                        "", failed.error or failed.stderr)
    if step.timed_out:
        return _command("TimeLimitExceeded", step.wall_s, None, step.stdout, step.stderr)
    code = step.exit_code if step.exit_code is not None else -(step.signal or -KILLED)
    if failed is not None and code == 0:     # stopped by a limit after a clean status (its output, say)
        code = KILLED
    limit = LIMIT_EXCEEDED.get(failed.limit_hit, "") if failed is not None else ""
    return _command("Finished", step.wall_s, code, step.stdout, step.stderr, limit)


def has_compile_step(result: ExecutionResult, language: str) -> bool:
    """Whether the run had a compile step (the sandbox reports one: the language's spec has one), so the
    answer carries a ``compile_result``. Read from the result: the door holds no language table."""
    return result.compile is not None and language not in NO_COMPILE_STEP


def run_code_response(result: ExecutionResult, language: str) -> dict:
    """Our verdict on one run as SandboxFusion's answer (see the module docstring for the mapping)."""
    if result.verdict is Verdict.SANDBOX_ERROR:
        return sandbox_error(result.error or "the sandbox failed to run the program")
    files = {name: base64.b64encode(content).decode("ascii") for name, content in result.files.items()}
    case = result.tests[0] if result.tests else None
    run_s = case.wall_s if case is not None else result.wall_s
    compile_error = result if result.verdict is Verdict.COMPILE_ERROR else None
    if has_compile_step(result, language):
        compile_result = _compile_command(result.compile, max(result.wall_s - run_s, 0.0), compile_error)
        if compile_error is not None:
            return response(_run_status(compile_result, None), compile_result=compile_result, files=files)
    elif compile_error is not None:      # no compile step (Python's SyntaxError): the interpreter exits 1
        step = result.compile
        stderr = (step.stderr if step is not None else "") or result.stderr or result.error
        return response("Failed", run_result=_command("Finished", result.wall_s, 1, result.stdout, stderr),
                        files=files)
    else:
        compile_result = None
    if result.verdict is Verdict.TIMEOUT or (case is not None and case.outcome is CaseOutcome.TIMEOUT):
        run_result = _command("TimeLimitExceeded", run_s, None, result.stdout, result.stderr)
    else:
        limited = result.verdict in (Verdict.MEMORY_LIMIT, Verdict.OUTPUT_LIMIT)
        run_result = _command("Finished", run_s, _exit_status(result), result.stdout, result.stderr,
                              LIMIT_EXCEEDED.get(result.limit_hit, "") if limited else "")
    return response(_run_status(compile_result, run_result), compile_result=compile_result, run_result=run_result,
                    files=files)


def refused(details: str, code_name: str) -> dict:
    """A call our sandbox refused, as SandboxFusion's ``SandboxError``: a language it cannot run keeps the
    sandbox's own ``UNSUPPORTED_LANGUAGE: ...`` message (what to install)."""
    at = details.find(UnsupportedLanguage.KIND + ":")
    if at >= 0:
        return sandbox_error(details[at:])
    return sandbox_error(f"the sandbox refused the run ({code_name}): {details}")


# --- routes ----------------------------------------------------------------------------------------


def routes(door: FrontDoor) -> list[BaseRoute]:
    async def run_code(request: Request) -> Response:
        call = parse_run_code(await request.body())
        if isinstance(call, list):
            return JSONResponse({"detail": call}, status_code=422)
        problem = call.unsupported()
        if problem:
            return JSONResponse(sandbox_error(problem))
        try:
            result = await door.up.sandbox.execute(execution_request(call))
        except grpc.RpcError as exc:  # gRPC's own or a client's typed error: same code() and details()
            details = exc.details() or exc.code().name
            if exc.code() in RETRY_LATER:
                return error_response(exc.code(), f"sandbox {door.up.sandbox_address}: {details}")
            return JSONResponse(refused(details, exc.code().name))
        except InvalidExecutionRequest as exc:  # what the contract refuses (a file name, bad base64, a limit)
            return JSONResponse(refused(str(exc), "INVALID_ARGUMENT"))
        return JSONResponse(run_code_response(result, call.language))

    async def ping(_: Request) -> Response:
        return JSONResponse("pong")

    async def languages(_: Request) -> Response:
        """Ours, next to SandboxFusion's: the sandbox's ListLanguages as JSON (what it can run, versions)."""
        try:
            infos = await door.up.sandbox.list_languages()
        except grpc.RpcError as exc:  # gRPC's own or a client's typed error: same code() and details()
            return error_response(exc.code(), f"sandbox {door.up.sandbox_address}: {exc.details() or exc.code().name}")
        return JSONResponse({"languages": [asdict(info) for info in infos]})

    return [Route("/run_code", run_code, methods=["POST"]), Route("/v1/ping", ping, methods=["GET"]),
            Route("/v1/languages", languages, methods=["GET"])]
