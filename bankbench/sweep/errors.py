"""The sweep's own errors: each message says why and what to do, in one line."""

from __future__ import annotations


class SweepError(RuntimeError):
    """A sweep cannot start or go on; the message says why and what to do."""


class BadOptions(SweepError):
    """An option given on the command line is wrong (exit 2, like argparse's own errors)."""
