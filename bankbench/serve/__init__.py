"""Launching, health-checking and stopping LLM server stacks (`bankbench serve`).

- `api`: the public entry points (up, down, status, load_state, running).
- `options`: per-profile options of the CPU profiles; `gpu_profiles`: the YAML GPU profiles.
- `cpu_mocker`, `cpu_tiny`: what each CPU profile launches; `local_stack`: loopback Dynamo
  environment, process launch and readiness shared by both.
- `containers`: GPU profile → container specs (pure); `gpu`: running them with the docker SDK.
- `external`: record an existing OpenAI-compatible URL.
- `state`: the state file; `procs`: process groups, ports, log tails; `errors`: ServeError.
- `dynamo_venv`: the isolated ai-dynamo install; `smollm2`: the tiny model's files;
  `replay`: scripted mocker outputs; `metrics`: Prometheus scrape and parse.
"""
