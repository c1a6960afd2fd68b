"""Issue 22: the trainer's first checks import no torch or transformers, so a wrong model path or an
unreachable reward endpoint is said before seconds of imports.

Each check runs in a fresh interpreter (``sys.modules`` of this one holds whatever other tests loaded).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from reward_core.ports import free_port

HEAVY = ("torch", "transformers")


def run_fresh(code: str, *args: str) -> dict:
    """The JSON the snippet prints last, run in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def checkpoint(path: Path, config: dict) -> str:
    path.mkdir()
    (path / "config.json").write_text(json.dumps(config))
    return str(path)


def test_building_the_parser_imports_no_torch():
    loaded = run_fresh("""
        import json, sys
        from trainer_client.cli import build_parser
        build_parser().parse_args(["grpo", "--config", "x.yaml"])
        print(json.dumps(sorted(m for m in ("torch", "transformers") if m in sys.modules)))
    """)
    assert loaded == []


def test_a_grpo_run_with_a_missing_model_path_fails_before_torch_loads(tmp_path):
    """The whole command up to its first error: parser, config (presets, loss options), pre-flight."""
    config = tmp_path / "run.yaml"
    config.write_text(f"model:\n  path: {tmp_path / 'no_such_model'}\ndata:\n  train: {config}\n"
                      f"reward:\n  embedded: false\n  endpoint: 127.0.0.1:{free_port()}\n")
    out = run_fresh("""
        import contextlib, io, json, sys
        from trainer_client.cli import main
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(["grpo", "--config", sys.argv[1], "--run-dir", sys.argv[2]])
        print(json.dumps({"code": code, "err": err.getvalue(),
                          "loaded": sorted(m for m in ("torch", "transformers") if m in sys.modules)}))
    """, str(config), str(tmp_path / "run"))
    assert out["code"] == 2 and "no such directory" in out["err"], out
    assert out["loaded"] == []


PREFLIGHT = """
    import json, sys, types
    from trainer_client.preflight import preflight
    from trainer_client.errors import USER_ERRORS
    model_path, endpoint = sys.argv[1], sys.argv[2]
    config = types.SimpleNamespace(model=types.SimpleNamespace(path=model_path),
                                   reward=types.SimpleNamespace(embedded=False, endpoint=endpoint))
    try:
        preflight(config)
        said = "passed"
    except USER_ERRORS as exc:
        said = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"said": said, "loaded": sorted(m for m in ("torch", "transformers") if m in sys.modules)}))
"""


def test_missing_model_path_is_refused_before_any_heavy_import(tmp_path):
    out = run_fresh(PREFLIGHT, str(tmp_path / "no_such_model"), f"127.0.0.1:{free_port()}")
    assert out["said"].startswith("ModelPathError") and "no such directory" in out["said"]
    assert out["loaded"] == []


def test_encoder_checkpoint_is_refused_from_its_config_alone(tmp_path):
    encoder = checkpoint(tmp_path / "bert", {"model_type": "bert", "architectures": ["BertModel"]})
    out = run_fresh(PREFLIGHT, encoder, f"127.0.0.1:{free_port()}")
    assert out["said"].startswith("ModelPathError") and "not a causal LM" in out["said"]
    assert out["loaded"] == []


def test_unreachable_endpoint_is_said_before_transformers_loads(tmp_path):
    causal = checkpoint(tmp_path / "gpt2", {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]})
    endpoint = f"127.0.0.1:{free_port()}"
    out = run_fresh(PREFLIGHT, causal, endpoint)
    assert out["said"].startswith("EndpointUnreachable") and endpoint in out["said"]
    assert out["loaded"] == []


def test_what_the_config_cannot_answer_is_asked_of_transformers(tmp_path):
    """A model_type transformers has no causal LM for, saved with a LM-head name: refused (by the mapping)."""
    unknown = checkpoint(tmp_path / "odd", {"model_type": "no_such_type", "architectures": ["OddForCausalLM"]})
    from trainer_client.errors import ModelPathError
    from trainer_client.preflight import check_model_path, read_model_config

    assert read_model_config(unknown)[0] == unknown  # the JSON alone cannot tell
    try:
        check_model_path(unknown)
    except ModelPathError as exc:
        assert "no_such_type checkpoint" in str(exc) and "not a causal LM" in str(exc)
    else:
        raise AssertionError("a model_type with no causal LM in transformers was accepted")
