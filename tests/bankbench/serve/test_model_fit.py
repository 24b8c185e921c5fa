"""Row 12: vLLM's context length sized from the GPU memory found (max_model_len: auto).

Qwen3-8B (the profiles' default) per its config.json: 36 layers, 8 KV heads of 128, bfloat16,
40,960 positions; about 16.4 GB of weights. One full-context sequence needs 5.6 GiB of KV,
which a 24 GB GPU at vLLM's 0.9 memory share does not have beside the weights, so vLLM refuses
to start with its default context there.
"""

import json

import pytest

from bankbench.serve import model_fit
from bankbench.serve.errors import ServeError
from bankbench.serve.gpu_profiles import load_profile

QWEN3_8B = {"num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
            "head_dim": 128, "hidden_size": 4096, "max_position_embeddings": 40960,
            "torch_dtype": "bfloat16"}
QWEN3_8B_WEIGHTS = 16_381_470_720


def qwen_shape():
    return model_fit.shape_from_files(QWEN3_8B, QWEN3_8B_WEIGHTS)


def test_kv_per_token_and_the_full_context_do_not_fit_on_24_gb():
    shape = qwen_shape()
    assert shape.kv_bytes_per_token == 144 * 1024
    full_kv = shape.kv_bytes_per_token * shape.max_positions
    assert shape.weight_bytes + full_kv > 24 * model_fit.GiB * 0.9 - 2 * model_fit.GiB


def test_auto_context_fits_the_gpu_and_is_capped_by_the_model():
    shape = qwen_shape()
    on24 = model_fit.fit_context(shape, 24 * model_fit.GiB)
    assert 4096 <= on24 < 40960 and on24 % 1024 == 0
    used = shape.weight_bytes + 2 * on24 * shape.kv_bytes_per_token + 2 * model_fit.GiB
    assert used <= 24 * model_fit.GiB * 0.9
    assert model_fit.fit_context(shape, 80 * model_fit.GiB) == 40960
    assert model_fit.fit_context(shape, 16 * model_fit.GiB, tp=2) > 4096
    with pytest.raises(model_fit.FitError, match="weights"):
        model_fit.fit_context(shape, 16 * model_fit.GiB)


def fake_hf_cache(root):
    snap = root / "hub" / "models--Qwen--Qwen3-8B" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(QWEN3_8B))
    (snap / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": QWEN3_8B_WEIGHTS}, "weight_map": {}}))
    return root


def test_vllm_worker_gets_the_sized_context(tmp_path):
    from bankbench.serve.gpu_plan import plan_stack

    hf = fake_hf_cache(tmp_path / "hf")
    profile = load_profile("gpu-vllm", {"hf_cache": str(hf), "gpu_memory_gib": "24"})
    plan = plan_stack(profile, "st", tmp_path / "s", strict=True, is_free=lambda p: True)
    cmd = plan.specs[-1].command
    assert int(cmd[cmd.index("--max-model-len") + 1]) == plan.max_model_len < 40960
    assert any("max_model_len" in n and "24 GiB" in n for n in plan.notes)
    explicit = load_profile("gpu-vllm", {"max_model_len": "8192"})
    plan = plan_stack(explicit, "st", tmp_path / "s", strict=True, is_free=lambda p: True)
    assert plan.specs[-1].command[plan.specs[-1].command.index("--max-model-len") + 1] == "8192"


def test_unsizable_context_fails_clearly_at_start_and_is_a_note_in_a_dry_run(tmp_path,
                                                                              monkeypatch):
    from bankbench.serve.gpu_plan import plan_stack

    monkeypatch.setattr(model_fit, "gpus", lambda: [])  # no driver, as on this machine
    profile = load_profile("gpu-vllm", {"hf_cache": str(tmp_path / "hf")})
    with pytest.raises(ServeError) as err:
        plan_stack(profile, "st", tmp_path / "s", strict=True, is_free=lambda p: True)
    assert "--set max_model_len=N" in str(err.value) and "\n" not in str(err.value)
    plan = plan_stack(profile, "st", tmp_path / "s", strict=False, is_free=lambda p: True)
    assert "--max-model-len" not in plan.specs[-1].command
    assert any("not resolved" in n for n in plan.notes)


def test_nvidia_smi_output_is_parsed(monkeypatch, tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho '0, NVIDIA L4, 23034, 580.65.06'\n"
                   "echo '1, NVIDIA L4, 23034, 580.65.06'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    found = model_fit.gpus()
    assert [(g.index, g.memory_mib, g.driver) for g in found] == [
        (0, 23034, "580.65.06"), (1, 23034, "580.65.06")]
