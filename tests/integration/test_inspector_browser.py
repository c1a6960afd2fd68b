"""``reward-service inspect`` in a real headless Chromium: the page renders groups, explanations and filters.

The inspector runs as the CLI runs it (a subprocess on a free loopback port); Chromium (Debian's
``chromium``) loads the page, runs its JS against the real API, and dumps the DOM or takes a
screenshot. Without Chromium these tests skip, unless INSPECTOR_REQUIRE_BROWSER=1 (CI, set by
.ci/run) makes that a failure.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from reward_core.ports import free_port
from tests.inspector_fixtures import write_rollouts

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                  "--window-size=1400,900", "--virtual-time-budget=15000")
START_TIMEOUT_S = 120  # how long the inspector may take to answer (a bound for a hung start, not a measurement)


def chromium() -> str:
    found = next((path for path in map(shutil.which, CHROMIUM_NAMES) if path), None)
    if found is None:
        message = ("no Chromium on PATH: apt-get install -y --no-install-recommends chromium "
                   "(scripts/system_setup.sh installs it with INSPECTOR_BROWSER=1)")
        if os.environ.get("INSPECTOR_REQUIRE_BROWSER") == "1":
            pytest.fail(message + " (INSPECTOR_REQUIRE_BROWSER=1)")
        pytest.skip(message)
    return found


def _group(step, gid, task, outcomes):
    """Lines of one group: outcomes are (reward, status, explanation, error)."""
    return [{"step": step, "group_id": gid, "id": f"{gid}-{k}", "task": task, "reward": reward, "status": status,
             "advantage": None if reward is None else round(reward - 0.5, 2), "kept": True,
             "prompt": f"Question of {gid}: what is 6*7?", "reference": {"answer": "42"},
             "completion": f"Let me think. 6*7 = {42 if reward else 41}. #### {42 if reward else 41}",
             "extracted": "42" if reward else "41", "error": error, "explanation": explanation, "components": {}}
            for k, (reward, status, explanation, error) in enumerate(outcomes)]


LINES = (
    _group(1, "s0-g0", "gsm8k", [(1.0, "OK", "extracted 42; matches the reference 42", ""),
                                 (0.0, "OK", "extracted 41; reference 42: not equal", "")])
    + _group(1, "s0-g1", "gsm8k", [(0.0, "NO_ANSWER", "no '####' line: nothing to compare", ""),
                                   (None, "ERROR", "the verifier crashed before a verdict",
                                    "ZeroDivisionError in the task")])
    + _group(2, "s1-g0", "math", [(1.0, "OK", "boxed 42 equals 42", ""),
                                  (None, "TIMEOUT", "no verdict: the item timed out", "verifier exceeded 10 s")])
)


@contextlib.contextmanager
def inspector(path: Path, *extra: str) -> Iterator[str]:
    """``reward-service inspect PATH`` on a free port; yields the page's base URL once the API answers."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "reward_service", "inspect", str(path), "--port", str(port),
                             *extra], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(base + "api/summary", timeout=5):
                    break
            except (urllib.error.URLError, ConnectionError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    output = proc.communicate(timeout=30)[0]
                    raise AssertionError(f"the inspector did not start: {output}") from None
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stdout:
            proc.stdout.close()


def browse(tmp_path: Path, url: str, *mode: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"chromium-profile-{free_port()}"
    return subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *mode, url],
                          capture_output=True, text=True, timeout=180, check=True)


def dump_dom(tmp_path: Path, url: str) -> str:
    dom = browse(tmp_path, url, "--dump-dom").stdout
    assert 'data-state="ready"' in dom, dom[-2000:]
    return dom


def groups_in(dom: str) -> list[dict]:
    """Each rendered group: its id and step, and its rollouts' (id, status, reward, match, explanation)."""
    groups = []
    for section in re.findall(r'<section class="group"(.*?)</section>', dom, re.S):
        head = re.match(r'[^>]*data-group-id="([^"]*)" data-step="([^"]*)"', section)
        rollouts = []
        for attrs, body in re.findall(r'<article class="rollout ([^"]*"[^>]*)>(.*?)</article>', section, re.S):
            data = dict(re.findall(r'data-([a-z]+)="([^"]*)"', attrs))
            explanation = re.search(r'<div class="explanation">(.*?)</div>', body, re.S)
            rollouts.append({"id": data["id"], "status": data["status"], "reward": data["reward"],
                             "match": attrs.startswith("match"),
                             "explanation": html.unescape(explanation.group(1)) if explanation else ""})
        groups.append({"group_id": head.group(1), "step": head.group(2), "rollouts": rollouts})
    return groups


