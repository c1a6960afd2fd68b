"""The ladder comparison's table and figure, from its ``results.json`` record.

    print(format_table(results))               # one row per method: start, final, best, budget, time
    plot_curves(results, "runs/ladder/ladder.png")

``python -m examples.ladder_report runs/ladder/results.json`` redraws both from a finished run.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

LABELS = {"sft": "SFT (gold solutions)", "dpo": "DPO (start's verifier-ranked pairs)",
          "rm_ppo": "RM + PPO (learned reward)", "grpo": "GRPO (verifier)"}


def format_table(results: Mapping[str, Any]) -> str:
    """Held-out greedy accuracy at the start, at the end and at best, with each method's budget and wall time."""
    heads = ["method", "start", "final", "best", "steps", "prompts", "golds", "samples", "wall s"]
    rows = []
    for name, m in results["methods"].items():
        rows.append([name, f"{m['accuracy'][0]:.3f}", f"{m['final_accuracy']:.3f}", f"{m['best_accuracy']:.3f}",
                     str(m["policy_steps"]), str(m["prompts_seen"]), str(m.get("gold_completions", 0)),
                     str(m["generated_samples"]), f"{m['wall_time_s']:.0f}"])
    widths = [max(len(r[i]) for r in [heads, *rows]) for i in range(len(heads))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [heads, *rows]]
    start = results["start"]
    lines.append(f"(held-out greedy accuracy on {start['eval_rows']} rows; start {start['greedy_accuracy']:.3f}; "
                 f"total {results['wall_time_s']:.0f} s)")
    return "\n".join(lines)


def plot_curves(results: Mapping[str, Any], out: str | Path) -> Path:
    """Held-out greedy accuracy against policy steps, one line per method, the start as a dotted line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    config = results["config"]
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, m in results["methods"].items():
        ax.plot(m["steps"], m["accuracy"], marker="o", label=f"{LABELS.get(name, name)}: {m['final_accuracy']:.2f}")
    ax.axhline(results["start"]["greedy_accuracy"], color="grey", linestyle=":", label="start")
    ax.set_xlabel(f"policy optimizer steps ({config['prompts_per_step']} training prompts each)")
    ax.set_ylabel(f"held-out accuracy, greedy ({results['start']['eval_rows']} prompts)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("One start, one budget: SFT, DPO, RM + PPO, GRPO on the tiny arithmetic task")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=9)
    fig.tight_layout()
    path = Path(out)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        raise SystemExit("usage: python -m examples.ladder_report RESULTS_JSON")
    path = Path(args[0])
    results = json.loads(path.read_text())
    print(format_table(results))
    print(f"wrote {plot_curves(results, path.with_name('ladder.png'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
