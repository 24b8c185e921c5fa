"""The order in which the slow tier's parallel workers get their files (tests/conftest.py)."""

# The slow tier's longest files, longest first (idle seconds on 2 cores, about): with parallel
# workers taking a file at a time, one of them started last would leave a single worker busy
# long after the others finished. Others keep their collection order.
LONG_FIRST = (
    "tests/agents/test_agent_harbor_e2e.py",                  # ~140
    "tests/bankbench/capacity/test_capacity_scripted_e2e.py",  # ~135 (two searches)
    "tests/bankbench/sweep/test_shards_e2e.py",               # ~125
    "tests/bankbench/sweep/test_sweep_lifecycle.py",          # ~95
    "tests/analysis/test_compare_by_scenario.py",             # ~75
    "tests/integrity/test_integrity_real_frontend.py",        # ~70
    "tests/dynamo/routers/test_router_sweep.py",              # ~67
    "tests/bankbench/serve/test_cpu_tiny_prompt_cache.py",    # ~65
    "tests/bankbench/sweep/test_shards_ray.py",               # ~65
    "tests/bankbench/serve/test_cpu_tiny.py",                 # ~60
    "tests/agents/test_conversation_e2e.py",                  # ~60
    "tests/bankbench/capacity/test_capacity_e2e.py",          # ~58
    "tests/reliability/test_sweep_interruption.py",           # ~60
    "tests/analysis/test_notebooks.py",                       # ~55
    "tests/reliability/test_sweep_stop.py",                   # ~55
    "tests/reliability/test_soak.py",                         # ~50
    "tests/analysis/export/test_export_agent_job.py",         # ~50
    "tests/reliability/test_secret_absence.py",               # ~45
    "tests/environments/test_local_env_harbor.py",            # ~45
)
