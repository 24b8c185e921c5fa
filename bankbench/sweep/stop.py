"""Ctrl-C and `kill PID` stop a sweep, always.

The handler raises KeyboardInterrupt where the sweep is, as Python's own does, and also
*remembers* the signal. A KeyboardInterrupt raised while Python runs a finalizer (a file or a
subprocess being collected, a generator closed) is printed as "Exception ignored" and lost; so
the sweep's loops ask `check()` at every poll and between levels, which raises again once a
stop was asked for. No stretch of a sweep can swallow the signal for longer than one poll.
"""

from __future__ import annotations

import signal

_asked: dict[str, int] = {}


def _handler(signum: int, frame: object) -> None:
    _asked["signal"] = signum
    raise KeyboardInterrupt


def install() -> dict[str, int]:
    """Stop on SIGINT and SIGTERM; returns the record of which signal came ("signal").

    SIGINT gets a handler of its own too: a shell starts a background job (`cmd &` in a
    script) with SIGINT ignored, Python then keeps it ignored, and `kill -INT` would do
    nothing, nor reach Harbor, which inherits the ignored disposition. A handler is reset to
    the default on exec, so the processes the sweep starts get a working SIGINT back."""
    _asked.clear()
    signal.signal(signal.SIGTERM, _handler)
    signal.signal(signal.SIGINT, _handler)
    return _asked


def asked() -> int | None:
    """The signal that asked the sweep to stop, or None."""
    return _asked.get("signal")


def check() -> None:
    """Raise KeyboardInterrupt when a stop was asked for (again, if the first one was lost)."""
    if "signal" in _asked:
        raise KeyboardInterrupt
