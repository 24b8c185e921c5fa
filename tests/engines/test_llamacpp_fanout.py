"""Which llama.cpp slots receive a copy of a finished request's long prompt (the policy of
dynamo/workers/llamacpp_fanout.py; the copies themselves are checked end to end in
tests/bankbench/serve/test_cpu_tiny_prompt_cache.py)."""

from __future__ import annotations

import sys

from bankbench.paths import dynamo_assets

sys.path.insert(0, str(dynamo_assets() / "workers"))
import llamacpp_fanout  # noqa: E402
from llamacpp_fanout import common_prefix, fanout_targets, slot_file_dir  # noqa: E402

P = list(range(100, 1300))  # a 1,200-token shared prefix


def test_idle_slots_without_a_long_prompt_get_the_copy():
    held = {0: P + [1, 2], 1: [7, 8, 9], 3: P[:500]}
    assert fanout_targets(0, P + [1, 2], held, set(), 4, 1024) == [1, 2, 3]


def test_busy_slots_and_slots_with_the_prefix_or_another_long_prompt_are_left_alone():
    other = list(range(5000, 6100))
    held = {0: P + [1], 1: P + [3, 4], 2: other}
    assert fanout_targets(0, P + [1], held, {3}, 4, 1024) == []
    assert fanout_targets(0, P + [1], held, set(), 4, 1024) == [3]


def test_short_prompts_and_a_disabled_fanout_copy_nothing():
    assert fanout_targets(0, P[:1000], {}, set(), 4, 1024) == []
    assert fanout_targets(0, P, {}, set(), 4, 0) == []
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2 and common_prefix([], [1]) == 0


def test_slot_files_go_to_a_roomy_ram_folder_else_the_temporary_one(tmp_path, monkeypatch):
    class Usage:
        def __init__(self, free: int):
            self.free = free

    monkeypatch.setattr(llamacpp_fanout.shutil, "disk_usage", lambda _: Usage(8 << 30))
    assert slot_file_dir(str(tmp_path)) == str(tmp_path)
    monkeypatch.setattr(llamacpp_fanout.shutil, "disk_usage", lambda _: Usage(64 << 20))
    assert slot_file_dir(str(tmp_path)) is None  # a container's 64 MiB /dev/shm
    assert slot_file_dir(str(tmp_path / "missing")) is None
