"""Judge metrics: a judge model's session-level tool selection quality and action completion
per trial, written beside the trial (`contracts.judge`) and summarised in the report."""
