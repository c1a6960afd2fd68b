"""``python -m sandbox``: serve the sandbox over gRPC, run one program, or evaluate a JSONL file.

    python -m sandbox serve --port 50053 --workers 8                       # SandboxService (gRPC)
    python -m sandbox exec --code sol.py --tests check.py --entry-point add  # HumanEval-style check code
    python -m sandbox exec --code sol.py --tests cases.json                  # stdin/stdout or function-call cases
    python -m sandbox batch --in samples.jsonl --out results.jsonl --workers 8 --timeout 3
    python -m sandbox languages [--endpoint host:port] [--json]           # what it can run, with versions

``exec`` prints the result as JSON (``passed``, ``verdict``, ``tests_passed``,
``tests_total``, per-test detail, output, resources) and exits 0 when every test
passed, 1 when not, 2 when the input is unusable. ``batch`` writes one line out
per line in, in order (format: ``sandbox/submissions.py``), with a progress bar
on stderr. Both run an in-process executor (``--backend``), or use a running
server with ``--endpoint``. ``languages`` prints every known language: available or
not (and what to install), compiled, its set and its toolchain's version -- of this
host (``--backend process``), of the runner image (``--backend docker``) or of a server
(``--endpoint``: its ``ListLanguages``). ``serve`` flags default to ``SANDBOX_<FLAG>``
environment variables (for containers); the security flags (TLS, token, ``--insecure``, and
the client's ``--tls-ca`` etc.) to the suite-wide ``REWARD_SUITE_<FLAG>`` ones.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence

from reward_core.channel_security import add_client_security_flags, client_security_from_args
from reward_core.config_flags import add_dataclass_flags, dataclass_values
from reward_core.log_context import LOG_FORMATS, configure_logging
from reward_core.sandbox_contract import Executor, InvalidExecutionRequest, Limits, SandboxUnavailable
from reward_core.server_security import add_server_security_flags, server_security_from_args
from sandbox.languages import Language, load_languages, resolve_language
from sandbox.server import BACKENDS, SandboxServerConfig

logger = logging.getLogger(__name__)
ENV_PREFIX = "SANDBOX_"


def _add_server_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per SandboxServerConfig field, its limits' included (the suite's one builder), environment
    defaults ``SANDBOX_<FIELD>``."""
    add_dataclass_flags(parser, SandboxServerConfig, ENV_PREFIX, skip=("security",))
    add_server_security_flags(parser)


def _add_executor_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=BACKENDS, default="process", help="sandbox backend (default: process)")
    parser.add_argument("--endpoint", help="host:port of a running `python -m sandbox serve` (instead of --backend)")
    parser.add_argument("--languages", help="YAML file of extra languages (see sandbox/languages.py)")
    parser.add_argument("--timeout", type=float, default=Limits.wall_s,
                        help=f"wall and CPU seconds per program, all its tests together (default: {Limits.wall_s:g})")
    parser.add_argument("--memory-mb", type=int, default=Limits.memory_mb,
                        help=f"memory limit per program (default: {Limits.memory_mb})")
    add_client_security_flags(parser)


def _limits(args: argparse.Namespace) -> Limits:
    return Limits(wall_s=args.timeout, cpu_s=args.timeout, memory_mb=args.memory_mb)


def _executor(args: argparse.Namespace, concurrency: int, languages: dict[str, Language]) -> Executor:
    if args.endpoint:
        from reward_core.channel_config import ChannelConfig
        from reward_core.clients.sandbox import SandboxClient
        from sandbox.remote_executor import RemoteExecutor

        security = client_security_from_args(args)
        # Nothing listening is EndpointUnreachable (an OSError: exit 2) in seconds, saying why, before any
        # program is sent (the executor maps a failed call to a SANDBOX_ERROR result per program).
        with SandboxClient(args.endpoint, channel=ChannelConfig(security=security)) as probe:
            probe.check_connection()
        return RemoteExecutor(args.endpoint, security=security)
    from sandbox.factory import create_executor

    return create_executor(args.backend, concurrency=concurrency, languages=languages)


def cmd_serve(args: argparse.Namespace) -> int:
    from sandbox.server import serve

    serve(SandboxServerConfig(**dataclass_values(args, SandboxServerConfig, skip=("security",)),
                              security=server_security_from_args(args)))
    return 0


def cmd_exec(args: argparse.Namespace) -> int:
    from sandbox.submissions import build_request, read_tests_file, result_to_dict

    code = sys.stdin.read() if args.code == "-" else open(args.code, encoding="utf-8").read()
    languages = load_languages(args.languages)
    prompt = open(args.prompt, encoding="utf-8").read() if args.prompt else ""
    request = build_request(code, read_tests_file(args.tests), entry_point=args.entry_point or "",
                            language=args.lang, style=args.style, limits=_limits(args), request_id=args.code,
                            prompt=prompt)
    if not args.endpoint:
        resolve_language(request.language, languages)
    executor = _executor(args, 1, languages)
    try:
        result = executor.execute(request)
    finally:
        executor.close()
    print(json.dumps(result_to_dict(result), indent=2, ensure_ascii=False))
    return 0 if result.passed else 1


