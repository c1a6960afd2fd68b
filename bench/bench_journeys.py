"""`make bench-journeys`: issue 22's first-five-minutes journeys, replayed as a new user would.

Why: issue 22 ("a first five minutes that never hangs") asks for every journey of its first section to
be measured again: time to the first clear error <= 5 s for an unreachable endpoint, <= 2 s for a
missing model path. Each journey runs the venv's own entry points (``reward-service``,
``trainer-client``, or ``python -c`` with the client library) against real servers on loopback ports
picked at run time, with a hard timeout each (a regression shows as a ``timeout`` row, not a hang),
in a temporary directory removed at the end; no process is left running.

"Seconds to the message" is wall time from launching the command to its exit with the message printed
(for a CLI), from the call to the exception (a Python client call: its process's start-up is in the
note), from SIGTERM to the client's answer (draining), or from launch to health SERVING (a server with a
broken plugin); the table shows the median of ``--repeats`` runs (each in the note). Bounds are printed
where the issue names one; a row past it says "over bound". Nothing here fails on timing: it is a
benchmark, not a test. HF_HUB_OFFLINE is not set (nor should it be): a model path that is neither a
directory nor a cached hub id must fail at once without it.

    make bench-journeys
    .venv/bin/python -m bench.bench_journeys [--repeats 3] [--timeout-s 180] [--only score,client,...]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from grpc_health.v1 import health_pb2

from bench.journey_procs import (
    BIN,
    Row,
    Servers,
    clear_lines,
    health,
    kill_group,
    markdown_table,
    run,
    wait_not_serving,
)
from bench.journey_snippets import BLOCK_EXTRAS, CLIENT_BATCH, CLIENT_CLOSED, CLIENT_DRAIN, JOURNEY_TASKS, SLOW_CALL
from reward_core.ports import free_port

ROOT = Path(__file__).resolve().parents[1]
UNREACHABLE_S = 5.0   # issue 22: an unreachable endpoint
MODEL_PATH_S = 2.0    # issue 22: a missing model path
GSM8K = {"id": "r0", "task": "gsm8k", "completion": "#### 4", "reference": "4"}


class Journeys:
    """The journeys, one method each; they share one temp dir and one reward server."""

    def __init__(self, tmp: Path, timeout_s: float, show: bool = True) -> None:
        self.tmp = tmp
        self.timeout_s = timeout_s
        self.show = show  # print explain's full output (once, not every repeat)
        (tmp / "logs").mkdir()
        self.servers = Servers(tmp / "logs")
        self._main: str | None = None
        self._policy: Path | None = None
        self._prompts: Path | None = None

    def short(self, text: str) -> str:
        """A command line as the user typed it: the temp dir and the venv's bin left out."""
        return text.replace(f"{BIN}/", "").replace(str(self.tmp), "$TMP").replace(str(ROOT) + "/", "")

    def cli(self, name: str, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            stdin: str | None = None, timeout_s: float | None = None):
        argv = [str(BIN / name), *args]
        return argv, run(argv, timeout_s=timeout_s or self.timeout_s, cwd=cwd or self.tmp, env=env, stdin=stdin)

    def main_server(self) -> str:
        """One reward server for the journeys that need a healthy one (completions capped at 1,000 chars)."""
        if self._main is None:
            _, self._main, _ = self.servers.reward_server("main", "--workers", "1", "--max-completion-chars", "1000",
                                                          cwd=self.tmp)
        return self._main

    def policy(self) -> tuple[Path, Path]:
        """The tests' tiny policy (an untrained nano Llama, char-level tokenizer) and 64 prompts."""
        if self._policy is None or self._prompts is None:
            from examples.tiny import build_tiny_lm, build_tokenizer, make_problems, write_jsonl

            self._policy, self._prompts = self.tmp / "tiny_policy", self.tmp / "prompts.jsonl"
            tokenizer = build_tokenizer()
            build_tiny_lm(tokenizer, size="nano", seed=0).save_pretrained(self._policy)
            tokenizer.save_pretrained(self._policy)
            write_jsonl(self._prompts, make_problems(64, seed=5))
        return self._policy, self._prompts

    def grpo_sets(self, model: Path | str, endpoint: str, prompts: Path | None = None) -> list[str]:
        sets = [f"model.path={model}", f"data.train={prompts or self.policy()[1]}", "model.threads=1",
                "reward.embedded=false", f"reward.endpoint={endpoint}", "run.steps=1", "run.save_every=1",
                "run.progress=false", "run.tensorboard=false", "sampling.prompts_per_step=2",
                "sampling.group_size=2", "sampling.max_new_tokens=8", "grpo.micro_batch_size=4"]
        return [arg for s in sets for arg in ("--set", s)]

    # 1. reward-service score --endpoint <closed port>
    def score_closed(self) -> list[Row]:
        work = self.tmp / "score"
        work.mkdir()
        (work / "in.jsonl").write_text(json.dumps(GSM8K) + "\n")
        argv, ran = self.cli("reward-service", "score", "--in", "in.jsonl", "--out", "out.jsonl", "--endpoint",
                             f"127.0.0.1:{free_port()}", cwd=work)
        left = sorted(p.name for p in work.iterdir() if p.name != "in.jsonl")
        note = "no output file left" if not left else f"left behind: {left} " \
            f"({', '.join(str((work / n).stat().st_size) + ' B' for n in left)})"
        return [Row("score, unreachable endpoint", self.short(" ".join(argv)), ran.seconds, ran.exit,
                    clear_lines(ran.err + ran.out), UNREACHABLE_S, note)]

    # 2. RewardClient against a closed port
    def client_closed(self) -> list[Row]:
        endpoint = f"127.0.0.1:{free_port()}"
        ran = run([sys.executable, "-c", CLIENT_CLOSED, endpoint], timeout_s=self.timeout_s, cwd=self.tmp)
        line = clear_lines(ran.out + ran.err, n=1, prefer="")
        seconds, _, message = line.partition(" ")
        try:
            call_s: float | None = float(seconds)
        except ValueError:
            call_s, message = None, line
        kind = "raised " + message.split(":", 1)[0].rsplit(".", 1)[-1] if ran.returncode == 0 else ran.exit
        return [Row("RewardClient.score, unreachable endpoint", f"RewardClient('{endpoint}').score([...])",
                    call_s if ran.returncode is not None else None, kind, message, UNREACHABLE_S,
                    f"process with imports: {ran.wall_s:.2f} s")]

    # 3. trainer-client grpo: unreachable endpoint, missing model path, an encoder, a bad prompt row
    def trainer(self) -> list[Row]:
        policy, prompts = self.policy()
        encoder = self.tmp / "tiny_bert"
        from transformers import BertConfig, BertModel

        BertModel(BertConfig(vocab_size=128, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                             intermediate_size=32, max_position_embeddings=64)).save_pretrained(encoder)
        rows = []
        cases = [("grpo, unreachable reward endpoint", policy, f"127.0.0.1:{free_port()}", None, UNREACHABLE_S),
                 ("grpo, model.path does not exist", self.tmp / "no_such_model", f"127.0.0.1:{free_port()}", None,
                  MODEL_PATH_S),
                 ("grpo, model.path a hub id not in the cache", "no-such-org/no-such-model-22",
                  f"127.0.0.1:{free_port()}", None, MODEL_PATH_S),
                 ("grpo, model.path is an encoder (BertModel)", encoder, f"127.0.0.1:{free_port()}", None, None)]
        bad = self.tmp / "bad_prompts.jsonl"
        lines = prompts.read_text().splitlines()[:3]
        row = json.loads(lines[1])
        row["task"] = "no_such_task"
        bad.write_text("\n".join([lines[0], json.dumps(row), lines[2]]) + "\n")
        cases.append(("grpo, a prompt row with a task not served", policy, self.main_server(), bad, None))
        for k, (journey, model, endpoint, data, bound) in enumerate(cases):
            argv, ran = self.cli("trainer-client", "grpo", "--run-dir", str(self.tmp / f"run{k}"),
                                 *self.grpo_sets(model, endpoint, data))
            shown = f"trainer-client grpo --set model.path={model} --set reward.endpoint={endpoint}" + \
                (f" --set data.train={data}" if data else "") + " ..."
            note = "traceback printed" if "Traceback" in ran.err else ""
            rows.append(Row(journey, self.short(shown), ran.seconds, ran.exit, clear_lines(ran.err + ran.out),
                            bound, note))
        return rows

    def task_server(self, name: str) -> tuple[subprocess.Popen, str]:
        """A reward server with the journeys' own tasks (sleep, raise), one worker, a 3 s grace period."""
        tasks_dir = self.tmp / "journey_tasks"
        if not tasks_dir.exists():
            tasks_dir.mkdir()
            (tasks_dir / "journey_tasks.py").write_text(textwrap.dedent(JOURNEY_TASKS))
            (tasks_dir / "rewards.yaml").write_text("tasks:\n  sleep:\n    task: journey_tasks:SleepTask\n"
                                                    "  raise:\n    task: journey_tasks:RaiseTask\n")
        env = {**os.environ, "PYTHONPATH": str(tasks_dir)}
        server, address, _ = self.servers.reward_server(
            name, "--workers", "1", "--grace-s", "3", "--item-timeout-s", "30", "--max-item-timeout-s", "60",
            "--config", str(tasks_dir / "rewards.yaml"), cwd=self.tmp, env=env)
        return server, address

    # a slow server: timeout_s bounds the call; a crashing verifier's traceback reaches the server log
    def slow(self) -> list[Row]:
        _, address = self.task_server("slow")
        ran = run([sys.executable, "-c", CLIENT_BATCH, address], timeout_s=self.timeout_s, cwd=self.tmp,
                  stdin=json.dumps([{"id": "crash-me-7", "task": "raise", "completion": "raise", "reference": {}},
                                    {"id": "fine-8", "task": "raise", "completion": "ok", "reference": {}}]))
        log = self.servers.log("slow").splitlines()
        said = [ln.split(" ", 4)[-1][:200] for ln in log if "crash-me-7" in ln]
        traceback = "Traceback (most recent call last)" in self.servers.log("slow")
        rows = [Row("a verifier raises: result and server log", "RewardClient.score([{task: raise, ...}]); "
                        "then read the server's log", ran.seconds, ran.exit, summarize(ran.out + ran.err)
                        + (f" // log: {said[0]}" if said else " // log: no line names the rollout id"), None,
                        "traceback in the log" if traceback else "no traceback in the log")]
        ran = run([sys.executable, "-c", SLOW_CALL, address], timeout_s=self.timeout_s, cwd=self.tmp)
        line = clear_lines(ran.out + ran.err, 1, "")
        seconds, _, message = line.partition(" ")
        try:
            call_s: float | None = float(seconds)
        except ValueError:
            call_s, message = None, line
        rows.append(Row("slow server, RewardClient(timeout_s=3)", "RewardClient(addr, timeout_s=3).score([a rollout "
                    "that takes 8 s])", call_s, message.split(":", 1)[0] if call_s is not None else ran.exit,
                    message.split(":", 1)[-1].strip(), None,
                    "issue 22: timeout_s is to bound the call (before: 40 s measured for 30)"))
        return rows

    # 4. a server draining on SIGTERM with a client call in flight, and one started then
    def drain(self) -> list[Row]:
        server, address = self.task_server("drain")
        client = subprocess.Popen([sys.executable, "-c", CLIENT_DRAIN, address], cwd=self.tmp, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  start_new_session=True)
        ran = "RewardClient(addr, timeout_s=600).score(10 x 0.5 s rollouts); server gets SIGTERM (--grace-s 3)"
        late_ran = "RewardClient.score([...]) once the draining server's health is NOT_SERVING"
        try:
            ready = client.stdout is not None and select.select([client.stdout], [], [], self.timeout_s)[0]
            if not ready or client.stdout is None or client.stdout.readline().strip() != "READY":
                kill_group(client)
                raise RuntimeError(f"drain client did not start: {client.communicate(timeout=30)}")
            time.sleep(1.0)  # the worker is on the call's rollouts
            exited: list[tuple[int, float]] = []
            waiter = threading.Thread(target=lambda: exited.append((server.wait(), time.monotonic())), daemon=True)
            signalled = time.monotonic()
            server.send_signal(signal.SIGTERM)
            waiter.start()
            wait_not_serving(address, timeout_s=30)
            out, err = client.communicate("late\n", timeout=self.timeout_s)
            waiter.join(timeout=30)
            server_exit = f"server exit {exited[0][0]} {exited[0][1] - signalled:.1f} s after SIGTERM" if exited \
                else "server still running 30 s after SIGTERM"
        except subprocess.TimeoutExpired:
            kill_group(client)
            return [Row("drain: call in flight", ran, None, "timeout", "", None),
                    Row("drain: call started while draining", late_ran, None, "timeout", "", None)]
        if client.returncode != 0:
            return [Row("drain: call in flight", ran, None, str(client.returncode), clear_lines(err, 3, ""), None)]
        answers = json.loads(out.strip().splitlines()[-1])
        rows = []
        for key, journey, shown in (("flight", "drain: call in flight", ran),
                                    ("late", "drain: call started while draining", late_ran)):
            a = answers[key]
            rows.append(Row(journey, shown, a["t"] - signalled, a["what"], a["error"], None,
                            f"seconds from SIGTERM; {server_exit}"))
        return rows

    # 5. one oversized rollout in a batch, over gRPC and through the HTTP door with bare gold strings
    def oversized(self) -> list[Row]:
        address = self.main_server()
        batch = [{"id": "good-1", "task": "gsm8k", "completion": "#### 4", "reference": "4"},
                 {"id": "my-huge-one", "task": "gsm8k", "completion": "x" * 1001, "reference": "4"},
                 {"id": "good-2", "task": "gsm8k", "completion": "#### 5", "reference": "4"}]
        ran = run([sys.executable, "-c", CLIENT_BATCH, address], timeout_s=self.timeout_s, cwd=self.tmp,
                  stdin=json.dumps(batch))
        rows = [Row("oversized rollout in a batch (gRPC)", "RewardClient.score([good, 1,001 chars, good]) "
                    "against serve --max-completion-chars 1000", ran.seconds, ran.exit, summarize(ran.out + ran.err),
                    None, "process with imports")]
        url = self.servers.http_door(address, cwd=self.tmp)
        status, body, seconds = post_json(f"{url}/v1/score", {"rollouts": batch}, {}, self.timeout_s)
        try:
            text = "\n".join(json.dumps(r) for r in json.loads(body)["results"])
        except (ValueError, KeyError, TypeError):
            text = body
        rows.append(Row("oversized rollout in a batch (HTTP /v1/score, bare gold strings)",
                        "curl -d '{\"rollouts\": [good, 1,001 chars, good]}' /v1/score", seconds,
                        f"HTTP {status}", summarize(text), None))
        return rows

    # 6. a plugin that fails to import; --strict-plugins
    def broken_plugin(self) -> list[Row]:
        site = self.tmp / "site"
        info = site / "broken_plugin-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text("[reward_service.tasks]\nbroken_task = broken_plugin_module:Task\n")
        (site / "broken_plugin_module.py").write_text("raise ImportError('needs a package that is not installed')\n")
        example = ROOT / "examples" / "word_count_plugin"
        installed = run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target",
                         str(site), str(example)], timeout_s=self.timeout_s, cwd=self.tmp)
        rows = [Row("shipped plugin example installs", "pip install ./examples/word_count_plugin (--target a site dir)",
                    installed.seconds, installed.exit, clear_lines(installed.err + installed.out, 2) or "installed",
                    None)]
        env = {**os.environ, "PYTHONPATH": str(site)}
        ran_serve = "reward-service serve --workers 1  (the example and a broken plugin installed)"
        try:
            _, address, serving_s = self.servers.reward_server("plugin", "--workers", "1", cwd=self.tmp, env=env,
                                                               timeout_s=self.timeout_s)
        except RuntimeError as exc:
            rows.append(Row("broken plugin: server starts", ran_serve, None, "did not serve", str(exc)[-300:], None))
        else:
            from reward_service.router.server import task_health_name

            logged = [ln.split(" ", 4)[-1] for ln in self.servers.log("plugin").splitlines() if "broken_task" in ln]
            argv, status = self.cli("reward-service", "status", "--endpoint", address, "--interval", "0")
            said = [ln.strip()[:120] for ln in status.out.splitlines()
                    if "broken" in ln or ln.strip().startswith(("health", "tasks", "status:"))]
            service = task_health_name("broken_task")
            start = time.monotonic()
            answer = health(address, service, timeout_s=5.0)
            health_s = time.monotonic() - start
            shown = "?" if answer is None else health_pb2.HealthCheckResponse.ServingStatus.Name(answer)
            ran = run([sys.executable, "-c", CLIENT_BATCH, address], timeout_s=self.timeout_s, cwd=self.tmp,
                      stdin=json.dumps([{"id": "b0", "task": "broken_task", "completion": "x", "reference": {}},
                                        {"id": "w0", "task": "word_budget", "completion": "one two three",
                                         "reference": {"max_words": 2}}]))
            rows += [Row("broken plugin: server starts", ran_serve, serving_s, "SERVING",
                        " / ".join(logged[:1]), None, "seconds to health SERVING; the server log's line"),
                    Row("broken plugin: reward-service status", self.short(" ".join(argv)), status.seconds,
                        status.exit, " / ".join(said), None,
                        "broken_task named" if "broken_task" in status.out else "broken_task not named"),
                    Row("broken plugin: per-task health", f"grpc_health_probe -addr={address} -service={service}",
                        health_s, shown, f"{service}: {shown}", None, "a grpc.health.v1 Check from Python"),
                    Row("broken plugin: rollouts for it and the example", "RewardClient.score([{task: broken_task}, "
                        "{task: word_budget}])",
                        ran.seconds, ran.exit, summarize(ran.out + ran.err), None, "process with imports")]
        argv, strict = self.cli("reward-service", "serve", "--port", str(free_port()), "--workers", "1",
                                "--strict-plugins", env=env)
        rows.append(Row("broken plugin: --strict-plugins", self.short(" ".join(argv)), strict.seconds, strict.exit,
                        clear_lines(strict.err + strict.out, 2, "broken_task"), None,
                        "traceback printed" if "Traceback" in strict.err + strict.out else ""))
        return rows

    # 7. reward-service explain
    def explain(self) -> list[Row]:
        rows = []
        for completion, reference in (("so the answer is \\boxed{3/4}", "0.75"), ("I think it is 7", "0.75")):
            argv, ran = self.cli("reward-service", "explain", "--task", "math", "--completion", completion,
                                 "--reference", reference)
            if self.show:
                print(f"\n$ {self.short(' '.join(argv))}\n{ran.out}{ran.err}")
            rows.append(Row(f"explain, completion {completion!r}",
                            f"reward-service explain --task math --completion '{completion}' --reference {reference}",
                            ran.seconds, ran.exit, " / ".join(ln for ln in ran.out.splitlines()
                                                              if ln.startswith(("score:", "explanation:")))
                            or clear_lines(ran.out + ran.err, 4, ""), None))
        return rows

    # a client-only install (simulated: the extras' modules blocked in sys.modules by a sitecustomize)
    def extras(self) -> list[Row]:
        site = self.tmp / "client_only"
        site.mkdir()
        (site / "sitecustomize.py").write_text(BLOCK_EXTRAS)
        env = {**os.environ, "PYTHONPATH": str(site)}
        rows = []
        for name, *args in (("trainer-client", "--help"), ("reward-service", "serve-http", "--upstream", "127.0.0.1:1"),
                            ("reward-service", "serve-rm", "--checkpoint", "no-such-dir")):
            argv, ran = self.cli(name, *args, env=env)
            rows.append(Row(f"client-only install: {name} {args[0]}", self.short(" ".join(argv)), ran.seconds,
                            ran.exit, clear_lines(ran.err + ran.out, 1), None,
                            "traceback printed" if "Traceback" in ran.err else "simulated install"))
        return rows

    # serve-http --auth-token-file: the caller's token checked, and the door's own token sent upstream
    def token(self) -> list[Row]:
        token = self.tmp / "token"
        token.write_text("journey-secret-22\n")
        _, address, _ = self.servers.reward_server("secured", "--workers", "1", "--auth-token-file", str(token),
                                                   cwd=self.tmp)
        url = self.servers.http_door(address, cwd=self.tmp, extra=("--auth-token-file", str(token)), name="door2")
        rows = []
        for label, headers in (("right token", {"Authorization": "Bearer journey-secret-22"}), ("no token", {})):
            status, body, seconds = post_json(f"{url}/v1/score", {"rollouts": [GSM8K]}, headers, self.timeout_s)
            try:
                text = "\n".join(json.dumps(r) for r in json.loads(body)["results"])
            except (ValueError, KeyError, TypeError):
                text = body
            rows.append(Row(f"HTTP door with --auth-token-file, caller with {label}",
                            "curl -H 'Authorization: Bearer ...' /v1/score" if headers else "curl /v1/score",
                            seconds, f"HTTP {status}", summarize(text)[:300], None))
        return rows

    # 8. resume with a changed config
    def resume(self) -> list[Row]:
        policy, _ = self.policy()
        run_dir = self.tmp / "resume_run"
        sets = self.grpo_sets(policy, self.main_server())
        argv, first = self.cli("trainer-client", "grpo", "--run-dir", str(run_dir), *sets)
        rollouts = run_dir / "rollouts.jsonl"
        seen = f"rollouts.jsonl: {len(rollouts.read_text().splitlines())} lines" if rollouts.exists() \
            else "no rollouts.jsonl"
        rows = [Row("resume: first run (1 step)", "trainer-client grpo --run-dir RUN --set run.steps=1 ...",
                    first.seconds, first.exit, clear_lines(first.err + first.out, 1, "error") if first.returncode
                    else "ok", None, seen)]
        changed = ["--set", "run.steps=2", "--set", "grpo.beta=0.5"]
        argv, refused = self.cli("trainer-client", "grpo", "--run-dir", str(run_dir), *sets, *changed)
        kept = sorted(p.name for p in run_dir.glob("config*.yaml"))
        rows.append(Row("resume with a changed config", "trainer-client grpo --run-dir RUN --set run.steps=2 "
                        "--set grpo.beta=0.5 ...", refused.seconds, refused.exit,
                        clear_lines(refused.err + refused.out, 2), None, f"configs in RUN: {kept}"))
        argv, allowed = self.cli("trainer-client", "grpo", "--run-dir", str(run_dir), *sets, *changed,
                                 "--allow-config-change")
        kept = sorted(p.name for p in run_dir.glob("config*.yaml"))
        rows.append(Row("resume, --allow-config-change", "... --allow-config-change", allowed.seconds, allowed.exit,
                        clear_lines(allowed.err + allowed.out, 1, "error") if allowed.returncode else "resumed",
                        None, f"configs in RUN: {kept}"))
        return rows


