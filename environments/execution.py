"""Running one command of a trial: its own process group, its output through bounded pipes,
killed on timeout or cancellation.

Output never touches the host's disk or memory beyond a stated bound: each of stdout and
stderr is a pipe this process reads while the command runs, keeping at most `max_bytes` and
counting (then discarding) the rest, and the result says when it was cut. Pipes rather than
files, because a file outlives its command: a background job that keeps it open can go on
writing (up to the file-size limit, as many as it likes) after the command returned, on
whatever disk the harness keeps its files. A background job holding a pipe does not hold the
command open either: the command is over when its own process exits, and what it wrote before
is in the pipe by then (a write to a full pipe blocks its writer).

When the command is over, its pipes are drained and closed: a job it left behind that writes
again gets SIGPIPE (or EPIPE). Commands the harness itself runs as root (a task's ENTRYPOINT
starting its services, the verifier) may leave services that write to their output as they
would in a container: their pipes are handed to a `Lingering` sink that keeps discarding until
the trial stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field

from environments.process_end import kill_group

TIMEOUT_EXIT_CODE = 124  # what coreutils `timeout` returns
READ_CHUNK = 1 << 16
# Reads of a drain after the command ended: a job it left may keep a pipe full forever.
MAX_DRAIN_READS = 64


@dataclass
class CommandOutput:
    """What a command left: exit code, its output (bounded) and whether either was cut."""

    code: int
    stdout: str
    stderr: str
    timed_out: bool


class BoundedPipe:
    """One pipe: the write end for the command, the read end read by the event loop into at
    most `max_bytes`; `total` counts everything that came through."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_bytes: int) -> None:
        self._loop = loop
        self.max_bytes = max_bytes
        self.read_fd, self.write_fd = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(self.read_fd, False)
        self.kept = bytearray()
        self.total = 0
        self.eof = False
        self._reading = False

    def start(self) -> None:
        """Read as data comes; call after the write end went to the command."""
        os.close(self.write_fd)
        self.write_fd = -1
        self._loop.add_reader(self.read_fd, self.read_available)
        self._reading = True

    def read_available(self, max_reads: int | None = None) -> None:
        reads = 0
        while not self.eof and (max_reads is None or reads < max_reads):
            try:
                chunk = os.read(self.read_fd, READ_CHUNK)
            except BlockingIOError:
                return
            reads += 1
            if not chunk:
                self.eof = True
                self._stop_reading()
                return
            self.total += len(chunk)
            room = self.max_bytes - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]
            if max_reads is None:
                return  # one read per wake-up: a flood cannot hold the event loop

    def drain(self) -> None:
        """What the ended command wrote is in the pipe already: take it, within a bound."""
        self.read_available(MAX_DRAIN_READS)

    def text(self) -> str:
        return bytes(self.kept).decode(errors="replace")

    @property
    def truncated(self) -> bool:
        return self.total > len(self.kept)

    def _stop_reading(self) -> None:
        if self._reading:
            self._loop.remove_reader(self.read_fd)
            self._reading = False

    def close(self) -> None:
        self._stop_reading()
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.read_fd = self.write_fd = -1


@dataclass
class Lingering:
    """Pipes of ended root commands still held open by services they started: read and
    discarded until the writer goes, closed at `close()` (the trial's stop)."""

    pipes: list[BoundedPipe] = field(default_factory=list)

    def keep(self, pipe: BoundedPipe) -> None:
        pipe.kept.clear()
        pipe.max_bytes = 0  # discard from now on
        self.pipes = [p for p in self.pipes if not p.eof]
        if pipe.eof:
            pipe.close()
        else:
            self.pipes.append(pipe)

    def close(self) -> None:
        for pipe in self.pipes:
            pipe.close()
        self.pipes = []


def truncation_note(name: str, pipe: BoundedPipe) -> str:
    return (f"\nLocalEnvironment: {name} was {pipe.total} bytes; kept the first "
            f"{len(pipe.kept)} (the bound on one command's output, --ek max_output_mb)")


async def run_command(argv: list[str], env: dict[str, str], timeout_sec: float | None, *,
                      max_output_bytes: int, linger: Lingering | None = None) -> CommandOutput:
    """Run argv in its own process group, stdin empty, output through bounded pipes; kill the
    group on timeout or cancellation. With `linger`, pipes still held open after the command
    ended go on being drained there (root's services); without, they are closed."""
    loop = asyncio.get_running_loop()
    out, err = BoundedPipe(loop, max_output_bytes), BoundedPipe(loop, max_output_bytes)
    handed_over = False
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=out.write_fd,
            stderr=err.write_fd, start_new_session=True,
        )
        out.start()
        err.start()
        timed_out = False
        try:
            code = await asyncio.wait_for(process.wait(), timeout=timeout_sec)
        except TimeoutError:
            kill_group(process.pid)
            code = await process.wait()
            timed_out = True
        except BaseException:  # cancelled: leave nothing running behind us
            kill_group(process.pid)
            raise
        out.drain()
        err.drain()
        stdout, stderr = out.text(), err.text()
        for name, pipe in (("stdout", out), ("stderr", err)):
            if pipe.truncated:
                stderr += truncation_note(name, pipe)
        if linger is not None:
            linger.keep(out)
            linger.keep(err)
            handed_over = True
        return CommandOutput(TIMEOUT_EXIT_CODE if timed_out else code, stdout, stderr,
                             timed_out)
    finally:
        if not handed_over:
            out.close()
            err.close()
