"""Keep a long prompt's slot KV across worker starts (opt-in: the worker's --prompt-cache-dir).

Every fresh worker reads the ~4.9k-token banking tool prompt cold once (~25 s on two cores). When
the worker has saved a slot holding a long prompt (llamacpp_fanout.py), one copy is kept here;
the next worker restores it into every slot at start, so its first request reads only its own
suffix.

A saved slot state is only valid for the engine that wrote it: the entry's name carries a hash
of everything the state's layout depends on (the GGUF file's identity, the xllamacpp build, the
per-slot context, the KV cache types, flash attention, SWA), and its JSON sidecar repeats those
fields plus the state file's size and SHA-256, which are checked before a restore. Anything that
does not match is skipped with one log line. Files are written to a temporary name and renamed
(a reader never sees half a file), and only the newest `keep` entries stay.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ValidationError

logger = logging.getLogger("llamacpp_worker.prompt_cache")

SUFFIX = ".slot"
META = ".json"


class EngineKey(BaseModel):
    """What a saved slot state depends on; a different value means a different layout."""

    model_path: str
    model_size: int
    model_mtime_ns: int
    xllamacpp: str
    n_ctx: int  # per slot (slots are not unified)
    cache_type_k: str
    cache_type_v: str
    flash_attn_type: str
    swa_full: bool

    def digest(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


class Entry(BaseModel):
    """The JSON sidecar of one kept slot state."""

    key: EngineKey
    tokens: list[int]
    size: int
    sha256: str
    saved_unix: float


def engine_key(model_path: str, xllamacpp_version: str, n_ctx: int, params: object) -> EngineKey:
    st = os.stat(model_path)
    return EngineKey(
        model_path=os.path.realpath(model_path),
        model_size=st.st_size,
        model_mtime_ns=st.st_mtime_ns,
        xllamacpp=xllamacpp_version,
        n_ctx=n_ctx,
        cache_type_k=str(getattr(params, "cache_type_k", "")),
        cache_type_v=str(getattr(params, "cache_type_v", "")),
        flash_attn_type=str(getattr(params, "flash_attn_type", "")),
        swa_full=bool(getattr(params, "swa_full", False)),
    )


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _atomic_write(dest: Path, write) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class PromptCache:
    """One folder of kept slot states, shared by every setup (entries name their key)."""

    def __init__(self, folder: str | Path, key: EngineKey, keep: int = 2):
        self.folder = Path(folder)
        self.key = key
        self.keep = max(1, keep)
        self.prefix = f"prompt-{key.digest()}-"

    def _entries(self, mine: bool) -> list[Path]:
        """Sidecars, newest first (of this setup only when `mine`)."""
        pattern = f"{self.prefix}*{META}" if mine else f"prompt-*{META}"
        found = [p for p in self.folder.glob(pattern) if not p.name.startswith(".")]
        return sorted(found, key=lambda p: p.stat().st_mtime_ns, reverse=True)

    def store(self, state_file: str | Path, tokens: Sequence[int]) -> Path:
        """Keep a copy of `state_file` (a slot saved holding `tokens`); drop the oldest extras."""
        self.folder.mkdir(parents=True, exist_ok=True)
        name = self.prefix + hashlib.sha256(json.dumps(list(tokens)).encode()).hexdigest()[:16]
        data = self.folder / (name + SUFFIX)
        digest = hashlib.sha256()
        size = 0

        def copy(out) -> None:
            nonlocal size
            with open(state_file, "rb") as src:
                while chunk := src.read(1 << 20):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)

        _atomic_write(data, copy)
        entry = Entry(key=self.key, tokens=list(tokens), size=size, sha256=digest.hexdigest(),
                      saved_unix=time.time())
        meta = self.folder / (name + META)
        _atomic_write(meta, lambda f: f.write(entry.model_dump_json().encode()))
        self.prune()
        return data

    def prune(self) -> None:
        for meta in self._entries(mine=False)[self.keep:]:
            for path in (meta, meta.with_suffix(SUFFIX)):
                try:
                    path.unlink()
                except OSError:
                    pass

    def load(self) -> tuple[Path, list[int]] | None:
        """The newest valid entry of this setup (state file, tokens), or None; a bad one is
        skipped with one log line."""
        if not self.folder.is_dir():
            return None
        for meta in self._entries(mine=True):
            data = meta.with_suffix(SUFFIX)
            try:
                entry = Entry.model_validate_json(meta.read_bytes())
                if entry.key != self.key:
                    raise ValueError("written by a different engine setup")
                if data.stat().st_size != entry.size or file_sha256(data) != entry.sha256:
                    raise ValueError("state file does not match its checksum")
                if not entry.tokens:
                    raise ValueError("no tokens")
            except (OSError, ValueError, ValidationError) as exc:
                logger.warning("ignoring kept prompt %s: %s", meta.name,
                               str(exc).splitlines()[0])
                continue
            return data, entry.tokens
        return None
