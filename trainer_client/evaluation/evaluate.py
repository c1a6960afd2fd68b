"""Generate n completions per held-out prompt, score them through the reward service, summarise.

    options = EvalOptions(n=4, ks=(1, 4), temperature=0.7, max_new_tokens=32)
    with open_scorer(reward_config, out_dir) as scorer:
        result = evaluate(model, tokenizer, read_prompts("held_out.jsonl"), scorer, options)
    result.summary["overall"]["pass@4"]

``trainer-client eval`` and the trainers' ``run.eval_every`` both call :func:`evaluate`.
Temperature 0 decodes greedily (n must then be 1: greedy gives one completion). Sampling
runs under its own seed in a forked RNG, so an evaluation inside a training run neither
depends on nor disturbs the training's random stream.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from reward_core.clients import GroupResult
from trainer_client.evaluation.metrics import Sample, check_ks, summarize_by_task
from trainer_client.train.collect import group_payload
from trainer_client.train.config import CHAT_TEMPLATE_MODES, SamplingConfig
from trainer_client.train.reward_overlap import OverlappedScorer
from trainer_client.train.rollouts import PromptRow, generate_groups


@dataclass(frozen=True)
class EvalOptions:
    """How to sample and what to report."""

    n: int = 1  # completions per prompt
    ks: tuple[int, ...] = (1,)  # the k of pass@k and maj@k
    temperature: float = 0.0  # 0: greedy (n must be 1)
    top_p: float = 1.0
    max_new_tokens: int = 32
    batch_size: int = 8  # prompts per generate() call
    seed: int = 0
    correct_at: float = 1.0  # a scored sample is correct when its score is at least this
    stop_strings: tuple[str, ...] = ()
    chat_template: str = "auto"  # data.chat_template: auto, true or false (prompts.render_prompt)

    def __post_init__(self) -> None:
        if self.n < 1 or self.batch_size < 1 or self.max_new_tokens < 1:
            raise ValueError(f"need n >= 1, batch_size >= 1, max_new_tokens >= 1; got {self.n}, {self.batch_size}, "
                             f"{self.max_new_tokens}")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError(f"need temperature >= 0 (0: greedy) and 0 < top_p <= 1; got {self.temperature}, "
                             f"{self.top_p}")
        if self.temperature == 0 and self.n != 1:
            raise ValueError(f"temperature 0 decodes greedily: every one of n={self.n} samples would be the same; "
                             "use n=1, or a temperature > 0 to sample")
        check_ks(self.ks, self.n)
        if self.chat_template not in CHAT_TEMPLATE_MODES:
            raise ValueError(f"chat_template must be one of {CHAT_TEMPLATE_MODES}, got {self.chat_template!r}")


@dataclass
class EvalResult:
    """The per-task summary and one record per completion (prompt order, then sample order)."""

    summary: dict[str, dict[str, Any]]
    records: list[dict[str, Any]]
    options: EvalOptions


def _records(rows: Sequence[PromptRow], texts: Sequence[str],
             results: Sequence[GroupResult]) -> list[dict[str, Any]]:
    out = []
    for row, group in zip(rows, results):
        for index, r in enumerate(group.results):
            out.append({"prompt_id": row.id, "task": row.task, "sample": index, "completion": texts[len(out)],
                        "score": r.reward, "status": r.status.name, "scored": r.scored, "extracted": r.extracted,
                        "reference": dict(row.reference), "error": r.error})
    return out


def samples_of(records: Sequence[dict[str, Any]]) -> list[Sample]:
    """The metrics' view of per-sample records (as :func:`evaluate` writes them)."""
    return [Sample(str(r["prompt_id"]), str(r["task"]), r["score"] if r["scored"] else None, str(r["extracted"]),
                   str(r["status"])) for r in records]


def evaluate(model: Any, tokenizer: Any, rows: Sequence[PromptRow], scorer: OverlappedScorer,
             options: EvalOptions, tag: str = "eval") -> EvalResult:
    """``options.n`` completions per row, scored (each batch while the next generates), summarised."""
    if not rows:
        raise ValueError("no prompts to evaluate")
    sampling = SamplingConfig(prompts_per_step=1, group_size=options.n, temperature=options.temperature or 1.0,
                              top_p=options.top_p, max_new_tokens=options.max_new_tokens,
                              stop_strings=options.stop_strings, generation_batch_prompts=options.batch_size)
    greedy = options.temperature == 0
    device = next(model.parameters()).device
    texts: list[str] = []
    jobs = []
    with torch.random.fork_rng(devices=[torch.cuda.current_device()] if device.type == "cuda" else []):
        torch.manual_seed(options.seed)
        for start in range(0, len(rows), options.batch_size):
            chunk = list(rows[start: start + options.batch_size])
            rollouts = generate_groups(model, tokenizer, chunk, sampling, greedy=greedy,
                                       chat_template=options.chat_template)
            texts += rollouts.texts
            jobs.append(scorer.submit(group_payload(chunk, rollouts, f"{tag}-c{start}")))
    results = [group for job in jobs for group in scorer.wait(job)]
    records = _records(rows, texts, results)
    return EvalResult(summarize_by_task(samples_of(records), options.ks, options.n, options.correct_at), records,
                      options)


def options_dict(options: EvalOptions) -> dict[str, Any]:
    """The options as JSON-friendly values (lists for tuples)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(options).items()}
