"""One spelling of the model dtypes printed (torch's), both accepted."""

from __future__ import annotations

import pytest

from reward_core.dtype_names import DTYPES, canonical_dtype


@pytest.mark.parametrize("name, canonical", [("float32", "float32"), ("bfloat16", "bfloat16"), ("fp32", "float32"),
                                             ("bf16", "bfloat16"), ("BF16", "bfloat16"), (" float32 ", "float32")])
def test_both_spellings_become_torchs_name(name, canonical):
    assert canonical_dtype(name) == canonical


def test_the_canonical_names_are_torch_attributes():
    torch = pytest.importorskip("torch")
    assert [getattr(torch, name) for name in DTYPES] == [torch.float32, torch.bfloat16]


@pytest.mark.parametrize("name", ["fp16", "float16", "", "bfloat"])
def test_another_name_is_refused_naming_the_setting_and_the_choices(name):
    with pytest.raises(ValueError, match=r"model\.dtype must be one of float32, bfloat16 \(or fp32, bf16\)"):
        canonical_dtype(name, "model.dtype")


def test_configs_store_the_canonical_name():
    from trainer_client.train.config import ModelConfig

    assert ModelConfig(path="m", dtype="bf16").dtype == "bfloat16"
    assert ModelConfig(path="m").dtype == "float32"
    from reward_service.rm.config import RewardModelServerConfig

    assert RewardModelServerConfig(checkpoint="ckpt", dtype="fp32").dtype == "float32"
