"""The report's quality sections: what TSQ is measured against, the quality table with the
gold-perfect agent's figures beside the label-bound ones, and the judge's figures.

A label-bound figure (TSQ, solved, pass@k, pass^k) says how often an agent agreed with
labels, not how often it was right. Beside each stands what an agent making exactly the gold
calls scores under the same labels, where the dataset has gold; where it has none, TSQ is
shown with "not measured" beside it and the all-or-nothing figures (solved, pass@k, pass^k),
which imperfect labels distort most, are hidden — unless the labels are a curated file, which
is then itself the gold.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.judge.figures import HEADERS as JUDGE_HEADERS
from analysis.judge.figures import NO_JUDGE
from analysis.markdown import fmt_ci, fmt_excluded, table
from analysis.metrics import BY_KEY, labels
from analysis.provenance import COLUMNS as PROVENANCE_COLUMNS
from analysis.provenance import HEADERS as PROVENANCE_HEADERS
from analysis.provenance import NOT_MEASURED, SAMPLE_FALLBACK

HIDDEN = "hidden: labels not gold"
# The quality tables' figure columns, named by the metric registry (`Metric.label`; the
# counted trials by their short name).
_QUALITY_NAMES = labels(
    "n_scenarios", "n_infra_failed", "tsq", "gold_perfect_tsq", "tsq_infra0", "solved",
    "gold_perfect_solved", "solved_infra0", "precision", "recall", "param_validity",
    "pass_at_1", "pass_at_k", "pass_hat_k", "tsq_scenario_std", "goal_score",
    "gold_perfect_goal_score", "goals_declined", "gold_perfect_goals_declined", "goals_served",
    "n_excluded", "k") | {"n_counted": BY_KEY["n_counted"].short}


def measured_against(summary: pd.DataFrame, mixed: Sequence[str],
                     modes: Sequence[str] = ()) -> list[str]:
    """The header block: which data, labels and mode every TSQ below is measured against."""
    present = [c for c in PROVENANCE_COLUMNS if c in summary.columns]
    if not present:
        return []
    frame = summary[["source", *present]].drop_duplicates()
    lines = ["## What the quality figures are measured against", "",
             table(frame, ["source", *(PROVENANCE_HEADERS.get(c, c) for c in present)]), "",
             "TSQ here is the set F1 of the tool names an agent called against the expected "
             "tools its task's labels list (label method@version above); no judge model is "
             "involved in it (a judge pass, when one ran, has its own section). The labels are "
             "a labeller's, not gold: *label method quality* is how the method agreed with "
             "gold on the held-out sets it names, not on this data. What a perfect agent "
             "scores under these labels is the *gold-perfect* figure beside each TSQ below: "
             "the verifier's own scoring of the gold calls, on this dataset's gold labels "
             f"(\"{NOT_MEASURED}\" where the dataset has none, e.g. hub data). It is not an "
             "upper bound: an agent repeating the labeller's mistakes scores higher.", ""]
    if (summary.get("dataset_source") == SAMPLE_FALLBACK).any():
        lines += [f"**Warning: the dataset is the {SAMPLE_FALLBACK}** — `--source auto` could "
                  "not reach the Hugging Face hub and ran the small bundled sample instead of "
                  "Agent Leaderboard v2; these figures are not comparable with hub runs.", ""]
    if mixed:
        lines += ["**Warning: runs compared with `--allow-mixed` differ in "
                  + "; ".join(mixed) + ".** Their quality deltas mix a change of measuring "
                  "stick with a change of system.", ""]
    if modes:
        lines += ["**The runs compared differ in " + "; ".join(modes) + ".** Same data and "
                  "labels, different protocols: the deltas below compare how the agent was "
                  "asked (all goals at once, the first message only, or a conversation with a "
                  "simulated customer) as well as the system that served it.", ""]
    return lines


def labels_are_gold(row: pd.Series) -> bool:
    """A curated labels file is its own gold; any labeller's labels are not."""
    return str(row.get("labels", "")).startswith("file@")


def _gold(row: pd.Series, key: str) -> str:
    value = row.get(f"gold_perfect_{key}_mean")
    return NOT_MEASURED if pd.isna(value) else fmt_ci(row, f"gold_perfect_{key}")


def quality_row(row: pd.Series) -> dict[str, object]:
    """One level's quality figures; the label-bound ones beside their gold-perfect values."""
    shown = labels_are_gold(row) or not pd.isna(row.get("gold_perfect_tsq_mean"))
    bound = (lambda text: text) if shown else (lambda text: HIDDEN)
    name = _QUALITY_NAMES
    return {
        "source": row["source"], "level": row["level"], name["n_counted"]: row["n_counted"],
        name["n_excluded"]: fmt_excluded(row),
        name["n_scenarios"]: row.get("n_scenarios"),
        name["n_infra_failed"]: row.get("n_infra_failed"),
        name["tsq"]: fmt_ci(row, "tsq"), name["gold_perfect_tsq"]: _gold(row, "tsq"),
        name["tsq_infra0"]: fmt_ci(row, "tsq_infra0"),
        name["solved"]: bound(fmt_ci(row, "solved")),
        name["gold_perfect_solved"]: bound(_gold(row, "solved")),
        name["solved_infra0"]: bound(fmt_ci(row, "solved_infra0")),
        name["precision"]: fmt_ci(row, "precision"), name["recall"]: fmt_ci(row, "recall"),
        name["param_validity"]: fmt_ci(row, "param_validity"),
        name["pass_at_1"]: bound(row.get("pass_at_1")), name["k"]: row.get("k"),
        name["pass_at_k"]: bound(fmt_ci(row, "pass_at_k", "")),
        name["pass_hat_k"]: bound(fmt_ci(row, "pass_hat_k", "")),
        name["tsq_scenario_std"]: row.get("tsq_scenario_std"),
    }


