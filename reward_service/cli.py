"""``reward-service`` / ``python -m reward_service``: run the server, or score a JSONL file.

    reward-service serve --port 50051 --workers 2 --config configs/rewards.yaml
    reward-service score --task gsm8k --in rollouts.jsonl --out scores.jsonl            # in-process
    reward-service score --in rollouts.jsonl --out scores.jsonl --endpoint localhost:50051
    reward-service serve-rm --checkpoint runs/rm/final --port 50052                   # reward model
    reward-service status --endpoint localhost:50051 --metrics-url http://localhost:9100/metrics
    reward-service serve-http --upstream localhost:50051 --port 8080   # OpenRLHF, slime, NeMo Gym, SandboxFusion
    reward-service serve-judge --model DIR --port 8000     # a local OpenAI-compatible judge endpoint (tests, benches)
    reward-service rescore --in old.jsonl --out new.jsonl --config configs/rewards.yaml  # what flipped, per task
    reward-service make-data rg:leg_counting --n 1000 --seed 0 --out prompts.jsonl   # training prompts
    reward-service inspect runs/grpo_demo          # a run's rollouts as a web page on http://127.0.0.1:8765/
    reward-service explain --task gsm8k --completion '#### 72' --reference '{"answer": "72"}'  # why this verdict

Flags default to ``REWARD_SERVICE_<FLAG>`` environment variables (for containers); the
security flags (TLS, token, ``--insecure``) to ``REWARD_SUITE_<FLAG>``, shared by every
server and client of the suite (the token itself: ``REWARD_SUITE_AUTH_TOKEN``).
``--log-format json`` (``REWARD_SERVICE_LOG_FORMAT``) logs one JSON object per line, with the
request id of the call a record was logged in.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Sequence

from tqdm import tqdm

from reward_core.channel_security import add_client_security_flags, client_security_from_args
from reward_core.clients.errors import ClientError
from reward_core.config_flags import add_dataclass_flags, dataclass_values
from reward_core.contract import Rollout
from reward_core.extras import MissingExtra, require_extra
from reward_core.log_context import LOG_FORMATS, configure_logging
from reward_core.server_security import add_server_security_flags, server_security_from_args
from reward_service.jsonl_io import JsonlError, atomic_text_file, read_rollouts, write_results
from reward_service.rm.config import RewardModelServerConfig
from reward_service.router.config import ServerConfig
from reward_service.router.rewards_config import RewardsConfig, RewardsConfigError
from reward_service.status_cli import add_status_command

logger = logging.getLogger(__name__)
ENV_PREFIX = "REWARD_SERVICE_"
SCORE_CHUNK = 256
NO_FLAGS = ("scorer.rewards", "security")  # set another way: the --config file, the security flags
SCORE_FIELDS = ("scorer.workers", "scorer.item_timeout_s", "scorer.memory_limit_mb",  # in-process scoring
                "scorer.endpoints", "scorer.reward_cache", "scorer.reward_cache_entries")


def _rewards(path: str | None) -> RewardsConfig:
    return RewardsConfig.from_yaml(path) if path else RewardsConfig()


def _server_config(args: argparse.Namespace) -> ServerConfig:
    """The ServerConfig of the ServerConfig flags this command has (the rest keep their defaults)."""
    return ServerConfig(**dataclass_values(args, ServerConfig, skip=NO_FLAGS,
                                           given={"scorer.rewards": _rewards(args.config)}))


def cmd_serve(args: argparse.Namespace) -> int:
    config = dataclasses.replace(_server_config(args), security=server_security_from_args(args))
    if config.serve_environments:  # episodes sit above the router: their package adds them to its server
        from reward_service.environments.hosting import serve
    else:
        from reward_service.router.server import serve
    from reward_service.environments.env_api import EnvironmentLoadError
    from reward_service.router.registry import TaskLoadError

    try:
        serve(config)
    except (TaskLoadError, EnvironmentLoadError) as exc:  # a plugin or rewards config that cannot load: one line
        print(f"reward-service serve: error: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_serve_http(args: argparse.Namespace) -> int:
    require_extra("http", "reward-service serve-http")
    from reward_service.http_door.server import UPSTREAM_RUNTIME_FIELDS, HttpServerConfig, serve_http

    config = HttpServerConfig(**dataclass_values(args, HttpServerConfig, skip=UPSTREAM_RUNTIME_FIELDS))
    serve_http(config, server_security_from_args(args))
    return 0


def cmd_serve_judge(args: argparse.Namespace) -> int:
    require_extra("rm", "reward-service serve-judge")
    require_extra("http", "reward-service serve-judge")
    from reward_service.judges.local_server import JudgeServerConfig, serve_judge

    key = os.environ.get(ENV_PREFIX + "JUDGE_API_KEY", "")
    if args.api_key_file:
        with open(args.api_key_file, encoding="utf-8") as f:
            key = f.read().strip()
    config = JudgeServerConfig(model=args.model, served_model_name=args.served_model_name, host=args.host,
                               port=args.port, api_key=key, default_max_tokens=args.default_max_tokens,
                               threads=args.threads, device=args.device)
    serve_judge(config, insecure=args.insecure)
    return 0


def cmd_serve_rm(args: argparse.Namespace) -> int:
    require_extra("rm", "reward-service serve-rm")
    from reward_service.rm.rm_server import serve_rm

    values = dataclass_values(args, RewardModelServerConfig, skip=("security",))
    serve_rm(RewardModelServerConfig(**values, security=server_security_from_args(args)))
    return 0


def _score_in_process(rollouts: list[Rollout], args: argparse.Namespace, bar: tqdm):
    from reward_service.router.scoring import Scorer

    config = _server_config(args).scorer
    with Scorer(config) as scorer:
        for start in range(0, len(rollouts), SCORE_CHUNK):
            chunk = rollouts[start:start + SCORE_CHUNK]
            yield from scorer.score(chunk).results
            bar.update(len(chunk))


def _score_remote(rollouts: list[Rollout], args: argparse.Namespace, bar: tqdm):
    from reward_core.channel_config import ChannelConfig
    from reward_core.clients import RewardClient

    channel = ChannelConfig(security=client_security_from_args(args))
    with RewardClient(args.endpoint, timeout_s=args.call_timeout, channel=channel) as client:
        for start in range(0, len(rollouts), SCORE_CHUNK):
            chunk = rollouts[start:start + SCORE_CHUNK]
            yield from client.score(chunk)
            bar.update(len(chunk))


def cmd_score(args: argparse.Namespace) -> int:
    rollouts = read_rollouts(args.in_path, default_task=args.task or "")
    counts: collections.Counter[str] = collections.Counter()
    total = 0.0

    def tally(results):
        nonlocal total
        for r in results:
            counts[r.status.name] += 1
            total += r.score if r.scored else 0.0
            yield r

    with tqdm(total=len(rollouts), unit="rollout", desc="scoring", disable=args.quiet) as bar, \
            atomic_text_file(args.out_path) as out:
        source = _score_remote if args.endpoint else _score_in_process
        written = write_results(out, tally(source(rollouts, args, bar)), rollouts if args.keep_inputs else None)
    scored = counts["OK"] + counts["NO_ANSWER"]
    print(f"scored {written} rollouts -> {args.out_path}; mean reward {total / max(scored, 1):.4f} "
          f"over {scored} scored; statuses {dict(sorted(counts.items()))}", file=sys.stderr)
    return 0


def _text_arg(value: str, flag: str) -> str:
    """A text flag's value, or the contents of the file it names as ``@path``."""
    if not value.startswith("@"):
        return value
    try:
        with open(value[1:], encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise ValueError(f"{flag} {value!r}: cannot read the file: {exc.strerror or exc}") from None


def cmd_explain(args: argparse.Namespace) -> int:
    """Scores one rollout in this process and prints everything known about its verdict."""
    from reward_core.contract import normalize_reference
    from reward_service.router.registry import build_registry
    from reward_service.task_api import TaskInput
    from reward_service.tasks.explanation import trace

    raw = _text_arg(args.reference, "--reference")
    try:
        reference = json.loads(raw)
    except json.JSONDecodeError:
        reference = raw  # a bare gold answer, as the clients accept it
    reference = normalize_reference(reference)
    registry = build_registry(_rewards(args.config))
    if args.task not in registry:
        raise ValueError(registry.unknown_message(args.task))
    item = TaskInput(_text_arg(args.completion, "--completion"), reference, _text_arg(args.prompt, "--prompt"))
    report = trace(registry.get(args.task), item, task_name=args.task)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2, default=str))
        return 0
    for key, value in report.items():
        if isinstance(value, (dict, list)) and value:
            value = json.dumps(value, ensure_ascii=False, indent=2, default=str)
        if isinstance(value, str) and "\n" in value:  # a block (a traceback, a program, the trace): indented
            value = "\n  " + value.rstrip("\n").replace("\n", "\n  ")
        print(f"{key}: {value}")
    return 0


