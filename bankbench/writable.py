"""Can a command write where it is about to? Asked before anything slow, so a read-only folder
(a colleague's sweep on a read-only share, a mistyped --out) is one line, not a traceback
after the tasks were built."""

from __future__ import annotations

import tempfile
from pathlib import Path


def unwritable(folder: Path) -> str | None:
    """Why nothing can be created in `folder` (or in the nearest existing folder above it,
    where it would be made), e.g. "Read-only file system"; None when it can."""
    here = Path(folder).expanduser().absolute()
    while not here.exists() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        return f"{here} is not a folder"
    try:
        with tempfile.NamedTemporaryFile(dir=here, prefix=".bankbench-write-check-"):
            pass
    except OSError as exc:
        return exc.strerror or exc.__class__.__name__
    return None
