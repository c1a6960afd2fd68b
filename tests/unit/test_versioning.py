"""Verifier version hashes: code + options + data files, stable across processes."""

import importlib
import os
import subprocess
import sys
import textwrap
import uuid

import pytest

from reward_core import convert
from reward_core.contract import RolloutResult, RolloutStatus
from reward_service.router.registry import build_registry
from reward_service.router.rewards_config import RewardsConfig
from reward_service.router.versioning import VERSION_CHARS, canonical_options, version_of
from reward_service.task_api import Task, TaskOutcome


def registry(config: dict | None = None):
    return build_registry(RewardsConfig.from_dict(config or {}))


def test_a_version_is_a_short_hex_hash():
    version = registry().version("gsm8k")
    assert len(version) == VERSION_CHARS
    int(version, 16)


def test_version_changes_when_an_option_changes():
    default = registry().version("gsm8k")
    strict = registry({"tasks": {"gsm8k": {"options": {"last_number_fallback": False}}}}).version("gsm8k")
    same = registry({"tasks": {"gsm8k": {"options": {"last_number_fallback": True}}}}).version("gsm8k")
    assert strict != default
    assert same != strict


def test_option_order_does_not_change_the_version():
    assert canonical_options({"b": 1, "a": [1, 2]}) == canonical_options({"a": [1, 2], "b": 1})


def test_the_endpoint_option_is_not_part_of_the_version():
    assert canonical_options({"endpoint": "host:1", "x": 1}) == canonical_options({"endpoint": "host:2", "x": 1})


def test_a_variant_with_other_options_has_its_own_version():
    reg = registry({"tasks": {"gsm8k_strict": {"task": "gsm8k", "options": {"strict": True}}}})
    assert reg.version("gsm8k_strict") != reg.version("gsm8k")


def test_composite_version_follows_its_components_and_weights():
    def composite(weight: float, strict: bool = False):
        return registry({"tasks": {"gsm8k": {"options": {"strict": strict}}},
                         "rewards": {"mix": {"components": {"gsm8k": 1.0, "format": weight}}}}).version("mix")

    assert composite(0.2) == composite(0.2)
    assert composite(0.2) != composite(0.3)
    assert composite(0.2) != composite(0.2, strict=True)


def test_a_shaping_task_follows_its_base():
    plain = registry({"tasks": {"shaped": {"task": "cosine_scaled", "options": {"base": "gsm8k"}}}})
    strict = registry({"tasks": {"gsm8k": {"options": {"strict": True}},
                                 "shaped": {"task": "cosine_scaled", "options": {"base": "gsm8k"}}}})
    assert plain.version("shaped") != strict.version("shaped")


def _write_plugin(root, package: str, body: str, helper: str) -> None:
    pkg = root / package
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text(helper)
    (pkg / "task_mod.py").write_text(textwrap.dedent(f"""
        from reward_service.task_api import Task, TaskOutcome
        from .helper import VALUE

        class FakeTask(Task):
            name = "fake"

            def score(self, completion, reference, prompt=""):
                return TaskOutcome({body})
        """))


def _bump(path) -> None:
    """A new mtime, however coarse the file system's clock."""
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))


def _fake_version(package: str) -> str:
    module = importlib.import_module(f"{package}.task_mod")
    return version_of(module.FakeTask())


def test_version_changes_when_the_task_module_or_a_module_it_imports_changes(tmp_path, monkeypatch):
    package = f"fake_plugin_{uuid.uuid4().hex[:8]}"
    monkeypatch.syspath_prepend(str(tmp_path))
    _write_plugin(tmp_path, package, "1.0", "VALUE = 1\n")
    first = _fake_version(package)
    assert _fake_version(package) == first  # nothing changed

    _write_plugin(tmp_path, package, "VALUE * 1.0", "VALUE = 1\n")
    _bump(tmp_path / package / "task_mod.py")
    second = _fake_version(package)
    assert second != first

    (tmp_path / package / "helper.py").write_text("VALUE = 2\n")
    _bump(tmp_path / package / "helper.py")
    assert _fake_version(package) != second


def test_version_inputs_files_are_part_of_the_version(tmp_path):
    words = tmp_path / "words.txt"
    words.write_text("alpha\n")

    class WordListTask(Task):
        name = "words"

        def version_inputs(self):
            return [words]

        def score(self, completion, reference, prompt=""):
            return TaskOutcome(0.0)

    first = version_of(WordListTask())
    words.write_text("alpha\nbeta\n")
    assert version_of(WordListTask()) != first


def test_version_is_the_same_in_another_process():
    here = registry().version("gsm8k"), registry().version("math")
    code = ("from reward_service.router.registry import build_registry\n"
            "from reward_service.router.rewards_config import RewardsConfig\n"
            "r = build_registry(RewardsConfig())\n"
            "print(r.version('gsm8k'), r.version('math'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONHASHSEED": "123"}, check=True)
    assert tuple(out.stdout.split()) == here


def test_list_tasks_reports_each_version_and_the_proto_carries_it():
    reg = registry({"rewards": {"mix": {"components": {"gsm8k": 1.0, "format": 0.2}}}})
    infos = {info.name: info for info in reg.infos()}
    assert infos["gsm8k"].verifier_version == reg.version("gsm8k")
    assert infos["mix"].verifier_version == reg.version("mix")
    assert convert.task_info_from_proto(convert.task_info_to_proto(infos["mix"])) == infos["mix"]
    result = RolloutResult("a", RolloutStatus.OK, 1.0, task="gsm8k", verifier_version=reg.version("gsm8k"))
    assert convert.result_from_proto(convert.result_to_proto(result)).verifier_version == reg.version("gsm8k")
    assert result.to_dict()["verifier_version"] == reg.version("gsm8k")


@pytest.mark.parametrize(("task", "cacheable"), [("gsm8k", True), ("math", True), ("rm", False), ("prm", False),
                                                 ("code", False)])
def test_tasks_calling_a_service_are_not_cacheable(task, cacheable):
    assert registry().cacheable(task) is cacheable


def test_a_composite_with_an_uncacheable_component_is_not_cacheable():
    reg = registry({"rewards": {"mix": {"components": {"gsm8k": 1.0, "rm": 0.5}},
                                "pure": {"components": {"gsm8k": 1.0, "format": 0.5}}}})
    assert not reg.cacheable("mix")
    assert reg.cacheable("pure")