class _RescoreEngine:
    """The in-process engine of ``rescore``, started on first use (a bad input line stops the run before):
    its reward cache answers what it holds, the rest is scored."""

    def __init__(self, args: argparse.Namespace) -> None:
        self._args = args
        self._scorer = None

    def _engine(self):
        if self._scorer is None:
            from reward_service.router.scoring import Scorer

            self._scorer = Scorer(_server_config(self._args).scorer)
        return self._scorer

    def answer_from_cache(self, rollouts: list[Rollout]) -> list:
        return self._engine().answer_from_cache(rollouts)

    def answer_rows(self, rows: list) -> list:
        return self._engine().answer_rows(rows)

    def scan_rows(self, path: str, default_task: str, parts: int, out_dir: str) -> list | None:
        return self._engine().scan_rows(path, default_task, parts, out_dir)

    def score(self, rollouts: list[Rollout], args: argparse.Namespace, bar: tqdm):
        scorer = self._engine()
        for start in range(0, len(rollouts), SCORE_CHUNK):
            chunk = rollouts[start:start + SCORE_CHUNK]
            yield from scorer.score(chunk).results
            bar.update(len(chunk))

    def close(self) -> None:
        if self._scorer is not None:
            self._scorer.close()


def cmd_rescore(args: argparse.Namespace) -> int:
    from reward_service.rescore import rescore

    if args.endpoint:
        return rescore(args, _score_remote)
    engine = _RescoreEngine(args)
    try:
        return rescore(args, engine.score, engine)
    finally:
        engine.close()


