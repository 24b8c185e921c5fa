"""Launching, health-checking and stopping LLM server stacks (`bankbench serve`).

Modules: `api` (up/down/status, the public entry points), `profiles` (what each profile
launches), `dynamo_venv` (the isolated Dynamo install), `smollm2` (the tiny model files),
`replay` (scripted mocker outputs), `metrics` (Prometheus scrape and parse), `procs` (process
groups and readiness), `state` (the state file), `containers` (GPU container specs).
"""
