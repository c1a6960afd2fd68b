"""Bradley–Terry reward-model training: our trainer vs TRL's ``RewardTrainer``, side by side.

Why: "time no worse, accuracy at least TRL's" is a claim; this prints the figures. Both
trainers get the same generated preference data, the same MiniLM backbone, the same token
ids (``encode_pair``: text pair, ``prompt_left`` truncation, handed to TRL pre-tokenized),
epochs, batch size, learning rate, warmup and schedule, and are timed end to end (load the
model, train, evaluate the held-out set, save). Held-out accuracy is computed by the same
scoring code for both, each model scored on the inputs it was trained on (TRL's collator
passes no ``token_type_ids``).

    .venv/bin/pip install trl          # bench-only; keeps torch as installed
    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_rm_training.py --n-train 2000 --n-test 500 --epochs 1
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from trainer_client.rm.bt_loss import pairwise_accuracy  # noqa: E402
from trainer_client.rm.preference_data import read_preferences, write_splits  # noqa: E402
from trainer_client.rm.rm_train import (  # noqa: E402
    RewardTrainConfig,
    default_model_path,
    encode_prefs,
    load_model_and_tokenizer,
    score_all,
    train_reward_model,
)


def run_ours(args: argparse.Namespace, data: Path, out: Path) -> dict:
    config = RewardTrainConfig(
        data=str(data / "train.jsonl"), eval_data=str(data / "test.jsonl"), out_dir=str(out / "ours"),
        max_length=args.max_length, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
        warmup_ratio=args.warmup_ratio, weight_decay=0.0, max_grad_norm=1.0, seed=args.seed, progress=False,
    )
    started = time.perf_counter()
    result = train_reward_model(config)
    return {"accuracy": result.eval_accuracy, "wall_s": time.perf_counter() - started,
            "train_loss": result.train_loss[-1]}


def run_trl(args: argparse.Namespace, data: Path, out: Path) -> dict:
    from datasets import Dataset
    from trl import RewardConfig, RewardTrainer

    started = time.perf_counter()
    model, tokenizer = load_model_and_tokenizer(default_model_path())
    train = encode_prefs(tokenizer, read_preferences(data / "train.jsonl"), args.max_length, "prompt_left")
    test = encode_prefs(tokenizer, read_preferences(data / "test.jsonl"), args.max_length, "prompt_left")
    dataset = Dataset.from_dict({"chosen_ids": [e.input_ids for e in train.chosen],
                                 "rejected_ids": [e.input_ids for e in train.rejected]})
    trl_config = RewardConfig(
        output_dir=str(out / "trl"), num_train_epochs=args.epochs, per_device_train_batch_size=args.batch_size,
        learning_rate=args.lr, warmup_steps=args.warmup_ratio, lr_scheduler_type="linear", weight_decay=0.0,
        max_grad_norm=1.0, max_length=args.max_length, seed=args.seed, data_seed=args.seed, report_to="none",
        save_strategy="no", logging_steps=50, disable_tqdm=True, use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0, center_rewards_coefficient=None,
        gradient_checkpointing=False,  # TRL's default is True: it trades compute for memory, which ours does not
    )
    trainer = RewardTrainer(model=model, args=trl_config, train_dataset=dataset, processing_class=tokenizer)
    stats = trainer.train()
    # Score held-out pairs as TRL trained them: same ids, no token_type_ids.
    chosen = [e._replace(token_type_ids=None) for e in test.chosen]
    rejected = [e._replace(token_type_ids=None) for e in test.rejected]
    rewards = score_all(trainer.model, tokenizer, chosen + rejected, 128, torch.device("cpu"), "float32")
    n = len(chosen)
    accuracy = pairwise_accuracy(rewards[:n], rewards[n:])
    trainer.save_model(str(out / "trl"))
    return {"accuracy": accuracy, "wall_s": time.perf_counter() - started, "train_loss": stats.training_loss}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-train", type=int, default=2000)
    parser.add_argument("--n-test", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--warmup-ratio", type=float, default=0.1)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("ours", "trl"), help="run one side only")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_splits(root / "data", args.n_train, args.n_test, args.seed)
        results = {}
        for name, runner in (("ours", run_ours), ("trl", run_trl)):
            if args.only in (None, name):
                try:
                    results[name] = runner(args, root / "data", root)
                except ImportError as exc:
                    print(f"{name}: cannot run ({exc}); install it with `.venv/bin/pip install trl`", file=sys.stderr)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.n_train} train / {args.n_test} "
          f"held-out pairs, {args.epochs} epoch(s), batch {args.batch_size}, lr {args.lr}, "
          f"max_length {args.max_length}")
    print(f"{'trainer':<8} {'held-out acc':>12} {'wall s':>8} {'final train loss':>17}")
    for name, r in results.items():
        print(f"{name:<8} {r['accuracy']:>12.4f} {r['wall_s']:>8.1f} {r['train_loss']:>17.4f}")
    if len(results) == 2:
        ours, trl = results["ours"], results["trl"]
        print(f"ours/trl: accuracy {ours['accuracy'] / trl['accuracy']:.3f}x, "
              f"wall time {ours['wall_s'] / trl['wall_s']:.3f}x")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
