"""Conversation-mode figures: latency by turn, per-conversation cost, quality by mode, and the
simulated customer's own calls.

In conversation mode every customer turn re-sends the conversation so far, so the prompt
grows turn by turn and a router that keeps a conversation on the worker holding its prefix
serves more of it from cache. `by_turn` shows that per (source, level, turn): requests, TTFT
p50/p90, mean prompt tokens, cached prompt share. Only the measured roles (agent, evaluator)
count; the simulated customer's calls (role `user_simulator`, on its own endpoint) are the
environment's, not the system under test's: `other_roles` reports them apart.

All functions take the `Tables` frames (`analysis.tables`) and return DataFrames; `section`
renders the report's Markdown (`analysis.plots.by_turn` draws the figure).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.markdown import fmt_ci, table
from analysis.metrics.base import cluster_bootstrap_mean_ci
from analysis.metrics.quality import view, with_solved
from analysis.trial_rows import TURNS_KEY
from contracts.sweep import SweepManifest
from contracts.task import CONVERSATION_MODE

BY_TURN_COLUMNS = ["source", "router", "level", "turn", "requests", "ttft_p50_ms",
                   "ttft_p90_ms", "prompt_tokens_mean", "cached_share"]
CONVERSATION_COLUMNS = ["source", "level", "conversations", "turns_mean", "satisfied_share",
                        "last_turn_mean",
                        "llm_s_mean", "llm_s_p50", "resolve_s_mean", "resolve_s_p50",
                        "resolve_s_p90"]
SATISFIED = "satisfied"  # contracts.conversation.EndReason: the customer said goodbye
QUALITY_KEYS = {"tsq": "TSQ", "solved": "solved", "goal_score": "goal score"}


def is_multi_turn(requests: pd.DataFrame, trials: pd.DataFrame) -> bool:
    """Did any trial go past the first customer message (a call at turn ≥ 1, or the
    verifier counting more than one turn)?"""
    calls = len(requests) and (requests["turn"].fillna(0) > 0).any()
    turns = TURNS_KEY in trials.columns and (trials[TURNS_KEY].fillna(0) > 1).any()
    return bool(calls or turns)


def routers_of(sweeps: dict[str, SweepManifest]) -> dict[str, str]:
    """The router each source's sweep ran behind (sources without a manifest: none)."""
    return {source: m.router for source, m in sweeps.items() if m.router}


def cached_share(requests: pd.DataFrame) -> float:
    """Cached prompt tokens over prompt tokens, over the requests whose server reported both
    (an unknown count is not 0); NaN when none did."""
    both = requests.dropna(subset=["prompt_tokens", "cached_tokens"])
    prompt = float(both["prompt_tokens"].sum())
    return float(both["cached_tokens"].sum()) / prompt if prompt else np.nan


