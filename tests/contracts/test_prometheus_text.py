"""One parser for the saved `/metrics` text; the serving side and the analysis read it alike."""

from __future__ import annotations

import math

from analysis.metrics.server import prometheus_totals
from bankbench.serve.metrics import metric_sum
from contracts.prometheus import parse_samples, totals_by_name

TEXT = """\
# HELP req Requests
# TYPE req counter
req{model="m",status="ok"} 7
req{model="m",status="error"} 2 1700000000000
gauge_nan NaN
ttft_bucket{le="+Inf"} +Inf
up 1e0
not a sample
"""


def test_samples_keep_labels_and_every_value():
    samples = parse_samples(TEXT)
    assert samples['req{model="m",status="ok"}'] == 7
    assert samples['req{model="m",status="error"}'] == 2  # the timestamp is not the value
    assert math.isnan(samples["gauge_nan"]) and samples['ttft_bucket{le="+Inf"}'] == math.inf
    assert len(samples) == 5


def test_totals_sum_label_sets_and_skip_non_finite_values():
    assert totals_by_name(parse_samples(TEXT)) == {"req": 9.0, "up": 1.0}


def test_serving_and_analysis_read_the_same_text_alike():
    samples = parse_samples(TEXT)
    totals = prometheus_totals(TEXT)
    from bankbench.serve import metrics

    assert metrics.parse_samples is parse_samples  # one parser, not two that agree today
    for name in ("req", "up"):
        assert metric_sum(samples, name) == totals[name]
