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

from analysis import shards, turns
from analysis.compare import MIN_PAIRED_SCENARIOS, TOO_FEW, compare_table
from analysis.consistency_report import write_consistency
from analysis.integrity_report import write_integrity
from analysis.markdown import fmt, table
from analysis.metrics import ALL, counts, goodput, host, labels, server, throughput, usage
from analysis.metrics.base import DISTRIBUTION_STATS
from analysis.metrics.goodput import SLO
from analysis.metrics.latency import METRICS as LATENCY
from analysis.metrics.latency import SERVER_TTFT, TTFT
from analysis.metrics.quality import per_scenario, with_solved
from analysis.provenance import STATED, check_comparable, mixed_fields
from analysis.quality_report import judge_section, measured_against, quality_section
from analysis.report_sections import (
    counts_as_ints,
    failures_section,
    issues_section,
    section,
    self_eval_section,
    summary_block,
)
from analysis.request_trace import server_view_section
from analysis.summary import summarize
from analysis.tables import Tables, is_sweep_dir, load_many, source_labels
from analysis.validity import validity_section
from contracts.host_load import SATURATED


def default_out_dir(path: Path) -> Path:
    path = Path(path)
    return path if is_sweep_dir(path) else path.parent / f"{path.name}-report"


def write_report(path: Path | Sequence[Path], out: Path | None = None,
                 compare: Sequence[Path | Sequence[Path]] = (), slo: SLO | None = None, *,
                 draw: bool = True, allow_mixed: bool = False,
                 log: Callable[[str], None] | None = None) -> Path:
    """Read `path` (and `compare`), write every report file into `out`; returns report.md.

    `path` and each entry of `compare` is one configuration: a job or sweep, or a list of
    several runs of it (compared on their run-to-run spread: `analysis.compare`). Runs made
    against different datasets, labels or instruction modes are refused
    (`provenance.MixedRunsError`, nothing written) unless `allow_mixed`; then the report
    states the difference (a mode difference as a comparison of protocols). `log`, when
    given, receives one line per stage (the CLI prints them as progress).
    """
    say = log or (lambda _line: None)
    sides_in = [_runs(path), *(_runs(p) for p in compare)]
    inputs = [run for runs in sides_in for run in runs]
    out = Path(out) if out is not None else default_out_dir(inputs[0])
    labels = iter(source_labels(inputs))
    sides: dict[str, str] = {}
    for runs in sides_in:
        names = [next(labels) for _ in runs]
        sides |= {name: "+".join(names) for name in names}
    tables = load_many(inputs)
    counts = tables.trials["status"].value_counts().to_dict()
    say(f"read {len(tables.jobs)} job(s): {len(tables.trials):,} trials "
        f"({', '.join(f'{n} {s}' for s, n in counts.items()) or 'none'}), "
        f"{len(tables.requests):,} LLM calls, {len(tables.issues)} input problem(s)")
    summary = summarize(tables, slo)
    mixed = check_comparable(summary, allow_mixed) if len(inputs) > 1 else []
    modes = mixed_fields(summary, STATED) if len(inputs) > 1 else []
    comparison = compare_table(summary, tables.trials, tables.requests, sides=sides)
    out.mkdir(parents=True, exist_ok=True)
    write_data_files(tables, summary, comparison, out, inputs, slo, mixed, modes)
    say(f"wrote summary ({len(summary)} rows) and data files to {out}")
    figures = draw_figures(tables, summary, out / "plots") if draw else []
    if draw:
        say(f"drew {len(figures)} figure(s) in {out / 'plots'}")
    # Sections computed from the trials' own files (not the summary) are written by their
    # modules and slotted in before the figures.
    _, consistency = write_consistency(tables, out, draw=draw)
    _, integrity = write_integrity(tables, out, draw=draw)
    text = render_markdown(
        tables, summary, comparison, inputs, slo, figures, out, mixed,
        extra_sections=[*turns.section(tables.requests, tables.trials, tables.sweeps),
                        *consistency, *integrity, *server_view_section(tables),
                        *shards.section(tables)], modes=modes, sides=sides)
    report = out / "report.md"
    report.write_text(text, encoding="utf-8")
    return report


