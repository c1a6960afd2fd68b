"""Tasks from other installed packages are found through the entry-point group."""

import sys
import textwrap

import pytest

from reward_service.router.registry import TaskLoadError, TaskRegistry, UnknownTask


def install_fake_distribution(root, name, entry_points):
    """Writes a minimal .dist-info so importlib.metadata sees an installed package."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


def test_a_task_from_another_installed_package_is_registered(tmp_path, monkeypatch):
    install_fake_distribution(tmp_path, "wc_plugin", """
        [reward_service.tasks]
        word_budget = examples.word_count_task:WordCountTask
    """)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    registry = TaskRegistry()
    assert "word_budget" in registry.load_entry_points()
    outcome = registry.get("word_budget").score("one two three", {"max_words": 2})
    assert outcome.score == pytest.approx(0.5)


def test_a_broken_plugin_is_skipped_and_named_unless_strict(tmp_path, monkeypatch):
    install_fake_distribution(tmp_path, "broken_plugin", """
        [reward_service.tasks]
        broken = no_such_module_xyz:Task
        raising = broken_plugin_module:Task
        not_a_task = json:dumps
        word_budget = examples.word_count_task:WordCountTask
    """)
    (tmp_path / "broken_plugin_module.py").write_text("raise RuntimeError('plugin bug at import')\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    registry = TaskRegistry()
    loaded = registry.load_entry_points()
    assert "word_budget" in loaded and not {"broken", "raising", "not_a_task"} & set(loaded)
    assert "no_such_module_xyz" in registry.plugin_failures["broken"]
    assert "RuntimeError: plugin bug at import" in registry.plugin_failures["raising"]
    assert "not a Task subclass" in registry.plugin_failures["not_a_task"]
    with pytest.raises(UnknownTask, match="not available on this server: task plugin 'broken'"):
        registry.get("broken")
    assert registry.get("word_budget").score("one", {"max_words": 2}).score == 1.0   # the rest is served
    with pytest.raises(TaskLoadError, match="broken"):
        TaskRegistry().load_entry_points(strict=True)
