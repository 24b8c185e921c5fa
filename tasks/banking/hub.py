"""Fetch one domain of galileo-ai/agent-leaderboard-v2 from the Hugging Face hub into a cache.

Only the domain's Parquet files of the three configs are downloaded. The snapshot folder that
huggingface_hub returns is named by the commit sha, which becomes the dataset revision recorded
in every task. A cached snapshot is reused offline (`local_files_only`).

The cache folder is the caller's: the CLI passes bankbench's own (`bankbench.paths.hub_cache`);
without one, huggingface_hub's default cache is used. tasks never imports bankbench.
"""

from __future__ import annotations

from pathlib import Path

from tasks.banking.raw import CONFIGS, DatasetError

REPO_ID = "galileo-ai/agent-leaderboard-v2"


def allow_patterns(domain: str) -> list[str]:
    return [f"{config}/{domain}-*.parquet" for config in CONFIGS]


def fetch_snapshot(
    domain: str,
    revision: str = "main",
    cache: Path | None = None,
    local_files_only: bool = False,
) -> tuple[Path, str]:
    """(snapshot folder in the hub layout, resolved commit sha); `cache` None: the hub's own."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        HfHubHTTPError,
        IncompleteSnapshotError,
        LocalEntryNotFoundError,
    )

    try:
        folder = snapshot_download(
            REPO_ID,
            repo_type="dataset",
            revision=revision,
            cache_dir=str(cache) if cache is not None else None,
            allow_patterns=allow_patterns(domain),
            local_files_only=local_files_only,
        )
    except LocalEntryNotFoundError as exc:
        raise DatasetError(
            f"--source hf: {REPO_ID}@{revision} is not cached and the hub cannot be reached "
            f"({type(exc).__name__}); use --source DIR with a local copy or --source sample"
        ) from None
    except (HfHubHTTPError, IncompleteSnapshotError, OSError) as exc:
        raise DatasetError(f"--source hf: {REPO_ID}@{revision}: {exc}") from None
    path = Path(folder)
    return path, path.name
