"""Suite-wide fixtures and the two tiers.

Tiers: a test is in the *slow* tier when it carries the `slow`, `dynamo` or `harbor` marker,
else in the *fast* tier. `--tier fast` / `--tier slow` runs one of them (`./test.sh` runs the
fast tier, `./test.sh --all` both, `.ci/run` fast then slow); a plain `pytest` runs everything.

New tests default sensibly: one that uses a fixture starting a Dynamo stack or a Harbor job
(`STACK_FIXTURES`) gets that marker here without being told; any other test that takes more
than `FAST_BUDGET_S` in a fast-tier run is named at the end of the run with the marker to add.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.support.long_first import LONG_FIRST

# pytest keeps each test module's rewritten asserts as bytecode, but not where bytecode is not
# written (PYTHONDONTWRITEBYTECODE): then every worker of every run rewrote all the test
# modules again at collection (~7 CPU-s a worker). Allowed in the test processes only, into the
# __pycache__ folders git ignores; the processes the tests start keep the variable.
sys.dont_write_bytecode = False

SLOW_MARKERS = ("slow", "dynamo", "harbor")
# fixture -> the marker a test using it gets (these start a real Dynamo stack).
STACK_FIXTURES = {
    "dynamo_python": "dynamo",  # the Dynamo venv: only tests that run Dynamo ask for it
    "scripted_stack": "dynamo",
    "served": "dynamo",
    "stack": "dynamo",
    "degrading_proxy": "dynamo",
}
# A fast-tier test over this (setup + call + teardown) is named at the end of the run.
FAST_BUDGET_S = 10.0
TIERS = ("all", "fast", "slow")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier", choices=TIERS, default="all",
        help="fast: tests without the slow/dynamo/harbor markers; slow: those with one; "
        "all (default): both")


def pytest_configure(config: pytest.Config) -> None:
    """With parallel workers (`-n N`) and the slow tier selected, the controller builds the
    Dynamo venv before any worker starts: otherwise the first worker to need it builds it under
    its lock while the others' Dynamo tests wait on that lock inside their own timeouts."""
    workers = getattr(config.option, "numprocesses", None)
    if not workers or hasattr(config, "workerinput") or config.option.collectonly:
        return
    if config.getoption("--tier") == "fast":
        return
    # xdist hands out files most tests first unless told to keep the collection's order, and
    # the longest files hold one or two tests each: they went out last and set the wall time.
    config.option.loadscopereorder = False
    from bankbench.serve.dynamo_venv import ensure_dynamo_venv

    ensure_dynamo_venv()


def in_slow_tier(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) for name in SLOW_MARKERS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, marker in STACK_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)
    tier = config.getoption("--tier")
    if tier != "all":
        keep, drop = [], []
        for item in items:
            (keep if in_slow_tier(item) == (tier == "slow") else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
    if tier != "fast":
        rank = {path: i for i, path in enumerate(LONG_FIRST)}
        items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def pytest_report_header(config: pytest.Config) -> str:
    tier = config.getoption("--tier")
    if tier == "fast":
        return "tier: fast (the slow/dynamo/harbor tests are deselected; --tier all runs them)"
    return f"tier: {tier}"


_durations: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if config.getoption("--tier") != "fast":
        return
    over = sorted(((d, n) for n, d in _durations.items() if d > FAST_BUDGET_S), reverse=True)
    if not over:
        return
    terminalreporter.section("fast-tier budget")
    terminalreporter.write_line(
        f"{len(over)} fast-tier test(s) took over {FAST_BUDGET_S:g} s; if they are slow on an "
        "idle machine too, mark them `slow` (or `dynamo` / `harbor`):")
    for duration, nodeid in over:
        terminalreporter.write_line(f"  {duration:6.1f} s  {nodeid}")


@pytest.fixture(scope="session", autouse=True)
def own_serve_state(tmp_path_factory):
    """Stacks the tests start are recorded in a folder of this session, never in the user's
    `<cache>/serve` (where a dead test stack would make a plain `bankbench serve down` ask
    which stack was meant). Only serve state moves: the Dynamo venv, the llama.cpp wheel and
    the model files in the cache stay shared. Set in os.environ so CLI subprocesses inherit it."""
    before = os.environ.get("BANKBENCH_SERVE_STATE")
    os.environ["BANKBENCH_SERVE_STATE"] = str(tmp_path_factory.mktemp("serve-state"))
    yield
    if before is None:
        os.environ.pop("BANKBENCH_SERVE_STATE", None)
    else:
        os.environ["BANKBENCH_SERVE_STATE"] = before


@pytest.fixture(scope="session")
def sample_tasks_all(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every sample scenario as a goals-mode Harbor task with the real template, built once
    per session with the cheap labels (`tests/support/built_tasks.py`). Read it, or copy
    what a test changes or runs (`copy_tasks`)."""
    from tests.support.built_tasks import build_sample

    return build_sample(tmp_path_factory.mktemp("sample-tasks"))