def by_turn(requests: pd.DataFrame, routers: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per (source, level, turn) of the measured roles' successful requests."""
    ok = requests[requests["measured"].astype(bool) & requests["ok"].astype(bool)]
    if ok.empty:
        return pd.DataFrame(columns=BY_TURN_COLUMNS)
    rows = []
    for (source, level, turn), group in ok.groupby(["source", "level", "turn"], sort=True):
        ttft = group["ttft_ms"].dropna().to_numpy(dtype=float)
        rows.append({
            "source": source, "router": (routers or {}).get(source, ""), "level": level,
            "turn": int(turn), "requests": len(group),
            "ttft_p50_ms": float(np.percentile(ttft, 50)) if len(ttft) else np.nan,
            "ttft_p90_ms": float(np.percentile(ttft, 90)) if len(ttft) else np.nan,
            "prompt_tokens_mean": float(group["prompt_tokens"].mean()),
            "cached_share": cached_share(group),
        })
    order = {s: i for i, s in enumerate(dict.fromkeys(requests["source"]))}
    frame = pd.DataFrame(rows, columns=BY_TURN_COLUMNS)
    return frame.sort_values(["source", "level", "turn"],
                             key=lambda c: c.map(order) if c.name == "source" else c,
                             ignore_index=True)


def conversations(trials: pd.DataFrame) -> pd.DataFrame:
    """Per (source, level), over the counted conversation-mode trials: turns per
    conversation (the verifier's count), the share the customer ended satisfied (the rest
    hit the turn limit; tsq.json `conversation.end_reason`), the last turn the agent's calls
    reached, LLM time
    per conversation (the measured roles' request times summed) and time to resolve (the
    trial's agent phase, as Harbor timed it)."""
    convo = trials[(trials["mode"] == CONVERSATION_MODE) & trials["in_quality"].astype(bool)]
    rows = []
    for (source, level), group in convo.groupby(["source", "level"], sort=False):
        llm, resolve = group["llm_s"].dropna(), group["agent_s"].dropna()
        rows.append({
            "source": source, "level": level, "conversations": len(group),
            "turns_mean": group[TURNS_KEY].mean() if TURNS_KEY in group else np.nan,
            "satisfied_share": _share(group["end_reason"], SATISFIED),
            "last_turn_mean": group["last_turn"].mean(),
            "llm_s_mean": llm.mean(), "llm_s_p50": llm.median(),
            "resolve_s_mean": resolve.mean(), "resolve_s_p50": resolve.median(),
            "resolve_s_p90": float(np.percentile(resolve, 90)) if len(resolve) else np.nan,
        })
    return pd.DataFrame(rows, columns=CONVERSATION_COLUMNS)


def _share(values: pd.Series, wanted: str) -> float:
    """Share of the known values equal to `wanted` (NaN when none is known)."""
    known = values.dropna()
    return float((known == wanted).mean()) if len(known) else np.nan


def quality_by_mode(trials: pd.DataFrame) -> pd.DataFrame:
    """Per (source, level, mode): counted trials and TSQ, solved and goal score means with
    the scenario-cluster bootstrap interval the quality section uses."""
    counted = view(with_solved(trials)[0], "counted")
    rows = []
    for (source, level, mode), group in counted.groupby(["source", "level", "mode"],
                                                        sort=False):
        row: dict[str, object] = {"source": source, "level": level, "mode": mode,
                                  "counted": len(group)}
        for key in QUALITY_KEYS:
            if key not in group:
                continue
            values = group[[key, "scenario_id"]].dropna()
            mean, low, high = cluster_bootstrap_mean_ci(values[key].to_numpy(dtype=float),
                                                        values["scenario_id"].to_numpy())
            row |= {f"{key}_mean": mean, f"{key}_ci_low": low, f"{key}_ci_high": high}
        rows.append(row)
    return pd.DataFrame(rows)


def other_roles(requests: pd.DataFrame) -> pd.DataFrame:
    """Per (source, level, role) of the roles kept out of the serving figures (the simulated
    customer …): calls, failed calls, tokens and request time."""
    other = requests[~requests["measured"].astype(bool)]
    columns = ["source", "level", "role", "calls", "failed", "prompt_tokens",
               "completion_tokens", "request_s", "e2e_ms_mean"]
    if other.empty:
        return pd.DataFrame(columns=columns)
    frame = other.groupby(["source", "level", "role"], sort=False).agg(
        calls=("request_id", "size"), failed=("ok", lambda s: int((~s.astype(bool)).sum())),
        prompt_tokens=("prompt_tokens", lambda s: s.sum(min_count=1)),
        completion_tokens=("completion_tokens", lambda s: s.sum(min_count=1)),
        request_s=("e2e_ms", lambda s: s.sum() / 1000.0), e2e_ms_mean=("e2e_ms", "mean"),
    ).reset_index()
    return frame[columns]


def by_turn_table(frame: pd.DataFrame) -> str:
    """`by_turn` as Markdown (the router column only when the sources' routers differ)."""
    headers = {"source": "source", "router": "router", "level": "level", "turn": "turn",
               "requests": "requests", "ttft_p50_ms": "TTFT p50 (ms)",
               "ttft_p90_ms": "TTFT p90 (ms)", "prompt_tokens_mean": "prompt tokens (mean)",
               "cached_share": "cached prompt share"}
    if frame["router"].nunique() < 2:
        headers.pop("router")
    return table(frame[list(headers)], list(headers.values()))


def section(requests: pd.DataFrame, trials: pd.DataFrame,
            sweeps: dict[str, SweepManifest]) -> list[str]:
    """The report's conversation section (empty for single-turn runs) and, whenever other
    roles called a model, their own table."""
    parts: list[str] = []
    if is_multi_turn(requests, trials):
        parts += [
            "## Conversations", "",
            "**Latency by turn** (agent and evaluator calls that succeeded; turn 0 answers "
            "the customer's first message, turn *n* the customer's *n*-th reply)", "",
            by_turn_table(by_turn(requests, routers_of(sweeps))), "",
            "Each turn re-sends the conversation so far: prompt tokens grow with the turn, "
            "and the cached share says how much of that prefix the server reused "
            "(`usage.prompt_tokens_details.cached_tokens` over `prompt_tokens`, over requests "
            "reporting both).", "",
            "**Per conversation** (counted conversation-mode trials)", "",
            table(conversations(trials), [
                "source", "level", "conversations", "turns", "ended satisfied",
                "last turn reached",
                "LLM s (mean)", "LLM s (p50)", "time to resolve s (mean)",
                "time to resolve s (p50)", "time to resolve s (p90)"]), "",
            "*turns*: the agent's messages to the customer in the scored attempt (the "
            "verifier's count); *ended satisfied*: share of the conversations whose customer "
            "said goodbye with every goal revealed and replied to (the others reached the turn "
            "limit; '–' when the verifier recorded no end; the scripted customer takes any "
            "reply as an answer, so this says the conversation finished, not that it went "
            "right: TSQ and goal score say that); *last turn reached*: the highest turn index "
            "of the agent's calls; *LLM s*: the agent's and evaluator's request times summed "
            "over the trial (every attempt); *time to resolve*: the trial's agent phase as "
            "Harbor timed it.",
            "", *_quality_by_mode(trials)]
    other = other_roles(requests)
    if len(other):
        parts += ["## Calls outside the system under test", "",
                  table(other, ["source", "level", "role", "calls", "failed",
                                "prompt tokens", "completion tokens", "request time (s)",
                                "E2E mean (ms)"]), "",
                  "Model calls of roles other than the agent and its evaluator (the "
                  "simulated customer, `user_simulator`, on its own endpoint) are recorded "
                  "in llm_calls.jsonl and kept out of every latency, throughput, token and "
                  "goodput figure above.", ""]
    return parts


def _quality_by_mode(trials: pd.DataFrame) -> list[str]:
    frame = quality_by_mode(trials)
    if frame.empty:
        return []
    shown = pd.DataFrame({
        "source": frame["source"], "level": frame["level"], "mode": frame["mode"],
        "counted": frame["counted"],
        **{header: [fmt_ci(row, key) for _, row in frame.iterrows()]
           for key, header in QUALITY_KEYS.items()
           if f"{key}_mean" in frame and frame[f"{key}_mean"].notna().any()}})
    return ["**Quality by instruction mode** (mean, 95% scenario-cluster bootstrap CI)", "",
            table(shown), ""]