def _runs(side: Path | Sequence[Path]) -> list[Path]:
    return [Path(side)] if isinstance(side, (str, Path)) else [Path(p) for p in side]


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    # Round-trip through pandas' JSON writer: NaN → null, timestamps → ISO strings.
    return json.loads(frame.to_json(orient="records", date_format="iso"))


def write_data_files(tables: Tables, summary: pd.DataFrame, comparison: pd.DataFrame,
                     out: Path, inputs: list[Path], slo: SLO | None,
                     mixed: list[str], modes: Sequence[str] = ()) -> None:
    counts_as_ints(summary).to_csv(out / "summary.csv", index=False)
    counts_as_ints(with_solved(tables.trials)[0]).to_csv(out / "trials.csv", index=False)
    counts_as_ints(per_scenario(tables.trials)).to_csv(out / "scenarios.csv", index=False)
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
    from analysis import plots  # matplotlib and seaborn only when figures are drawn

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


def render_markdown(tables: Tables, summary: pd.DataFrame, comparison: pd.DataFrame,
                    inputs: list[Path], slo: SLO | None, figures: list[tuple[str, Path]],
                    out: Path, mixed: Sequence[str] = (),
                    extra_sections: Sequence[str] = (), modes: Sequence[str] = (),
                    sides: dict[str, str] | None = None) -> str:
    parts = [f"# bankbench report: {', '.join(p.name for p in inputs)}", "",
             f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Definitions of every figure: "
             "see *Metric definitions* at the end.", "",
             *summary_block(summary),
             *measured_against(summary, mixed, modes),
             "## Provenance", "", _provenance(tables), "",
             *validity_section(tables, summary), "## Trials", "",
             section(summary, labels(*(m.key for m in counts.TRIAL_COUNTS))),
             "", "Quality averages count `scored` and `agent_failed` trials (an agent failure "
             "without a reward counts as 0); `infra_failed`, `harness_failed` and "
             "`interrupted` trials (Harbor was stopped before they finished; a resumed sweep "
             "runs them again) are excluded and listed here — the quality section also "
             "shows TSQ and solved with `infra_failed` trials counted as 0; `running` trials "
             "have no result yet.", ""]
    parts += failures_section(tables.trials) + issues_section(tables.issues)
    parts += ["## Latency (successful requests)", ""]
    stats = [s for s in DISTRIBUTION_STATS if s not in ("min", "max")]
    for metric in LATENCY:
        parts += [f"**{metric.label}**", "",
                  section(summary, {f"{metric.key}_{s}": s for s in stats}), ""]
    parts += ["## Throughput and concurrency", "", section(summary, labels(
        *(m.key for m in (throughput.WINDOW, throughput.STEADY, throughput.RESUMED,
                          throughput.OUTPUT_THROUGHPUT,
                          throughput.REQUEST_THROUGHPUT, throughput.CONFIGURED_CONCURRENCY,
                          throughput.ACHIEVED_CONCURRENCY, throughput.TRIAL_CONCURRENCY,
                          throughput.ACHIEVED_SHARE, counts.REQUESTS, throughput.ERROR_RATE,
                          counts.CANCELLED_REQUESTS, counts.TOKEN_COUNTS)))), "",
        "Rates, in-flight figures and the request percentiles above are over each level's "
        "measured window: every run of the level from warm-up end to drain start (steady "
        "state), the pause of a resume left out; a level without such a stretch (`steady` "
        "no) is measured over its whole runs. Definitions: *Metric definitions*.", "",
        "Tokens counted by `server`: its usage; `client`: the agent's `--ak tokenizer` for a "
        "server that sends no usage (message text and tool schemas, without the chat "
        "template's tokens); `unknown`: neither, and token figures stay empty.", ""]
    parts += quality_section(summary) + judge_section(summary)
    if slo is not None:
        parts += [f"## Goodput (SLO {slo})", "", section(summary, labels(
            *(m.key for m in goodput.METRICS))), ""]
    if "server_requests" in summary.columns or "frontend_ttft_ms_mean" in summary.columns:
        parts += ["## Server side (Prometheus /metrics, after − before each level)", "",
                  section(summary, labels(*(m.key for m in server.METRICS)) | {
                      f"{m.key}_mean": m.stat_label("mean") for m in (TTFT.metric,
                                                                       SERVER_TTFT.metric)}),
                  "", "The frontend's histograms time what it sends (after a tool-call "
                  "parser's hold); the client's first chunk and the server's own per-request "
                  "TTFT (nvext) are beside them.", ""]
    if host.HOST_BUSY.key in summary.columns:
        parts += ["## Client host (CPU while each level ran)", "", section(summary, labels(
            *(m.key for m in host.METRICS))), "", "Shares of all the client host's cores "
            f"(1.0 = every core busy throughout). At {SATURATED:g} or more the host is called "
            "saturated: its requests also waited for CPU, and the summary says so.", ""]
    parts += self_eval_section(summary) + [
        "## Tokens per scenario", "", section(summary, labels(
            *(m.key for m in usage.PER_SCENARIO))), ""]
    if len(comparison):
        baseline = next(iter(dict.fromkeys(summary["source"])), inputs[0].name)
        parts += _comparison(comparison, sides.get(baseline, baseline) if sides else baseline,
                             [*mixed, *modes])
    parts += list(extra_sections)
    if figures:
        parts += ["## Figures", ""]
        for title, png in figures:
            parts += [f"### {title}", "", f"![{title}]({png.relative_to(out).as_posix()})", ""]
    parts += ["## Metric definitions", "", table(pd.DataFrame(
        [(m.key, m.header, m.unit, m.better or "–", m.description, m.aliases)
         for m in ALL]),
        ["key", "name", "unit", "better", "definition", "also known as"]), "",
        "Files: `summary.csv`/`summary.json` (one row per source and level), `trials.csv`, "
        "`scenarios.csv` (per scenario: counted trials, solved, infra failures, mean TSQ), "
        "`requests.csv`/`requests.jsonl` (one row per LLM call); for conversations "
        "`by_turn.csv` and `conversations.csv` (the tables of *Conversations*).", ""]
    return "\n".join(parts)


