"""Process reward model training: ours (``train-prm``) vs TRL's ``PRMTrainer``, same data, backbone, epochs.

Why: DESIGN.md principle 6 — the PRM trainer's quality and speed claims are measured side by
side with the peer. TRL removed ``PRMTrainer`` in 1.14 (huggingface/trl#7133; the last release
with ``trl.experimental.prm`` is 1.13.0), so the peer runs from a side install of trl 1.13.0
(``--trl-path``, put on ``PYTHONPATH`` of its worker process only; our venv keeps TRL 1.16):

    make bench-prm
    # or:  pip install --no-deps --target build/trl-prm trl==1.13.0
    #      HF_HUB_OFFLINE=1 python bench/bench_prm.py --trl-path build/trl-prm [--repeats 3 --n-train 1200]

Both trainers get the same generated train/test JSONL, the same backbone (the packaged
MiniLM unless ``--model``), epochs, batch size, learning rate, linear warmup (10%) and decay,
weight decay, grad clipping, dropout off, fp32, no gradient checkpointing, an eval each
epoch, and the same step separator (ours resolves ``"\\n"`` to ``[SEP]`` for WordPiece, which
drops ``"\\n"``; TRL is given that string too — with its default ``"\\n"`` it would get no
separator token at all). Each run is its own process; runs alternate (ours, TRL, TRL, ours, ...)
and the table reports medians. Step F1 is for the "wrong step" class, computed by the same
function (``step_metrics``) on each trainer's own held-out encoding. Wall time: model load +
tokenization + training + per-epoch evals + saving the checkpoint, measured inside the worker
after the imports.

Known encoding differences (TRL's, kept as is): no ``[CLS]`` prefix (it adds only a BOS),
no separator between the prompt and the first step, truncation from the right.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _worker_ours(args: argparse.Namespace) -> dict:
    import tqdm.auto  # noqa: F401  (imported before the clock starts, as the TRL worker's imports are)
    from transformers import AutoModelForTokenClassification, AutoTokenizer  # noqa: F401

    from trainer_client.prm.prm_train import PRMTrainConfig, train_prm

    started = time.perf_counter()
    result = train_prm(PRMTrainConfig(
        data=args.train, eval_data=args.test, out_dir=args.out, model=args.model, max_length=args.max_length,
        epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed, progress=False))
    m = result.metrics
    return {"trainer": "ours", "wall_s": time.perf_counter() - started, "accuracy": m["eval_step_accuracy"],
            "f1_wrong": m["eval_f1_wrong"], "majority": m["eval_majority_baseline"], "num_steps": m["num_eval_steps"],
            "f1_per_epoch": m["eval_f1_wrong_per_epoch"]}


def _worker_trl(args: argparse.Namespace) -> dict:
    import math

    import numpy as np
    import torch
    from datasets import Dataset
    from transformers import AutoModelForTokenClassification, AutoTokenizer
    from trl.experimental.prm import PRMConfig, PRMTrainer

    from reward_core.prm_inputs import ID2LABEL, make_spec
    from trainer_client.prm.step_data import read_examples
    from trainer_client.prm.step_metrics import step_metrics
    from trainer_client.rm.rm_train import default_model_path

    def rows(path: str) -> Dataset:
        return Dataset.from_list([{"prompt": e.prompt, "completions": list(e.completions), "labels": list(e.labels)}
                                  for e in read_examples(path)])

    per_epoch: list[float] = []
    last: dict = {}

    def compute_metrics(eval_pred) -> dict:
        logits, labels = eval_pred
        mask = labels != -100
        predicted = np.argmax(logits, axis=-1)[mask] == 1
        m = step_metrics(predicted.tolist(), (labels[mask] == 1).tolist())
        per_epoch.append(m.f1_wrong)
        last.update(accuracy=m.accuracy, f1_wrong=m.f1_wrong, majority=m.majority_baseline, num_steps=m.num_steps)
        return {"step_accuracy": m.accuracy, "f1_wrong": m.f1_wrong}

    started = time.perf_counter()
    path = args.model or default_model_path()
    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForTokenClassification.from_pretrained(
        path, num_labels=2, id2label=dict(ID2LABEL), label2id={v: k for k, v in ID2LABEL.items()})
    separator = make_spec(tokenizer, args.max_length).step_separator  # the separator ours uses
    train, test = rows(args.train), rows(args.test)
    total_steps = math.ceil(len(train) / args.batch_size) * args.epochs
    config = PRMConfig(
        output_dir=args.out, num_train_epochs=args.epochs, per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=64, learning_rate=args.lr, weight_decay=0.01, lr_scheduler_type="linear",
        warmup_steps=int(0.1 * total_steps), max_grad_norm=1.0, bf16=False, gradient_checkpointing=False,
        step_separator=separator, max_length=args.max_length, eval_strategy="epoch", save_strategy="no",
        report_to="none", logging_strategy="no", disable_tqdm=True, seed=args.seed, use_cpu=True,
    )
    trainer = PRMTrainer(model=model, args=config, train_dataset=train, eval_dataset=test,
                         processing_class=tokenizer, compute_metrics=compute_metrics)
    trainer.train()
    trainer.save_model(args.out)  # model + tokenizer, as ours writes its checkpoint inside its wall time
    wall = time.perf_counter() - started
    return {"trainer": "trl", "wall_s": wall, **last, "f1_per_epoch": per_epoch, "separator": separator}


def _cut_backbone(path: str | None, layers: int, out: Path) -> str:
    """The backbone's first ``layers`` transformer layers (pretrained weights), saved to ``out``."""
    from transformers import AutoModel, AutoTokenizer

    from trainer_client.rm.rm_train import default_model_path

    path = path or default_model_path()
    model = AutoModel.from_pretrained(path)
    model.encoder.layer = model.encoder.layer[:layers]
    model.config.num_hidden_layers = layers
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(path).save_pretrained(out)
    return str(out)


