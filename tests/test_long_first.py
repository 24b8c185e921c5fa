"""The slow tier's hand-out order stays meaningful: every file LONG_FIRST
(tests/support/long_first.py) names exists, once. A renamed or split file would otherwise drop
silently to the end of the order and, being long, finish alone after the other workers."""

from __future__ import annotations

from pathlib import Path

from tests.support.long_first import LONG_FIRST

ROOT = Path(__file__).resolve().parents[1]


def test_long_first_names_each_existing_file_once():
    assert len(set(LONG_FIRST)) == len(LONG_FIRST)
    missing = [path for path in LONG_FIRST if not (ROOT / path).is_file()]
    assert missing == []
