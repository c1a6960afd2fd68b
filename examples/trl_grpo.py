"""TRL's ``GRPOTrainer`` trained on our reward service: one process, or many GPUs through accelerate/torchrun.

Why: the multi-GPU route. TRL runs data-parallel under ``accelerate launch`` or ``torchrun``
(DDP, or FSDP/DeepSpeed through an accelerate config); every rank generates its share of
the batch and calls the reward function with its own completions, so every rank opens its
own channel to the reward service (point them all at one endpoint, or a ``dns:///`` name
over several replicas) and TRL gathers the rewards across ranks before computing group
advantages. Needs the ``trl`` extra (``pip install -e '.[trl]'``).

    python examples/trl_grpo.py --model runs/tiny_start --data runs/tiny_start/rl_train.jsonl    # starts a server
    python examples/trl_grpo.py --endpoint localhost:50051 --model PATH --data FILE --steps 200
    accelerate launch --num_processes 8 examples/trl_grpo.py --endpoint reward.internal:50051 --model PATH --data FILE
    torchrun --nproc_per_node 8 examples/trl_grpo.py --endpoint reward.internal:50051 --model PATH --data FILE
    torchrun --nproc_per_node 2 examples/trl_grpo.py --cpu --endpoint localhost:50051 ...   # 2 CPU processes (gloo)

``--data`` is a JSONL file of ``{"prompt", "reference", "task"}`` lines (the format of
``trainer-client grpo`` and of ``rl_train.jsonl`` from ``examples.tiny.make_start``).
``--prompts-per-device`` prompts x ``--num-generations`` completions are sampled on each
rank per step. Rank 0 writes TRL's log history to ``OUT/log_history.jsonl``; every rank
writes ``OUT/reward_calls_rank<R>.json`` (calls and completions it sent to the service).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", help="reward service host:port (default: start one, single process only)")
    parser.add_argument("--model", required=True, help="local causal LM directory (save_pretrained layout)")
    parser.add_argument("--data", required=True, help="JSONL prompts {prompt, reference, task}")
    parser.add_argument("--out", default="runs/trl_grpo", help="output directory")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--num-generations", type=int, default=8, help="completions per prompt (G)")
    parser.add_argument("--prompts-per-device", type=int, default=4, help="prompts per rank per step")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--beta", type=float, default=0.0, help="KL coefficient (0: no reference model)")
    parser.add_argument("--cpu", action="store_true", help="train on CPU (gloo across processes)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def load_dataset(path: str):
    from datasets import Dataset

    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    return Dataset.from_list([{"prompt": [{"role": "user", "content": r["prompt"]}], "task": r["task"],
                               "reference": r.get("reference") or {}} for r in rows])


def train(args: argparse.Namespace, endpoint: str) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from trainer_client.trl_adapter import RewardServiceReward

    out = Path(args.out)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(args.model)
    config = GRPOConfig(
        output_dir=str(out), per_device_train_batch_size=args.prompts_per_device * args.num_generations,
        num_generations=args.num_generations, max_completion_length=args.max_new_tokens, max_steps=args.steps,
        learning_rate=args.lr, beta=args.beta, top_k=0, epsilon_high=0.28, lr_scheduler_type="constant",
        logging_steps=1, save_strategy="no", report_to="none", use_cpu=args.cpu, disable_tqdm=True, seed=args.seed)
    with RewardServiceReward(endpoint, group_size=args.num_generations) as reward:
        calls: list[int] = []
        trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=_counting(reward, calls),
                              args=config, train_dataset=load_dataset(args.data))
        trainer.train()
    rank = trainer.accelerator.process_index
    out.mkdir(parents=True, exist_ok=True)
    (out / f"reward_calls_rank{rank}.json").write_text(json.dumps({"calls": len(calls), "completions": calls}))
    if trainer.accelerator.is_main_process:
        with open(out / "log_history.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(entry) + "\n" for entry in trainer.state.log_history)


def _counting(reward, calls: list[int]):
    """The reward function, also noting how many completions each call carried."""
    def reward_service(prompts, completions, **kwargs):
        calls.append(len(completions))
        return reward(prompts, completions, **kwargs)
    return reward_service


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with contextlib.ExitStack() as stack:
        endpoint = args.endpoint
        if endpoint is None:
            if int(os.environ.get("WORLD_SIZE", "1")) > 1:
                sys.exit("error: give --endpoint when launching several processes (one service for all ranks)")
            from trainer_client.train.reward_overlap import EmbeddedRewardServer

            server = EmbeddedRewardServer(Path(args.out) / "reward_server.log", workers=1)
            endpoint = stack.enter_context(server).address
        train(args, endpoint)
    return 0


if __name__ == "__main__":
    sys.exit(main())
