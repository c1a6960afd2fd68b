"""The code task's file fields (reward_service/tasks/code_files.py): parsing and the expected-files check."""

from __future__ import annotations

import pytest

from reward_core.sandbox_contract import ExecutionResult, Verdict
from reward_service.task_api import InvalidReference
from reward_service.tasks.code_files import parse_args, parse_files, wrong_files


def test_text_base64_and_null_contents():
    files = parse_files({"a.txt": "héllo", "b.bin": {"base64": "AAEC"}, "gone": None})
    assert files == {"a.txt": "héllo".encode(), "b.bin": b"\0\1\2"}


def test_no_field_means_no_files_and_no_args():
    assert parse_files(None) == {} and parse_args(None) == ()


@pytest.mark.parametrize("bad", [{"../x": "a"}, {"/etc/x": "a"}, {"a": 1}, {"a": {"base64": "@@"}},
                                 {"a": {"base64": "AA==", "more": 1}}, ["a"], "a"])
def test_malformed_files_are_an_invalid_reference(bad):
    with pytest.raises(InvalidReference):
        parse_files(bad)


@pytest.mark.parametrize("bad", ["-x", [1], [None], {"a": "b"}])
def test_args_must_be_a_list_of_strings(bad):
    with pytest.raises(InvalidReference, match="args"):
        parse_args(bad)


def test_wrong_files_names_the_missing_and_the_different():
    result = ExecutionResult(id="", verdict=Verdict.ACCEPTED, files={"same": b"1", "other": b"2"})
    assert wrong_files(result, {"same": b"1", "other": b"3", "missing": b""}) == ["missing", "other"]
