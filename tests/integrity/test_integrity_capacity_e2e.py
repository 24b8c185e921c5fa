"""Tool-call integrity end to end on real parts: `bankbench capacity` (the CLI, the real harbor
CLI, LocalEnvironment) against the real Dynamo frontend with the mocker engine, scripted through
response-replay traces so agents make real tool calls, behind the FAULT-INJECTING TEST PROXY
(tests/support/fault_proxy.py), which leaves tool calls as unparsed markup in the text of every
reply that was in flight together with more than two requests. Levels 1 and 2 never put more
than two requests in flight.

The search with `--slo tool_call_error_rate=0.01` must stop above level 2, limited by that
bound; the sweep's report must show the class worse than c1 at c4 and nowhere at c1–c2, draw the
figure, and carry the validity block (two workers sharing the requests; the server's version
unknown, as for any server the sweep did not start)."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.integrity_stack import run_capacity

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow]


def test_capacity_stops_where_tool_calls_break_and_the_report_shows_where(tmp_path):
    run = run_capacity(tmp_path, "markup_in_content", above=2, max_level=4)
    done = run.done
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert run.corrupted > 0
    sweep = run.sweep
    record = json.loads((sweep / "capacity.json").read_text())
    steps = {s["level"]: s for s in record["steps"]}
    for level in (1, 2):
        check = {c["name"]: c for c in steps[level]["checks"]}["tool_call_error_rate"]
        assert steps[level]["passed"] and check["value"] == 0, steps[level]
    assert record["capacity"] in (2, 3) and record["lowest_failing"] in (3, 4)
    assert any(name.startswith("tool_call_error_rate") for name in record["limiting"])

    report = (sweep / "report.md").read_text()
    section = report.split("## Tool-call integrity vs concurrency")[1].split("\n## ")[0]
    header = next(line for line in section.splitlines() if line.startswith("| class"))
    levels = [cell.strip() for cell in header.strip("|").split("|")][1:]
    markup = next(line for line in section.splitlines() if line.startswith("| markup"))
    cells = dict(zip(levels, (c.strip() for c in markup.strip("|").split("|")[1:]),
                     strict=True))
    assert "▲" in cells["c4"] and "▲" not in cells["c1"] + cells["c2"], section
    assert (sweep / "plots" / "integrity_vs_concurrency.png").is_file()
    validity = report.split("## Validity of the run")[1].split("\n## ")[0]
    assert "took almost nothing" not in validity and "router changed" not in validity
    # a server the sweep did not start: nothing recorded its version, and the block says so
    assert "the server's version was not recorded" in validity
    # both mocker workers named, each with a share of every level's requests
    assert len(set(re.findall(r"…\d{6}", validity))) == 2, validity
