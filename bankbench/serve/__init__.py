"""Launching, health-checking and stopping LLM server stacks (`bankbench serve`).

Imports go one way (bottom first):
- `errors` (ServeError), `state` (the state file), `options` (CPU profile options),
  `base` (router modes, StartRequest, ComponentStatus, the StackProfile protocol);
- `local_stack` (loopback Dynamo env, launch, readiness; `LocalProfile`), `gpu_profiles` (the
  YAML GPU profiles), `containers` (GPU profile → container specs, pure), `model_fit` (context
  length from GPU memory), `gpu_plan` (ports, host folders, specs; the dry-run text),
  `doctor` (host checks for the GPU profiles);
- the profiles: `cpu_mocker`, `cpu_tiny`, `gpu` (containers via the docker SDK), `external`;
- `profiles` (the registry: name → profile object); `api` (up, down, status, load_state, running).
Helpers: `dynamo_venv` (the isolated ai-dynamo install), `smollm2` (the tiny model's files),
`llamacpp`, `replay` (scripted mocker outputs), `metrics` (Prometheus scrape and parse).
Processes are supervised by `bankbench.procs` (shared with the sweep).
"""
