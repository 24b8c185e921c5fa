"""llama.cpp's own OpenAI server as an external engine: `check`, `sweep` and `report` end to end
in both tool modes, and whether the check's verdict predicts the sweep.

Starts llama.cpp's C++ server from the prebuilt xllamacpp wheel (SmolLM2-135M GGUF,
`tests/support/llamacpp_server.py`), reached as any external server is (`--base-url`,
`--model`). Per tool mode (text: the tool schemas in the system prompt; native: the server's
own tool handling): `bankbench check` with that mode, a one-task level-1 `bankbench sweep` and
`bankbench report`. Prints per mode: the check's exit code and verdict, the sweep's agent
requests (completed / failed), who counted their tokens (server / client / unknown), prompt
tokens p50, TTFT p50, each command's wall time, and whether the check predicted the sweep (a
passing check: the sweep's agent requests complete; a failing one: they fail). Each request
reads the ~5k-token tool prompt, which on 2 cores takes tens of seconds (prefill ~270
tokens/s idle, benchmarks/README.md § cpu_tiny_engine.py): minutes in all.

The test suite keeps the quick part (tests/engines/test_llamacpp.py: the check on a context
too small for the text-mode prompt).

  python benchmarks/llamacpp_server.py [--modes text,native] [--max-tokens 48] [--max-steps 2]
                                       [--request-timeout 900]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from analysis.metrics.latency import timing_ms  # noqa: E402
from contracts.llm_calls import LLMCallRecord  # noqa: E402
from tests.support.built_tasks import CHEAP_LABELS  # noqa: E402
from tests.support.llamacpp_server import llamacpp_server  # noqa: E402

HARBOR_ENV = {"HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def bankbench(*args: str, timeout: int = 1800) -> tuple[subprocess.CompletedProcess, float]:
    """Run a bankbench command; one that outlives `timeout` is returned with exit code None
    (a busy host can make one request take many minutes) so the other modes still run."""
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "bankbench", *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **HARBOR_ENV})
    except subprocess.TimeoutExpired:
        done = subprocess.CompletedProcess(cmd, None, "", f"timed out after {timeout} s")
    return done, time.perf_counter() - start


def verdict(stdout: str) -> str:
    return next((line for line in stdout.splitlines() if line.startswith("verdict:")),
                "(no verdict line)")


def llm_calls(sweep: Path) -> list[dict]:
    rows = []
    for path in sweep.rglob("llm_calls.jsonl"):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


def p50(values: list[float]) -> str:
    return f"{statistics.median(values):.0f}" if values else "-"


def run_mode(server, out: Path, mode: str, args: argparse.Namespace) -> dict:
    url = ("--base-url", server.base_url, "--model", server.model)
    ak = ("--ak", f"tool_mode={mode}", "--ak", f"max_tokens={args.max_tokens}")
    check, check_s = bankbench("check", *url, *ak, "--timeout", str(args.request_timeout))
    sweep, sweep_s = bankbench(
        "sweep", *url, "--levels", "1", "--limit", "1", "--source", "sample",
        "--labels", CHEAP_LABELS, "--out", str(out), "--name", mode, *ak,
        "--ak", f"max_steps={args.max_steps}",
        "--ak", f"request_timeout_s={args.request_timeout}")
    if sweep.returncode != 0:
        print(f"{mode} sweep failed:\n{(sweep.stdout + sweep.stderr)[-3000:]}")
    report, report_s = bankbench("report", str(out / mode), timeout=600)
    agent = [c for c in llm_calls(out / mode) if c["role"] == "agent"]
    ok = [c for c in agent if c.get("error") is None]
    sources = {s: sum(c.get("token_source") == s for c in ok) for s in ("server", "client")}
    sources["unknown"] = len(ok) - sum(sources.values())
    ttft = [timing_ms(LLMCallRecord.model_validate(c))["ttft_ms"] for c in ok]
    if check.returncode is None:
        predicted = None
    else:
        predicted = (bool(ok) and len(ok) == len(agent)) if check.returncode == 0 else not ok
    return {
        "mode": mode,
        "check exit": "timed out" if check.returncode is None else check.returncode,
        "verdict": verdict(check.stdout),
        "requests": f"{len(ok)} / {len(agent) - len(ok)}",
        "tokens counted by": ", ".join(f"{k} {v}" for k, v in sources.items() if v) or "-",
        "prompt tokens p50": p50([c["prompt_tokens"] for c in ok if c.get("prompt_tokens")]),
        "TTFT p50 ms": p50([t for t in ttft if t is not None]),
        "no /metrics named": sweep.stdout.count("no /metrics from"),
        "report exit": "timed out" if report.returncode is None else report.returncode,
        "wall s (check / sweep / report)": f"{check_s:.0f} / {sweep_s:.0f} / {report_s:.0f}",
        "check predicted the sweep": {True: "yes", False: "NO", None: "-"}[predicted],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="text,native")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--max-steps", type=int, default=2)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--request-timeout", type=float, default=900.0,
                        help="seconds per request, check and agent alike (a 5k-token prefill "
                        "on a busy 2-core host takes minutes)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="llamacpp-bench-") as tmp:
        out = Path(tmp)
        start = time.perf_counter()
        with llamacpp_server(out / "server", n_ctx=args.n_ctx) as server:
            up = time.perf_counter() - start
            rows = [run_mode(server, out, mode, args)
                    for mode in args.modes.split(",")]
    print(f"llama.cpp server (xllamacpp, {server.model}, n_ctx {args.n_ctx}): "
          f"ready in {up:.1f} s")
    print("| " + " | ".join(rows[0]) + " |")
    print("|" + "---|" * len(rows[0]))
    for row in rows:
        print("| " + " | ".join(str(v) for v in row.values()) + " |")


if __name__ == "__main__":
    main()
