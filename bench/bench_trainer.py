"""GRPO step time: our trainer vs TRL's ``GRPOTrainer``, same model, data and reward server, one run.

Why: "our step time no worse than TRL's, and reward wait under 5% of the step thanks to
overlap" is a claim; this prints the figures. Both trainers start from the same tiny
start checkpoint (``examples.tiny.make_start``), draw prompts from the same
``rl_train.jsonl``, sample the same number of completions per step (``--prompts-per-step``
x ``--group-size``, one optimizer step over all of them, micro-batches of
``--micro-batch``), with the same ``--max-new-tokens``, temperature 1 (no top-k/top-p),
token-level loss with clip range 0.2/0.28, ``--beta`` (KL to the start policy), learning
rate, AdamW betas, gradient clipping, torch CPU threads, no vLLM, and are scored by the
same reward service (an embedded server process with one worker each; TRL through
``trainer_client.trl_adapter``). What differs is how they run a step: ours generates in
chunks of ``--generation-batch-prompts`` prompts and scores each chunk while the next is
generated; TRL generates the whole batch in one ``generate`` call, then scores it.

Seconds per step are wall-clock between step ends, the first step (warm-up) left out.
"reward wait" is the time a step is blocked on the reward service: ours from
``time/wait_reward_s`` in metrics.jsonl, TRL's the time inside the reward function
(nothing overlaps it there).

    make bench-trainer
    .venv/bin/python bench/bench_trainer.py --steps 20 [--start runs/tiny_start] [--only ours|trl]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEMO_CONFIG = ROOT / "configs" / "demo_grpo.yaml"


def ensure_start(path: Path) -> Path:
    """The tiny start checkpoint at ``path``, built (~35 s) if it is not there yet."""
    if not (path / "warmup.json").is_file():
        print(f"building the tiny start checkpoint in {path} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "examples.tiny.make_start", "--out", str(path), "--seed", "0"],
                       check=True, cwd=Path(__file__).resolve().parents[1])
    return path


def run_ours(args: argparse.Namespace, start: Path, out: Path) -> dict:
    from trainer_client.train.grpo import train_grpo
    from trainer_client.train.grpo_config import load_config
    from trainer_client.train.run_logging import read_metrics

    overrides = [f"model.path={start}", f"data.train={start}/rl_train.jsonl", f"model.threads={args.threads}",
                 f"sampling.prompts_per_step={args.prompts_per_step}", f"sampling.group_size={args.group_size}",
                 f"sampling.max_new_tokens={args.max_new_tokens}",
                 f"sampling.generation_batch_prompts={args.generation_batch_prompts}",
                 f"grpo.micro_batch_size={args.micro_batch}", f"grpo.beta={args.beta}", f"optim.lr={args.lr}",
                 f"run.steps={args.steps}", "run.save_every=0", "run.progress=false", "run.tensorboard=false",
                 "run.resume=false", f"run.seed={args.seed}"]
    config = load_config(DEMO_CONFIG, overrides, run_dir=str(out / "ours"))
    train_grpo(config)
    records = read_metrics(out / "ours")[1:]  # the first step warms up
    step_s = sum(r["time/step_s"] for r in records)
    return {"s_per_step": step_s / len(records),
            "generate_s": statistics.fmean(r["time/generate_s"] for r in records),
            "reward_wait_s": statistics.fmean(r["time/wait_reward_s"] for r in records),
            "reward_wait_share": sum(r["time/wait_reward_s"] for r in records) / step_s,
            "rewards": [r["reward_mean"] for r in read_metrics(out / "ours")]}


def run_trl(args: argparse.Namespace, start: Path, out: Path) -> dict:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from trainer_client.train.reward_overlap import EmbeddedRewardServer
    from trainer_client.trl_adapter import RewardServiceReward

    class StepClock(TrainerCallback):
        def __init__(self) -> None:
            self.ends: list[float] = []

        def on_train_begin(self, *a, **k) -> None:
            self.ends = [time.perf_counter()]

        def on_step_end(self, *a, **k) -> None:
            self.ends.append(time.perf_counter())

    torch.set_num_threads(args.threads)
    rows = [json.loads(line) for line in (start / "rl_train.jsonl").read_text().splitlines() if line.strip()]
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": r["prompt"]}], "task": r["task"],
                                  "reference": r["reference"]} for r in rows])
    tokenizer = AutoTokenizer.from_pretrained(start)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(start)
    completions = args.prompts_per_step * args.group_size
    trl_config = GRPOConfig(
        output_dir=str(out / "trl"), per_device_train_batch_size=args.micro_batch,
        gradient_accumulation_steps=completions // args.micro_batch, num_generations=args.group_size,
        max_completion_length=args.max_new_tokens, temperature=1.0, top_p=1.0, top_k=0, beta=args.beta,
        epsilon=0.2, epsilon_high=0.28, loss_type="dapo", scale_rewards="group", learning_rate=args.lr,
        lr_scheduler_type="constant", warmup_steps=0, adam_beta1=0.9, adam_beta2=0.99, weight_decay=0.0,
        max_grad_norm=1.0, max_steps=args.steps, logging_steps=1, save_strategy="no", report_to="none",
        use_cpu=True, disable_tqdm=True, disable_dropout=True, seed=args.seed, dataloader_num_workers=0)
    clock = StepClock()
    with EmbeddedRewardServer(out / "trl_reward_server.log", workers=1) as server:
        with RewardServiceReward(server.address, group_size=args.group_size) as reward:
            trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=reward, args=trl_config,
                                  train_dataset=dataset, callbacks=[clock])
            trainer.remove_callback(PrinterCallback)  # its per-step dicts would bury the table
            trainer.train()
    logs = [e for e in trainer.state.log_history if "reward" in e and "reward_service/score_s" in e]
    steps = [b - a for a, b in zip(clock.ends, clock.ends[1:])][1:]
    waits = [e["reward_service/score_s"] for e in logs][1:]
    return {"s_per_step": statistics.fmean(steps),
            "reward_wait_s": statistics.fmean(waits), "reward_wait_share": sum(waits) / sum(steps),
            "rewards": [e["reward"] for e in logs]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--start", default=str(ROOT / "runs" / "tiny_start"),
                        help="tiny start checkpoint (built there if missing)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--prompts-per-step", type=int, default=32)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--micro-batch", type=int, default=64, help="completions per forward/backward pass")
    parser.add_argument("--generation-batch-prompts", type=int, default=4, help="ours: prompts per generate call")
    parser.add_argument("--beta", type=float, default=0.01)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads, both trainers")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("ours", "trl"), help="run one side only")
    args = parser.parse_args(argv)
    if (args.prompts_per_step * args.group_size) % args.micro_batch:
        parser.error("--micro-batch must divide --prompts-per-step x --group-size (TRL's accumulation steps)")
    logging.basicConfig(level=logging.WARNING)
    start = ensure_start(Path(args.start))

    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, runner in (("ours", run_ours), ("trl", run_trl)):
            if args.only in (None, name):
                try:
                    results[name] = runner(args, start, Path(tmp))
                except ImportError as exc:
                    print(f"{name}: cannot run ({exc}); install it with `.venv/bin/pip install -e '.[trl]'`",
                          file=sys.stderr)
    k = max(1, args.steps // 4)
    print(f"torch {torch.__version__}, {args.threads} thread(s), start {start}, {args.prompts_per_step} prompts x "
          f"{args.group_size} completions per step, {args.max_new_tokens} new tokens, beta {args.beta}, lr {args.lr}, "
          f"{args.steps} steps (timing leaves out the first)")
    print(f"{'trainer':<8} {'s/step':>8} {'reward wait s':>14} {'wait share':>11} "
          f"{f'reward first {k} -> last {k}':>24}")
    for name, r in results.items():
        curve = f"{statistics.fmean(r['rewards'][:k]):.3f} -> {statistics.fmean(r['rewards'][-k:]):.3f}"
        print(f"{name:<8} {r['s_per_step']:>8.3f} {r['reward_wait_s']:>14.4f} {100 * r['reward_wait_share']:>10.2f}% "
              f"{curve:>24}")
    if len(results) == 2:
        ratio = results["ours"]["s_per_step"] / results["trl"]["s_per_step"]
        print(f"ours/trl step time: {ratio:.3f}x ({'faster' if ratio < 1 else 'slower'}); our reward wait: "
              f"{100 * results['ours']['reward_wait_share']:.2f}% of step time (goal < 5%)")
    print(json.dumps({name: {k2: v for k2, v in r.items() if k2 != "rewards"} for name, r in results.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
