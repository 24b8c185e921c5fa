"""Held-out servers for the latency half of benchmarks/compare_small_n.py (`--held-out`):
written and committed before a change of the latency verdict's rule, never run while choosing
or tuning it, run at the end and reported apart from the design family. None at present: the
last ones, held out from the drift check on ranks, were looked at since and are design models
now (benchmarks/compare_drift_courses.py).

The keys of a server are those of the design models: a `course` in COURSES, a request shape in
REQUESTS.
"""

from __future__ import annotations

COURSES: dict = {}
REQUESTS: dict = {}
MODELS: dict[str, dict] = {}
