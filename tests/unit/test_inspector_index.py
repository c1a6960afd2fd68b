"""The inspector's index: what a line counts as, which groups a filter keeps, pages, histograms, growth."""

from __future__ import annotations

import json
import os
import socket

import pytest
from starlette.testclient import TestClient

from reward_service import cli
from reward_service.inspector import index as index_module
from reward_service.inspector.app import create_app
from reward_service.inspector.filters import Filters
from reward_service.inspector.index import MAX_STEP_BUCKETS, RolloutIndex
from reward_service.inspector.lines import InspectorInputError, reward_of
from tests.inspector_fixtures import write_rollouts


def _line(step, group, k, reward, status="OK", task="gsm8k", **extra):
    return {"step": step, "group_id": group, "id": f"{group}-{k}", "task": task, "reward": reward, "status": status,
            "advantage": None, "kept": True, "prompt": f"prompt of {group}", "completion": f"answer {k}",
            "explanation": f"why {group}-{k}", **extra}


LINES = [
    _line(1, "a", 0, 1.0), _line(1, "a", 1, 0.0, "NO_ANSWER"),
    _line(1, "b", 0, None, "ERROR", error="sandbox crashed"), _line(1, "b", 1, 0.5),
    _line(2, "a", 0, 0.0, task="math"), _line(2, "a", 1, 0.0, task="math"),
]


def _write(path, lines, sort_keys=False):
    path.write_text("".join(json.dumps(line, sort_keys=sort_keys) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def index(tmp_path):
    ix = RolloutIndex(_write(tmp_path / "rollouts.jsonl", LINES))
    yield ix
    ix.close()


def _ids(page):
    return [[r["id"] for r in g["rollouts"]] for g in page["groups"]]


def test_a_group_is_its_step_and_group_id_in_file_order(index):
    page = index.page(Filters())
    assert _ids(page) == [["a-0", "a-1"], ["b-0", "b-1"], ["a-0", "a-1"]]
    assert [g["step"] for g in page["groups"]] == [1, 1, 2]
    assert page["groups"][0]["prompt"] == "prompt of a" and page["groups"][0]["reward_mean"] == 0.5


def test_a_status_filter_keeps_groups_with_a_match_and_marks_the_matching_members(index):
    page = index.page(Filters.from_query({"status": "error"}))
    assert (page["matching_groups"], page["matching_rollouts"]) == (1, 1)
    [group] = page["groups"]
    assert [(r["id"], r["match"], r["reward"], r["error"]) for r in group["rollouts"]] == [
        ("b-0", True, None, "sandbox crashed"), ("b-1", False, 0.5, "")]


def test_task_step_and_reward_filters_combine(index):
    assert _ids(index.page(Filters.from_query({"task": "math"}))) == [["a-0", "a-1"]]
    assert index.page(Filters.from_query({"step": "2"}))["groups"][0]["step"] == 2
    assert len(index.page(Filters.from_query({"step": "1-1"}))["groups"]) == 2
    reward = index.page(Filters.from_query({"min_reward": "0.25", "max_reward": "0.75"}))
    assert [r["id"] for g in reward["groups"] for r in g["rollouts"] if r["match"]] == ["b-1"]  # unscored: no reward
    assert index.page(Filters.from_query({"task": "math", "status": "ERROR"}))["groups"] == []


def test_a_bad_filter_says_what_it_expects():
    with pytest.raises(ValueError, match="step must be N or A-B"):
        Filters.from_query({"step": "ten"})
    with pytest.raises(ValueError, match="min_reward must be a number"):
        Filters.from_query({"min_reward": "high"})


def test_pages_cut_the_matching_groups(index):
    pages = [index.page(Filters(), page=p, page_size=2) for p in (0, 1, 9)]
    assert [len(p["groups"]) for p in pages] == [2, 1, 1]
    assert [p["page"] for p in pages] == [0, 1, 1] and pages[0]["pages"] == 2


def test_the_summary_counts_statuses_tasks_and_ranges(index):
    s = index.summary()
    assert (s["rollouts"], s["groups"], s["scored"], s["step_min"], s["step_max"]) == (6, 3, 5, 1, 2)
    assert {x["name"]: x["count"] for x in s["statuses"]} == {"OK": 4, "NO_ANSWER": 1, "ERROR": 1}
    assert {x["name"]: x["count"] for x in s["tasks"]} == {"gsm8k": 4, "math": 2}
    assert (s["reward_min"], s["reward_max"], s["reward_mean"]) == (0.0, 1.0, pytest.approx(0.3))


def test_histograms_count_scored_rewards_per_step_and_unscored_apart(index):
    h = index.histograms(Filters(), bins=2)
    assert h["edges"] == [0.0, 0.5, 1.0]
    assert [(c["step_min"], c["counts"], c["unscored"]) for c in h["charts"]] == [(1, [1, 2], 1), (2, [2, 0], 0)]
    only_errors = index.histograms(Filters.from_query({"status": "ERROR"}), bins=2)
    assert [(c["step_min"], c["counts"], c["unscored"]) for c in only_errors["charts"]] == [(1, [0, 0], 1)]


def test_many_steps_share_histogram_buckets(tmp_path):
    ix = RolloutIndex(_write(tmp_path / "r.jsonl", [_line(s, "g", 0, 1.0) for s in range(1, 201)]))
    charts = ix.histograms(Filters())["charts"]
    assert len(charts) <= MAX_STEP_BUCKETS
    assert (charts[0]["step_min"], charts[-1]["step_max"]) == (1, 200)
    assert sum(c["scored"] for c in charts) == 200


def test_a_line_in_another_key_order_is_read_the_same(tmp_path, index):
    other = RolloutIndex(_write(tmp_path / "sorted.jsonl", LINES, sort_keys=True))  # not the trainer's head
    assert other.summary() | {"source": ""} == index.summary() | {"source": ""}
    assert _ids(other.page(Filters())) == _ids(index.page(Filters()))
    assert [r if r == r else None for r in other.cols.reward] == [r if r == r else None for r in index.cols.reward]


def test_escaped_text_in_the_head_is_decoded(tmp_path):
    ix = RolloutIndex(_write(tmp_path / "r.jsonl", [_line(1, 'quo"te', 0, 1.0, task="t\u00e9\\x")]))
    assert ix.tasks == ["t\u00e9\\x"]
    assert ix.page(Filters())["groups"][0]["group_id"] == 'quo"te'


def test_a_growing_file_is_indexed_further_and_a_half_written_line_waits(tmp_path):
    path = _write(tmp_path / "rollouts.jsonl", LINES[:2])
    ix = RolloutIndex(path)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(LINES[2]) + "\n" + json.dumps(LINES[3])[:20])
    assert ix.summary()["rollouts"] == 3
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(LINES[3])[20:] + "\n")
    assert ix.summary()["rollouts"] == 4
    _write(path, LINES[:1])  # cut: indexed again
    assert ix.summary()["rollouts"] == 1


