"""`bankbench agent-server`: the banking agent behind HTTP, for NeMo Evaluator's online agent
evaluation (`generic` and `nemo_agent_toolkit` formats). See docs/agent-server.md.

Modules: `models` (request/response and config shapes), `bankenv` (a task's mock bank in a
private folder, reached through `exec` like a Harbor environment), `episode` (one request = one
agent episode, its records and its tool-call events), `app` (the FastAPI routes, the
concurrency limit and the streaming protocol).
"""
