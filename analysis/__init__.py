"""From Harbor job directories (one job, or a sweep of one job per concurrency level) to tidy
tables, metrics, plots and reports.

- `files`: read one saved file each (pydantic models at the file boundary), tolerant of
  partial writes; every problem becomes an `Issue`, never an exception that loses other trials.
- `tables`: the one place that flattens those files into DataFrames (`load(path) -> Tables`).
- `status`: trial status classes (scored / agent_failed / infra_failed / harness_failed /
  interrupted / running).
- `metrics/`: one definition per metric with its unit and direction; `summary` applies them.
- `provenance`: what each level's TSQ was measured against (dataset, labels, mode, the
  gold-perfect agent's figures).
- `compare`: runs side by side, quality paired by scenario with an interval and a verdict.
- `turns`: conversation mode (latency by turn, per-conversation figures, quality by mode) and
  the calls of roles outside the system under test.
- `plots`: seaborn figures from DataFrames only.  `report`: report.md, CSV and JSON files.
- `progress`: a cheap running summary for a job that is still being written.

Nothing here imports the agent, the tasks adapter or the server code: analysis reads saved files.
"""
