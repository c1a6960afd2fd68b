"""DPO step time: our ``trainer-client dpo`` step vs TRL's ``DPOTrainer``, same model and pairs, one run.

Why: the goal "our DPO step within 1.5x of TRL's" is a claim; this prints the figures. Both train
a tiny Llama built from a config (``examples.tiny``, char-level chat tokenizer, no hub) from the
same weights, against a frozen reference that is a copy of the start, on the same preference pairs
(``trainer-client make-prefs``'s generator, the reward-model training JSONL), with the same loss
(sigmoid, beta 0.1), pairs per step, ``max_length``, learning rate, AdamW, gradient clipping 1.0,
float32 (TRL's configs turn bf16 autocast on by default, which on a CPU is several times slower:
it is turned off here) and torch CPU threads. TRL gets the pairs as conversational rows, so both render them with
the same chat template and train on the same tokens.

Seconds per step are wall-clock between consecutive step ends (batch building, both forward
passes, backward, optimizer and the loop's own work all inside); TRL's from a ``TrainerCallback``'s
``on_step_end``. The two run in alternating blocks of ``--steps`` steps, ``--rounds`` times
(interleaved, so a machine-wide slowdown hits both), the first step of each block left out; the
figure is the median over all kept steps.

    make bench-dpo
    .venv/bin/python -m bench.bench_dpo [--rounds 5 --steps 10 --batch-size 8 --size nano --threads 1]
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import random
import statistics
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from examples.tiny import build_tiny_lm, build_tokenizer  # noqa: E402
from trainer_client.dpo.dpo_train import DPOConfig, dpo_update, encode_pairs  # noqa: E402
from trainer_client.fine_tuning import disable_dropout, optimizer_and_schedule  # noqa: E402
from trainer_client.rm.preference_data import PreferencePair, generate_pairs  # noqa: E402


def our_block(model, ref, pairs: list[PreferencePair], tokenizer, args, seed: int) -> list[float]:
    """Step-end-to-step-end seconds of ``args.steps`` of our DPO steps (a fresh optimizer, as TRL's train())."""
    config = DPOConfig(data="-", out_dir="-", model="-", lr=args.lr, batch_size=args.batch_size,
                       max_length=args.max_length)
    encoded = encode_pairs(tokenizer, pairs, args.max_length)
    optimizer, scheduler = optimizer_and_schedule(model, config, args.steps)
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    cpu = torch.device("cpu")
    model.train()
    ends = [time.perf_counter()]
    for step in range(args.steps):
        idx = order[step * args.batch_size:(step + 1) * args.batch_size]
        dpo_update(model, ref, encoded.batch(idx, tokenizer.pad_token_id, cpu), None, config, optimizer, scheduler,
                   cpu)
        ends.append(time.perf_counter())
    return [b - a for a, b in zip(ends[1:], ends[2:])]  # the first step (warm-up) left out


def trl_trainer(model, ref, pairs: list[PreferencePair], tokenizer, args, out_dir: str):
    """TRL's DPOTrainer on the same pairs (conversational rows), and the list its callback fills with step ends."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import DPOConfig as TRLDPOConfig
    from trl import DPOTrainer

    ends: list[float] = []

    class StepEnds(TrainerCallback):
        def on_train_begin(self, *_, **__):
            ends.clear()
            ends.append(time.perf_counter())

        def on_step_end(self, *_, **__):
            ends.append(time.perf_counter())

    rows = [{"prompt": [{"role": "user", "content": p.prompt}],
             "chosen": [{"role": "assistant", "content": p.chosen}],
             "rejected": [{"role": "assistant", "content": p.rejected}]} for p in pairs]
    config = TRLDPOConfig(output_dir=out_dir, per_device_train_batch_size=args.batch_size, max_steps=args.steps,
                          learning_rate=args.lr, lr_scheduler_type="linear", warmup_steps=0, max_grad_norm=1.0,
                          weight_decay=0.0, beta=0.1, loss_type=["sigmoid"], max_length=args.max_length,
                          report_to=[], use_cpu=True, bf16=False, save_strategy="no", logging_strategy="no",
                          disable_tqdm=True, dataloader_num_workers=0, seed=0)
    trainer = DPOTrainer(model=model, ref_model=ref, args=config, train_dataset=Dataset.from_list(rows),
                         processing_class=tokenizer, callbacks=[StepEnds()])
    return trainer, ends


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved blocks per trainer (default: 5)")
    parser.add_argument("--steps", type=int, default=10, help="steps per block, the first left out (default: 10)")
    parser.add_argument("--batch-size", type=int, default=8, help="preference pairs per step (default: 8)")
    parser.add_argument("--max-length", type=int, default=512, help="max tokens per sequence (default: 512)")
    parser.add_argument("--size", default="nano", help="tiny model size: nano, micro, tiny (default: nano)")
    parser.add_argument("--lr", type=float, default=1e-4, help="learning rate (default: 1e-4)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: 1)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    tokenizer = build_tokenizer()
    pairs = generate_pairs(args.batch_size * args.steps, seed=0, split="train")
    start = build_tiny_lm(tokenizer, args.size, seed=0)
    disable_dropout(start)
    ours, theirs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            model, ref = copy.deepcopy(start), copy.deepcopy(start).eval().requires_grad_(False)
            trainer, ends = trl_trainer(model, ref, pairs, tokenizer, args, tmp)
            trainer.train()
            theirs += [b - a for a, b in zip(ends[1:], ends[2:])]
            model, ref = copy.deepcopy(start), copy.deepcopy(start).eval().requires_grad_(False)
            ours += our_block(model, ref, pairs, tokenizer, args, seed=round_)
    encoded = encode_pairs(tokenizer, pairs, args.max_length)
    tokens = sum(len(e.input_ids) for e in encoded.chosen + encoded.rejected) / (2 * len(pairs))
    ours_s, trl_s = statistics.median(ours), statistics.median(theirs)
    result = {"ours_step_s": round(ours_s, 4), "trl_step_s": round(trl_s, 4),
              "ratio_ours_over_trl": round(ours_s / trl_s, 3), "goal": "ratio <= 1.5", "steps_each": len(ours),
              "rounds": args.rounds, "pairs_per_step": args.batch_size,
              "mean_tokens_per_sequence": round(tokens, 1), "model": args.size, "threads": args.threads,
              "parameters": sum(p.numel() for p in start.parameters())}
    print(json.dumps(result))
    print(f"DPO step (median of {len(ours)} interleaved steps each): ours {ours_s * 1000:.1f} ms, "
          f"TRL {trl_s * 1000:.1f} ms -> ours/TRL = {ours_s / trl_s:.2f} (goal <= 1.5)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