def goal_row(row: pd.Series) -> dict[str, object]:
    """The per-goal shares beside their gold-perfect values (hidden without gold)."""
    shown = labels_are_gold(row) or not pd.isna(row.get("gold_perfect_tsq_mean"))
    out: dict[str, object] = {"source": row["source"], "level": row["level"]}
    name = _QUALITY_NAMES
    for key in ("goal_score", "goals_declined"):
        out[name[key]] = fmt_ci(row, key) if shown else HIDDEN
        out[name[f"gold_perfect_{key}"]] = _gold(row, key) if shown else HIDDEN
    out[name["goals_served"]] = fmt_ci(row, "goals_served")
    return out


def quality_section(summary: pd.DataFrame) -> list[str]:
    frame = pd.DataFrame([quality_row(row) for _, row in summary.iterrows()])
    goals = pd.DataFrame([goal_row(row) for _, row in summary.iterrows()])
    solved_from = ", ".join(sorted(set(summary.get("solved_from", pd.Series()).dropna())))
    return [
        "## Tool selection quality (mean, 95% scenario-cluster bootstrap CI)", "",
        table(frame), "",
        "Intervals resample scenarios with all their repeated trials (repeats of a scenario "
        "are correlated; resampling single trials would give too narrow an interval); `[—]`: "
        "no interval, because the level has one scenario or one trial. *excluded*: finished "
        "trials left out of every figure here (infra, harness, interrupted; their share of the "
        "finished ones) — only failures of code the agent cannot reach leave a trial out. "
        "*infra excl.* leaves "
        "`infra_failed` trials out (as the status table shows); *infra as 0* counts each as a "
        "failed scenario run — a gap between the two means the server's failures hid "
        "scenarios from quality. *gold-perfect*: what an agent making exactly the gold calls "
        "scores under the same labels (the verifier's own scoring over the same scenarios; "
        f"\"{NOT_MEASURED}\" without gold for this dataset). *Solved*: every goal served or "
        "declined and no call outside the goals' alternatives — against labels, not gold, so "
        f"it and pass@k/pass^k are \"{HIDDEN}\" where no gold-perfect value can stand beside "
        f"them (source of the per-trial flag here: {solved_from or 'none'}). pass@k and pass^k "
        "are computed on *solved* from the n counted trials of each scenario (unbiased "
        "estimators; k = fewest counted trials of any scenario); the gold-perfect agent is "
        "deterministic, so its pass^k equals its solved share. Harbor's own pass@k (in "
        "its job result.json) reads only a reward with a single 0/1 key, so for these jobs, "
        "whose reward.json holds several scores, Harbor reports none.", "",
        "**Goals** (per-goal labels; goal score counts each tool called that serves no goal "
        "as a mishandled goal)", "", table(goals), ""]


def judge_section(summary: pd.DataFrame) -> list[str]:
    """Judge TSQ and action completion (`bankbench judge`), when a judge pass ran."""
    if "judge" not in summary.columns or not (summary["judge"].fillna(NO_JUDGE)
                                               != NO_JUDGE).any():
        return []
    name = JUDGE_HEADERS
    frame = pd.DataFrame([{
        "source": row["source"], "level": row["level"], name["judge"]: row["judge"],
        name["judge_n"]: row["judge_n"], name["judge_unparseable"]: row["judge_unparseable"],
        name["judge_tsq"]: fmt_ci(row, "judge_tsq"), name["judge_ac"]: fmt_ci(row, "judge_ac"),
    } for _, row in summary.iterrows()])
    return ["## Judge metrics (mean, 95% scenario-cluster bootstrap CI)", "",
            *_judge_warning(summary), table(frame), "",
            "A judge model read each counted trial's session (the customer's goals, the calls "
            "and what the bank answered, the final answer) and scored Galileo's two "
            "session-level judgements: *tool selection quality* and *action completion*, each "
            "in [0, 1] (docs/judge.md). Trials whose judge answer could not be parsed or whose "
            "request failed are counted in *unparseable/failed*, not scored as 0. These are a "
            "judge's opinion beside the verifier's label-based TSQ above, never part of "
            "reward.json.", ""]


def _judge_warning(summary: pd.DataFrame) -> list[str]:
    """A line when most verdicts of the judge pass have no usable answer."""
    n = summary["judge_n"].fillna(0).sum()
    failed = summary["judge_unparseable"].fillna(0).sum()
    if failed == 0 or 2 * failed <= n + failed:
        return []
    return [f"**WARNING: {int(failed)} of {int(n + failed)} judge verdicts have no usable "
            "answer** (unparseable or failed): the judge figures above stand on the rest, "
            "if any. `bankbench judge` asks those trials again on its next run.", ""]