def cmd_make_data(args: argparse.Namespace) -> int:
    """Training prompts ``{"id", "task", "prompt", "reference"}`` from a task family that generates its own."""
    if args.task.partition(":")[0] != "rg":
        raise ValueError(f"make-data: no generator for task {args.task!r}; tasks with one: rg:<dataset>")
    from reward_service.tasks.reasoning_gym_data import make_rows

    config = json.loads(args.config) if args.config else {}
    if not isinstance(config, dict):
        raise ValueError(f"--config must be a JSON object of the generator's config fields, got {args.config!r}")
    rows = list(make_rows(args.task, args.n, args.seed, config, args.instruction))
    lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    if args.out_path == "-":
        sys.stdout.write(lines)
    else:
        with open(args.out_path, "w", encoding="utf-8") as out:
            out.write(lines)
    print(f"wrote {len(rows)} prompts of {args.task} (seed {args.seed}) -> {args.out_path}", file=sys.stderr)
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    require_extra("http", "reward-service inspect")
    from reward_service.inspector.server import InspectConfig, serve_inspector

    serve_inspector(InspectConfig(args.path, rollouts=args.rollouts, port=args.port))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reward-service", description=__doc__.splitlines()[0])
    parser.add_argument("--log-level", default=os.environ.get(ENV_PREFIX + "LOG_LEVEL", "INFO"),
                        help="DEBUG, INFO, WARNING or ERROR (env REWARD_SERVICE_LOG_LEVEL)")
    parser.add_argument("--log-format", choices=LOG_FORMATS,
                        default=os.environ.get(ENV_PREFIX + "LOG_FORMAT", "text"),
                        help="text for a terminal, json for one JSON object per line with the request id "
                             "(env REWARD_SERVICE_LOG_FORMAT; default: %(default)s)")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the gRPC reward server")
    add_dataclass_flags(serve, ServerConfig, ENV_PREFIX, skip=NO_FLAGS)
    add_server_security_flags(serve)
    serve.add_argument("--config", default=os.environ.get(ENV_PREFIX + "CONFIG"),
                       help="rewards YAML: task options and composite rewards")
    serve.set_defaults(func=cmd_serve)

    serve_rm = sub.add_parser("serve-rm", help="run the gRPC reward-model server (dynamic batching)")
    add_dataclass_flags(serve_rm, RewardModelServerConfig, ENV_PREFIX, skip=("security",))
    add_server_security_flags(serve_rm)
    serve_rm.set_defaults(func=cmd_serve_rm)

    from reward_service.http_door.server import UPSTREAM_RUNTIME_FIELDS, HttpServerConfig  # imports no ASGI stack

    serve_http = sub.add_parser("serve-http", help="run the HTTP front door (OpenRLHF, slime, NeMo Gym, "
                                                   "SandboxFusion, /classify, JSON) onto the gRPC servers")
    add_dataclass_flags(serve_http, HttpServerConfig, ENV_PREFIX, skip=UPSTREAM_RUNTIME_FIELDS)
    add_server_security_flags(serve_http)
    serve_http.set_defaults(func=cmd_serve_http)

    serve_judge = sub.add_parser("serve-judge", help="serve a Hugging Face causal LM over OpenAI's API (chat "
                                                     "completions, responses, guided_choice): a local judge")
    serve_judge.add_argument("--model", required=True, help="a save_pretrained directory (model and tokenizer)")
    serve_judge.add_argument("--served-model-name", default="",
                             help="the 'model' requests must name (default: the directory's name)")
    serve_judge.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    serve_judge.add_argument("--port", type=int, default=8000, help="port to bind (default: %(default)s)")
    serve_judge.add_argument("--api-key-file", help="require 'Authorization: Bearer <the file's key>' (or set "
                                                    "REWARD_SERVICE_JUDGE_API_KEY)")
    serve_judge.add_argument("--insecure", action="store_true", help="allow a non-loopback --host without a key")
    serve_judge.add_argument("--default-max-tokens", type=int, default=64,
                             help="max_tokens of a request that gives none (default: %(default)s)")
    serve_judge.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    serve_judge.add_argument("--device", default="cpu", help="torch device (default: %(default)s)")
    serve_judge.set_defaults(func=cmd_serve_judge)

    score = sub.add_parser("score", help="score a JSONL file in-process, or through --endpoint")
    score.add_argument("--in", dest="in_path", required=True, help="rollouts JSONL")
    score.add_argument("--out", dest="out_path", required=True, help="results JSONL (same order and ids)")
    score.add_argument("--task", help="task for lines that name none")
    score.add_argument("--endpoint", help="host:port of a running server (default: score in-process)")
    score.add_argument("--config", help="rewards YAML (in-process scoring)")
    score.add_argument("--call-timeout", type=float, default=600.0, help="deadline per call to --endpoint")
    score.add_argument("--quiet", action="store_true", help="no progress bar")
    score.add_argument("--keep-inputs", action="store_true",
                       help="also write each rollout's fields (completion, reference, ...) on its line, so "
                            "'reward-service rescore' can re-score the file")
    add_dataclass_flags(score, ServerConfig, ENV_PREFIX, only=SCORE_FIELDS)
    add_client_security_flags(score)
    score.set_defaults(func=cmd_score)

    from reward_service.rescore import add_rescore_arguments  # argparse only: imports no scorer

    rescore = sub.add_parser("rescore", help="re-score stored results (their rollouts) and print what flipped, "
                                             "per task; refuses to mix verifier versions without --force")
    add_rescore_arguments(rescore)
    add_dataclass_flags(rescore, ServerConfig, ENV_PREFIX, only=SCORE_FIELDS)
    add_client_security_flags(rescore)
    rescore.set_defaults(func=cmd_rescore)

    from reward_service.tasks.reasoning_gym_data import INSTRUCTIONS  # a tuple: imports no generator

    make_data = sub.add_parser("make-data", help="write training prompts (JSONL) for a task family that generates "
                                                 "its own data: rg:<dataset> (reasoning-gym)")
    make_data.add_argument("task", help="the task the prompts are for, e.g. rg:leg_counting")
    make_data.add_argument("--n", type=int, default=1000, help="how many prompts (default: %(default)s)")
    make_data.add_argument("--seed", type=int, default=0, help="generator seed; same seed, same rows (default: 0)")
    make_data.add_argument("--out", dest="out_path", default="-", help="output JSONL (default: stdout)")
    make_data.add_argument("--config", help="the generator's config overrides as a JSON object, e.g. "
                                            "'{\"min_animals\": 3}' (stamped into each entry)")
    make_data.add_argument("--instruction", choices=INSTRUCTIONS, default="default",
                           help="reasoning-gym's instruction put before each question (asks for "
                                "<answer>...</answer>); none: the question alone (default: %(default)s)")
    make_data.set_defaults(func=cmd_make_data)

    explain = sub.add_parser("explain", help="score one rollout in-process and print the full trace of its verdict "
                                             "(status, score, components, extracted, explanation, the task's trace)")
    explain.add_argument("--task", required=True, help="task or composite reward name (see --config)")
    explain.add_argument("--completion", required=True, help="the completion, or @file to read it from a file")
    explain.add_argument("--reference", default="{}",
                         help="the reference as JSON (or a bare gold answer), or @file (default: {})")
    explain.add_argument("--prompt", default="", help="the prompt, or @file")
    explain.add_argument("--config", help="rewards YAML: task options and composite rewards")
    explain.add_argument("--json", action="store_true", help="print one JSON object instead of 'key: value' lines")
    explain.set_defaults(func=cmd_explain)

    inspect = sub.add_parser("inspect", help="serve a run's rollouts (or a results JSONL) as a local web page: "
                                             "groups side by side, filters, explanations, reward histograms")
    inspect.add_argument("path", help="a run directory (its rollouts.jsonl), a rollouts.jsonl, or a results JSONL "
                                      "from 'score'")
    inspect.add_argument("--rollouts", help="with a results JSONL: the --in file it was scored from (prompts and "
                                            "completions, joined by id)")
    inspect.add_argument("--port", type=int, default=8765,
                         help="port on 127.0.0.1 (0: any free port; default: %(default)s)")
    inspect.set_defaults(func=cmd_inspect)

    add_status_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:  # a bad environment default or log setting: a message, not a traceback
        args = build_parser().parse_args(argv)
        configure_logging(args.log_level, args.log_format)
    except ValueError as exc:
        print(f"reward-service: error: {exc}", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except (JsonlError, RewardsConfigError, MissingExtra, ClientError, ValueError, OSError) as exc:
        print(f"reward-service: error: {exc}", file=sys.stderr)
        return 2
