"""Sources: a directory in the hub layout, the hub's own cache layout (offline), the sample."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.banking import sample
from tasks.banking.build import build_tasks
from tasks.banking.dataset import DatasetError, load, read_layout, read_source
from tasks.banking.hub import REPO_ID, allow_patterns, fetch_snapshot
from tests.support.taskdata import sample_rows, write_hub_layout

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_hub_layout_directory_loads_like_the_sample(tmp_path):
    root = write_hub_layout(tmp_path / "copy", sample_rows())
    from_dir = load(str(root))
    from_sample = load("sample")
    assert from_dir.revision.startswith("dir:") and len(from_dir.revision) == len("dir:") + 16
    assert from_sample.revision == f"sample-{sample.SAMPLE_VERSION}"
    assert [t.model_dump() for t in from_dir.tools] == [t.model_dump() for t in from_sample.tools]
    assert [s.model_dump() for s in from_dir.scenarios] == [
        s.model_dump() for s in from_sample.scenarios
    ]


def test_dir_revision_follows_content_not_location(tmp_path):
    a = write_hub_layout(tmp_path / "a", sample_rows())
    b = tmp_path / "b"
    shutil.copytree(a, b)
    assert read_layout(a, "banking").revision == read_layout(b, "banking").revision
    rows = sample_rows()
    rows["adaptive_tool_use"][0]["first_message"] = "Something else entirely."
    write_hub_layout(b, rows)
    assert read_layout(a, "banking").revision != read_layout(b, "banking").revision


def test_split_files_are_read_in_name_order(tmp_path):
    rows = sample_rows()
    root = write_hub_layout(tmp_path / "d", rows)
    scenarios = root / "adaptive_tool_use"
    (scenarios / "banking-00000-of-00001.parquet").unlink()
    half = len(rows["adaptive_tool_use"]) // 2
    for n, part in enumerate((rows["adaptive_tool_use"][:half], rows["adaptive_tool_use"][half:])):
        pq.write_table(pa.Table.from_pylist(part), scenarios / f"banking-0000{n}-of-00002.parquet")
    # Another domain's file in the same folder is not read.
    pq.write_table(
        pa.Table.from_pylist(rows["adaptive_tool_use"][:1]), scenarios / "telecom-00000.parquet"
    )
    dataset = load(str(root))
    assert [s.row.first_message for s in dataset.scenarios] == [
        r["first_message"] for r in rows["adaptive_tool_use"]
    ]


def test_jsonl_layout_is_accepted(tmp_path):
    for config, rows in sample_rows().items():
        (tmp_path / config).mkdir()
        lines = "".join(json.dumps(r) + "\n" for r in rows)
        (tmp_path / config / "banking-edited.jsonl").write_text(lines)
    assert len(load(str(tmp_path)).scenarios) == 14


def test_missing_config_names_what_is_expected(tmp_path):
    root = write_hub_layout(tmp_path / "d", sample_rows())
    shutil.rmtree(root / "personas")
    with pytest.raises(DatasetError, match=r"no personas/banking-\*\.parquet"):
        load(str(root))


def test_unreadable_parquet_is_named(tmp_path):
    root = write_hub_layout(tmp_path / "d", sample_rows())
    (root / "tools" / "banking-00000-of-00001.parquet").write_bytes(b"not parquet")
    with pytest.raises(DatasetError, match="00001.parquet: not a readable Parquet"):
        load(str(root))


@pytest.mark.parametrize(
    ("source", "domain", "words"),
    [
        ("/no/such/dir", "banking", "no such directory"),
        ("sample", "telecom", "banking domain only"),
        ("sample", "retail", "--domain 'retail'"),
    ],
)
def test_bad_source_or_domain(source, domain, words):
    with pytest.raises(DatasetError, match=words):
        read_source(source, domain)


def _hub_cache(cache: Path, rows: dict[str, list[dict]]) -> Path:
    """What huggingface_hub leaves in its cache after downloading the banking files at SHA."""
    repo = cache / ("datasets--" + REPO_ID.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(SHA)
    write_hub_layout(repo / "snapshots" / SHA, rows)
    return cache


def test_hub_snapshot_is_read_through_huggingface_hub(tmp_path):
    cache = _hub_cache(tmp_path / "hf", sample_rows())
    folder, sha = fetch_snapshot("banking", cache=cache, local_files_only=True)
    assert sha == SHA
    raw = read_layout(folder, "banking", revision=sha)
    assert raw.revision == SHA and len(raw.scenarios) == 14


def test_a_pinned_commit_is_found_without_refs(tmp_path):
    cache = _hub_cache(tmp_path / "hf", sample_rows())
    (cache / ("datasets--" + REPO_ID.replace("/", "--")) / "refs" / "main").unlink()
    folder, sha = fetch_snapshot("banking", revision=SHA, cache=cache, local_files_only=True)
    assert sha == SHA and folder.name == SHA
    with pytest.raises(DatasetError, match="@main is not cached"):
        fetch_snapshot("banking", cache=cache, local_files_only=True)


def test_build_from_cached_hub_records_the_commit(tmp_path, fake_template):
    cache = _hub_cache(tmp_path / "cache" / "hf", sample_rows())
    out = tmp_path / "out"
    summary = build_tasks(
        "hf", out, offline=True, limit=2, hub_cache=cache, labels="intent",
        template_dir=fake_template, log=lambda _: None,
    )
    assert summary.dataset_revision == SHA
    expected = json.loads((out / "banking-001/tests/expected.json").read_text())
    assert expected["provenance"]["dataset_revision"] == SHA
    assert f'dataset_revision = "{SHA}"' in (out / "banking-001/task.toml").read_text()


def test_uncached_hub_offline_gives_a_clear_error(tmp_path):
    with pytest.raises(DatasetError, match="not cached and the hub cannot be reached"):
        fetch_snapshot("banking", cache=tmp_path / "empty", local_files_only=True)


def test_only_the_domain_files_are_requested():
    assert allow_patterns("banking") == [
        "tools/banking-*.parquet",
        "personas/banking-*.parquet",
        "adaptive_tool_use/banking-*.parquet",
    ]
