"""The validity block of every report: was the run what it claims to measure?

Per level: the load the level was configured for and the load it achieved (the summary's
figures: analysis/metrics/throughput.py computes them, nothing here does), and which workers
served its requests, where the server names the worker (Dynamo's `nvext.worker_id`). Per run:
the router mode and the server configuration as the sweep recorded them, and the server's
version. Warnings when a worker took (almost) nothing at a level, when the router or the
server's address changed within a sweep, and when nothing says which server ran.
"""

from __future__ import annotations

import pandas as pd

from analysis.markdown import table
from analysis.tables import Tables

# A worker "took almost nothing" below this share of an even split of the level's requests.
NEGLIGIBLE_SHARE = 0.1
# Fewer requests naming a worker than this at a level: too few to call a split uneven.
MIN_REQUESTS = 10
# What the sweep records about itself, not the server.
_CLIENT_PACKAGES = ("bankbench", "harbor")


def worker_shares(requests: pd.DataFrame) -> pd.DataFrame:
    """(source, level, worker_id, requests, share) over the measured requests whose server
    named the worker that served them."""
    named = requests[requests["worker_id"].notna()]
    if "measured" in named:
        named = named[named["measured"].astype(bool)]
    if named.empty:
        return pd.DataFrame(columns=["source", "level", "worker_id", "requests", "share"])
    counts = named.groupby(["source", "level", "worker_id"]).size().rename("requests")
    out = counts.reset_index()
    out["share"] = out["requests"] / out.groupby(["source", "level"])["requests"].transform("sum")
    return out


def _short(worker: str) -> str:
    """Dynamo's worker ids are 19-digit numbers: the tail tells them apart."""
    return f"…{worker[-6:]}" if len(worker) > 10 else worker


def _expected_workers(tables: Tables, source: str, seen: int) -> int:
    manifest = tables.sweeps.get(source)
    configured = manifest.config.workers if manifest is not None else None
    return max(configured or 0, seen)


def worker_warnings(tables: Tables, shares: pd.DataFrame) -> list[str]:
    """A worker that took almost nothing (or nothing) of a level's requests."""
    out = []
    for source, part in shares.groupby("source", sort=False):
        everyone = set(part["worker_id"])
        expected = _expected_workers(tables, str(source), len(everyone))
        if expected < 2:
            continue
        for level, at in part.groupby("level"):
            total = int(at["requests"].sum())
            if total < MIN_REQUESTS:
                continue
            floor = NEGLIGIBLE_SHARE / expected
            idle = [f"{_short(w)} {100 * s:.1f} %" for w, s in zip(at["worker_id"], at["share"],
                                                                   strict=True) if s < floor]
            idle += [f"{_short(w)} 0 %" for w in sorted(everyone - set(at["worker_id"]))]
            missing = expected - len(everyone)
            if missing > 0:
                idle.append(f"{missing} of {expected} configured worker(s) never named")
            if idle:
                out.append(f"{source} c{level}: a worker took almost nothing of {total} "
                           f"requests ({'; '.join(idle)}): the level measured fewer workers "
                           "than it claims")
    return out


def run_warnings(tables: Tables) -> list[str]:
    """The router or the server changed within a sweep, or nothing says what served it."""
    out = []
    for source in tables.sources:
        manifest = tables.sweeps.get(source)
        if manifest is None:
            continue
        routers = {r.router for r in manifest.level_records if r.router is not None}
        if len(routers) > 1:
            by_level = ", ".join(f"c{r.level} {r.router}" for r in manifest.level_records)
            out.append(f"{source}: the router changed within the sweep ({by_level})")
        if manifest.earlier_base_urls:
            out.append(f"{source}: the sweep moved server mid-way "
                       f"({' → '.join([*manifest.earlier_base_urls, manifest.base_url])}); "
                       "levels may have run against different deployments")
        if not _server_versions(manifest.versions):
            out.append(f"{source}: the server's version was not recorded (a server the sweep "
                       "did not start); say which it was beside these figures")
    return out


def _server_versions(versions: dict[str, str | None]) -> str:
    return ", ".join(f"{k} {v}" for k, v in versions.items()
                     if v and k not in _CLIENT_PACKAGES)


def _levels(tables: Tables, summary: pd.DataFrame, shares: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, s in summary.iterrows():
        mine = shares[(shares["source"] == s["source"]) & (shares["level"] == s["level"])]
        workers = ", ".join(f"{_short(str(w))} {100 * v:.0f} %" for w, v in
                            zip(mine["worker_id"], mine["share"], strict=True))
        manifest = tables.sweeps.get(s["source"])
        record = next((r for r in manifest.level_records if r.level == s["level"]),
                      None) if manifest else None
        configured = s.get("configured_concurrency")
        achieved = s.get("achieved_trial_concurrency")
        share = s.get("achieved_trial_share")
        if share is None or pd.isna(share):
            share = achieved / configured if configured and pd.notna(achieved) else float("nan")
        rows.append({
            "source": s["source"], "level": s["level"],
            "configured": "–" if pd.isna(configured) else f"{configured:g}",
            "achieved": "–" if pd.isna(achieved) else f"{achieved:.2f}",
            "share": "–" if pd.isna(share) else f"{share:.0%}",
            "in flight": "–" if pd.isna(s.get("achieved_concurrency")) else
            f"{s['achieved_concurrency']:.2f}",
            "workers": workers or "not named by the server",
            "router": (record.router if record and record.router else
                       (manifest.router if manifest and manifest.router else "not recorded")),
        })
    return pd.DataFrame(rows)


def _run_lines(tables: Tables) -> list[str]:
    lines = []
    for source in tables.sources:
        manifest = tables.sweeps.get(source)
        if manifest is None:
            lines.append(f"- {source}: a single Harbor job; no sweep record of the server")
            continue
        config = manifest.config
        options = ", ".join(f"{k}={v}" for k, v in sorted(config.server_options.items()))
        served = (f"profile {manifest.server_profile}" if manifest.server_profile
                  else f"a running server at {manifest.base_url}")
        lines.append(
            f"- {source}: {served}, model {manifest.model}; router "
            f"{manifest.router or 'not recorded'}"
            f"{f' ({config.workers} workers)' if config.workers else ''}; server options "
            f"{options or 'the profile defaults'}; server version "
            f"{_server_versions(manifest.versions) or 'not recorded'}")
    return lines


def validity_section(tables: Tables, summary: pd.DataFrame) -> list[str]:
    """The report's validity block (every report has one)."""
    shares = worker_shares(tables.requests)
    warnings = [*run_warnings(tables), *worker_warnings(tables, shares)]
    lines = ["## Validity of the run", ""]
    lines += [f"**WARNING**: {w}" for w in warnings] + ([""] if warnings else [])
    lines += _run_lines(tables) + [""]
    if not summary.empty:
        lines += [table(_levels(tables, summary, shares)), "",
                  "*configured*: concurrent trials asked for; *achieved*: trials running on "
                  "average over the level's measured window (and its share of configured); "
                  "*in flight*: LLM "
                  "requests in flight on average; *workers*: each worker's share of the "
                  "level's requests, where the server names the worker that served each "
                  "(Dynamo's nvext worker_id).", ""]
    return lines
