"""Exports of bankbench jobs to other evaluators' formats.

`nemo.py` maps what the reading layer's `analysis.trial_inputs` read of one trial (the bank's
call record, the expected tools and goals, the conversation) onto NeMo Evaluator's agentic
JSONL rows; `writer.py` walks a job or a sweep and writes the files. Nothing here changes a
trial's files.
"""
