"""`--slo tool_call_error_rate=X`: a capacity bound on the summary's tool-call error rate, which
a level without classified replies fails as "nothing measured" rather than passing unseen."""

from __future__ import annotations

import math

import pandas as pd

from bankbench.capacity.checks import slo_checks, slo_value
from bankbench.slo_option import level_slos
from contracts.capacity import CapacitySearch


def test_the_bound_reads_the_summary_rate_and_judges_it():
    slos = level_slos(["tool_call_error_rate=0.01"])
    search = CapacitySearch(slos=slos)
    requests = pd.DataFrame({"ok": [True], "overloaded": [0]})
    for rate, passed in ((0.0, True), (0.01, True), (0.2, False)):
        value = slo_value("tool_call_error_rate", pd.Series({"tool_call_error_rate": rate}),
                          requests, 0.0)
        checks = slo_checks(search.slos, {"tool_call_error_rate": value, "lost_rate": 0.0})
        check = next(c for c in checks if c.name == "tool_call_error_rate")
        assert (check.value, check.passed) == (rate, passed)
    unmeasured = slo_value("tool_call_error_rate",
                           pd.Series({"tool_call_error_rate": math.nan}), requests, 0.0)
    checks = slo_checks(search.slos, {"tool_call_error_rate": unmeasured, "lost_rate": 0.0})
    check = next(c for c in checks if c.name == "tool_call_error_rate")
    assert not check.passed and check.note == "nothing measured"
