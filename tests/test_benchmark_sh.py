"""`./benchmark.sh`: the embedded default's options, read through the real sweep parser.

The script ends in `exec bankbench sweep …`; a `bankbench` placed ahead of the project's on PATH
writes the arguments it was given instead of running a sweep, so these tests check what the
script would run, not a copy of its text.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from bankbench.cli import build_parser
from bankbench.commands.sweep import _explicit_options
from contracts.sweep import SweepConfig

ROOT = Path(__file__).resolve().parents[1]


def _sweep_config(tmp_path: Path, *given: str) -> SweepConfig:
    """The SweepConfig `./benchmark.sh GIVEN…` would start its sweep with."""
    stand_in = tmp_path / "bin"
    stand_in.mkdir(exist_ok=True)
    argv_file = tmp_path / "argv"
    (stand_in / "bankbench").write_text(
        f'#!/usr/bin/env bash\nprintf "%s\\0" "$@" > {argv_file}\n')
    (stand_in / "bankbench").chmod(0o755)
    # .venv/bin already on PATH: bootstrap.sh leaves the order alone, so the stand-in wins.
    env = dict(os.environ, PATH=f"{stand_in}:{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}")
    done = subprocess.run([str(ROOT / "benchmark.sh"), *given], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    argv = argv_file.read_text().split("\0")[:-1]
    assert argv[0] == "sweep", argv
    args = build_parser().parse_args(argv)
    return SweepConfig.model_validate(_explicit_options(args, all_fields=True))


def test_the_default_run_has_two_repeats_at_every_level_for_the_decision_columns(tmp_path):
    config = _sweep_config(tmp_path)
    assert config.profile == "cpu-tiny"
    # The decision columns judge each level against its own repeats: they need ≥ 2 per scenario.
    assert config.attempts >= 2
    # Every level fills: no level asks for more concurrent trials than the sweep has
    # (the runner warns about such levels).
    assert config.limit is not None
    assert max(config.levels) <= config.limit * config.attempts
    # and the levels still grow in concurrency, from one agent at a time
    assert config.levels[0] == 1 and len(config.levels) >= 3
    assert config.levels == sorted(set(config.levels))
    assert config.agent_kwargs["tool_choice"] == "first"
    assert config.server_options["prompt_cache"] == "true"


def test_options_given_replace_the_defaults(tmp_path):
    config = _sweep_config(tmp_path, "--attempts", "1", "--levels", "1")
    assert (config.attempts, config.levels, config.profile) == (1, [1], "cpu-tiny")


def test_a_server_given_drops_the_embedded_defaults(tmp_path):
    config = _sweep_config(tmp_path, "--profile", "cpu-mocker")
    assert config.profile == "cpu-mocker"
    assert config.attempts == SweepConfig.model_fields["attempts"].default
    assert config.agent_kwargs == {}
