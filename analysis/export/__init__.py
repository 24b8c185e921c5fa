"""Exports of bankbench jobs to other tools' formats.

`nemo.py` maps what the reading layer's `analysis.trial_inputs` read of one trial (the bank's
call record, the expected tools and goals, the conversation) onto NeMo Evaluator's agentic
JSONL rows, and `writer.py` writes them; `nel.py` writes per-problem results that `nel compare`
reads; `aiperf.py` writes the LLM requests as AIPerf's profile export. `layout.py` is what they
share: the arms and levels of a run, atomic writes, `export.json`. Nothing here changes a
trial's files.
"""
