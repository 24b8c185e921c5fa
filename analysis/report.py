"""`write_report`: a job or sweep (plus others to compare) → report.md, plots and data files.

Output folder (default): a sweep's own directory; for a single Harbor job, `<job>-report/`
beside it (Harbor's resume deletes any folder inside a job that has no result.json).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from analysis import plots, shards, turns
from analysis.compare import compare_table
from analysis.consistency_report import write_consistency
from analysis.markdown import fmt, fmt_ci, table
from analysis.metrics import ALL
from analysis.metrics.goodput import SLO
from analysis.metrics.quality import per_scenario, with_solved
from analysis.provenance import COLUMNS as PROVENANCE_COLUMNS
from analysis.provenance import SAMPLE_FALLBACK, STATED, check_comparable, mixed_fields
from analysis.request_trace import server_view_section
from analysis.summary import summarize
from analysis.tables import Tables, is_sweep_dir, load_many

MAX_ISSUES_SHOWN = 20


def default_out_dir(path: Path) -> Path:
    path = Path(path)
    return path if is_sweep_dir(path) else path.parent / f"{path.name}-report"


def write_report(path: Path, out: Path | None = None, compare: Sequence[Path] = (),
                 slo: SLO | None = None, *, draw: bool = True, allow_mixed: bool = False,
                 log: Callable[[str], None] | None = None) -> Path:
    """Read `path` (and `compare`), write every report file into `out`; returns report.md.

    Runs made against different datasets, labels or instruction modes are refused
    (`provenance.MixedRunsError`, nothing written) unless `allow_mixed`; then the report
    states the difference (a mode difference as a comparison of protocols). `log`, when
    given, receives one line per stage (the CLI prints them as progress).
    """
    say = log or (lambda _line: None)
    path = Path(path)
    out = Path(out) if out is not None else default_out_dir(path)
    inputs = [path, *(Path(p) for p in compare)]
    tables = load_many(inputs)
    counts = tables.trials["status"].value_counts().to_dict()
    say(f"read {len(tables.jobs)} job(s): {len(tables.trials):,} trials "
        f"({', '.join(f'{n} {s}' for s, n in counts.items()) or 'none'}), "
        f"{len(tables.requests):,} LLM calls, {len(tables.issues)} input problem(s)")
    summary = summarize(tables, slo)
    mixed = check_comparable(summary, allow_mixed) if len(inputs) > 1 else []
    modes = mixed_fields(summary, STATED) if len(inputs) > 1 else []
    comparison = compare_table(summary, tables.trials, tables.requests)
    out.mkdir(parents=True, exist_ok=True)
    write_data_files(tables, summary, comparison, out, inputs, slo, mixed, modes)
    say(f"wrote summary ({len(summary)} rows) and data files to {out}")
    figures = draw_figures(tables, summary, out / "plots") if draw else []
    if draw:
        say(f"drew {len(figures)} figure(s) in {out / 'plots'}")
    # Sections computed from the trials' own files (not the summary) are written by their
    # modules and slotted in before the figures.
    _, consistency = write_consistency(tables, out, draw=draw)
    text = render_markdown(
        tables, summary, comparison, inputs, slo, figures, out, mixed,
        extra_sections=[*turns.section(tables.requests, tables.trials, tables.sweeps),
                        *consistency, *server_view_section(tables),
                        *shards.section(tables)], modes=modes)
    report = out / "report.md"
    report.write_text(text, encoding="utf-8")
    return report


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    # Round-trip through pandas' JSON writer: NaN → null, timestamps → ISO strings.
    return json.loads(frame.to_json(orient="records", date_format="iso"))


def write_data_files(tables: Tables, summary: pd.DataFrame, comparison: pd.DataFrame,
                     out: Path, inputs: list[Path], slo: SLO | None,
                     mixed: list[str], modes: Sequence[str] = ()) -> None:
    summary.to_csv(out / "summary.csv", index=False)
    with_solved(tables.trials)[0].to_csv(out / "trials.csv", index=False)
    per_scenario(tables.trials).to_csv(out / "scenarios.csv", index=False)
    tables.requests.to_csv(out / "requests.csv", index=False)
    tables.requests.to_json(out / "requests.jsonl", orient="records", lines=True)
    if turns.is_multi_turn(tables.requests, tables.trials):
        turns.by_turn(tables.requests, turns.routers_of(tables.sweeps)).to_csv(
            out / "by_turn.csv", index=False)
        turns.conversations(tables.trials).to_csv(out / "conversations.csv", index=False)
    payload = {
        "generated_at": datetime.now(UTC).isoformat(),
        "inputs": [str(p) for p in inputs],
        "slo": slo.model_dump() if slo else None,
        "mixed_runs": mixed,
        "mode_differences": list(modes),
        "sweeps": {k: json.loads(v.model_dump_json()) for k, v in tables.sweeps.items()},
        "jobs": _records(tables.jobs),
        "metrics": [{"key": m.key, "header": m.header, "unit": m.unit,
                     "larger_is_better": m.larger_is_better, "description": m.description,
                     "aliases": m.aliases, "distribution": m.distribution} for m in ALL],
        "summary": _records(summary),
        "comparison": _records(comparison),
        "issues": _records(tables.issues),
    }
    (out / "summary.json").write_text(json.dumps(payload, indent=2), encoding="utf-8")


def draw_figures(tables: Tables, summary: pd.DataFrame, folder: Path) -> list[tuple[str, Path]]:
    figures: list[tuple[str, Path]] = []
    trials, requests, itl = tables.trials, tables.requests, tables.itl
    # Serving figures show the system under test: other roles' calls (a simulated customer)
    # stay out, as in the summary.
    serving = requests["ok"] & requests["measured"]
    ok = requests[serving]
    if len(ok):
        groups = _group_labels(ok)
        figures.append(("TTFT distribution", plots.histogram(
            ok["ttft_ms"], groups, "TTFT (ms)", "TTFT distribution", folder / "ttft_hist.png")))
    if len(itl):
        rows = itl["request_row"].to_numpy()
        keep = serving.to_numpy()[rows]
        labels = _group_labels(requests)
        gap_groups = None if labels is None else pd.Series(labels.to_numpy()[rows][keep])
        figures.append(("ITL distribution", plots.histogram(
            itl["itl_ms"][keep], gap_groups, "ITL: gap between chunks (ms)",
            "ITL distribution", folder / "itl_hist.png")))
    counted = trials[trials["in_quality"].astype(bool)].dropna(subset=["tsq"])
    if len(counted):
        for column, name, title in (
                ("ttft_ms_mean", "ttft", "TSQ vs TTFT per trial"),
                ("itl_ms_mean", "itl", "TSQ vs ITL per trial"),
                ("output_tps_per_user_mean", "tps", "TSQ vs per-request output tokens/s")):
            if counted[column].notna().any():
                figures.append((title, plots.scatter_vs_tsq(
                    trials, column, folder / f"tsq_vs_{name}.png")))
    if turns.is_multi_turn(requests, trials):
        figures.append(("TTFT and cached prompt share by conversation turn", plots.by_turn(
            turns.by_turn(requests, turns.routers_of(tables.sweeps)), folder / "by_turn.png")))
    if summary.groupby("source")["level"].nunique().max() > 1:
        figures += [
            ("Latency percentiles vs concurrency",
             plots.latency_vs_concurrency(summary, folder / "latency_vs_concurrency.png")),
            ("Throughput vs concurrency",
             plots.throughput_vs_concurrency(summary, folder / "throughput_vs_concurrency.png")),
            ("Achieved vs configured concurrency",
             plots.concurrency_achieved(summary, folder / "concurrency_achieved.png")),
            ("TSQ vs concurrency",
             plots.tsq_vs_concurrency(summary, folder / "tsq_vs_concurrency.png")),
            ("Per-user vs aggregate throughput (Pareto)",
             plots.pareto(summary, folder / "pareto.png")),
        ]
    return figures


def _group_labels(frame: pd.DataFrame) -> pd.Series | None:
    if frame["source"].nunique() > 1:
        return frame["source"].astype(str) + " c" + frame["level"].astype(str)
    if frame["level"].nunique() > 1:
        return "c" + frame["level"].astype(str)
    return None


def _section(summary: pd.DataFrame, columns: dict[str, str]) -> str:
    present = {k: v for k, v in columns.items() if k in summary.columns}
    frame = summary[["source", "level", *present]]
    return table(frame, ["source", "level", *present.values()])


def render_markdown(tables: Tables, summary: pd.DataFrame, comparison: pd.DataFrame,
                    inputs: list[Path], slo: SLO | None, figures: list[tuple[str, Path]],
                    out: Path, mixed: Sequence[str] = (),
                    extra_sections: Sequence[str] = (), modes: Sequence[str] = ()) -> str:
    parts = [f"# bankbench report: {', '.join(p.name for p in inputs)}", "",
             f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Definitions of every figure: "
             "see *Metric definitions* at the end.", "",
             *_measured_against(summary, mixed, modes),
             "## Provenance", "", _provenance(tables), "", "## Trials", "",
             _section(summary, {"n_trials": "trials", "n_scored": "scored",
                                "n_agent_failed": "agent failed", "n_infra_failed": "infra failed",
                                "n_harness_failed": "harness failed",
                                "n_interrupted": "interrupted", "n_running": "running",
                                "n_counted": "counted in quality", "n_excluded": "excluded"}),
             "", "Quality averages count `scored` and `agent_failed` trials (an agent failure "
             "without a reward counts as 0); `infra_failed`, `harness_failed` and "
             "`interrupted` trials (Harbor was stopped before they finished; a resumed sweep "
             "runs them again) are excluded and listed here — the quality section also "
             "shows TSQ and solved with `infra_failed` trials counted as 0; `running` trials "
             "have no result yet.", ""]
    parts += _failures(tables.trials) + _issues(tables.issues)
    parts += ["## Latency (successful requests)", ""]
    for key, name in (("ttft_ms", "TTFT (ms)"), ("ttfc_ms", "Time to first tool call (ms)"),
                      ("itl_ms", "ITL (ms)"), ("tpot_ms", "TPOT (ms)"),
                      ("e2e_ms", "E2E latency (ms)"),
                      ("output_tps_per_user", "Output tokens/s per request")):
        stats = ("mean", "p50", "p90", "p95", "p99", "std", "count")
        parts += [f"**{name}**", "",
                  _section(summary, {f"{key}_{s}": s for s in stats}), ""]
    parts += ["## Throughput and concurrency", "", _section(summary, {
        "window_s": "window (s)", "output_token_throughput": "output tok/s",
        "request_throughput": "requests/s", "configured_concurrency": "configured",
        "achieved_concurrency": "requests in flight", "achieved_trial_concurrency":
        "trials running", "n_requests": "requests", "error_rate": "error rate",
        "token_counts": "tokens counted by"}), "",
        "Tokens counted by `server`: its usage; `client`: the agent's `--ak tokenizer` for a "
        "server that sends no usage (message text and tool schemas, without the chat "
        "template's tokens); `unknown`: neither, and token figures stay empty.", ""]
    parts += _quality(summary) + _judge(summary)
    if slo is not None:
        parts += [f"## Goodput (SLO {slo})", "", _section(summary, {
            "goodput": "goodput (req/s)", "goodput_request_share": "requests within SLO",
            "goodput_scenario_share": "scenarios within SLO"}), ""]
    if "server_requests" in summary.columns or "server_ttft_ms_mean" in summary.columns:
        parts += ["## Server side (Prometheus /metrics, after − before each level)", "",
                  _section(summary, {"server_requests": "requests",
                                     "server_ttft_ms_mean": "TTFT mean (ms)",
                                     "server_itl_ms_mean": "ITL mean (ms)",
                                     "server_e2e_ms_mean": "duration mean (ms)",
                                     "ttft_ms_mean": "client TTFT mean (ms)"}), ""]
    parts += ["## Self-evaluation", "", _section(summary, {
        "attempts_mean": "attempts/trial", "retried_share": "trials retried",
        "extra_tokens_per_trial": "extra tokens/trial", "extra_token_share": "extra token share",
        "extra_llm_time_share": "extra LLM time share", "tsq_first_attempt_mean": "TSQ 1st",
        "tsq_scored_attempt_mean": "TSQ accepted", "self_eval_tsq_gain": "gain"}), "",
        "## Tokens per scenario", "", _section(summary, {
            "requests_per_trial": "LLM calls", "prompt_tokens_per_trial": "prompt tokens",
            "completion_tokens_per_trial": "completion tokens",
            "cached_token_share": "cached prompt share"}), ""]
    if len(comparison):
        parts += _comparison(comparison, inputs[0].name, [*mixed, *modes])
    parts += list(extra_sections)
    if figures:
        parts += ["## Figures", ""]
        for title, png in figures:
            parts += [f"### {title}", "", f"![{title}]({png.relative_to(out).as_posix()})", ""]
    parts += ["## Metric definitions", "", table(pd.DataFrame(
        [(m.key, m.header, m.unit, {True: "higher", False: "lower", None: "–"}[
            m.larger_is_better], m.description, m.aliases) for m in ALL]),
        ["key", "name", "unit", "better", "definition", "also known as"]), "",
        "Files: `summary.csv`/`summary.json` (one row per source and level), `trials.csv`, "
        "`scenarios.csv` (per scenario: counted trials, solved, infra failures, mean TSQ), "
        "`requests.csv`/`requests.jsonl` (one row per LLM call); for conversations "
        "`by_turn.csv` and `conversations.csv` (the tables of *Conversations*).", ""]
    return "\n".join(parts)


def _measured_against(summary: pd.DataFrame, mixed: Sequence[str],
                      modes: Sequence[str] = ()) -> list[str]:
    """The header block: which data, labels and mode every TSQ below is measured against."""
    present = [c for c in PROVENANCE_COLUMNS if c in summary.columns]
    if not present:
        return []
    frame = summary[["source", *present]].drop_duplicates()
    lines = ["## What the quality figures are measured against", "",
             table(frame, ["source", *(_PROVENANCE_HEADERS.get(c, c) for c in present)]), "",
             "TSQ here is the set F1 of the tool names an agent called against the expected "
             "tools its task's labels list (label method@version above); no judge model is "
             "involved in it (a judge pass, when one ran, has its own section). Labels are "
             "themselves imperfect: with labels of held-out F1 *f*, "
             "a perfect agent's expected TSQ is about *f* (the ceiling column); a ceiling "
             "'–' means the labels' quality was not measured.", ""]
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


_PROVENANCE_HEADERS = {
    "dataset_source": "dataset source", "dataset_revision": "revision",
    "labels": "labels (method@version)", "label_quality": "label quality",
    "label_heldout_f1": "label held-out F1", "mode": "instruction mode",
    "judge": "judge model", "tsq_ceiling": "TSQ ceiling",
}


def _quality(summary: pd.DataFrame) -> list[str]:
    rows = []
    for _, row in summary.iterrows():
        rows.append({
            "source": row["source"], "level": row["level"], "counted": row["n_counted"],
            "scenarios": row.get("n_scenarios"), "infra failed": row.get("n_infra_failed"),
            "TSQ (infra excl.)": fmt_ci(row, "tsq"), "TSQ (infra as 0)": fmt_ci(row, "tsq_infra0"),
            "solved (infra excl.)": fmt_ci(row, "solved"),
            "solved (infra as 0)": fmt_ci(row, "solved_infra0"),
            "precision": fmt_ci(row, "precision"), "recall": fmt_ci(row, "recall"),
            "param validity": fmt_ci(row, "param_validity"), "pass@1": row.get("pass_at_1"),
            "k": row.get("k"), "pass@k": fmt_ci(row, "pass_at_k", ""),
            "pass^k": fmt_ci(row, "pass_hat_k", ""), "TSQ spread": row.get("tsq_scenario_std"),
        })
    frame = pd.DataFrame(rows)
    solved_from = ", ".join(sorted(set(summary.get("solved_from", pd.Series()).dropna())))
    return [
        "## Tool selection quality (mean, 95% scenario-cluster bootstrap CI)", "",
        table(frame), "",
        "Intervals resample scenarios with all their repeated trials (repeats of a scenario "
        "are correlated; resampling single trials would give too narrow an interval); `[—]`: "
        "no interval, because the level has one scenario or one trial. *infra excl.* leaves "
        "`infra_failed` trials out (as the status table shows); *infra as 0* counts each as a "
        "failed scenario run — a gap between the two means the server's failures hid "
        "scenarios from quality. *Solved*: every expected tool called and no unexpected one "
        f"(source of the per-trial flag here: {solved_from or 'none'}). pass@k and pass^k "
        "are computed on *solved* from the n counted trials of each scenario (unbiased "
        "estimators; k = fewest counted trials of any scenario). Harbor's own pass@k (in "
        "its job result.json) reads only a reward with a single 0/1 key, so for these jobs, "
        "whose reward.json holds several scores, Harbor reports none.", ""]


def _judge(summary: pd.DataFrame) -> list[str]:
    """Judge TSQ and action completion (`bankbench judge`), when a judge pass ran."""
    if "judge_n" not in summary.columns or not (summary["judge_n"].fillna(0) > 0).any():
        return []
    frame = pd.DataFrame([{
        "source": row["source"], "level": row["level"], "judge": row["judge"],
        "judged": row["judge_n"], "unparseable/failed": row["judge_unparseable"],
        "judge TSQ": fmt_ci(row, "judge_tsq"), "action completion": fmt_ci(row, "judge_ac"),
    } for _, row in summary.iterrows()])
    return ["## Judge metrics (mean, 95% scenario-cluster bootstrap CI)", "", table(frame), "",
            "A judge model read each counted trial's session (the customer's goals, the calls "
            "and what the bank answered, the final answer) and scored Galileo's two "
            "session-level judgements: *tool selection quality* and *action completion*, each "
            "in [0, 1] (docs/judge.md). Trials whose judge answer could not be parsed or whose "
            "request failed are counted in *unparseable/failed*, not scored as 0. These are a "
            "judge's opinion beside the verifier's label-based TSQ above, never part of "
            "reward.json.", ""]


def _comparison(comparison: pd.DataFrame, baseline: str, mixed: Sequence[str]) -> list[str]:
    shown = comparison.assign(
        ci=[("[—]" if pd.isna(lo) or pd.isna(hi) else f"[{fmt(lo)}, {fmt(hi)}]")
            if m else "" for lo, hi, m in zip(comparison["delta_ci_low"],
                                              comparison["delta_ci_high"],
                                              comparison["verdict"] != "", strict=True)])
    shown = shown[["level", "metric", "unit", "baseline", "source", "value", "delta",
                   "delta_pct", "ci", "n_paired", "verdict"]]
    return [f"## Comparison against {baseline}", "",
            table(shown, ["level", "metric", "unit", baseline, "source", "value", "Δ", "Δ %",
                          "Δ 95% CI (paired)", "paired scenarios", "verdict"]), "",
            "Rows are paired by scenario (and level): Δ is over the scenarios both "
            "runs have, its interval from a bootstrap drawing the same scenarios for both; "
            "*better*/*worse* only when the interval excludes 0, else *no clear difference*. "
            "TTFT, E2E, TPOT and per-request tokens/s percentiles and the error rate are "
            "paired the same way over the requests of the drawn scenarios; pooled ITL, "
            "throughput, concurrency and token-share rows carry no interval and are not "
            "called either way."
            + (" Runs differ in: " + "; ".join(mixed) + "." if mixed else ""), ""]


def _provenance(tables: Tables) -> str:
    rows = []
    for source in tables.sources:
        jobs = tables.jobs[tables.jobs["source"] == source]
        m = tables.sweeps.get(source)
        rows.append({
            "source": source, "kind": "sweep" if m or len(jobs) > 1 else "job",
            "levels": ", ".join(str(v) for v in sorted(set(jobs["level"]))),
            "model": m.model if m else "", "server": m.server_profile if m else "",
            "router": m.router if m else "", "git": (m.git_sha or "")[:10] if m else "",
            "versions": ", ".join(f"{k} {v}" for k, v in m.versions.items()) if m else "",
            "started": f"{m.started_at:%Y-%m-%d %H:%M}" if m else "",
            "finished": f"{m.finished_at:%Y-%m-%d %H:%M}" if m and m.finished_at else
            ("running" if m else ""),
        })
    return table(pd.DataFrame(rows))


def _failures(trials: pd.DataFrame) -> list[str]:
    failed = trials[~trials["status"].isin(["scored", "running"])]
    if failed.empty:
        return []
    reasons = (failed.assign(reason=failed["status_reason"].str.slice(0, 120))
               .groupby(["source", "level", "status", "reason"]).size()
               .rename("trials").reset_index().sort_values("trials", ascending=False))
    return ["**Why trials failed**", "", table(reasons.head(30)), ""]


def _issues(issues: pd.DataFrame) -> list[str]:
    if issues.empty:
        return []
    lines = [f"**Input problems ({len(issues)})** — these rows were skipped or read in part:", ""]
    for row in issues.head(MAX_ISSUES_SHOWN).itertuples(index=False):
        where = f"{row.path}:{int(row.line)}" if pd.notna(row.line) else row.path
        lines.append(f"- `{where}`: {row.message}")
    if len(issues) > MAX_ISSUES_SHOWN:
        lines.append(f"- … and {len(issues) - MAX_ISSUES_SHOWN} more (see summary.json)")
    return [*lines, ""]
