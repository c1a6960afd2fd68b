"""Weights & Biases beside TensorBoard: offline mode writes a run without a network; without the
package, ``run.wandb`` is a clear error naming the extra."""

from __future__ import annotations

import sys

import pytest

from reward_core.extras import MissingExtra
from trainer_client.train.run_logging import RunLogger
from trainer_client.train.wandb_log import RUN_ID_FILE, check_wandb, open_wandb


def test_without_wandb_installed_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(MissingExtra, match=r"pip install 'reward-suite\[wandb\]'"):
        check_wandb()


@pytest.mark.timeout(180)
def test_offline_run_logs_metrics_and_a_resume_continues_the_same_run(tmp_path, monkeypatch):
    pytest.importorskip("wandb", reason="the wandb extra is not installed")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    for name in ("WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_PROJECT", "WANDB_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    logger = RunLogger(tmp_path, tensorboard=False,
                       wandb_run=open_wandb(tmp_path, "", "tiny", {"grpo": {"beta": 0.04}}))
    logger.log(1, {"reward_mean": 0.5, "kl": float("nan"), "note": "text"})
    logger.log(2, {"reward_mean": 0.75})
    logger.close()
    run_id = (tmp_path / RUN_ID_FILE).read_text().strip()
    runs = list((tmp_path / "wandb").glob(f"offline-run-*-{run_id}"))
    assert runs and list(runs[0].glob(f"run-{run_id}.wandb")), list((tmp_path / "wandb").iterdir())
    assert (tmp_path / "metrics.jsonl").read_text().count("\n") == 2  # metrics.jsonl stays the record of truth

    again = open_wandb(tmp_path, "", "tiny", {})
    assert again.id == run_id
    again.finish()
