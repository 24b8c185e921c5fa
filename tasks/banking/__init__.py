"""The banking adapter: Agent Leaderboard v2 scenarios -> Harbor task directories.

- rows.py       pydantic models of the dataset's tool, persona and scenario rows
- raw.py        what every source hands over (RawDataset, DatasetError, configs, domains)
- dataset.py    sources (hub, hub-layout directory, bundled sample), per-row validation
- hub.py        the huggingface_hub download into the cache (revision = commit sha)
- labels/       expected tools per goal: sentence (default), intent, semantic, match,
                keyword (reference heuristic), model (reviewable), file:PATH
- arguments.py  schema-valid arguments for the oracle's calls
- render.py     the text of every generated file
- writer.py     atomic, change-only writes of one task directory
- build.py      build_tasks(): validate, label, render, write; the build summary
- sample/       an original sample dataset in the published schema, with gold labels
- goldsets/     held-out gold labels for measuring labellers (never tuned on)
- template/     the mock bank and the verifier copied into every task (stdlib only)
"""