def post_json(url: str, body: dict, headers: dict[str, str], timeout_s: float) -> tuple[int, str, float]:
    """(HTTP status, body, seconds) of a JSON POST; status 0 when nothing answered."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", **headers})
    start = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            status, text = reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        status, text = exc.code, exc.read().decode()
    except OSError as exc:
        status, text = 0, repr(exc)
    return status, text, time.monotonic() - start


def summarize(lines: str) -> str:
    """Each result line as ``id STATUS score: error`` (the error cut to 140 characters)."""
    parts = []
    for line in lines.splitlines():
        try:
            r = json.loads(line)
            score = r.get("score") if r.get("scored", True) else "unscored"
            parts.append(f"{r['id']} {r['status'].removeprefix('ROLLOUT_STATUS_')} {score}"
                         + (f": {r['error'][:140]}" if r.get("error") else ""))
        except (ValueError, KeyError, TypeError, AttributeError):
            if line.strip():
                parts.append(line.strip()[:300])
    return " / ".join(parts)


JOURNEYS: dict[str, Callable[[Journeys], list[Row]]] = {
    "score": Journeys.score_closed, "client": Journeys.client_closed, "trainer": Journeys.trainer,
    "drain": Journeys.drain, "oversized": Journeys.oversized, "plugin": Journeys.broken_plugin,
    "explain": Journeys.explain, "slow": Journeys.slow, "extras": Journeys.extras, "token": Journeys.token,
    "resume": Journeys.resume,
}


def run_once(tmp: Path, names: list[str], timeout_s: float, show: bool) -> list[list[Row]]:
    """Every journey of ``names`` once, in a directory of its own; the rows of each."""
    journeys = Journeys(tmp, timeout_s, show)
    found: list[list[Row]] = []
    try:
        for name in names:
            start = time.monotonic()
            try:
                rows = JOURNEYS[name](journeys)
            except Exception as exc:  # noqa: BLE001 - one broken journey must not hide the others' rows
                rows = [Row(name, "(bench)", None, "bench error", f"{type(exc).__name__}: {exc}"[:400])]
            for row in rows:
                row.message, row.note = journeys.short(row.message), journeys.short(row.note)
            found.append(rows)
            print(f"[{name}: {time.monotonic() - start:.1f} s]", file=sys.stderr, flush=True)
    finally:
        journeys.servers.close()
    return found


def merged(repeats: list[list[list[Row]]]) -> list[Row]:
    """The last repeat's rows, each with the median of the repeats' seconds (all of them in its note);
    a row that timed out in any repeat stays a timeout."""
    rows = []
    for k, last in enumerate(repeats[-1]):
        for i, row in enumerate(last):
            runs = [rep[k][i].seconds if i < len(rep[k]) and rep[k][i].journey == row.journey else None
                    for rep in repeats]
            if len(runs) > 1:
                row.note = "; ".join(filter(None, [row.note, "runs: " + ", ".join(
                    "-" if x is None else f"{x:.2f}" for x in runs)]))
                row.seconds = None if None in runs else statistics.median(runs)
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout-s", type=float, default=180.0, help="hard limit per command")
    parser.add_argument("--repeats", type=int, default=3, help="runs of every journey; the table shows medians")
    parser.add_argument("--only", default=",".join(JOURNEYS), help=f"comma-separated subset of {list(JOURNEYS)}")
    args = parser.parse_args()
    names = args.only.split(",")
    unknown = [n for n in names if n not in JOURNEYS]
    if unknown:
        parser.error(f"unknown journeys {unknown}; choose from {list(JOURNEYS)}")
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="journeys-") as tmp:
        repeats = []
        for k in range(args.repeats):
            (Path(tmp) / f"run{k}").mkdir()
            repeats.append(run_once(Path(tmp) / f"run{k}", names, args.timeout_s, show=k == 0))
    print()
    print(markdown_table(merged(repeats)))
    print(f"\nload average (1, 5, 15 min): {load_before} before, {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"after; {os.cpu_count()} CPUs; {args.repeats} repeat(s), median seconds")


if __name__ == "__main__":
    main()
