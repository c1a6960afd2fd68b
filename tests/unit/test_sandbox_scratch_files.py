"""sandbox/runtime/scratch_files.py: the files frame A sends B, what B writes and reads, what A keeps."""

import base64
import os

import pytest

from sandbox.runtime import scratch_files as sf


def test_files_and_args_survive_the_frame():
    files = [("in.txt", b"\x00\xff"), ("d/e/f.bin", b""), ("ünï.txt", b"x" * 70000)]
    args = ["-v", "two words", "", "ünï"]
    assert sf.unpack_extras(sf.pack_extras(files, args)) == (files, args)


def test_a_truncated_frame_is_refused():
    body = sf.pack_extras([("a", b"12345")], ["x"])
    with pytest.raises(ValueError, match="truncated"):
        sf.unpack_extras(body[:-3])


@pytest.mark.parametrize("name", ["../x", "/abs", "a/../b", ".", "a//b", "", "n\0ul", 3])
def test_unsafe_names(name):
    assert not sf.safe_name(name)


def test_b_writes_files_into_its_directory_replacing_read_only_ones(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("old")
    (tmp_path / "a.txt").chmod(0o444)
    sf.write_files([("a.txt", b"new"), ("sub/dir/b.txt", b"deep")])
    assert (tmp_path / "a.txt").read_bytes() == b"new" and (tmp_path / "sub/dir/b.txt").read_bytes() == b"deep"


def test_b_writes_through_no_symlink(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    (tmp_path / "link.txt").symlink_to(outside)
    sf.write_files([("link.txt", b"x")])
    assert outside.read_text() == "keep" and not (tmp_path / "link.txt").is_symlink()


def test_b_refuses_an_unsafe_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OSError, match="unsafe"):
        sf.write_files([("../escape", b"x")])


def test_b_reads_regular_files_within_their_caps_and_leaves_out_the_rest(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.txt").write_bytes(b"fine")
    (tmp_path / "big.bin").write_bytes(b"x" * 11)
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    got = sf.read_files(["ok.txt", "big.bin", "dir", "fifo", "missing", "../ok.txt"], each_cap=10)
    assert got == {"ok.txt": base64.b64encode(b"fine").decode()}


def test_b_stops_at_the_total_cap(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("a", "b", "c"):
        (tmp_path / name).write_bytes(b"12345")
    assert sorted(sf.read_files(["a", "b", "c"], each_cap=10, total_cap=12)) == ["a", "b"]


def test_a_keeps_only_asked_valid_files_within_the_caps():
    good, big = base64.b64encode(b"abc").decode(), base64.b64encode(b"x" * 20).decode()
    msg = {"op": "files", "files": {"asked": good, "not_asked": good, "bad": "***", "num": 5, "big": big}}
    assert sf.checked_fetch(msg, ["asked", "bad", "num", "big"], each_cap=10) == {"asked": good}


@pytest.mark.parametrize("msg", [None, [], {"op": "other"}, {"op": "files", "files": []}])
def test_a_garbled_answer_means_no_files(msg):
    assert sf.checked_fetch(msg, ["a"], each_cap=10) == {}
