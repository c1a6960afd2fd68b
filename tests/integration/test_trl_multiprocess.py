"""The documented multi-process route: ``torchrun`` launches TRL's GRPOTrainer on 2 CPU processes (gloo).

examples/trl_grpo.py is launched exactly as docs/clients.md says (``--cpu`` standing in for GPUs);
each rank scores its own completions through the reward service, and TRL gathers the
rewards of both ranks into one logged mean.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.grpo_fixtures import save_tiny_policy, write_prompts

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trl_grpo.py"
G, PROMPTS, STEPS = 4, 2, 2


def test_two_torchrun_ranks_train_on_the_reward_service(reward_server, tmp_path):
    pytest.importorskip("trl")
    model = save_tiny_policy(tmp_path / "model")
    data = write_prompts(tmp_path / "prompts.jsonl", n=32)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(EXAMPLE),
               "--cpu", "--endpoint", reward_server.address, "--model", str(model), "--data", str(data),
               "--out", str(out), "--steps", str(STEPS), "--num-generations", str(G),
               "--prompts-per-device", str(PROMPTS), "--max-new-tokens", "12"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in (0, 1):
        calls = json.loads((out / f"reward_calls_rank{rank}.json").read_text())
        assert calls["completions"] == [PROMPTS * G] * STEPS  # each rank scored its own share, every step
    logs = [json.loads(line) for line in (out / "log_history.jsonl").read_text().splitlines()]
    steps = [e for e in logs if "rewards/reward_service/mean" in e]
    assert len(steps) == STEPS
    assert all(e["reward_service/unscored_frac"] == 0 for e in steps)
