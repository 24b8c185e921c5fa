"""A level's measured window: the stretch of each run of the level when all its slots were busy.

A level of concurrency c runs its trials through c slots (Harbor's `-n`). Each *run* of it (the
first, each resume after an interruption, each extra pass of more repeats) starts with every
slot beginning at once and ends with slots going idle one by one once the queue is empty. The
measured window of a run leaves out both:

- **warm-up**: until `warmup_share` of the run's first c trials have finished (the slots have
  turned over, so requests no longer start in lock-step); 0 keeps it;
- **drain**: from the first trial end after the run's last trial start (a slot went idle and
  nothing refills it); with sharded levels, the first shard to drain ends the window;
  `keep_drain` keeps it;
- and whatever a stopped run left unfinished: it ends at `cut_at` (its earliest unfinished
  trial's start: later, some slots held trials whose requests are not kept).

The level's window is the union of its runs' windows, so the pause between an interruption and
its resume is never measured. A window is steady only when more trials started inside it than
the level has slots (`enough_turnover`): with about 2 x c trials the stretch between warm-up and
drain holds the second wave alone, which starts in lock-step as the first did — one wave, not a
steady state, and request percentiles over its few trials. A level with no such stretch (too
few trials for its slots: about 2 x c or fewer) is *not steady*: its figures fall back to
each run's whole span, first request start to last request end, and say so (`steady` False).
Runs come from sweep.json (`LevelRecord.runs`); a level recorded before runs were is split where
no trial ran for `PAUSE_GAP_S`.

Used by analysis/summary.py (every throughput, goodput and request-percentile figure of a
level), analysis/shards.py, and the capacity search (`certifiable`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pandas as pd

from contracts.sweep import DEFAULT_WARMUP_SHARE

PAUSE_GAP_S = 30.0
# A level is certified only when its slots were this busy over its window on average
# (achieved trial concurrency / configured): below it, the level did not hold its load.
MIN_ACHIEVED_SHARE = 0.9


@dataclass(frozen=True)
class Window:
    """Disjoint [start, end) intervals on the wall clock (integer ns), in order."""

    intervals: tuple[tuple[int, int], ...]
    steady: bool
    runs: int = 1
    # Each run's first trial start to last trial end (the fallback for trial concurrency).
    trial_spans: tuple[tuple[int, int], ...] = ()

    @property
    def seconds(self) -> float:
        total = sum(end - start for start, end in self.intervals) / 1e9
        return total if total > 0 else math.nan

    def contains(self, at_ns: np.ndarray) -> np.ndarray:
        """Which instants fall inside the window (NaN: no)."""
        at = np.asarray(at_ns, dtype=float)
        inside = np.zeros(at.shape, dtype=bool)
        for start, end in self.intervals:
            inside |= (at >= start) & (at < end)
        return inside

    def overlap_s(self, start_ns: np.ndarray, end_ns: np.ndarray) -> np.ndarray:
        """Seconds of each [start, end) spent inside the window (NaN ends count 0)."""
        start = np.asarray(start_ns, dtype=float)
        end = np.asarray(end_ns, dtype=float)
        total = np.zeros(start.shape, dtype=float)
        for lo, hi in self.intervals:
            part = np.minimum(end, hi) - np.maximum(start, lo)
            total += np.where(np.isfinite(part) & (part > 0), part, 0.0)
        return total / 1e9


def _ns(values: pd.Series) -> np.ndarray:
    """Datetimes (tz-aware or not) as float ns since the epoch; NaT → NaN."""
    stamps = pd.to_datetime(values, utc=True)
    out = np.full(len(stamps), np.nan)
    ok = stamps.notna().to_numpy()
    out[ok] = pd.DatetimeIndex(stamps[ok]).as_unit("ns").asi8.astype(float)
    return out


def _stamp(at: datetime | None) -> float:
    return math.nan if at is None else float(pd.Timestamp(at).value)


def _legacy_runs(start: np.ndarray, finish: np.ndarray) -> list[float]:
    """Run starts of a level recorded before runs were: a new run wherever no trial ran for
    PAUSE_GAP_S (an interruption and its resume)."""
    order = np.argsort(start)
    runs, reach = [start[order[0]]], start[order[0]]
    for i in order:
        if start[i] - reach > PAUSE_GAP_S * 1e9:
            runs.append(start[i])
        reach = np.nanmax([reach, finish[i], start[i]])
    return runs


def _run_window(start: np.ndarray, finish: np.ndarray, job: np.ndarray, configured: int,
                warmup_share: float, keep_drain: bool, cut: float) -> tuple[float, float] | None:
    """[warm-up end, drain start) of one run's trials, or None when there is none."""
    order = np.argsort(start, kind="stable")
    first = order[:max(1, min(configured, len(order)))]
    if warmup_share <= 0:
        warm = float(np.min(start))
    else:
        ends = np.sort(finish[first][np.isfinite(finish[first])])
        need = math.ceil(warmup_share * len(first))
        if len(ends) < need:
            return None
        warm = float(ends[need - 1])
    if keep_drain:
        end = float(np.nanmax(finish)) if np.isfinite(finish).any() else math.nan
    else:
        drains = []
        for name in np.unique(job):
            mine = job == name
            last_start = np.max(start[mine])
            # strictly after: the end that freed the slot for the last start is not a drain
            after = finish[mine & np.isfinite(finish) & (finish > last_start)]
            drains.append(float(np.min(after)) if len(after) else math.nan)
        end = float(np.nanmin(drains)) if np.isfinite(drains).any() else math.nan
    if np.isfinite(cut):
        end = min(end, cut) if np.isfinite(end) else cut
    return (warm, end) if np.isfinite(end) and warm < end else None


