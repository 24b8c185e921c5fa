"""One run per output directory: claimed, locked for the run's whole life, resumable.

A sweep, a multi-router sweep and a capacity search each write into one directory, and each
needs the same four things: a fresh directory for a new run (a default name claimed atomically,
`lock.claim_new_dir`), the directory's lock held while the run lives (`lock.hold`), the two
refusals (resuming a directory that does not exist; starting a new run where one already
is), and no half-made directory left behind by a new run that failed before its record was
written. `locked_output` does all four; the callers differ only in what they write inside.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bankbench.sweep import lock
from bankbench.sweep.errors import SweepError
from contracts.sweep import ROUTERS_FILE, SWEEP_FILE

# A directory holding one of these holds a run: a new one there is refused.
RUN_RECORDS = (SWEEP_FILE, ROUTERS_FILE)
BUSY_RESUMING = ("wait for it to end, or stop it first (Ctrl-C in its terminal, or kill -INT "
                 "with that pid)")
BUSY_NEW = "choose another --name"


@dataclass
class OutputDir:
    path: Path
    created: bool  # made by this run: removed again if the run fails before `keep()`
    kept: bool = False

    def keep(self) -> None:
        """The run's record is on disk: the directory stays, whatever happens next."""
        self.kept = True


@contextmanager
def locked_output(path: Path, *, resume: bool, claim: bool = False) -> Iterator[OutputDir]:
    """The run's directory, locked for the block. `resume`: it must exist. `claim`: `path`
    is a default name, so a taken one becomes `<name>-2`… instead of a refusal. Refusals and
    another process holding the lock raise SweepError (one line, naming the directory)."""
    path = path.resolve()
    if resume and not path.is_dir():
        raise SweepError(f"{path}: no such sweep directory")
    created = False
    if not resume:
        if claim:
            path, created = lock.claim_new_dir(path), True
        elif not path.exists():
            path.mkdir(parents=True)
            created = True
    try:
        with lock.hold(path, busy_hint=BUSY_RESUMING if resume else BUSY_NEW):
            out = OutputDir(path, created)
            try:
                if not resume and any((path / name).exists() for name in RUN_RECORDS):
                    raise SweepError(f"{path} already holds a sweep; continue it with "
                                     f"--resume {path}, or choose another --name")
                yield out
            except BaseException:
                if out.created and not out.kept:
                    shutil.rmtree(path, ignore_errors=True)  # refused runs leave nothing
                raise
    except lock.SweepBusy as exc:
        raise SweepError(str(exc)) from None
