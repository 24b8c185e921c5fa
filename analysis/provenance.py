"""What made a TSQ figure: dataset, labels, instruction mode, judge, and what a gold-perfect
agent scores on the same labels.

Runs compared side by side must share dataset, revision, labels and instruction mode
(`COMPARABLE`, else `MixedRunsError` unless `--allow-mixed`). Allowed, a difference of
measuring stick (`MEASURING_STICK`) is reported as a warning, a difference of instruction
mode (`STATED`: goals vs conversation over one measuring stick) as a comparison of protocols.

The judge column (and the judge figures beside it) come from the verdict files of `bankbench
judge` (`analysis.judge.figures`), which `analysis.summary` puts beside these columns; "none"
when no judge pass ran.

Read per (source, level) from the tasks the trials ran (each trial's task folder as the reading
layer found it, `Tables.task_dirs`; `analysis.task_folder` reads it): the task's `task.toml
[metadata]` carries `dataset`, `dataset_revision`, `labels` (method@version) and `mode`, and
its `tests/expected.json` may carry `labels.quality` (the label method's quality as measured on
each held-out gold set it names; the label-quality cell says "unknown for this dataset" where
the data has no gold, then the range over those sets with each set's interval) and
`gold_perfect` (what an agent making exactly the gold
calls scores against this task's labels, computed by the builder only when the dataset has gold
labels). A level's gold-perfect figures average the scenarios it ran; one scenario without them
makes the level's "not measured": no figure from other data stands in. A sweep's `sweep.json`
adds where the dataset came from (hub, bundled sample, and whether the sample stood in for an
unreachable hub). Everything is read leniently: a task folder that is gone leaves "unknown",
never an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.metrics.quality import GOLD_PERFECT_KEYS, gold_perfect_figures
from analysis.task_folder import NOT_MEASURED, UNKNOWN, TaskProvenance, read_task
from contracts.expected import LabelsQuality
from contracts.sweep import SweepManifest

SAMPLE_FALLBACK = "bundled sample (hub unreachable)"
UNKNOWN_HERE = "unknown for this dataset (no gold)"
GOLD_HERE = "this dataset has gold: see the gold-perfect figures"
NO_CUSTOMER = "none (single-turn)"
# What TSQ is measured against: runs that differ here measure with different sticks (in
# conversation mode the simulated customer is part of the stick: it decides what is asked).
MEASURING_STICK = ("dataset", "dataset_revision", "labels", "customer")
# How the agent was asked: runs that differ here compare protocols (goals vs conversation).
STATED = ("mode",)
# The fields two runs must share for their TSQ to be compared (`--allow-mixed` overrides).
COMPARABLE = (*MEASURING_STICK, *STATED)
COLUMNS = ("dataset", "dataset_source", "dataset_revision", "labels", "label_quality",
           "label_heldout_f1", "mode", "customer", "judge", "gold_perfect")
# How the report's provenance table names a column (one not listed shows its key).
HEADERS = {
    "dataset_source": "dataset source", "dataset_revision": "revision",
    "labels": "labels (method@version)", "label_quality": "label method quality",
    "label_heldout_f1": "label held-out F1", "mode": "instruction mode",
    "judge": "judge model", "gold_perfect": "gold-perfect agent measured on",
}
# The gold-perfect agent's figures (mean and CI per key), beside the provenance columns.
GOLD_PERFECT_COLUMNS = tuple(f"gold_perfect_{key}_{part}" for key in GOLD_PERFECT_KEYS
                             for part in ("mean", "ci_low", "ci_high"))


def dataset_source(revision: str, manifest: SweepManifest | None) -> str:
    """hub / bundled sample / local dir, and whether the sample stood in for the hub."""
    if manifest is not None and getattr(manifest, "dataset_fallback", None):
        return SAMPLE_FALLBACK
    if revision.startswith("mixed: "):
        return "mixed"
    if revision.startswith("sample-"):
        return "bundled sample"
    if revision.startswith("dir:"):
        return "local directory"
    return UNKNOWN if revision == UNKNOWN else "Hugging Face hub"


def _one(values: list[str]) -> str:
    distinct = sorted(set(values))
    return distinct[0] if len(distinct) == 1 else "mixed: " + ", ".join(distinct)


def level_provenance(trials: pd.DataFrame, jobs: pd.DataFrame,
                     sweeps: dict[str, SweepManifest],
                     task_dirs: dict[tuple[str, str, str], Path | None]) -> pd.DataFrame:
    """One row per (source, level) with the `COLUMNS` above but the judge's."""
    cache: dict[Path, TaskProvenance | None] = {}
    rows = []
    for (source, level), group in jobs.groupby(["source", "level"], sort=False):
        manifest = sweeps.get(source)
        found: dict[Path, TaskProvenance] = {}
        for job in group.itertuples(index=False):
            mine = trials[(trials["source"] == source) & (trials["job"] == job.job)]
            # One trial per scenario is enough: repeats run the same task folder.
            for row in mine.drop_duplicates("scenario_id").itertuples(index=False):
                path = task_dirs.get((source, job.job, row.trial))
                if path is None:
                    continue
                if path not in cache:
                    cache[path] = read_task(path)
                if cache[path] is not None:
                    found[path] = cache[path]
        summary = _summarise(list(found.values()), manifest)
        level_trials = trials[(trials["source"] == source) & trials["job"].isin(group["job"])]
        rows.append({"source": source, "level": level, **summary,
                     "customer": _customer(level_trials, summary["mode"])})
    return pd.DataFrame(rows, columns=["source", "level", *COLUMNS, *GOLD_PERFECT_COLUMNS]
                        ).drop(columns="judge")