@pytest.fixture(scope="module")
def rollouts_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("run") / "rollouts.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in LINES), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def page(rollouts_file) -> Iterator[str]:
    with inspector(rollouts_file.parent) as base:  # the run directory, as a user passes it
        yield base


def test_the_page_shows_each_group_side_by_side_with_rewards_and_explanations(page, tmp_path):
    groups = groups_in(dump_dom(tmp_path, page))
    assert [(g["group_id"], g["step"]) for g in groups] == [("s0-g0", "1"), ("s0-g1", "1"), ("s1-g0", "2")]
    expected = [[(line["id"], line["status"], line["reward"], line["explanation"]) for line in LINES
                 if line["group_id"] == g["group_id"]] for g in groups]
    shown = [[(r["id"], r["status"], float(r["reward"]) if r["reward"] else None, r["explanation"])
              for r in g["rollouts"]] for g in groups]
    assert shown == expected


def test_the_status_filter_in_the_query_string_keeps_only_groups_with_a_match(page, tmp_path):
    dom = dump_dom(tmp_path, page + "?status=ERROR")
    groups = groups_in(dom)
    assert [g["group_id"] for g in groups] == ["s0-g1"]
    assert [(r["id"], r["match"]) for r in groups[0]["rollouts"]] == [("s0-g1-0", False), ("s0-g1-1", True)]
    assert re.search(r'<input type="checkbox" value="ERROR" checked="">', dom)  # the filter shows as set
    assert "1 group with 1 matching rollout " in dom


def test_task_and_step_filters_apply_from_the_query_string(page, tmp_path):
    assert [g["group_id"] for g in groups_in(dump_dom(tmp_path, page + "?task=math"))] == ["s1-g0"]
    assert [g["group_id"] for g in groups_in(dump_dom(tmp_path, page + "?step=1&min_reward=0.5"))] == ["s0-g0"]


def test_the_reward_histograms_are_drawn_per_step(page, tmp_path):
    dom = dump_dom(tmp_path, page)
    assert re.findall(r'<button type="button" class="chart" data-step="([^"]*)"', dom) == ["1", "2"]
    assert len(re.findall(r"<rect ", dom)) >= 2 * 10


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def test_a_screenshot_of_the_page_is_a_full_window_png(page, tmp_path):
    shot = tmp_path / "inspector.png"
    browse(tmp_path, page, f"--screenshot={shot}")
    assert _png_size(shot) == (1400, 900)
    assert shot.stat().st_size > 20_000  # a blank or error page compresses to a few KB


def test_a_results_file_from_score_is_shown_with_its_rollouts_joined(tmp_path):
    rollouts = tmp_path / "in.jsonl"
    rollouts.write_text("".join(json.dumps({"id": f"r{k}", "task": "gsm8k", "group_id": "q1",
                                            "prompt": "What is 6*7?", "completion": f"#### {answer}",
                                            "reference": {"answer": "42"}}) + "\n"
                                for k, answer in enumerate((42, 41))), encoding="utf-8")
    results = tmp_path / "results.jsonl"
    subprocess.run([sys.executable, "-m", "reward_service", "score", "--in", str(rollouts), "--out", str(results),
                    "--quiet"], cwd=ROOT, check=True, capture_output=True, timeout=300)
    with inspector(results, "--rollouts", str(rollouts)) as base:
        dom = dump_dom(tmp_path, base)
    [group] = groups_in(dom)
    assert group["group_id"] == "q1"
    assert [(r["id"], r["reward"]) for r in group["rollouts"]] == [("r0", "1"), ("r1", "0")]
    assert "#### 41" in dom and "What is 6*7?" in dom


@pytest.mark.slow
def test_a_100000_rollout_file_opens_on_its_first_page(tmp_path):
    path = write_rollouts(tmp_path / "rollouts.jsonl", 100_000)
    with inspector(path) as base:
        dom = dump_dom(tmp_path, base + "?status=TIMEOUT")
    assert "100,000 rollouts" in dom
    groups = groups_in(dom)
    assert len(groups) == 20
    assert all(any(r["status"] == "TIMEOUT" and r["match"] for r in g["rollouts"]) for g in groups)
