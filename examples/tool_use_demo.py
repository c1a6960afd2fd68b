"""Tool-use demo: a tiny policy learns, by GRPO on episodes, to use the calculator it mostly ignored.

Why: issue 24's proof that our trainer runs episodes. ``arithmetic_tools_short`` asks for the
product of two 3-digit numbers (always 6 digits); a tiny char-level model cannot multiply them,
but can copy them into a calculator call and copy its answer into ``submit_answer`` (the 5-7 digit
``arithmetic_tools`` is too long for it to copy: docs/environments.md, "The tool-use demo"). The
start policy is a short SFT warm-up (``trainer-client sft``'s trainer) on a mix of episodes:
``--tool-frac`` (< 0.5) of them call the calculator and submit its answer, the rest
answer directly with a guess (always wrong). Greedy decoding of the start policy therefore guesses
(held-out success near 0), while sampling calls the tool now and then; GRPO on episodes
(``trainer-client grpo`` with ``episodes.environment=arithmetic_tools_short``) rewards the calls
that led to a right answer until the policy uses the tool every time. Success is measured on
held-out rows (the environment's ``test`` split, same seed; no test problem is a train problem)
before and after, greedy; the GRPO run also evaluates them every ``--eval-every`` steps
(``OUT/grpo/eval_curves.png``; training curves in ``OUT/grpo/curves.png``).

    python -m examples.tool_use_demo --out runs/tool_use
    python -m examples.tool_use_demo --out runs/tool_use --stage grpo   # reuse the warm-up in OUT/start

Everything runs on loopback: one environment server (``reward-service serve --serve-environments``)
serves the warm-up rows, the evaluations and the GRPO run's episodes and rewards. OUT holds the SFT
data, the start checkpoint, the GRPO run and ``results.json`` (the figures; a rerun starts afresh).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import shutil
import time
from pathlib import Path
from typing import Any

import torch

from examples.tiny import build_tiny_lm, build_tokenizer
from reward_core.clients.environment import BlockingEnvironmentClient
from reward_core.episode_contract import EpisodeSpec
from trainer_client.sft.sft_train import SFTConfig, train_sft
from trainer_client.train.checkpointing import latest_checkpoint
from trainer_client.train.config import SamplingConfig
from trainer_client.train.episode_step import evaluate_episodes
from trainer_client.train.episode_tokens import response_text
from trainer_client.train.episodes import ModelTurns
from trainer_client.train.episodes_config import EpisodesConfig
from trainer_client.train.grpo import train_grpo
from trainer_client.train.grpo_config import load_config
from trainer_client.train.models import load_tokenizer
from trainer_client.train.reward_overlap import EmbeddedRewardServer
from trainer_client.train.tool_calls import format_tool_call, with_tools_prompt

logger = logging.getLogger("tool_use_demo")

ENV = EpisodesConfig(environment="arithmetic_tools_short", max_turns=3, tool_role="user", tool_prompt="none",
                     seed=0)
MAX_NEW_TOKENS = 96  # a turn's budget: a calculator call is 87 characters
SFT_SEED = 7  # warm-up rows come from another seed than the RL rows (and never from the test split)


def sft_rows(host: BlockingEnvironmentClient, n: int, tool_frac: float, seed: int) -> list[dict[str, Any]]:
    """Warm-up conversations: ``tool_frac`` of them calculator + submit, the others a direct (wrong) guess."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        start = host.open(EpisodeSpec(ENV.environment, split="train", index=i, seed=SFT_SEED))
        host.close(start.session_id)
        messages = with_tools_prompt(start.messages, start.tools, ENV.tool_prompt)
        a, b = re.search(r"What is (\d+) \* (\d+)\?", messages[-1]["content"]).groups()
        if rng.random() < tool_frac:
            product = str(int(a) * int(b))
            messages += [{"role": "assistant", "content": format_tool_call("calculator", {"expression": f"{a} * {b}"})},
                         {"role": "user", "content": response_text(product)},
                         {"role": "assistant", "content": format_tool_call("submit_answer", {"answer": product})}]
        else:
            guess = str(rng.randrange(10 ** (len(a) + len(b) - 2), 10 ** (len(a) + len(b) - 1)))
            messages += [{"role": "assistant", "content": f"The answer is {guess}."}]
        rows.append({"messages": messages})
    return rows