def _comparison(comparison: pd.DataFrame, baseline: str, mixed: Sequence[str]) -> list[str]:
    shown = comparison.assign(
        ci=[("[—]" if pd.isna(lo) or pd.isna(hi) else f"[{fmt(lo)}, {fmt(hi)}]")
            if m else "" for lo, hi, m in zip(comparison["delta_ci_low"],
                                              comparison["delta_ci_high"],
                                              comparison["verdict"] != "", strict=True)])
    shown = shown.assign(sees=[_could_see(row) for _, row in comparison.iterrows()])
    several = bool((comparison.get("runs", pd.Series(dtype=str)).fillna("1 vs 1")
                    != "1 vs 1").any())
    shown = shown[["level", "metric", "unit", "baseline", "source", *(["runs"] * several),
                   "value", "delta", "delta_pct", "ci", "interval", "n_paired", "verdict",
                   "sees"]]
    tests = comparison["p_value"].notna()
    if "tested_with" in comparison:
        tests &= comparison["tested_with"].fillna("") == ""
    n_family = int(tests.sum())
    return [f"## Comparison against {baseline}", "",
            table(shown, ["level", "metric", "unit", baseline, "source", *(["runs"] * several),
                          "value", "Δ", "Δ %",
                          "Δ 95% CI (paired)", "interval", "paired scenarios", "verdict",
                          "could detect (80 %)"]), "",
            "Rows are paired by scenario (and level): Δ is over the scenarios both "
            "runs have, its interval from a bootstrap drawing the same scenarios for both. "
            "Quality is averaged per scenario before differencing, so every scenario weighs "
            "the same in both runs (trials lost to infra failures change no weight; the "
            "*infra as 0* rows are where such losses count). TTFT, E2E, TPOT and per-request "
            "tokens/s percentiles, the error rate and the tool-call integrity shares are "
            "paired over the requests of the "
            "drawn scenarios; their intervals are **within-run**: they resample the scenarios "
            "of these two runs and hold no run-to-run variation of the server — repeat the "
            "runs to see that. *better*/*worse* only when the interval excludes 0 and the "
            f"row survives **Holm's step-down correction over all {n_family} rows with a "
            "verdict** (family-wise error 5 %; p from the bootstrap standard error), else "
            "*no clear difference*; the intervals shown are per row (95 %). Pooled ITL, "
            "throughput, concurrency and token-share rows carry no interval and are not "
            "called either way; nor is any row over fewer than "
            f"{MIN_PAIRED_SCENARIOS} paired scenarios (*{TOO_FEW}*), where the rule "
            "calls a difference that is not there far more often than 5 % "
            "(benchmarks/compare_small_n.py). A quality row whose paired values are another "
            "row's (TSQ with infra failures as 0 when none was lost) is that row's test, counted "
            "once. A latency row is judged on whole runs: each run's own figure, in log, "
            "by Welch's t over the runs of both sides and the crossover's test over the "
            "pairs they ran in, both to call it — a server whose speed "
            "drifts slower than a run moves a whole run as a real difference would, and only "
            "other runs of the same configuration show how far (docs/analysis.md). Give a "
            "side several runs by joining them with commas (`a1,...,a5 --compare b1,...,b5`), "
            "5 or more each, run in pairs of one run of each side, each pair's order by a "
            "coin flip (A B B A A B ...). Latency rows say *cannot tell* with fewer than 5 "
            "runs on a side, with runs back to back, not in pairs or every pair in one "
            "order, or where "
            "the runs "
            "would not have called a 1.5x slowdown either (they spread as widely); their "
            "interval only shows the scale. Error-rate and integrity verdicts come from two "
            "tests on each trial's own figure that must both reject: trial against trial, "
            "and blocks of the trials that ran together in running order, by batch means "
            "with a drift check (*cannot tell* where those drift or are too short). "
            "*could detect (80 %)*: beside each "
            "quality verdict, the "
            "smallest difference this pair would have called 80 % of the time, simulated "
            "through the same rule from the pair's own scenario-to-scenario spread, and "
            "*underpowered* where a 10-point difference would be missed more than 20 % of the "
            "time — then *no clear difference* says little."
            + (" Runs differ in: " + "; ".join(mixed) + "." if mixed else ""), ""]


