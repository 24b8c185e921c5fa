"""Kept slot states across worker starts (dynamo/workers/llamacpp_prompt_cache.py): keyed by the
engine setup, checked before use, bounded, written whole. The restore into a live engine is
checked end to end in tests/bankbench/serve/test_cpu_tiny_prompt_cache.py."""

from __future__ import annotations

import logging
import os
import sys
import time

from bankbench.paths import dynamo_assets

sys.path.insert(0, str(dynamo_assets() / "workers"))
from llamacpp_fanout import PrefixFanOut  # noqa: E402
from llamacpp_prompt_cache import PromptCache, engine_key  # noqa: E402


class Params:
    cache_type_k = "f16"
    cache_type_v = "f16"
    flash_attn_type = "-1"
    swa_full = False


def make(tmp_path, n_ctx=8192, keep=2, model_bytes=b"gguf"):
    model = tmp_path / "m.gguf"
    if not model.exists():
        model.write_bytes(model_bytes)
    return PromptCache(tmp_path / "kept", engine_key(str(model), "1.0", n_ctx, Params()), keep)


def state(tmp_path, data=b"kv" * 1000):
    path = tmp_path / "slot.bin"
    path.write_bytes(data)
    return path


def test_a_kept_state_comes_back_for_the_same_setup_only(tmp_path):
    tokens = list(range(1500))
    make(tmp_path).store(state(tmp_path), tokens)
    path, got = make(tmp_path).load()
    assert got == tokens and path.read_bytes() == b"kv" * 1000
    assert make(tmp_path, n_ctx=4096).load() is None  # another context size: another layout
    os.utime(tmp_path / "m.gguf", ns=(1, 1))  # the model file changed
    assert make(tmp_path).load() is None


def test_a_corrupt_or_tampered_entry_is_ignored_with_one_line(tmp_path, caplog):
    cache = make(tmp_path)
    data = cache.store(state(tmp_path), list(range(1500)))
    data.write_bytes(b"kv" * 999 + b"xx")  # same size, other bytes
    with caplog.at_level(logging.WARNING):
        assert make(tmp_path).load() is None
    assert len(caplog.records) == 1 and "checksum" in caplog.records[0].getMessage()
    data.write_bytes(b"kv" * 500)  # cut short, as by a full disk
    with caplog.at_level(logging.WARNING):
        assert make(tmp_path).load() is None
    assert "checksum" in caplog.records[-1].getMessage()
    data.with_suffix(".json").write_text("{not json")
    assert make(tmp_path).load() is None


def test_only_the_newest_entries_stay_and_no_partial_files(tmp_path):
    cache = make(tmp_path, keep=2)
    for i in range(4):
        cache.store(state(tmp_path, bytes([i]) * 10), [i] * 1200)
        time.sleep(0.02)  # distinct mtimes, whatever the file system's grain
    names = sorted(p.name for p in cache.folder.iterdir())
    assert len(names) == 4 and not any(n.startswith(".") for n in names)  # 2 × (state, sidecar)
    assert make(tmp_path).load()[1] == [3] * 1200


def test_a_prefix_is_kept_once_per_worker():
    fan = PrefixFanOut(4, 1024, "/tmp", keeper=lambda path, tokens: None)
    long = list(range(2000))
    assert fan.wants_keep(long)
    fan.kept.append(long[:1900])
    assert not fan.wants_keep(long[:1500] + [7, 7])  # shares a long prefix with the kept one
    assert fan.wants_keep(list(range(5000, 7000)))
    assert not fan.wants_keep(long[:500])  # short
    assert not PrefixFanOut(4, 1024, "/tmp").wants_keep(long)  # no keeper
