"""A sweep's own cpu-mocker stack serves the tasks' oracle calls by default: a replay trace with
one session per task (each expected tool with schema-valid arguments, one per turn, then
answers) and the agent annotation that selects it; nothing is scripted for another profile, a
stack given its own trace, an agent given its own annotations, or `--set scripted=false`."""

from __future__ import annotations

import json

from bankbench.serve.replay import (
    SCRIPT_ANNOTATION,
    oracle_calls,
    scripted_sweep_config,
    tool_call_text,
)
from contracts.sweep import SweepConfig


def _config(**fields) -> SweepConfig:
    return SweepConfig.model_validate({"levels": [1], "profile": "cpu-mocker", **fields})


# A trace is tokenized with the mock model's tokenizer, from the model folder the Dynamo venv
# builds out of the GGUF (`smollm2.model_dir`): tests that write one ask for the venv
# (`dynamo_python`), which puts them in the slow tier with the other tests that need it, where
# the venv is made before they start. On a machine without it, the fast tier would download the
# GGUF and build the venv for them (~30 s).
def test_a_new_mocker_sweep_is_scripted_with_the_oracle_calls(sample_tasks_all, tmp_path,
                                                              dynamo_python):
    config = scripted_sweep_config(_config(), tmp_path, sample_tasks_all)
    assert config.agent_kwargs["nvext_annotations"] == SCRIPT_ANNOTATION
    trace = config.server_options["replay_trace"]
    lines = [json.loads(line) for line in open(trace)]
    tasks = sorted(p.parent for p in sample_tasks_all.glob("*/task.toml"))
    assert {line["session_id"] for line in lines} == {t.name for t in tasks}
    # the first session's first turn is its first expected tool, as the hermes parser reads it
    first = tasks[0]
    name, args = oracle_calls(first)[0]
    from tokenizers import Tokenizer

    from bankbench.serve.smollm2 import model_dir

    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    turn0 = next(line for line in lines if line["session_id"] == first.name)
    assert tok.decode(turn0["output_token_ids"]) == tool_call_text(name, args)
    # the agent's template fills in the fields the mocker expects
    assert SCRIPT_ANNOTATION.format(scenario_id=first.name, request_index=0) == \
        f"output_replay_id:{first.name}:0"


def test_nothing_is_scripted_where_the_user_said_otherwise(sample_tasks_all, tmp_path):
    for config in (_config(profile="cpu-tiny"),
                   _config(server_options={"replay_trace": str(tmp_path / "mine.jsonl")}),
                   _config(agent_kwargs={"nvext_annotations": "x:{scenario_id}"}),
                   _config(server_options={"scripted": "false"})):
        assert scripted_sweep_config(config, tmp_path, sample_tasks_all) == config
    assert not list(tmp_path.glob("*.jsonl"))


def test_a_resume_is_scripted_only_if_the_sweep_began_so(sample_tasks_all, tmp_path,
                                                         dynamo_python):
    # a sweep begun before scripting (no trace in its folder) resumes as it was stored
    assert scripted_sweep_config(_config(), tmp_path) == _config()
    began = scripted_sweep_config(_config(), tmp_path, sample_tasks_all)
    assert scripted_sweep_config(_config(), tmp_path) == began  # the same config to check
