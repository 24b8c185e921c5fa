"""Unit tests: option validation, --set parsing, Prometheus parsing. No server needed."""

import pytest

from bankbench.serve.errors import ServeError
from bankbench.serve.metrics import metric_sum, metrics_url, parse_samples
from bankbench.serve.options import MockerOptions, TinyOptions, parse_set_args, validate_options


def test_set_args_parse_and_reject_missing_equals():
    assert parse_set_args(["speedup_ratio=0", "frontend_args=--a b=c"]) == {
        "speedup_ratio": "0",
        "frontend_args": "--a b=c",
    }
    with pytest.raises(ServeError, match="'speedup_ratio'"):
        parse_set_args(["speedup_ratio"])


def test_mocker_options_coerce_strings_from_the_cli(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text("")
    opts = validate_options(
        MockerOptions,
        {"speedup_ratio": "2.5", "replay_trace": str(trace), "tool_call_parser": "none",
         "mocker_args": "--block-size 16"},
        "cpu-mocker",
    )
    assert opts.speedup_ratio == 2.5
    assert opts.replay_trace == trace.resolve()
    assert opts.tool_call_parser is None
    assert opts.mocker_args == ["--block-size", "16"]
    assert validate_options(MockerOptions, None, "cpu-mocker").tool_call_parser == "hermes"


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ({"speedup_ratio": "fast"}, "speedup_ratio='fast'"),
        ({"speedup_ratio": "-1"}, "speedup_ratio='-1'"),
        ({"replay_trace": "/no/such/trace.jsonl"}, "replay_trace='/no/such/trace.jsonl'"),
        ({"router_session_affinity_ttl_secs": "0"}, "router_session_affinity_ttl_secs"),
        ({"speed": "1"}, "unknown option 'speed'"),
    ],
)
def test_bad_options_name_the_key(raw, needle):
    with pytest.raises(ServeError) as err:
        validate_options(MockerOptions, raw, "cpu-mocker")
    assert needle in err.value.cause
    assert "\n" not in err.value.cause


def test_missing_gguf_is_a_one_line_error():
    with pytest.raises(ServeError, match=r"bad option gguf='/nope/m.gguf'.*does not exist"):
        validate_options(TinyOptions, {"gguf": "/nope/m.gguf"}, "cpu-tiny")


PROM = """\
# HELP dynamo_frontend_requests_total Total requests
# TYPE dynamo_frontend_requests_total counter
dynamo_frontend_requests_total{model="m",status="success"} 7
dynamo_frontend_requests_total{model="m",status="error"} 2
dynamo_frontend_time_to_first_token_seconds_sum{model="m"} 0.125
dynamo_frontend_time_to_first_token_seconds_bucket{model="m",le="+Inf"} 9
process_up 1e0
garbage line without value
"""


def test_parse_prom_keeps_labels_and_values():
    samples = parse_samples(PROM)
    assert samples['dynamo_frontend_requests_total{model="m",status="success"}'] == 7
    assert samples['dynamo_frontend_time_to_first_token_seconds_bucket{model="m",le="+Inf"}'] == 9
    assert samples["process_up"] == 1.0
    assert len(samples) == 5
    assert metric_sum(samples, "dynamo_frontend_requests_total") == 9
    assert metric_sum(samples, "absent_metric") == 0.0


def test_metrics_url_from_base_url():
    assert metrics_url("http://h:1/v1") == "http://h:1/metrics"
    assert metrics_url("http://h:1/v1/") == "http://h:1/metrics"
    assert metrics_url("http://h:1") == "http://h:1/metrics"
    assert metrics_url("http://h:1/metrics") == "http://h:1/metrics"


def test_a_reused_pid_is_not_mistaken_for_our_process():
    import os

    from bankbench.procs import is_same_process, start_time

    me = start_time(os.getpid())
    assert me is not None
    assert is_same_process(os.getpid(), me)
    assert not is_same_process(os.getpid(), me + 1)


def test_cpu_tiny_worker_command_matches_the_worker_cli(tmp_path):
    from pathlib import Path

    from bankbench.serve.cpu_tiny import worker_command, worker_script

    opts = validate_options(TinyOptions, {"worker_args": "--n-ctx 8192 --threads 2"}, "cpu-tiny")
    cmd = worker_command(Path("/venv/python"), Path("/m.gguf"), Path("/tok"), "tiny", opts)
    assert cmd[:2] == ["/venv/python", str(worker_script())]
    flags = dict(zip(cmd[2::2], cmd[3::2], strict=True))
    assert flags == {"--model-path": "/m.gguf", "--model-name": "tiny", "--tokenizer-path": "/tok",
                     "--dyn-tool-call-parser": "hermes", "--n-ctx": "8192", "--threads": "2"}
    # every flag we pass is one the worker's command line (a sibling file) declares
    source = worker_script().with_name("llamacpp_args.py").read_text()
    for flag in ("--model-path", "--model-name", "--tokenizer-path", "--n-ctx", "--threads"):
        assert f'"{flag}"' in source, flag


def test_cpu_tiny_prompt_cache_is_opt_in_and_points_into_the_cache(tmp_path, monkeypatch):
    from pathlib import Path

    from bankbench.serve.cpu_tiny import worker_command, worker_script

    monkeypatch.setenv("BANKBENCH_CACHE", str(tmp_path))
    args = (Path("/venv/python"), Path("/m.gguf"), Path("/tok"), "tiny")
    plain = worker_command(*args, validate_options(TinyOptions, {}, "cpu-tiny"))
    assert "--prompt-cache-dir" not in plain
    opts = validate_options(TinyOptions, {"prompt_cache": "true"}, "cpu-tiny")
    cmd = worker_command(*args, opts)
    assert cmd[cmd.index("--prompt-cache-dir") + 1] == str(tmp_path / "llamacpp-prompts")
    assert '"--prompt-cache-dir"' in worker_script().with_name("llamacpp_args.py").read_text()