def _customer(trials: pd.DataFrame, mode: str) -> str:
    """Who played the customer at this level, as the bank named it in the verifier's summary;
    unknown for a conversation whose bank predates the name, none outside conversation mode."""
    named = [c for c in trials.get("customer", pd.Series(dtype=object)) if isinstance(c, str)]
    if named:
        return _one(named)
    return UNKNOWN if "conversation" in mode or mode == UNKNOWN else NO_CUSTOMER


def _summarise(found: list[TaskProvenance], manifest: SweepManifest | None) -> dict[str, Any]:
    if not found:
        revision = UNKNOWN
        if manifest is not None and manifest.dataset and "@" in manifest.dataset:
            revision = manifest.dataset.rsplit("@", 1)[1]
        return {"dataset": UNKNOWN, "dataset_source": dataset_source(revision, manifest),
                "dataset_revision": revision, "labels": UNKNOWN, "label_quality": NOT_MEASURED,
                "label_heldout_f1": np.nan, "mode": UNKNOWN,
                **_gold_perfect_summary([])}
    revision = _one([p.dataset_revision for p in found])
    f1s = {p.heldout_f1 for p in found}
    f1 = next(iter(f1s)) if len(f1s) == 1 else None
    has_gold = all(p.gold_perfect is not None for p in found)
    return {
        "dataset": _one([p.dataset for p in found]),
        "dataset_source": dataset_source(revision, manifest),
        "dataset_revision": revision, "labels": _one([p.labels for p in found]),
        "label_quality": _one([label_quality(p.quality, has_gold) for p in found]),
        "label_heldout_f1": np.nan if f1 is None else f1, "mode": _one([p.mode for p in found]),
        **_gold_perfect_summary(found),
    }


def label_quality(quality: LabelsQuality | None, has_gold: bool) -> str:
    """The label-quality cell: what is known of these labels on this data, then elsewhere.

    On data without gold (the hub) the labels' quality is unknown, and the cell says so before
    the range over the held-out sets where it was measured, each with its interval; one figure
    from one set would read as a property of this data. Where the data has gold, the
    gold-perfect figures beside each TSQ measure these very labels."""
    if quality is None:
        return NOT_MEASURED
    here = GOLD_HERE if has_gold else UNKNOWN_HERE
    if not quality.sets:  # written before per-set figures: the one figure, and where from
        return (f"{here}; elsewhere held-out micro F1 {quality.heldout_micro_f1:.3f}, goals "
                f"exact {quality.heldout_goal_exact:.3f} ({quality.measured_with})")
    low = min(s.goal_f1 for s in quality.sets)
    high = max(s.goal_f1 for s in quality.sets)
    each = "; ".join(
        f"{s.gold_set} {s.goal_f1:.3f} [{s.goal_f1_low:.3f}, {s.goal_f1_high:.3f}]"
        + (" clean" if s.clean else "") + (", own tools" if s.own_tools else "")
        for s in quality.sets)
    return (f"{here}; elsewhere goal F1 {low:.2f}-{high:.2f} over {len(quality.sets)} "
            f"held-out sets ({each})")


def _gold_perfect_summary(found: list[TaskProvenance]) -> dict[str, Any]:
    """The level's gold-perfect figures, when every scenario it ran has them from one gold."""
    records = [p.gold_perfect for p in found]
    golds = {r.gold for r in records if r is not None}
    if not records or None in records or len(golds) != 1:
        return {"gold_perfect": NOT_MEASURED} | {c: np.nan for c in GOLD_PERFECT_COLUMNS}
    figures = gold_perfect_figures([r.model_dump() for r in records if r is not None])
    return {"gold_perfect": f"{golds.pop()}, {len(records)} scenarios"} | figures


class MixedRunsError(ValueError):
    """Runs compared side by side were made against different labels or data."""


def mixed_fields(provenance: pd.DataFrame, fields: tuple[str, ...] = COMPARABLE) -> list[str]:
    """One phrase per field of `fields` on which the sources differ (unknowns are skipped:
    a run whose tasks are gone cannot be checked, and the report says so)."""
    out = []
    for field in fields:
        per_source = (provenance[~provenance[field].isin((UNKNOWN, NO_CUSTOMER))]
                      .groupby("source", sort=False)[field].agg(lambda s: _one(list(s))))
        if per_source.nunique() > 1:
            out.append(f"{field} ({'; '.join(f'{s}: {v}' for s, v in per_source.items())})")
    return out


def check_comparable(provenance: pd.DataFrame, allow_mixed: bool) -> list[str]:
    """Raises MixedRunsError when sources differ in a COMPARABLE field and mixing was not
    allowed; else returns the measuring-stick differences (empty when none) for the report's
    warning (mode differences it states apart: `mixed_fields(..., STATED)`)."""
    differences = mixed_fields(provenance)
    if differences and not allow_mixed:
        only_mode = not mixed_fields(provenance, MEASURING_STICK)
        why = (" — a comparison of protocols, not of servers; add --allow-mixed to compare "
               "them (the report states the difference)" if only_mode else
               " — their TSQ is not comparable; add --allow-mixed to compare anyway")
        raise MixedRunsError("--compare: the runs differ in " + "; ".join(differences) + why)
    return mixed_fields(provenance, MEASURING_STICK)
