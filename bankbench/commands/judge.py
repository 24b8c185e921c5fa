"""`bankbench judge`: a judge model's tool selection quality and action completion per trial."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "judge",
        help="Score trials with a judge model (tool selection quality, action completion).",
        description=(
            "Ask a judge model on its own OpenAI-compatible endpoint for Galileo's two "
            "session-level judgements of every scored or agent_failed trial of a job or sweep, "
            "and write each verdict to <trial>/judge/<prompt-version>-<model>.json "
            "(reward.json is never touched). Resumable: trials already judged with the same "
            "prompt version and model are skipped, except verdicts with no usable answer "
            "(every request failed or could not be parsed), which are asked again; --force "
            "asks every trial again. Exits 1 when most of the verdicts are unusable. "
            "`bankbench report` then shows the judge figures. Details: docs/judge.md."
        ),
    )
    p.add_argument("path", type=Path, metavar="JOB_OR_SWEEP",
                   help="Harbor job directory or sweep directory.")
    p.add_argument("--base-url", required=True, metavar="URL",
                   help="The judge's OpenAI-compatible base URL, e.g. http://host:8000/v1.")
    p.add_argument("--model", required=True, metavar="NAME", help="The judge model's name.")
    p.add_argument("--api-key-env", default=None, metavar="VAR",
                   help="Environment variable holding the judge's API key (never a key "
                        "on the command line; default: no key).")
    p.add_argument("--samples", type=int, default=1, metavar="N",
                   help="Judge requests per trial; their mean and spread are recorded "
                        "(default: %(default)s).")
    p.add_argument("--temperature", type=float, default=None,
                   help="Sampling temperature (default: 0 for one sample, 0.7 for several).")
    p.add_argument("--prompt-version", default=None, metavar="VERSION",
                   help="Stored prompt to use (analysis/judge/prompts/<VERSION>.md; "
                        "default: the current one).")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="Per-request timeout in seconds (default: %(default)s).")
    p.add_argument("--nvext-annotation", action="append", default=[], metavar="TEMPLATE",
                   help="Dynamo nvext annotation sent with each request, formatted with "
                        "{scenario_id} and {sample}, e.g. output_replay_id:{scenario_id}:{sample} "
                        "for a response-replay trace (repeatable).")
    p.add_argument("--force", action="store_true",
                   help="judge again trials that already have a verdict for this prompt "
                        "version and model (default: only those without a usable one)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from analysis.judge.prompt import DEFAULT_VERSION
    from analysis.judge.run import JudgeOptions, judge_path
    from analysis.tables import AnalysisInputError

    try:
        options = JudgeOptions(
            base_url=args.base_url, model=args.model, api_key_env=args.api_key_env,
            samples=args.samples, temperature=args.temperature,
            prompt_version=args.prompt_version or DEFAULT_VERSION, timeout_s=args.timeout,
            nvext_annotations=args.nvext_annotation, force=args.force)
    except ValidationError as exc:
        problem = exc.errors()[0]
        print(f"bankbench judge: --{problem['loc'][0]}: {problem['msg']}", file=sys.stderr)
        return 2
    if not args.path.is_dir():
        print(f"bankbench judge: {args.path}: no such directory", file=sys.stderr)
        return 2
    problem = _preflight(options.base_url, options.model, args.api_key_env)
    if problem:
        print(f"bankbench judge: judge check failed, no trial was judged: {problem}",
              file=sys.stderr)
        return 2
    print(f"bankbench judge: {args.path} with {options.model} at {options.base_url} "
          f"(prompt {options.prompt_version}, {options.samples} sample(s), temperature "
          f"{options.effective_temperature})", file=sys.stderr)
    try:
        summary = judge_path(args.path, options, log=_with_reasons(args.path))
    except (AnalysisInputError, ValueError, OSError) as exc:
        print(f"bankbench judge: {exc}", file=sys.stderr)
        return 2
    outcomes = ", ".join(f"{n} {s}" for s, n in sorted(summary.outcomes.items())) or "none"
    skipped = ", ".join(f"{n} {s}" for s, n in sorted(summary.skipped_status.items())) or "none"
    print(f"  judged {summary.judged} trial(s) ({outcomes}); {summary.skipped_done} already "
          f"judged; not judged by status: {skipped}", file=sys.stderr)
    if summary.mostly_failed:
        print(f"bankbench judge: WARNING: {summary.failed} of {summary.verdicts} verdicts have no "
              "usable answer (see the reasons above): the judge figures stand on the rest. "
              "They are asked again on the next run; check the judge model and prompt first.",
              file=sys.stderr)
    return 1 if summary.outcomes.get("error") or summary.mostly_failed else 0


def _preflight(base_url: str, model: str, api_key_env: str | None) -> str | None:
    """One GET of /models before any trial is read or judged: a wrong URL, key or model name
    is one line in a second, not an error recorded for every trial."""
    from bankbench.sweep.preflight import PreflightFailed, check_server

    try:
        # No key variable: no key is sent (a name nothing sets).
        check_server(base_url, model, api_key_env=api_key_env or "BANKBENCH_JUDGE_NO_KEY")
    except PreflightFailed as exc:
        return str(exc).replace("--ak api_key_env=NAME", "--api-key-env NAME")
    return None


def _with_reasons(path: Path):
    """The judge's per-trial log line, with the reason a trial's verdict failed (the first
    failed sample's error, or that its answer could not be parsed) appended."""
    import re

    from contracts.judge import JUDGE_DIR, JudgeRecord

    def log(line: str) -> None:
        found = re.match(r"\[\d+/\d+\] (\S+): (error|unparseable|partial)$", line)
        if found:
            judge_dir = next(Path(path).glob(f"**/{found.group(1)}/{JUDGE_DIR}"), None)
            reason = _reason(judge_dir, JudgeRecord)
            if reason:
                line += f" — {reason}"
        print(f"  {line}", file=sys.stderr)

    return log


def _reason(judge_dir: Path | None, record_model) -> str | None:
    if judge_dir is None:
        return None
    newest = max(judge_dir.glob("*.json"), key=lambda p: p.stat().st_mtime, default=None)
    if newest is None:
        return None
    try:
        record = record_model.model_validate_json(newest.read_bytes())
    except (OSError, ValueError):
        return None
    for sample in record.samples:
        if sample.status == "error":
            return sample.error or "request failed"
        if sample.status == "unparseable":
            return "answer not in the expected JSON: " + (sample.raw or "")[:80].replace(
                "\n", " ")
    return None
