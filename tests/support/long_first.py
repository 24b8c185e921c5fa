"""The order in which the slow tier's parallel workers get their files (tests/conftest.py)."""

# The slow tier's longest files, longest first (seconds each took in an idle slow-tier run on 2
# cores, 3 workers, `./test.sh --slow --durations=0`): with parallel workers taking a file at a
# time, one of them started last would leave a single worker busy long after the others
# finished. Others keep their collection order.
LONG_FIRST = (
    "tests/analysis/test_notebooks.py",                       # ~115
    "tests/bankbench/capacity/test_capacity_scripted_e2e.py", # ~95
    "tests/bankbench/sweep/test_shards_e2e.py",               # ~85
    "tests/reliability/test_sweep_interruption.py",           # ~75
    "tests/bankbench/serve/test_cpu_tiny.py",                 # ~70
    "tests/bankbench/sweep/test_sweep_lifecycle.py",          # ~70
    "tests/agents/test_agent_harbor_e2e.py",                  # ~65
    "tests/integrity/test_integrity_real_frontend.py",        # ~65
    "tests/bankbench/sweep/test_shards_ray.py",               # ~60
    "tests/reliability/test_sweep_stop.py",                   # ~60
    "tests/analysis/test_compare_by_scenario.py",             # ~55
    "tests/analysis/export/test_ragas_roundtrip.py",          # ~55 (two files' ~40 + ~20)
    "tests/reliability/test_soak.py",                         # ~50
    "tests/dynamo/routers/test_router_sweep.py",              # ~50
    "tests/hostile/test_hostile_model.py",                    # ~50
    "tests/bankbench/capacity/test_capacity_e2e.py",          # ~45
    "tests/environments/test_local_env_harbor.py",            # ~45
    "tests/analysis/judge/test_judge_e2e.py",                 # ~40
    "tests/hostile/test_agent_causes.py",                     # ~35
    "tests/bankbench/serve/test_cpu_tiny_prompt_cache.py",    # ~35
    "tests/hostile/test_hostile_agents.py",                   # ~35
    "tests/bankbench/agent_server/test_agent_server.py",      # ~30
    "tests/reliability/test_secret_absence.py",               # ~25
    "tests/engines/test_llamacpp.py",                         # ~25
    "tests/bankbench/sweep/test_source_fallback.py",          # ~25
    "tests/agents/test_conversation_e2e.py",                  # ~25
)
