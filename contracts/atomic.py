"""Writing a file so that no reader ever sees half of it: one rule, for every file the project
writes whole (manifests, state, records, exports, caches).

The content goes to a temporary file beside the target, named uniquely so two writers never
share one, then `os.replace` swaps it in (atomic on one file system): a reader sees the old
file or the new one, and a crash leaves at most a hidden `.<name>.*.tmp` beside it, never a
truncated target. The file gets the mode a plain write would give it (0666 less the umask).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace `path` with `data` (text is written as UTF-8) in one step; the folder must
    exist."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
