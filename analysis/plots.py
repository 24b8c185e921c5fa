"""Figures (PNG, seaborn) drawn from DataFrames only: one message per figure.

Per-trial scatters and histograms take `Tables` frames; sweep figures take the summary table
(one row per source and level). Every function writes one file and returns its path.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

_DPI = 110
SCATTER_X = {
    "ttft_ms_mean": ("Mean TTFT of the trial's requests (ms)", "TTFT"),
    "itl_ms_mean": ("Mean ITL of the trial's requests (ms)", "ITL"),
    "output_tps_per_user_mean": ("Mean output tokens/s per request (tokens/s)",
                                 "per-request output speed"),
}


def _hue(frame: pd.DataFrame) -> pd.Series | None:
    """Colour by source and level when there is more than one of either."""
    multi_source = frame["source"].nunique() > 1
    multi_level = frame["level"].nunique() > 1
    if multi_source and multi_level:
        return frame["source"].astype(str) + " c" + frame["level"].astype(str)
    if multi_source:
        return frame["source"].astype(str)
    if multi_level:
        return "c" + frame["level"].astype(str)
    return None


def _save(fig: plt.Figure, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=_DPI)
    plt.close(fig)
    return out


def scatter_vs_tsq(trials: pd.DataFrame, x: str, out: Path) -> Path:
    """Does a trial's speed relate to its tool-selection quality? One point per counted trial."""
    data = trials[trials["in_quality"].astype(bool)].dropna(subset=[x, "tsq"])
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    hue = _hue(data) if len(data) else None
    sns.scatterplot(x=data[x], y=data["tsq"], hue=hue, alpha=0.6, s=22, ax=ax)
    label, short = SCATTER_X.get(x, (x, x))
    ax.set_xlabel(label)
    ax.set_ylabel("TSQ of the trial (0–1)")
    ax.set_ylim(-0.03, 1.03)
    if ax.get_legend() is not None:
        ax.get_legend().set_title(None)
    ax.set_title(f"TSQ vs {short} ({len(data)} counted trials)")
    return _save(fig, out)