def cmd_batch(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from sandbox.submissions import count_lines, iter_lines, run_batch, summary_line

    if args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    languages = load_languages(args.languages)
    total = count_lines(args.in_path)
    executor = _executor(args, args.workers, languages)
    try:
        with open(args.in_path, encoding="utf-8", errors="replace") as src, \
                open(args.out_path, "w", encoding="utf-8") as out, \
                tqdm(total=total, unit="program", desc="executing", disable=args.quiet) as bar:
            stats = run_batch(iter_lines(src), executor, out, workers=args.workers, limits=_limits(args),
                              languages=None if args.endpoint else languages, progress=bar)
    finally:
        executor.close()
    print(summary_line(stats, args.out_path), file=sys.stderr)
    return 0


def cmd_languages(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from sandbox.language_list import executor_versions, format_table, host_versions, language_infos

    if args.endpoint:
        from reward_core.channel_config import ChannelConfig
        from reward_core.clients.sandbox import SandboxClient

        with SandboxClient(args.endpoint, timeout_s=args.timeout,
                           channel=ChannelConfig(security=client_security_from_args(args))) as client:
            infos = client.list_languages()
    else:
        languages = load_languages(args.languages)
        if args.backend == "process":   # the process backend runs the toolchains of this host
            infos = language_infos(languages, host_versions(languages))
        else:
            executor = _executor(args, 1, languages)
            try:
                infos = language_infos(getattr(executor, "languages", None) or languages,
                                       executor_versions(executor, languages))
            finally:
                executor.close()
    if args.json:
        print(json.dumps([asdict(i) for i in infos], indent=2, ensure_ascii=False))
    else:
        print(format_table(infos))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__.splitlines()[0])
    parser.add_argument("--log-level", default=os.environ.get(ENV_PREFIX + "LOG_LEVEL"),
                        help="logging level (default: INFO for serve, WARNING otherwise)")
    parser.add_argument("--log-format", choices=LOG_FORMATS, default=os.environ.get(ENV_PREFIX + "LOG_FORMAT", "text"),
                        help="text, or json: one object per line with the request id (env SANDBOX_LOG_FORMAT)")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the gRPC SandboxService")
    _add_server_flags(serve)
    serve.set_defaults(func=cmd_serve)

    exe = sub.add_parser("exec", help="run one program against its tests; print the JSON result")
    exe.add_argument("--code", required=True, help="source file of the program ('-': stdin)")
    exe.add_argument("--tests", required=True,
                     help="HumanEval-style check code (needs --entry-point), or a JSON file of cases: "
                          "[{stdin, expected_stdout}] or [{args, kwargs?, expected}]")
    exe.add_argument("--entry-point", help="the function under test (check code, function-call cases)")
    exe.add_argument("--prompt", help="the dataset's prompt (HumanEval check code only; --code still holds "
                                      "prompt + completion): the helpers it defines are used as given, so the "
                                      "completion cannot redefine one the check calls")
    exe.add_argument("--lang", default="python", help="language of --code (default: python)")
    exe.add_argument("--style", choices=("humaneval", "stdio", "function_call"),
                     help="test style, when the JSON cases' keys do not tell")
    _add_executor_flags(exe)
    exe.set_defaults(func=cmd_exec)

    batch = sub.add_parser("batch", help="evaluate a JSONL file of submissions, one result line per line")
    batch.add_argument("--in", dest="in_path", required=True,
                       help='submissions JSONL: {"id", "code", "tests", "entry_point"?, "language"?, "prompt"?} '
                            'per line')
    batch.add_argument("--out", dest="out_path", required=True,
                       help='results JSONL: {"id", "passed", "verdict", "tests_passed", "tests_total", "error"?}')
    batch.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                       help="programs run at once (default: the CPU count)")
    batch.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_executor_flags(batch)
    batch.set_defaults(func=cmd_batch)

    langs = sub.add_parser("languages", help="list the languages: available or what to install, versions")
    langs.add_argument("--backend", choices=BACKENDS, default="process",
                       help="whose toolchains: this host's (process, default) or the runner image's (docker)")
    langs.add_argument("--endpoint", help="host:port of a running `python -m sandbox serve`: its ListLanguages")
    langs.add_argument("--languages", help="YAML file of extra languages (see sandbox/languages.py)")
    langs.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for --endpoint (default: 60)")
    langs.add_argument("--json", action="store_true", help="print JSON (one object per language) instead of a table")
    add_client_security_flags(langs)
    langs.set_defaults(func=cmd_languages)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    level = args.log_level or ("INFO" if args.command == "serve" else "WARNING")
    configure_logging(level, args.log_format)
    try:
        return args.func(args)
    except (InvalidExecutionRequest, SandboxUnavailable, ValueError, OSError) as exc:
        print(f"sandbox: error: {exc}", file=sys.stderr)
        return 2