def test_a_file_replaced_by_a_resumed_run_is_read_anew(tmp_path):
    path = _write(tmp_path / "rollouts.jsonl", LINES[:2])
    ix = RolloutIndex(path)
    replacement = [dict(line, completion="x" * 500, explanation="after resume") for line in LINES[:3]]
    os.replace(_write(tmp_path / "new.jsonl", replacement), path)  # what the trainer's resume does
    page = ix.page(Filters())
    assert [r["explanation"] for g in page["groups"] for r in g["rollouts"]] == ["after resume"] * 3


def test_a_results_file_without_step_or_reward_reads_its_score_and_status(tmp_path):
    lines = [{"id": "x", "score": 1.0, "status": "OK", "scored": True, "explanation": "matched"},
             {"id": "y", "score": 0.0, "status": "TIMEOUT", "scored": False, "error": "slow"}]
    ix = RolloutIndex(_write(tmp_path / "results.jsonl", lines))
    page = ix.page(Filters())
    assert [(g["step"], [(r["id"], r["reward"], r["explanation"]) for r in g["rollouts"]]) for g in page["groups"]] \
        == [(None, [("x", 1.0, "matched")]), (None, [("y", None, "")])]


def test_reward_of_never_reads_an_unscored_score_as_zero():
    assert reward_of({"score": 0.0, "status": "ERROR"}, "ERROR") is None
    assert reward_of({"score": 0.0}, "NO_ANSWER") == 0.0
    assert reward_of({"reward": None, "score": 1.0}, "OK") is None


def test_a_run_directory_without_rollouts_says_how_to_get_them(tmp_path):
    with pytest.raises(InspectorInputError, match="rollouts_sample"):
        RolloutIndex(tmp_path)


def test_the_trainers_lines_are_indexed_from_their_heads_without_a_json_parse(tmp_path, monkeypatch):
    path = write_rollouts(tmp_path / "rollouts.jsonl", 64, group_size=8, groups_per_step=2)

    def no_parse(*_):
        raise AssertionError("parsed a whole line")

    monkeypatch.setattr(index_module, "parse_line", no_parse)
    ix = RolloutIndex(path)
    assert (len(ix.cols.step), len(ix.groups), ix.summary()["step_max"]) == (64, 8, 4)


def test_the_api_serves_pages_histograms_and_the_page(index):
    with TestClient(create_app(index)) as client:
        page = client.get("/api/groups", params={"status": "ERROR", "page_size": 5}).json()
        assert _ids(page) == [["b-0", "b-1"]]
        assert client.get("/api/histograms", params={"bins": 2}).json()["edges"] == [0.0, 0.5, 1.0]
        assert client.get("/api/summary").json()["rollouts"] == 6
        bad = client.get("/api/groups", params={"step": "x"})
        assert bad.status_code == 400 and "step must be" in bad.json()["error"]
        html = client.get("/")
        assert html.status_code == 200 and "/static/app.js" in html.text
        assert "renderGroup" in client.get("/static/app.js").text


def test_the_cli_names_what_to_pass_for_a_run_without_rollouts(tmp_path, capsys):
    assert cli.main(["inspect", str(tmp_path)]) == 2
    assert "has no rollouts.jsonl" in capsys.readouterr().err


def test_the_cli_refuses_a_port_in_use_and_says_how_to_pick_another(index, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.main(["inspect", str(index.source.path), "--port", str(port)]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
