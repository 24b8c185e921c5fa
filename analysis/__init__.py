"""From Harbor job directories (one job, or a sweep of one job per concurrency level) to tidy
tables, metrics, plots and reports. Nothing here imports the agent, the tasks adapter or the
server code: analysis reads saved files. The modules, by layer (lowest first; RULES.md and
tests/test_import_direction.py hold the direction):

Rules and shapes
- `files`: read one saved file each (pydantic models at the file boundary), tolerant of
  partial writes; every problem becomes an `Issue`, never an exception that loses other trials.
- `status`: a trial's status facts read once and the one rule that classes them (scored /
  agent_failed / infra_failed / harness_failed / interrupted / running).
- `task_folder`: the task folder a trial ran, found once, and what its files say it measured.
- `metrics/`: one definition per metric with its unit and direction (`metrics.ALL`).
- `windows`: a level's measured window (warm-up and drain left out) and whether it certifies.
- `decision_noise`: decisions as distributions: the statistic behind the consistency table
  and the capacity search's decision check.
- `router_decisions`: which worker served each LLM call, from the router's decision log.
- `markdown`: small Markdown helpers.  `plots`: seaborn figures from DataFrames only.
- `job_paths`: where Harbor keeps a job's files (`JobPaths`, as Harbor's `Job` names them)
  and which folders are its trials; a trial's files are Harbor's own `TrialPaths`.
- `synthetic`: Harbor job and sweep folders with made-up content, written through Harbor's
  models and paths.

Reading (each trial read once)
- `trial_rows`: trial folders → plain rows, several processes at once (the requests
  table's columns declared once in `request_columns`, a rules-layer table).
- `tables`: those rows as DataFrames (`load(path) -> Tables`): the one flattening.
- `trial_inputs`: one finished trial's bank calls, expected tools and goals (`TrialInputs`).
- `trajectory`: what the agent said and saw, from its ATIF trajectory.
- `progress`: a cheap running summary of a job still being written (sweep polling).

Post-passes (each takes the reading layer's output; none imports another)
- `provenance`: what each level's TSQ was measured against (dataset, labels, mode, the
  gold-perfect agent's figures).
- `compare`: runs side by side, quality paired by scenario with an interval and a verdict.
- `consistency`: does the agent make the same calls under load as at the reference.
- `integrity`: at which load tool calls start breaking, and how.
- `turns`: conversation mode (latency by turn, per-conversation figures, quality by mode).
- `request_trace`: the server's view of each level from Dynamo's request trace.
- `shards`: achieved vs configured concurrency per level and shard.
- `judge/`: a judge model's verdict per trial, and its figures per level.
- `export/`: NeMo Evaluator, `nel` and AIPerf shapes of a job or sweep.

Report (composes the post-passes)
- `summary`: one row per (source, level): status counts, every metric, provenance.
- `report`: `write_report`: report.md, plots and data files; its sections in
  `report_sections`, `quality_report`, `consistency_report`, `integrity_report` and
  `validity` (was the run what it claims to measure).
- `console`: the terminal's glance, read back from `summary.csv`.
- `notebook_input`: what a notebook in analysis/notebooks/ reads.
"""
