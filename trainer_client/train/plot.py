"""``trainer-client plot RUN_DIR``: reward and KL curves from ``metrics.jsonl`` to ``RUN_DIR/curves.png``.

With ``run.eval_every``, :func:`plot_eval` draws the held-out metrics (``eval/*``) to
``RUN_DIR/eval_curves.png`` (the trainers call it at the end of the run).

The KL panel shows the KL to the reference policy (``kl``) when the run had one
(beta > 0), else the old-vs-new policy estimate of each update (``approx_kl``).
matplotlib is optional: without it ``plot_run`` raises ``PlotUnavailable`` saying how to
install it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainer_client.train.run_logging import read_metrics

logger = logging.getLogger(__name__)


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def moving_average(values: Sequence[float | None], window: int) -> list[float | None]:
    """Trailing mean over the last ``window`` non-missing values (None while there are none)."""
    out: list[float | None] = []
    for i in range(len(values)):
        recent = [v for v in values[max(0, i - window + 1): i + 1] if v is not None]
        out.append(sum(recent) / len(recent) if recent else None)
    return out


def curves(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The series the figure draws: steps, reward mean/std, the KL series and its name."""
    steps = [r["step"] for r in records]
    kl_key = "kl" if any(r.get("kl") is not None for r in records) else "approx_kl"
    return {"steps": steps, "reward_mean": [r.get("reward_mean") for r in records],
            "reward_std": [r.get("reward_std") for r in records], "kl_key": kl_key,
            "kl": [r.get(kl_key) for r in records]}


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailable("matplotlib is not installed: `pip install 'reward-suite[train]'` "
                              "(or `pip install matplotlib`)") from exc
    return plt


EVAL_PREFIX = "eval/"


def eval_curves(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Steps that evaluated, and each overall eval series (accuracy, reward_mean, pass@k, maj@k) on them."""
    rows = [r for r in records if r.get("eval/samples") is not None]
    names = sorted({k[len(EVAL_PREFIX):] for r in rows for k in r if k.startswith(EVAL_PREFIX)
                    and "/" not in k[len(EVAL_PREFIX):] and k[len(EVAL_PREFIX):].startswith(
                        ("accuracy", "reward_mean", "pass@", "maj@"))})
    return {"steps": [r["step"] for r in rows], **{n: [r.get(EVAL_PREFIX + n) for r in rows] for n in names}}


def plot_eval_at_end(run_dir: str | Path) -> Path | None:
    """What a trainer's periodic eval does at the end of a run: ``plot_eval``, or, without matplotlib (or a
    resumed run with no step left to draw), a logged note and None."""
    try:
        path = plot_eval(run_dir)
    except (PlotUnavailable, FileNotFoundError) as exc:
        logger.info("no eval plot: %s", exc)
        return None
    logger.info("eval curves: %s", path)
    return path


def plot_eval(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Draws the held-out curves (``eval/*`` lines of metrics.jsonl) to ``RUN_DIR/eval_curves.png``."""
    plt = _pyplot()
    c = eval_curves(read_metrics(run_dir))
    if not c["steps"]:
        raise FileNotFoundError(f"{Path(run_dir) / 'metrics.jsonl'}: no eval/* metrics to plot")
    fig, (ax_a, ax_r) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for name, values in c.items():
        if name not in ("steps", "reward_mean"):
            ax_a.plot(c["steps"], [float("nan") if v is None else v for v in values], marker="o", label=name)
    ax_a.set_ylabel("held-out (unscored excluded)")
    ax_a.set_ylim(-0.02, 1.02)
    ax_a.legend(loc="best")
    ax_a.grid(alpha=0.3)
    ax_r.plot(c["steps"], [float("nan") if v is None else v for v in c.get("reward_mean", [])], marker="o",
              color="tab:green")
    ax_r.set_ylabel("held-out reward mean")
    ax_r.set_xlabel("step")
    ax_r.grid(alpha=0.3)
    fig.suptitle(f"{run_dir}: evaluation")
    fig.tight_layout()
    path = Path(out) if out else Path(run_dir) / "eval_curves.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_run(run_dir: str | Path, out: str | Path | None = None, window: int = 5) -> Path:
    """Draws the curves of ``run_dir``; returns the image path."""
    plt = _pyplot()
    records = read_metrics(run_dir)
    if not records:
        raise FileNotFoundError(f"{Path(run_dir) / 'metrics.jsonl'}: no metrics to plot")
    c = curves(records)
    fig, (ax_r, ax_k) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    ax_r.plot(c["steps"], [float("nan") if v is None else v for v in c["reward_mean"]], alpha=0.35, label="per step")
    ax_r.plot(c["steps"], [float("nan") if v is None else v for v in moving_average(c["reward_mean"], window)],
              label=f"mean of last {window}")
    ax_r.set_ylabel("reward mean")
    ax_r.legend(loc="lower right")
    ax_r.grid(alpha=0.3)
    ax_k.plot(c["steps"], [float("nan") if v is None else v for v in c["kl"]], color="tab:red")
    ax_k.set_ylabel("KL to reference" if c["kl_key"] == "kl" else "approx_kl (old vs new policy)")
    if c["kl_key"] != "kl":
        ax_k.set_title("no reference model (beta = 0); a single-pass update has approx_kl 0", fontsize=9)
    ax_k.set_xlabel("step")
    ax_k.grid(alpha=0.3)
    fig.suptitle(str(run_dir))
    fig.tight_layout()
    path = Path(out) if out else Path(run_dir) / "curves.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