def histogram(values: pd.Series, groups: pd.Series | None, xlabel: str, title: str,
              out: Path) -> Path:
    """Distribution of one latency: a histogram for up to three groups, otherwise one
    cumulative curve per group (many overlaid histograms cannot be read).

    Computed with numpy, so millions of ITL gaps stay cheap.
    """
    v = values.to_numpy(dtype=float)
    keep = ~np.isnan(v)
    v = v[keep]
    g = groups.to_numpy()[keep] if groups is not None else None
    labels = [None] if g is None else list(dict.fromkeys(g))
    cumulative = len(labels) > 3
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    if v.size:
        hi = np.percentile(v, 99.5)
        n_bins = 200 if cumulative else int(np.clip(np.sqrt(v.size / len(labels)), 10, 80))
        bins = np.linspace(max(0.0, v.min()), hi if hi > v.min() else v.min() + 1, n_bins + 1)
        for label, colour in zip(labels, sns.color_palette(n_colors=len(labels)), strict=True):
            part = v if label is None else v[g == label]
            counts, edges = np.histogram(part, bins=bins)
            share = counts / max(part.size, 1)
            if cumulative:
                share = np.cumsum(share)
            ax.stairs(share, edges, label=None if label is None else str(label), color=colour,
                      fill=len(labels) == 1, alpha=0.8 if len(labels) == 1 else 1.0,
                      linewidth=1.6, baseline=None if cumulative else 0)
        if g is not None:
            ax.legend(title=None, fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Share of values ≤ x" if cumulative else "Share of values per bin")
    ax.set_title(title + (" (cumulative)" if cumulative else ""))
    return _save(fig, out)


def _level_axis(ax: plt.Axes, summary: pd.DataFrame) -> None:
    ax.set_xscale("log", base=2)
    levels = sorted(summary["level"].unique())
    ax.set_xticks(levels, [str(lv) for lv in levels])
    ax.minorticks_off()
    ax.set_xlabel("Configured concurrency (concurrent trials)")


def latency_vs_concurrency(summary: pd.DataFrame, out: Path) -> Path:
    """How latency percentiles grow with load: TTFT, ITL and E2E, p50/p90/p99."""
    sns.set_theme(style="whitegrid")
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    long = summary.melt(
        id_vars=["source", "level"],
        value_vars=[f"{m}_{p}" for m in ("ttft_ms", "itl_ms", "e2e_ms") for p in
                    ("p50", "p90", "p99")])
    long["metric"] = long["variable"].str.rsplit("_", n=1).str[0]
    long["percentile"] = long["variable"].str.rsplit("_", n=1).str[1]
    titles = {"ttft_ms": "TTFT (ms)", "itl_ms": "ITL (ms)", "e2e_ms": "E2E latency (ms)"}
    for ax, (metric, label) in zip(axes, titles.items(), strict=True):
        part = long[long["metric"] == metric]
        sns.lineplot(data=part, x="level", y="value", hue="percentile",
                     style="source" if part["source"].nunique() > 1 else None,
                     marker="o", ax=ax)
        _level_axis(ax, summary)
        ax.set_ylabel(label)
        ax.set_title(f"{label.split(' (')[0]} percentiles vs concurrency")
        if ax is not axes[0] and ax.get_legend() is not None:
            ax.get_legend().remove()  # one legend is enough for three panels
        elif ax.get_legend() is not None:
            ax.legend(fontsize=8)
    return _save(fig, out)


def throughput_vs_concurrency(summary: pd.DataFrame, out: Path) -> Path:
    """Aggregate output tokens/s at each load level."""
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    sns.lineplot(data=summary, x="level", y="output_token_throughput", hue="source",
                 marker="o", ax=ax)
    _level_axis(ax, summary)
    ax.set_ylabel("Aggregate output throughput (tokens/s)")
    ax.set_title("Output throughput vs concurrency")
    return _save(fig, out)


def concurrency_achieved(summary: pd.DataFrame, out: Path) -> Path:
    """Requests actually in flight vs the configured number of concurrent trials."""
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    sns.lineplot(data=summary, x="level", y="achieved_concurrency", hue="source", marker="o",
                 ax=ax)
    levels = np.array(sorted(summary["level"].unique()), dtype=float)
    ax.plot(levels, levels, linestyle="--", color="grey", label="configured")
    _level_axis(ax, summary)
    ax.set_ylabel("Mean LLM requests in flight (requests)")
    ax.set_title("Achieved vs configured concurrency")
    ax.legend()
    return _save(fig, out)


def tsq_vs_concurrency(summary: pd.DataFrame, out: Path) -> Path:
    """Does quality hold up under load? Mean TSQ with its 95% bootstrap CI per level."""
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    sources = list(dict.fromkeys(summary["source"]))
    for source, colour in zip(sources, sns.color_palette(n_colors=len(sources)), strict=True):
        part = summary[summary["source"] == source].sort_values("level")
        err = np.vstack([part["tsq_mean"] - part["tsq_ci_low"],
                         part["tsq_ci_high"] - part["tsq_mean"]])
        ax.errorbar(part["level"], part["tsq_mean"], yerr=err, marker="o", capsize=4,
                    color=colour, label=str(source))
    _level_axis(ax, summary)
    ax.set_ylabel("Mean TSQ (0–1), 95% CI")
    ax.set_ylim(0, 1.05)
    ax.set_title("Tool selection quality vs concurrency")
    ax.legend()
    return _save(fig, out)


def pareto(summary: pd.DataFrame, out: Path) -> Path:
    """The speed each user sees vs the total the server delivers, one point per level."""
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    sources = list(dict.fromkeys(summary["source"]))
    for source, colour in zip(sources, sns.color_palette(n_colors=len(sources)), strict=True):
        part = summary[summary["source"] == source].sort_values("level")
        ax.plot(part["output_tps_per_user_p50"], part["output_token_throughput"], marker="o",
                color=colour, label=str(source))
        for _, row in part.iterrows():
            ax.annotate(f"c{row['level']}", (row["output_tps_per_user_p50"],
                                             row["output_token_throughput"]),
                        textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel("Median output tokens/s per request (tokens/s/user)")
    ax.set_ylabel("Aggregate output throughput (tokens/s)")
    ax.set_title("Per-user speed vs aggregate throughput")
    ax.legend()
    return _save(fig, out)


def consistency_vs_concurrency(table: pd.DataFrame, out: Path) -> Path:
    """Do decisions stay the same under load? Agreement with the reference run (95% CI) and
    the shares of malformed, truncated and lost replies/trials per level."""
    sns.set_theme(style="whitegrid")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    sources = list(dict.fromkeys(table["source"]))
    colours = sns.color_palette(n_colors=max(2, len(sources) * 2))
    for i, source in enumerate(sources):
        part = table[table["source"] == source].sort_values("level")
        for j, (key, label) in enumerate((("tool_f1", "tool F1"),
                                          ("arg_agreement", "argument agreement"))):
            err = np.vstack([part[key] - part[f"{key}_ci_low"],
                             part[f"{key}_ci_high"] - part[key]]).clip(min=0)
            axes[0].errorbar(part["level"], part[key], yerr=np.nan_to_num(err), marker="o",
                             capsize=4, color=colours[2 * i + j],
                             label=f"{label} ({source})" if len(sources) > 1 else label)
        if "tool_f1_floor" in part:  # the level's agreement with itself: its noise floor
            axes[0].plot(part["level"], part["tool_f1_floor"], linestyle="--",
                         color=colours[2 * i],
                         label=f"tool F1 floor ({source})" if len(sources) > 1 else
                         "tool F1 floor (same-level repeats)")
    axes[0].set_ylabel("Agreement with the reference (0–1), 95% CI")
    axes[0].set_ylim(0, 1.05)
    reference = table["reference"].iloc[0]
    axes[0].set_title(f"Decision consistency vs concurrency (reference {reference})")
    long = table.melt(id_vars=["source", "level"],
                      value_vars=["malformed", "truncated", "lost", "schema_valid"])
    sns.lineplot(data=long, x="level", y="value", hue="variable",
                 style="source" if len(sources) > 1 else None, marker="o", ax=axes[1])
    axes[1].set_ylabel("Share (0–1)")
    axes[1].set_ylim(-0.02, 1.05)
    axes[1].set_title("Malformed / truncated replies, lost trials, schema-valid calls")
    for ax in axes:
        _level_axis(ax, table)
        ax.legend(fontsize=8)
    return _save(fig, out)


def integrity_vs_concurrency(table: pd.DataFrame, out: Path) -> Path:
    """At which load do tool calls start breaking, and how? Per class with any failure, its
    rate (95 % scenario-clustered interval) per level, any class as a grey dashed line behind;
    a filled marker where the level is worse than the reference beyond noise. `table` is
    analysis/integrity.py's level table with a `name` column (the class as the report names
    it) and `any` true on the any-class rows."""
    sns.set_theme(style="whitegrid")
    sources = list(dict.fromkeys(table["source"]))
    fig, axes = plt.subplots(1, len(sources), figsize=(6.8 * len(sources), 4.4), squeeze=False)
    for ax, source in zip(axes[0], sources, strict=True):
        part = table[table["source"] == source]
        failed = part.groupby("name", sort=False)["failures"].sum()
        shown = [n for n in failed.index if failed[n] > 0]
        classes = [n for n in shown if not part.loc[part["name"] == n, "any"].any()]
        colours = dict(zip(classes, sns.color_palette(n_colors=max(1, len(classes))),
                           strict=False))
        for name in shown:
            rows = part[part["name"] == name].sort_values("level")
            is_any = bool(rows["any"].any())
            colour = "grey" if is_any else colours[name]
            err = np.vstack([rows["rate"] - rows["ci_low"],
                             rows["ci_high"] - rows["rate"]]).clip(min=0)
            ax.errorbar(rows["level"], rows["rate"], yerr=np.nan_to_num(err), marker="o",
                        mfc="white", capsize=3, color=colour, label=name,
                        linestyle="--" if is_any else "-", zorder=1 if is_any else 2)
            worse = rows[rows["worse"].astype(bool)]
            ax.plot(worse["level"], worse["rate"], "o", color=colour, markersize=8,
                    zorder=1.5 if is_any else 3)
        if not shown:
            ax.text(0.5, 0.5, "no integrity failure at any level", ha="center",
                    transform=ax.transAxes)
        _level_axis(ax, part)
        ax.set_ylabel("Share of classified agent replies, 95% CI")
        ax.set_ylim(bottom=0)
        named = f" ({source})" if len(sources) > 1 else ""
        ax.set_title(f"Tool-call integrity vs concurrency{named}\n(filled: worse than "
                     f"{part['reference'].iloc[0]} beyond noise)")
        if shown:
            ax.legend(fontsize=8)
    return _save(fig, out)


def capacity_frontier(levels: pd.DataFrame, bounds: dict[str, float], margin: float,
                      capacity: int | None, out: Path) -> Path:
    """Each searched level's measured value over its bound (≤ 1 passes) and the decision
    divergence (mean and its one-sided bound) against the margin; the capacity is marked."""
    sns.set_theme(style="whitegrid")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    frame = levels.sort_values("level")
    for name, limit in bounds.items():
        axes[0].plot(frame["level"], frame[name] / limit, marker="o", label=name)
    axes[0].axhline(1.0, color="grey", linestyle="--", label="bound")
    axes[0].set_ylabel("Measured / bound (≤ 1 passes)")
    axes[0].set_title("SLO headroom vs concurrency")
    axes[1].plot(frame["level"], frame["divergence"], marker="o", label="divergence (mean)")
    axes[1].plot(frame["level"], frame["divergence_bound"], marker="v", linestyle=":",
                 label="divergence, upper bound")
    axes[1].axhline(margin, color="grey", linestyle="--", label="margin (--max-divergence)")
    axes[1].set_ylabel("Divergence of decisions from the reference")
    axes[1].set_title("Decisions against their own noise vs concurrency")
    for ax in axes:
        _level_axis(ax, frame)
        if capacity is not None:
            ax.axvline(capacity, color="green", alpha=0.5, label=f"capacity c{capacity}")
        ax.legend(fontsize=8)
    return _save(fig, out)


def by_turn(frame: pd.DataFrame, out: Path) -> Path:
    """Conversation mode: TTFT p50 and cached prompt share against the turn index (the
    `analysis.turns.by_turn` table), one line per source (and router) and level."""
    sns.set_theme(style="whitegrid")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    data = frame.assign(run=_hue(frame) if _hue(frame) is not None else "all")
    if frame["router"].nunique() > 1:
        data["run"] = data["run"] + " (" + data["router"].astype(str) + ")"
    for ax, (column, label) in zip(axes, (("ttft_p50_ms", "TTFT p50 (ms)"),
                                          ("cached_share", "cached prompt share")),
                                   strict=True):
        sns.lineplot(data=data, x="turn", y=column, hue="run", marker="o", ax=ax)
        ax.set_xlabel("turn (0 = first customer message)")
        ax.set_ylabel(label)
        ax.set_title(f"{label.split(' (')[0]} by conversation turn")
        ax.xaxis.get_major_locator().set_params(integer=True)
        if column == "cached_share":
            ax.set_ylim(-0.03, 1.03)
        if ax.get_legend() is not None:
            ax.legend(fontsize=8)
    return _save(fig, out)
