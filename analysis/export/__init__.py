"""Exports of bankbench jobs to other evaluators' formats.

`trial_inputs.py` reads what one trial left behind (the bank's call record, the expected tools
and goals, the conversation); `nemo.py` maps that onto NeMo Evaluator's agentic JSONL rows;
`writer.py` walks a job or a sweep and writes the files. Nothing here changes a trial's files.
"""