def _could_see(row: pd.Series) -> str:
    """A quality row's power cell: the smallest difference it detects, and whether a
    10-point one would mostly be missed."""
    if pd.isna(row.get("power_at")):
        return ""
    found = row.get("detectable")
    text = "none up to 0.8" if pd.isna(found) else f"{found:.2f}"
    note = row.get("power_note") or ""
    return f"{text}; underpowered" if note.startswith("underpowered") else text


def _provenance(tables: Tables) -> str:
    rows = []
    for source in tables.sources:
        jobs = tables.jobs[tables.jobs["source"] == source]
        m = tables.sweeps.get(source)
        rows.append({
            "source": source, "kind": "sweep" if m or len(jobs) > 1 else "job",
            "levels": ", ".join(str(v) for v in sorted(set(jobs["level"]))),
            "model": m.model if m else "", "server": m.server_profile if m else "",
            "router": (m.router_setup.summary() if m.router_setup else m.router or "")
            if m else "", "git": (m.git_sha or "")[:10] if m else "",
            "versions": ", ".join(f"{k} {v}" for k, v in m.versions.items()) if m else "",
            "started": f"{m.started_at:%Y-%m-%d %H:%M}" if m else "",
            "finished": f"{m.finished_at:%Y-%m-%d %H:%M}" if m and m.finished_at else
            ("running" if m else ""),
        })
    return table(pd.DataFrame(rows))
