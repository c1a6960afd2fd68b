"""SandboxFusion's own HTTP API at the root, run on our sandbox: ``POST /run_code``, ``GET /v1/ping``.

verl (``reward_model.sandbox_fusion.url``: ``http://HOST:PORT/run_code``) and other SandboxFusion
clients work unchanged. Each call is one ``SandboxService.Execute`` through the door's sandbox
client (the core's): the program as one STDIO case with the call's stdin, whose stdout, stderr, exit
status and timings come back in SandboxFusion's ``RunCodeResponse``.

Read from SandboxFusion's source (github.com/bytedance/SandboxFusion):
``sandbox/server/sandbox_api.py`` (``RunCodeRequest``, ``RunCodeResponse``, ``RunStatus``,
``parse_run_status``, the catch-all that turns any failure into ``SandboxError``),
``sandbox/runners/types.py`` (``CommandRunStatus``, ``CommandRunResult``, ``Language``,
``compile_languages``), ``sandbox/runners/base.py`` (a timed-out command has no return
code; output is captured up to 1 MiB), ``sandbox/runners/major.py`` (python has no compile
step, cpp is ``g++ -std=c++17``), ``sandbox/server/server.py`` (``GET /v1/ping`` -> ``"pong"``);
and verl's client, ``verl/utils/reward_score/sandbox_fusion/utils.py`` (``call_sandbox_api``
posts one case per call and retries only on 504; ``_process_single_case`` reads ``status``,
``compile_result.{status, return_code, stderr, execution_time}`` and
``run_result.{status, return_code, stdout, stderr, execution_time}``).

Mapping of our verdicts (``reward_core.sandbox_contract.Verdict``):

* SANDBOX_ERROR (and any call our sandbox refuses, e.g. a language it does not have or a
  limit above its caps) -> ``SandboxError`` with the reason in ``message``: never ``Failed``.
* COMPILE_ERROR -> ``Failed``; compiled languages get ``compile_result`` ``Finished`` with a
  non-zero code (``TimeLimitExceeded`` when compilation timed out) and no ``run_result``;
  Python (no compile step in SandboxFusion) gets ``run_result`` ``Finished``, code 1, like
  CPython on a SyntaxError.
* TIMEOUT -> ``Failed``, ``run_result`` ``TimeLimitExceeded`` with no return code.
* RUNTIME_ERROR / MEMORY_LIMIT / OUTPUT_LIMIT -> ``Failed``, ``run_result`` ``Finished`` with
  the exit status (a signal as ``-N``, as asyncio reports it; a program our limits stopped
  without a status of its own as ``-9``: we stop programs with SIGKILL).
* ACCEPTED / WRONG_ANSWER (the case's expected stdout is a placeholder: the caller compares)
  -> ``Success``, ``run_result`` ``Finished``, code 0, the program's stdout.

Differences, by necessity: ``files`` / ``fetch_files`` / ``args`` are not supported (our
contract carries no files in or out): a call using them gets ``SandboxError``.
``memory_limit_MB`` -1 (none) takes the sandbox's default limit. Output beyond 1 MiB is an
OUTPUT_LIMIT (SandboxFusion truncates). A compile step's own duration is ``wall_s`` minus the
case's; its stdout and exit code are not reported by our contract (``""`` and 1). Body errors
are FastAPI's 422 ``{"detail": [...]}``; an overloaded, draining or too-slow upstream is
429/503/504 (``Retry-After``), which gateways and verl's 504 retry understand. ``POST /submit``
(SandboxFusion's dataset evaluation) is not served.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from reward_core.sandbox_contract import (
    CaseOutcome,
    ExecutionRequest,
    ExecutionResult,
    InvalidExecutionRequest,
    LimitHit,
    Limits,
    TestCase,
    TestStyle,
    Verdict,
)
from reward_service.http_door.door import FrontDoor
from reward_service.http_door.errors import error_response

#: SandboxFusion's ``Language`` literal (sandbox/runners/types.py), in its order.
LANGUAGES = ("python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash", "typescript", "sql",
             "rust", "cuda", "lua", "R", "perl", "D_ut", "ruby", "scala", "julia", "pytest", "junit",
             "kotlin_script", "jest", "verilog", "python_gpu", "lean", "swift", "racket")
#: Their languages with a compile step (``compile_languages``): these answer a ``compile_result``.
COMPILED = frozenset({"cpp", "go", "java"})
#: Their name -> ours. Any other of their names is sent as it is (a sandbox may configure it).
OUR_LANGUAGE = {"python": "python", "cpp": "cpp"}
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
        if self.files or self.fetch_files or self.args:
            return ("this sandbox does not support 'files', 'fetch_files' or 'args' (its contract carries no "
                    "files in or out of a run)")
        if not (self.run_timeout > 0 and self.compile_timeout > 0):
            return "run_timeout and compile_timeout must be > 0 on this sandbox"
        return ""


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
    """One STDIO case with the call's stdin; its expected stdout is a placeholder (the caller compares).

    The limits the call does not set (a ``memory_limit_MB`` of -1 or 0 among them) are the
    contract's defaults, which are also what the sandbox gives a limit left unset.
    """
    memory_mb = call.memory_limit_MB if call.memory_limit_MB > 0 else Limits().memory_mb
    limits = Limits(wall_s=call.run_timeout, cpu_s=call.run_timeout, compile_wall_s=call.compile_timeout,
                    memory_mb=memory_mb, output_bytes=OUTPUT_BYTES)
    return ExecutionRequest(code=call.code, language=OUR_LANGUAGE.get(call.language, call.language),
                            style=TestStyle.STDIO, limits=limits,
                            cases=(TestCase(stdin=call.stdin or "", expected_stdout=""),))


# --- the response ----------------------------------------------------------------------------------


def _command(status: str, seconds: float | None, code: int | None, stdout: str, stderr: str) -> dict:
    """A ``CommandRunResult``."""
    return {"status": status, "execution_time": seconds, "return_code": code, "stdout": stdout, "stderr": stderr}


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
             run_result: dict | None = None) -> dict:
    """A ``RunCodeResponse``, every field present as FastAPI serializes it."""
    return {"status": status, "message": message, "compile_result": compile_result, "run_result": run_result,
            "executor_pod_name": None, "files": {}}


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


def run_code_response(result: ExecutionResult, language: str) -> dict:
    """Our verdict on one run as SandboxFusion's answer (see the module docstring for the mapping)."""
    if result.verdict is Verdict.SANDBOX_ERROR:
        return sandbox_error(result.error or "the sandbox failed to run the program")
    case = result.tests[0] if result.tests else None
    run_s = case.wall_s if case is not None else result.wall_s
    compile_result = None
    if language in COMPILED:
        compile_s = max(result.wall_s - run_s, 0.0) if case is not None else result.wall_s
        compile_result = _command("Finished", round(compile_s, 6), 0, "", "")
    if result.verdict is Verdict.COMPILE_ERROR:
        if compile_result is None:  # no compile step in SandboxFusion: the interpreter exits 1
            return response("Failed", run_result=_command("Finished", result.wall_s, 1, result.stdout,
                                                          result.stderr or result.error))
        timed_out = result.limit_hit in (LimitHit.WALL_TIME, LimitHit.CPU_TIME)
        compile_result = _command("TimeLimitExceeded" if timed_out else "Finished", result.wall_s,
                                  None if timed_out else 1, "", result.error or result.stderr)
        return response(_run_status(compile_result, None), compile_result=compile_result)
    if result.verdict is Verdict.TIMEOUT or (case is not None and case.outcome is CaseOutcome.TIMEOUT):
        run_result = _command("TimeLimitExceeded", run_s, None, result.stdout, result.stderr)
    else:
        code = _exit_status(result)
        run_result = _command("Finished", run_s, code, result.stdout, result.stderr)
    return response(_run_status(compile_result, run_result), compile_result=compile_result, run_result=run_result)


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
        except grpc.aio.AioRpcError as exc:
            details = exc.details() or exc.code().name
            if exc.code() in RETRY_LATER:
                return error_response(exc.code(), f"sandbox {door.up.sandbox_address}: {details}")
            return JSONResponse(sandbox_error(f"the sandbox refused the run ({exc.code().name}): {details}"))
        except InvalidExecutionRequest as exc:  # a limit the contract refuses (checked by unsupported() too)
            return JSONResponse(sandbox_error(f"the sandbox refused the run: {exc}"))
        return JSONResponse(run_code_response(result, call.language))

    async def ping(_: Request) -> Response:
        return JSONResponse("pong")

    return [Route("/run_code", run_code, methods=["POST"]), Route("/v1/ping", ping, methods=["GET"])]
