"""Held-out servers for the latency half of benchmarks/compare_small_n.py (`--held-out`):
written and committed before the rule they judge, never run while choosing or tuning it, run
once at the end and reported apart from the design family.

None now: the last set (written before the Welch run test and run against it once) is in the
design family (benchmarks/compare_deployment_courses.py). A new set comes here, with the same
names (COURSES, REQUESTS, SESSIONS, MODELS named "held-out ..."), before the next rule.
"""

from __future__ import annotations

COURSES: dict = {}
REQUESTS: dict = {}
SESSIONS: dict = {}
# The models compare_small_n.py runs with --held-out.
MODELS: dict[str, dict] = {}
