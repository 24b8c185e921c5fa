"""Share a long prompt prefix across llama.cpp's slots: copy a slot's KV to idle slots lacking it.

llama.cpp reuses a prompt prefix only within a slot, or by moving one saved copy from its host-RAM
prompt cache into one other slot. Concurrent agents that all open with the same ~4.9k-token tool
prompt therefore read it once per slot that has never seen it, several at a time, on two cores:
tens of seconds each. When a request whose prompt (plus reply) is at least `min_tokens` long ends,
its slot is idle and holds that prefix: this saves the slot's KV (llama.cpp's own
`/slots/<id>?action=save`, ~25 ms for 2k tokens, into a RAM-backed folder) and restores it into
every idle slot that holds no long prompt of its own (~15 ms each). The next concurrent requests
with the same prefix then find it in whichever slot llama.cpp gives them, and read only their own
suffix. A copy never replaces a slot's long prompt, and failures are logged, never passed to a
request (the cost is then only the cold read this avoids).

With a `keeper` (the worker's --prompt-cache-dir, llamacpp_prompt_cache.py) the first saved copy
of each long prefix is also handed to it to keep across worker starts, and `restore_kept` loads
a kept one into every slot when the worker starts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import Callable, Sequence
from typing import Any

logger = logging.getLogger("llamacpp_worker.fanout")


def slot_file_dir(shm: str = "/dev/shm", min_free: int = 1 << 30) -> str | None:
    """Where slot copies go: RAM-backed /dev/shm when it is writable with room for a few long
    prompts (~23 KB per token for SmolLM2; a container's default 64 MiB is not), else None
    (the system's temporary folder)."""
    try:
        if os.access(shm, os.W_OK) and shutil.disk_usage(shm).free >= min_free:
            return shm
    except OSError:
        pass
    return None


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def fanout_targets(
    source: int, tokens: Sequence[int], held: dict[int, Sequence[int]], busy: set[int],
    n_slots: int, min_tokens: int,
) -> list[int]:
    """The slots that should receive a copy of slot `source` holding `tokens`: idle, and holding
    neither this prefix already nor a long prompt of their own (which a copy would evict)."""
    if min_tokens <= 0 or len(tokens) < min_tokens:
        return []
    targets = []
    for slot in range(n_slots):
        own = held.get(slot, ())
        if slot == source or slot in busy:
            continue
        if len(own) >= min_tokens or common_prefix(own, tokens) >= min_tokens:
            continue
        targets.append(slot)
    return targets


class PrefixFanOut:
    """Bookkeeping of what each slot holds (from the requests the worker sent) and the copies."""

    def __init__(
        self, n_slots: int, min_tokens: int, save_dir: str,
        keeper: Callable[[str, list[int]], object] | None = None,
    ):
        self.n_slots = n_slots
        self.min_tokens = min_tokens
        self.save_dir = save_dir
        self.keeper = keeper  # blocking: runs in a thread
        self.kept: list[list[int]] = []  # long prefixes already kept (or restored at start)
        self.held: dict[int, list[int]] = {}
        self.lock = asyncio.Lock()  # one copy at a time: they read the slot table
        self.tasks: set[asyncio.Task] = set()
        self.copies = 0

    def ended(self, slot: int, tokens: list[int], session: Any, base_url: str) -> None:
        """A request on `slot` ended holding `tokens`: maybe copy them to other idle slots."""
        self.held[slot] = tokens
        if self.wants_keep(tokens) or fanout_targets(
            slot, tokens, self.held, set(), self.n_slots, self.min_tokens
        ):
            task = asyncio.get_running_loop().create_task(self._copy(slot, session, base_url))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    def wants_keep(self, tokens: Sequence[int]) -> bool:
        """A keeper is set and `tokens` is a long prefix not kept yet (one copy per prefix)."""
        if self.keeper is None or self.min_tokens <= 0 or len(tokens) < self.min_tokens:
            return False
        return all(common_prefix(k, tokens) < self.min_tokens for k in self.kept)

    async def restore_kept(self, session: Any, base_url: str, path: str, tokens: list[int]) -> int:
        """Load a kept slot state into every slot; returns how many took it."""
        name = "kept-prefix.bin"
        link = os.path.join(self.save_dir, name)  # llama.cpp reads slot files from its folder
        restored = 0
        async with self.lock:
            try:
                os.symlink(os.path.abspath(path), link)
                for slot in range(self.n_slots):
                    done = await _slot_action(session, base_url, slot, "restore", name)
                    if int(done.get("n_restored", -1)) == len(tokens):
                        self.held[slot] = list(tokens)
                        restored += 1
                self.kept.append(list(tokens))
            except Exception as exc:  # the cost is only the cold read it meant to save
                logger.warning("kept prompt %s not restored: %s", path, exc)
            finally:
                try:
                    os.unlink(link)
                except OSError:
                    pass
        if restored:
            logger.info("restored a kept %d-token prompt into %d slots", len(tokens), restored)
        return restored

    async def _copy(self, source: int, session: Any, base_url: str) -> None:
        async with self.lock:
            name = f"prefix-{source}.bin"
            try:
                # Which slots serve a request right now (the worker learns a request's slot
                # only from its last event): a copy goes to idle ones only.
                busy = await _busy_slots(session, base_url)
                tokens = self.held.get(source, [])
                targets = fanout_targets(source, tokens, self.held, busy, self.n_slots,
                                         self.min_tokens)
                keep = self.wants_keep(tokens)
                if (not targets and not keep) or source in busy:
                    return  # taken again meanwhile: what it holds is no longer known
                saved = await _slot_action(session, base_url, source, "save", name)
                n = int(saved.get("n_saved", -1))
                # The slot holds the prompt and the reply but for its last token or two (sampled,
                # never evaluated); anything else means it changed since the request ended.
                if not (len(tokens) - 2 <= n <= len(tokens)) or n < self.min_tokens:
                    return
                copied = list(tokens[:n])
                for slot in targets:
                    done = await _slot_action(session, base_url, slot, "restore", name)
                    if int(done.get("n_restored", -1)) == n:
                        self.held[slot] = copied
                        self.copies += 1
                if targets:
                    logger.info("copied a %d-token prompt from slot %d to slots %s", n, source,
                                targets)
                if keep and self.keeper is not None and self.wants_keep(copied):
                    self.kept.append(copied)
                    path = os.path.join(self.save_dir, name)
                    await asyncio.get_running_loop().run_in_executor(
                        None, self.keeper, path, copied
                    )
                    logger.info("kept a %d-token prompt for later worker starts", n)
            except Exception as exc:  # a failed copy costs only the cold read it meant to save
                logger.warning("prompt copy from slot %d failed: %s", source, exc)
            finally:
                try:
                    os.unlink(os.path.join(self.save_dir, name))
                except OSError:
                    pass


async def _slot_action(session: Any, base_url: str, slot: int, action: str, name: str) -> dict:
    url = f"{base_url}/slots/{slot}?action={action}"
    async with session.post(url, json={"filename": name}) as resp:
        body = await resp.json(content_type=None)
        if resp.status != 200:
            raise RuntimeError(f"{action} slot {slot}: HTTP {resp.status} {body}")
        return body


async def _busy_slots(session: Any, base_url: str) -> set[int]:
    async with session.get(f"{base_url}/slots") as resp:
        resp.raise_for_status()
        return {int(s["id"]) for s in await resp.json(content_type=None) if s.get("is_processing")}