def level_window(trials: pd.DataFrame, requests: pd.DataFrame, configured: float, *,
                 runs: Sequence[tuple[datetime, datetime | None]] = (),
                 warmup_share: float = DEFAULT_WARMUP_SHARE,
                 keep_drain: bool = False) -> Window:
    """The measured window of one level from its trials (`started_at`, `finished_at`, `job`)
    and requests (`start_unix_ns`, `end_unix_ns`); `runs` are (started_at, cut_at) of each
    run from sweep.json, oldest first (empty: found from the trials)."""
    start, finish = _ns(trials["started_at"]), _ns(trials["finished_at"])
    known = np.isfinite(start)
    start, finish = start[known], finish[known]
    job = trials["job"].astype(str).to_numpy()[known]
    req_start = requests["start_unix_ns"].to_numpy(dtype=float)
    req_end = requests["end_unix_ns"].to_numpy(dtype=float, na_value=np.nan)
    if runs:
        run_starts = [_stamp(at) for at, _ in runs]
        cuts = [_stamp(cut) for _, cut in runs]
    elif len(start):
        run_starts = _legacy_runs(start, finish)
        cuts = [math.nan] * len(run_starts)
    else:
        run_starts, cuts = [], []
    steady: list[tuple[int, int]] = []
    spans: list[tuple[int, int]] = []
    trial_spans: list[tuple[int, int]] = []
    bounds = [*run_starts[1:], math.inf] if run_starts else []
    for r, (lo, hi) in enumerate(zip(run_starts, bounds, strict=True)):
        lo = -math.inf if r == 0 else lo  # the first run holds anything before it
        mine = (start >= lo) & (start < hi)
        if mine.any():
            found = _run_window(start[mine], finish[mine], job[mine], int(configured),
                                warmup_share, keep_drain, cuts[r])
            if found is not None:
                steady.append((int(found[0]), int(found[1])))
            ends = finish[mine][np.isfinite(finish[mine])]
            if len(ends):
                trial_spans.append((int(np.min(start[mine])), int(np.max(ends))))
        span = _span(req_start, req_end, lo, hi)
        if span is not None:
            spans.append(span)
    n_runs = max(1, len(run_starts))
    if steady and not enough_turnover(start, steady, configured):
        steady = []
    return Window(tuple(steady or spans), bool(steady), n_runs, tuple(trial_spans))


