"""``trainer-client plot RUN_DIR``: reward and KL curves from ``metrics.jsonl`` to ``RUN_DIR/curves.png``.

The KL panel shows the KL to the reference policy (``kl``) when the run had one
(beta > 0), else the old-vs-new policy estimate of each update (``approx_kl``).
matplotlib is optional: without it ``plot_run`` raises ``PlotUnavailable`` saying how to
install it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainer_client.train.run_logging import read_metrics


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


def plot_run(run_dir: str | Path, out: str | Path | None = None, window: int = 5) -> Path:
    """Draws the curves of ``run_dir``; returns the image path."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailable("matplotlib is not installed: `pip install matplotlib` (it is not yet a "
                              "dependency of this project)") from exc
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
