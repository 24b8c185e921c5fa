"""sweep.json and the sweep's other pydantic files: read with one-line errors, written
atomically, checked before a resume, and pointed at a server that came back elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from bankbench.sweep import harbor_job
from bankbench.sweep.errors import SweepError
from bankbench.sweep.server_checks import check_server_or_fail
from contracts.atomic import write_atomic
from contracts.sweep import SWEEP_FILE, SweepConfig, SweepManifest

if TYPE_CHECKING:
    from agents.options import BankingAgentOptions


def load_model[M: BaseModel](path: Path, model: type[M], what: str) -> M:
    """A pydantic JSON file the sweep wrote; SweepError naming the file when missing/corrupt."""
    try:
        return model.model_validate_json(path.read_text())
    except FileNotFoundError:
        raise SweepError(f"{path} not found: is {path.parent} a {what}?") from None
    except ValueError as exc:
        raise SweepError(f"{path} is corrupt ({exc.__class__.__name__}); cannot resume") from exc


def save_model(path: Path, data: BaseModel) -> None:
    write_atomic(path, data.model_dump_json(indent=2))


def load_manifest(sweep_dir: Path) -> SweepManifest:
    return load_model(sweep_dir / SWEEP_FILE, SweepManifest, "sweep directory")


def save_manifest(sweep_dir: Path, manifest: SweepManifest) -> None:
    save_model(sweep_dir / SWEEP_FILE, manifest)


def check_resumable(config: SweepConfig, sweep_dir: Path) -> SweepManifest:
    """The manifest of the sweep to continue; SweepError when the configuration changed. The
    one option that may change is --base-url: the same server back at another address."""
    manifest = load_manifest(sweep_dir)
    earlier = manifest.config
    same_url = config.model_copy(update={"base_url": earlier.base_url})
    if earlier.fingerprint() != same_url.fingerprint():
        diff = "; ".join(config.differences(earlier))
        raise SweepError(
            f"refusing to resume {sweep_dir}: the configuration changed ({diff}). "
            "Start a new sweep, or resume with the original options."
        )
    return manifest


def move_to_new_url(config: SweepConfig, agent: BankingAgentOptions, sweep_dir: Path,
                    manifest: SweepManifest) -> SweepManifest:
    """`--resume DIR --base-url NEW`: the server came back elsewhere (`serve up` picks a new
    port). Harbor's resume replays each level's job config and refuses one whose trials differ,
    so the agent's base_url is rewritten in every level's job and trial config; the URLs used
    before are kept in sweep.json (`earlier_base_urls`)."""
    old, new = manifest.config.base_url, config.base_url
    if not old or not new or old == new:
        return manifest
    check_server_or_fail(agent, new, str(config.model))
    manifest.config = config
    manifest.fingerprint = config.fingerprint()
    point_jobs_at(sweep_dir, manifest, old, new)
    return manifest


def point_jobs_at(sweep_dir: Path, manifest: SweepManifest, old: str, new: str) -> None:
    """Every level job of the sweep talks to `new` from now on; `old` is kept in sweep.json."""
    for record in manifest.level_records:
        harbor_job.rewrite_base_url(sweep_dir / record.job_dir, old, new)
    manifest.earlier_base_urls.append(old)
    manifest.base_url = new
    save_manifest(sweep_dir, manifest)
    print(f"resuming against {new} (was {old}); recorded in {SWEEP_FILE}", flush=True)