def enough_turnover(trial_starts: np.ndarray, intervals: Sequence[tuple[int, int]],
                    configured: float) -> bool:
    """Whether more trials started inside `intervals` than the level has slots: at least one
    slot turned over inside the window after every slot had started (a window holding one
    wave of `configured` trials is that wave's lock-step start, not a steady state)."""
    inside = Window(tuple(intervals), True).contains(trial_starts)
    return int(inside.sum()) > int(configured)


def _span(req_start: np.ndarray, req_end: np.ndarray, lo: float,
          hi: float) -> tuple[int, int] | None:
    """First start to last end of the requests (with an end) that started in [lo, hi)."""
    mine = (req_start >= lo) & (req_start < hi) & np.isfinite(req_end)
    if not mine.any():
        return None
    first, last = float(np.min(req_start[mine])), float(np.max(req_end[mine]))
    return (int(first), int(last)) if last > first else None


def in_window(requests: pd.DataFrame, window: Window) -> np.ndarray:
    """The requests a level's figures count: those that started inside a steady window; every
    request when the level has none (its figures are over whole runs)."""
    if not window.steady:
        return np.ones(len(requests), dtype=bool)
    return window.contains(requests["start_unix_ns"].to_numpy(dtype=float))


def busy_seconds(requests: pd.DataFrame, window: Window) -> float:
    """Σ time requests were in flight inside the window (requests in flight x seconds)."""
    if not window.steady:
        return float(np.nansum(requests["e2e_ms"].to_numpy(dtype=float))) / 1000.0
    return float(window.overlap_s(requests["start_unix_ns"].to_numpy(dtype=float),
                                  requests["end_unix_ns"].to_numpy(dtype=float,
                                                                   na_value=np.nan)).sum())


def trial_concurrency(trials: pd.DataFrame, window: Window) -> float:
    """Time-weighted mean number of trials running (slots busy) over the window; without a
    steady window, Σ trial durations over each run's first trial start to last trial end."""
    done = trials.dropna(subset=["started_at", "finished_at"])
    if not len(done):
        return math.nan
    start, finish = _ns(done["started_at"]), _ns(done["finished_at"])
    if window.steady:
        return float(window.overlap_s(start, finish).sum()) / window.seconds
    span = sum(hi - lo for lo, hi in window.trial_spans) / 1e9
    return float((finish - start).sum() / 1e9 / span) if span > 0 else math.nan


def certifiable(row: pd.Series | dict, bound: float = MIN_ACHIEVED_SHARE) -> str | None:
    """None when a level's summary row shows it held its load over a steady window; else why
    it cannot be certified (a one-line reason)."""
    if not row.get("steady", False):
        return "no steady window (too few trials for the level's slots)"
    share = row.get("achieved_trial_share", math.nan)
    if not isinstance(share, int | float) or not share == share:
        return "achieved concurrency unknown"
    if share < bound:
        return f"achieved {share:.2f} of configured concurrency < {bound:.2f}"
    return None


def overlapping_repeats(trials: pd.DataFrame) -> pd.DataFrame:
    """Pairs of trials of the same (source, level, scenario_id) whose runs overlapped in time
    ([started_at, finished_at) intersect): repeats that may have shared batches. Columns
    `source, level, scenario_id, repeat_a, repeat_b, trial_a, trial_b, overlap_s`
    (repeat_a < repeat_b); empty when no repeats overlapped."""
    columns = ["source", "level", "scenario_id", "repeat_a", "repeat_b", "trial_a", "trial_b",
               "overlap_s"]
    rows = []
    known = trials.dropna(subset=["started_at", "finished_at"])
    for (source, level, scenario), group in known.groupby(
            ["source", "level", "scenario_id"], sort=False, dropna=False):
        if len(group) < 2:
            continue
        start, finish = _ns(group["started_at"]), _ns(group["finished_at"])
        repeats, names = group["repeat"].to_numpy(), group["trial"].to_numpy()
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                overlap = (min(finish[i], finish[j]) - max(start[i], start[j])) / 1e9
                if overlap > 0:
                    a, b = (i, j) if repeats[i] < repeats[j] else (j, i)
                    rows.append((source, level, scenario, int(repeats[a]), int(repeats[b]),
                                 names[a], names[b], overlap))
    return pd.DataFrame(rows, columns=columns)
