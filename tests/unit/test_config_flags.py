"""The one dataclass -> argparse builder: names, types, switches, environment defaults, help, nested configs."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from reward_core.config_flags import (
    add_dataclass_flags,
    dataclass_from_values,
    dataclass_values,
    env_names,
    nested,
    parse_bool,
)


@dataclasses.dataclass(frozen=True)
class Example:
    port: int = dataclasses.field(default=50051, metadata={"help": "port to bind"})
    item_timeout_s: float = dataclasses.field(default=5.0, metadata={"help": "limit per item"})
    grace_s: float = 10  # an int default on a float field: the annotation wins
    host: str = dataclasses.field(default="127.0.0.1", metadata={"help": "address, 100% local"})
    no_batching: bool = dataclasses.field(default=False, metadata={"help": "one pass per request"})
    warm: bool = True
    workers: int = dataclasses.field(default_factory=lambda: 3)
    nested: tuple[str, ...] = ()


def parse(argv: list[str], environ: dict[str, str] | None = None, **kwargs) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_dataclass_flags(parser, Example, "EX_", skip=kwargs.pop("skip", ("nested",)), environ=environ or {},
                        **kwargs)
    return parser.parse_args(argv)


def test_each_field_becomes_a_dashed_flag_with_its_type():
    args = parse(["--port", "7", "--item-timeout-s", "1.5", "--host", "0.0.0.0", "--grace-s", "2.5"])
    assert (args.port, args.item_timeout_s, args.host, args.grace_s) == (7, 1.5, "0.0.0.0", 2.5)


def test_defaults_are_the_fields_own_including_default_factories():
    args = parse([])
    assert dataclass_values(args, Example) == {"port": 50051, "item_timeout_s": 5.0, "grace_s": 10, "host": "127.0.0.1",
                                               "no_batching": False, "warm": True, "workers": 3}


def test_booleans_are_switches_both_ways():
    assert parse(["--no-batching"]).no_batching is True
    assert parse(["--no-warm"]).warm is False


def test_environment_variables_set_the_defaults():
    args = parse([], {"EX_PORT": "9", "EX_ITEM_TIMEOUT_S": "0.5", "EX_NO_BATCHING": "yes", "EX_WARM": "0"})
    assert (args.port, args.item_timeout_s, args.no_batching, args.warm) == (9, 0.5, True, False)


def test_a_flag_overrides_its_environment_variable():
    assert parse(["--port", "1"], {"EX_PORT": "9"}).port == 1


def test_a_malformed_environment_value_names_the_variable():
    with pytest.raises(ValueError, match="EX_PORT='nine'"):
        parse([], {"EX_PORT": "nine"})
    with pytest.raises(ValueError, match="EX_WARM"):
        parse([], {"EX_WARM": "maybe"})


def test_help_shows_the_text_the_default_and_the_variable():
    parser = argparse.ArgumentParser()
    add_dataclass_flags(parser, Example, "EX_", skip=("nested",), environ={"EX_HOST": "10.0.0.1"})
    text = " ".join(parser.format_help().split())
    assert "port to bind (default: 50051; env EX_PORT)" in text
    assert "address, 100% local (default: 10.0.0.1; env EX_HOST)" in text
    assert "one pass per request (default: False; env EX_NO_BATCHING)" in text


def test_only_and_skip_choose_the_fields():
    args = parse([], only=("port", "host"))
    assert dataclass_values(args, Example) == {"port": 50051, "host": "127.0.0.1"}
    assert dataclass_values(args, Example, skip=("host",)) == {"port": 50051}


def test_a_field_without_a_flag_type_must_be_skipped():
    with pytest.raises(TypeError, match="Example.nested"):
        parse([], skip=())


def test_values_build_the_dataclass():
    assert Example(**dataclass_values(parse(["--port", "3"]), Example)).port == 3


@pytest.mark.parametrize("text,value", [("1", True), ("TRUE", True), ("on", True), ("0", False), ("", False),
                                        ("No", False)])
def test_parse_bool(text, value):
    assert parse_bool(text) is value


# --- nested configs -------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Limits:
    max_batch: int = dataclasses.field(default=64, metadata={"help": "programs per call"})
    strict: bool = dataclasses.field(default=False, metadata={"help": "refuse unknown keys"})
    checked: bool = True


@dataclasses.dataclass(frozen=True)
class Pool:
    workers: int = 1
    name: str = "pool"


@dataclasses.dataclass(frozen=True)
class Server:
    port: int = 50051
    limits: Limits = nested(Limits)                                         # today's names kept
    pool: Pool = nested(lambda: Pool(workers=4), flag_prefix="pool-", env_prefix="POOL_")
    backup: Pool = dataclasses.field(default_factory=Pool)                  # undeclared: --backup-*, BACKUP_*
    files: tuple[str, ...] = ()


def parse_server(argv: list[str], environ: dict[str, str] | None = None, **kwargs) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_dataclass_flags(parser, Server, "SRV_", skip=kwargs.pop("skip", ("files",)), environ=environ or {}, **kwargs)
    return parser.parse_args(argv)


def test_a_nested_config_with_empty_prefixes_keeps_its_fields_flag_names():
    args = parse_server(["--max-batch", "8", "--strict"])
    assert Server(**dataclass_values(args, Server)).limits == Limits(max_batch=8, strict=True)


def test_a_nested_config_takes_its_flag_prefix_and_env_prefix():
    args = parse_server(["--pool-name", "p"], {"SRV_POOL_WORKERS": "7"})
    assert Server(**dataclass_values(args, Server)).pool == Pool(workers=7, name="p")


def test_an_undeclared_nested_config_is_prefixed_by_its_field_name():
    args = parse_server(["--backup-workers", "3"], {"SRV_BACKUP_NAME": "b"})
    assert Server(**dataclass_values(args, Server)).backup == Pool(workers=3, name="b")


def test_a_nested_config_defaults_to_the_parents_default_not_its_own_fields():
    args = parse_server([])
    assert args.pool_workers == 4
    assert Server(**dataclass_values(args, Server)) == Server()


def test_environment_defaults_reach_nested_fields_by_their_flag_names():
    args = parse_server([], {"SRV_MAX_BATCH": "9", "SRV_STRICT": "on", "SRV_CHECKED": "no"})
    assert Server(**dataclass_values(args, Server)).limits == Limits(max_batch=9, strict=True, checked=False)


def test_bool_switches_in_a_nested_config_work_both_ways():
    assert parse_server(["--strict"]).strict is True
    assert parse_server(["--no-checked"]).checked is False
    with pytest.raises(SystemExit):  # a switch that defaults off has no --no- form
        parse_server(["--no-strict"])


def test_help_of_a_nested_field_names_its_own_variable():
    parser = argparse.ArgumentParser()
    add_dataclass_flags(parser, Server, "SRV_", skip=("files",), environ={})
    text = " ".join(parser.format_help().split())
    assert "--max-batch MAX_BATCH programs per call (default: 64; env SRV_MAX_BATCH)" in text
    assert "(default: 4; env SRV_POOL_WORKERS)" in text


def test_skip_and_only_take_dotted_paths():
    args = parse_server([], skip=("files", "pool", "limits.strict"))
    assert not hasattr(args, "pool_workers") and not hasattr(args, "strict") and hasattr(args, "max_batch")
    args = parse_server([], skip=(), only=("limits.max_batch", "port"))
    assert vars(args) == {"port": 50051, "max_batch": 64}


def test_given_values_fill_fields_without_flags_nested_ones_included():
    args = parse_server(["--max-batch", "2"], skip=("files", "limits.strict"))
    config = Server(**dataclass_values(args, Server, given={"files": ("a",), "limits.strict": True}))
    assert config.files == ("a",) and config.limits == Limits(max_batch=2, strict=True)


def test_env_names_lists_every_variable_the_flags_read():
    assert env_names(Server, "SRV_", skip=("files",)) == {
        "SRV_PORT", "SRV_MAX_BATCH", "SRV_STRICT", "SRV_CHECKED", "SRV_POOL_WORKERS", "SRV_POOL_NAME",
        "SRV_BACKUP_WORKERS", "SRV_BACKUP_NAME"}


# --- without environment defaults (the trainer's commands) --------------------------------------

@dataclasses.dataclass(frozen=True)
class Train:
    data: str = dataclasses.field(metadata={"help": "training file"})
    out_dir: str = dataclasses.field(metadata={"help": "output directory", "flag": "out", "metavar": "DIR"})
    limit: int | None = dataclasses.field(default=None, metadata={"help": "first N rows"})
    progress: bool = dataclasses.field(default=True, metadata={"help": "progress bar"})
    resume: bool = False


def trainer_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add_dataclass_flags(parser, Train, None, negatable=True)
    return parser


def test_without_an_env_prefix_the_environment_is_not_read():
    parser = argparse.ArgumentParser()
    add_dataclass_flags(parser, Example, None, skip=("nested",), environ={"PORT": "1", "EX_PORT": "1"})
    assert parser.parse_args([]).port == 50051 and "env" not in parser.format_help()


def test_required_fields_are_required_flags_and_optional_types_parse():
    with pytest.raises(SystemExit):
        trainer_parser().parse_args(["--data", "d"])
    args = trainer_parser().parse_args(["--data", "d", "--out", "o", "--limit", "5"])
    assert Train(**dataclass_values(args, Train)) == Train("d", "o", limit=5)


def test_a_field_may_name_its_own_flag_and_metavar():
    text = " ".join(trainer_parser().format_help().split())
    assert "--out DIR output directory" in text and "--data DATA training file --out" in text
    assert "first N rows (default: None)" in text


def test_negatable_bools_have_both_forms_whatever_their_default():
    args = trainer_parser().parse_args(["--data", "d", "--out", "o", "--no-progress", "--resume"])
    assert (args.progress, args.resume) == (False, True)
    assert trainer_parser().parse_args(["--data", "d", "--out", "o", "--no-resume"]).resume is False


def test_flat_values_build_the_nested_config_as_the_command_line_would():
    config = dataclass_from_values(Server, {"port": 1, "max_batch": 2, "pool_workers": 3, "files": ("f",),
                                            "backup.name": "b"})
    assert config == Server(port=1, limits=Limits(max_batch=2), pool=Pool(workers=3), backup=Pool(name="b"),
                            files=("f",))
    with pytest.raises(TypeError, match="max_batchh"):
        dataclass_from_values(Server, {"max_batchh": 2})
