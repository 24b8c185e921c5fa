"""Running the real `harbor` CLI with BankingAgent on LocalEnvironment for the end-to-end
tests, and reading what a trial left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tokenizers import Tokenizer

from bankbench.sweep.harbor_job import SKIP_PROVIDER_MAPPING


def token_count(text: str) -> int:
    """Tokens of `text` by the mock model's tokenizer (the mocker's own)."""
    from bankbench.serve.smollm2 import model_dir

    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    return len(tok.encode(text, add_special_tokens=False).ids)


def run_job(tasks: Path, stack, jobs: Path, name: str, include: list[str], prefix: str,
            extra_ak: list[str], key: str, extra_args: list[str] | None = None,
            extra_env: dict[str, str] | None = None) -> Path:
    """`harbor run` BankingAgent on `include` of `tasks` against `stack`, its outputs scripted
    by replay sessions `<prefix><scenario_id>`; the API key (`key`) only in the environment."""
    harbor = Path(sys.executable).parent / "harbor"
    cmd = [str(harbor), "run", "-p", str(tasks), "-n", str(len(include)),
           "--agent", "agents.banking:BankingAgent", "-m", f"openai/{stack.model}",
           "--env", "environments.local:LocalEnvironment", "-o", str(jobs), "--job-name", name,
           SKIP_PROVIDER_MAPPING,
           "--ak", f"base_url={stack.base_url}", "--ak", "api_key_env=BANKBENCH_E2E_KEY",
           "--ak", f"nvext_annotations=output_replay_id:{prefix}{{scenario_id}}:{{request_index}}"]
    for task in include:
        cmd += ["-i", task]
    for ak in extra_ak:
        cmd += ["--ak", ak]
    cmd += extra_args or []
    env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "BANKBENCH_E2E_KEY": key, **(extra_env or {})}
    proc = subprocess.run(cmd, env=env, cwd=jobs, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return jobs / name


def trials(job: Path) -> dict[str, Path]:
    found = {p.name.split("__")[0]: p for p in job.iterdir() if (p / "result.json").exists()
             and "__" in p.name}
    return found


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def agent_calls(trial: Path) -> list[dict]:
    """The trial's LLM call records without the harness's session-closing request."""
    from contracts.llm_calls import SESSION_CLOSE_ROLE

    return [r for r in read_jsonl(trial / "agent/llm_calls.jsonl")
            if r["role"] != SESSION_CLOSE_ROLE]