def run_worker(kind: str, args: argparse.Namespace, data: Path, out: Path) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRL_EXPERIMENTAL_SILENCE="1", TOKENIZERS_PARALLELISM="false")
    if kind == "trl":
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(args.trl_path).resolve()), env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, __file__, "--worker", kind, "--train", str(data / "train.jsonl"),
           "--test", str(data / "test.jsonl"), "--out", str(out), "--epochs", str(args.epochs),
           "--batch-size", str(args.batch_size), "--lr", str(args.lr), "--max-length", str(args.max_length),
           "--seed", str(args.seed)] + (["--model", args.model] if args.model else [])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} worker failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", choices=("ours", "trl"), help=argparse.SUPPRESS)
    parser.add_argument("--train", help=argparse.SUPPRESS)
    parser.add_argument("--test", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--trl-path", default="build/trl-prm", help="a trl 1.13.0 install (pip --target)")
    parser.add_argument("--model", help="backbone path (default: the packaged MiniLM)")
    parser.add_argument("--n-train", type=int, default=800)
    parser.add_argument("--n-test", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1, help="interleaved runs per trainer (median reported)")
    parser.add_argument("--skip-trl", action="store_true", help="run ours only")
    parser.add_argument("--layers", type=int, help="cut the (BERT-style) backbone to its first N layers, for a "
                                                  "quick CPU run; both trainers get the cut backbone")
    parser.add_argument("--kinds", default=None, help="comma-separated corruption kinds (default: all)")
    parser.add_argument("--corrupt-prob", type=float, default=0.2, help="per-step corruption chance")
    args = parser.parse_args()
    if args.worker:
        result = _worker_ours(args) if args.worker == "ours" else _worker_trl(args)
        print(json.dumps(result))
        return 0

    from trainer_client.prm.step_problems import write_splits

    kinds = ["ours"] if args.skip_trl else ["ours", "trl"]
    if "trl" in kinds and not (Path(args.trl_path) / "trl" / "experimental" / "prm").is_dir():
        print(f"error: no trl.experimental.prm under {args.trl_path}: TRL >= 1.14 has no PRMTrainer "
              f"(huggingface/trl#7133); run: pip install --no-deps --target {args.trl_path} trl==1.13.0",
              file=sys.stderr)
        return 2
    results: dict[str, list[dict]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(prefix="bench_prm_") as tmp:
        data = Path(tmp) / "data"
        kinds_arg = tuple(args.kinds.split(",")) if args.kinds else None
        write_splits(data, args.n_train, args.n_test, args.seed, "local",
                     **({"kinds": kinds_arg} if kinds_arg else {}), corrupt_prob=args.corrupt_prob)
        if args.layers:
            args.model = _cut_backbone(args.model, args.layers, Path(tmp) / "backbone")
        for r in range(args.repeats):
            for kind in (kinds if r % 2 == 0 else kinds[::-1]):
                res = run_worker(kind, args, data, Path(tmp) / f"{kind}-{r}")
                results[kind].append(res)
                print(f"run {r} {kind}: {json.dumps(res)}", flush=True)
    backbone = f"packaged MiniLM, first {args.layers} layers" if args.layers else (args.model or "packaged MiniLM")
    print(f"\nPRM training, {args.n_train} train / {args.n_test} held-out problems, {args.epochs} epochs, "
          f"batch {args.batch_size}, lr {args.lr}, backbone {backbone}, "
          f"{args.repeats} interleaved run(s) each, medians:")
    print(f"{'trainer':<8} {'F1(wrong)':>10} {'step acc':>9} {'majority':>9} {'steps':>6} {'wall s':>8}")
    for kind, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in ("f1_wrong", "accuracy", "wall_s")}
        print(f"{kind:<8} {med['f1_wrong']:>10.4f} {med['accuracy']:>9.4f} {runs[0]['majority']:>9.4f} "
              f"{runs[0]['num_steps']:>6} {med['wall_s']:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