def evaluate(model_dir: Path, endpoint: str, rows: int, threads: int) -> dict[str, Any]:
    """Greedy episodes on the first ``rows`` held-out (test) rows."""
    from transformers import AutoModelForCausalLM

    tokenizer = load_tokenizer(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    torch.set_num_threads(threads)
    turns = ModelTurns(model, tokenizer, SamplingConfig(max_new_tokens=MAX_NEW_TOKENS), greedy=True)
    with BlockingEnvironmentClient(endpoint, timeout_s=120) as host:
        return evaluate_episodes(turns, tokenizer, host, ENV, "test", rows, templated=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/tool_use")
    parser.add_argument("--stage", choices=("all", "grpo"), default="all")
    parser.add_argument("--size", default="micro", help="tiny model size (examples/tiny/model.py)")
    parser.add_argument("--sft-examples", type=int, default=6000)
    parser.add_argument("--sft-steps", type=int, default=1500)
    parser.add_argument("--tool-frac", type=float, default=0.4,
                        help="warm-up episodes that call the calculator (< 0.5: the start policy guesses greedily)")
    parser.add_argument("--grpo-steps", type=int, default=20)
    parser.add_argument("--grpo-lr", type=float, default=5e-4)
    parser.add_argument("--grpo-beta", type=float, default=0.04, help="KL coefficient to the start policy")
    parser.add_argument("--eval-rows", type=int, default=100)
    parser.add_argument("--eval-every", type=int, default=5, help="held-out evaluation every N GRPO steps")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (1: a tiny model's ops are too small to gain from more)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("start", "grpo") if args.stage == "all" else ("grpo",):  # a rerun starts afresh
        shutil.rmtree(out / stale, ignore_errors=True)
    results: dict[str, Any] = {"args": vars(args), "environment": ENV.environment, "stage_s": {}}
    started = time.perf_counter()
    with EmbeddedRewardServer(out / "env_server.log", serve_environments=True) as server:
        if args.stage == "all":
            tokenizer = build_tokenizer()
            model = build_tiny_lm(tokenizer, size=args.size, seed=args.seed)
            model.save_pretrained(out / "init")
            tokenizer.save_pretrained(out / "init")
            with BlockingEnvironmentClient(server.address, timeout_s=120) as host:
                rows = sft_rows(host, args.sft_examples, args.tool_frac, args.seed)
            (out / "sft.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            train_sft(SFTConfig(data=str(out / "sft.jsonl"), out_dir=str(out / "start"), model=str(out / "init"),
                                epochs=100, max_steps=args.sft_steps, batch_size=16, lr=3e-3, warmup_ratio=0.05,
                                seed=args.seed, num_threads=args.threads, progress=False, tensorboard=False,
                                max_length=512))
            results["stage_s"]["sft"] = round(time.perf_counter() - started, 1)
        results["start"] = evaluate(out / "start", server.address, args.eval_rows, args.threads)
        logger.info("start policy on %d held-out rows: %s", args.eval_rows, results["start"])
        grpo_started = time.perf_counter()
        config = load_config(None, [
            f"model.path={out / 'start'}", f"model.threads={args.threads}", f"episodes.environment={ENV.environment}",
            f"episodes.endpoint={server.address}", "reward.embedded=false", f"reward.endpoint={server.address}",
            "episodes.max_turns=3", "episodes.tool_role=user", "episodes.tool_prompt=none", "episodes.rows=2000",
            f"episodes.seed={ENV.seed}", "episodes.eval_split=test", f"episodes.eval_rows={args.eval_rows}",
            f"run.eval_every={args.eval_every}", f"run.steps={args.grpo_steps}", "run.progress=false",
            "run.tensorboard=false", f"run.seed={args.seed}", "run.rollouts_sample=2", "sampling.prompts_per_step=8",
            "sampling.group_size=8", f"sampling.max_new_tokens={MAX_NEW_TOKENS}", f"optim.lr={args.grpo_lr}",
            f"grpo.beta={args.grpo_beta}", "grpo.micro_batch_size=16"], run_dir=str(out / "grpo"))
        train_grpo(config)
        results["stage_s"]["grpo"] = round(time.perf_counter() - grpo_started, 1)
        final = latest_checkpoint(out / "grpo")
        results["final"] = evaluate(final, server.address, args.eval_rows, args.threads)
        logger.info("trained policy on %d held-out rows: %s", args.eval_rows, results["final"])
    results["wall_time_s"] = round(time.perf_counter() - started, 1)
    results["curves"] = draw_curves(out / "grpo")
    (out / "results.json").write_text(json.dumps(results, indent=2))
    print(json.dumps({k: results[k] for k in ("start", "final", "wall_time_s", "curves")}, indent=2))
    return 0


def draw_curves(run_dir: Path) -> dict[str, str]:
    """The GRPO run's training curves (``curves.png``) and held-out ones (``eval_curves.png``, drawn by the
    trainer), by name; none without matplotlib."""
    from trainer_client.train.plot import PlotUnavailable, plot_run

    try:
        plot_run(run_dir)
    except PlotUnavailable as exc:
        logger.info("no curves: %s", exc)
    return {path.stem: str(path) for path in (run_dir / "curves.png", run_dir / "eval_curves.png") if path.exists()}


if __name__ == "__main__":
    raise SystemExit(main())
