"""``trainer-client sft`` / ``dpo``: registered, options from flags and YAML, and a mistake is one ``error:`` line."""

from __future__ import annotations

import json

import pytest

from trainer_client.cli import SUBCOMMANDS, main


def test_both_commands_are_registered() -> None:
    assert {"sft", "dpo"} <= set(SUBCOMMANDS)


@pytest.mark.parametrize(("argv", "says"), [
    (["dpo", "--loss-type", "kto"], "loss_type 'kto' is unknown"),
    (["dpo", "--label-smoothing", "0.5"], "label_smoothing must be in [0, 0.5)"),
    (["dpo", "--beta", "0"], "beta must be > 0"),
    (["sft", "--batch-size", "0"], "batch_size must be >= 1"),
    (["sft", "--lr", "-1"], "lr must be a positive number"),
])
def test_a_bad_option_is_said_in_one_line(tmp_path, capsys, argv: list[str], says: str) -> None:
    args = [*argv, "--data", str(tmp_path / "d.jsonl"), "--out", str(tmp_path / "out"), "--model", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and says in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["sft", "dpo"])
def test_a_missing_data_file_is_named(tmp_path, capsys, command: str) -> None:
    missing = tmp_path / "nope.jsonl"
    assert main([command, "--data", str(missing), "--out", str(tmp_path / "o"), "--model", str(tmp_path)]) == 2
    assert f"{missing}: no such file" in capsys.readouterr().err


def test_a_missing_model_is_named_before_training(tmp_path, capsys) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "p", "completion": "c"}) + "\n")
    assert main(["sft", "--data", str(data), "--out", str(tmp_path / "o"), "--model", str(tmp_path / "none")]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and str(tmp_path / "none") in errors[0]   # (log lines may come before it)


def test_a_malformed_row_is_named_with_its_line(tmp_path, capsys) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "p", "chosen": "c"}) + "\n")
    assert main(["dpo", "--data", str(data), "--out", str(tmp_path / "o"), "--model", str(tmp_path)]) == 2
    assert f"{data}:1: missing field(s) ['rejected']" in capsys.readouterr().err


def resolved(tmp_path, argv: list[str]):
    """The DPOConfig a ``dpo`` command line resolves to (parsed, not run)."""
    from trainer_client.cli import build_parser
    from trainer_client.dpo.dpo_train import DPOConfig
    from trainer_client.offline_cli import config_from_flags_and_file

    return config_from_flags_and_file(DPOConfig, build_parser().parse_args(["dpo", *argv]))


def test_a_yaml_file_gives_options_and_flags_win(tmp_path) -> None:
    config_file = tmp_path / "dpo.yaml"
    config_file.write_text("data: d.jsonl\nout_dir: runs/x\nmodel: m\nloss_type: ipo\nbeta: 0.5\nlr: 1e-3\n")
    config = resolved(tmp_path, ["--config", str(config_file), "--beta", "0.2"])
    assert (config.data, config.out_dir, config.loss_type, config.beta, config.lr) == ("d.jsonl", "runs/x", "ipo",
                                                                                      0.2, 0.001)
    assert config.label_smoothing == 0.0  # neither file nor flag: the field's default


def test_a_yaml_file_with_an_unknown_option_is_refused(tmp_path) -> None:
    from trainer_client.subcommands import CliError

    config_file = tmp_path / "dpo.yaml"
    config_file.write_text("data: d.jsonl\nout_dir: o\nmodel: m\nlearning_rate: 1e-6\n")
    with pytest.raises(CliError, match=r"unknown option\(s\) \['learning_rate'\]"):
        resolved(tmp_path, ["--config", str(config_file)])


def test_required_options_are_named_when_neither_flag_nor_file_gives_them(tmp_path) -> None:
    from trainer_client.subcommands import CliError

    with pytest.raises(CliError, match="--out, --model required"):
        resolved(tmp_path, ["--data", "d.jsonl"])
