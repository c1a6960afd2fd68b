"""Judge templates (reward_service/verifiers/judging/templates.py): shipped defaults load and render,
overrides are checked, and the version hash moves with everything that decides a verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from reward_service.verifiers.judging import InvalidTemplate, builtin_names, load_template

PAIR_FIELDS = ("prompt", "answer_a", "answer_b")


def test_every_shipped_template_loads_and_its_choices_parse() -> None:
    fields = {"reference": ("prompt", "gold", "completion"), "rubric": ("prompt", "completion", "criterion", "gold"),
              "pairwise": PAIR_FIELDS}
    assert builtin_names() == sorted(fields)
    for name, names in fields.items():
        template = load_template(name, fields=names)
        assert template.choices, name
        assert all(template.verdict_parser.parse(c) for c in template.choices)
        assert template.placeholders() <= set(names)


def test_render_fills_placeholders_and_leaves_braces_and_dollars_in_values() -> None:
    template = load_template("pairwise", fields=PAIR_FIELDS)
    system, user = template.render({"prompt": "Cost?", "answer_a": "{x} costs $5", "answer_b": "$answer_a"})
    assert system["role"] == "system" and user["role"] == "user"
    assert "{x} costs $5" in user["content"] and "$answer_a" in user["content"] and "Cost?" in user["content"]


def test_version_changes_with_the_prompt_the_parser_and_max_tokens() -> None:
    base = load_template("rubric", fields=("prompt", "completion", "criterion", "gold"))
    fields = ("prompt", "completion", "criterion", "gold")
    assert load_template("rubric", fields=fields).version == base.version
    assert load_template("rubric", {"user": "Rate $completion. Score: N/10"}, fields=fields).version != base.version
    assert load_template("rubric", {"parser": {"kind": "score", "max": 5}}, fields=fields).version != base.version
    assert load_template("rubric", {"max_tokens": 9}, fields=fields).version != base.version
    assert load_template("rubric", {"description": "other words"}, fields=fields).version == base.version


def test_a_template_file_can_replace_the_default(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("user: 'Is $completion right? JSON please: {\"ok\": true}'\nparser: {kind: json, key: ok}\n")
    template = load_template("reference", str(path), fields=("prompt", "gold", "completion"))
    assert template.source == str(path) and template.system == ""
    assert template.render({"completion": "42"})[0]["content"] == 'Is 42 right? JSON please: {"ok": true}'
    assert template.verdict_parser.parse('{"ok": false}').value == 0.0


@pytest.mark.parametrize("override, message", [
    ({"user": "Judge $answer"}, "unknown placeholders"),
    ({"colour": "blue"}, "unknown keys"),
    ({"parser": {"kind": "nope"}}, "unknown parser kind"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"user": "costs 5$ "}, "stray '\\$'"),
    ("no_such_template", "no shipped judge template"),
    (42, "override must be"),
])
def test_bad_overrides_say_what_is_wrong(override: object, message: str) -> None:
    with pytest.raises(InvalidTemplate, match=message):
        template = load_template("reference", override, fields=("prompt", "gold", "completion"))
        template.placeholders()
