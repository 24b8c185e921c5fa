"""What LocalEnvironment takes from a task's environment/Dockerfile (it never builds it)."""

from __future__ import annotations

import json
import re
from pathlib import Path


def _lines(environment_dir: Path, instruction: str) -> list[str]:
    dockerfile = environment_dir / "Dockerfile"
    if not dockerfile.is_file():
        return []
    pattern = rf"^\s*{instruction}\s+(.*?)\s*$"
    return re.findall(pattern, dockerfile.read_text(errors="replace"), re.M)


def dockerfile_workdir(environment_dir: Path) -> str | None:
    """The last absolute WORKDIR, so commands start where Docker's do."""
    found = [value for value in _lines(environment_dir, "WORKDIR")
             if re.fullmatch(r"/\S*", value)]
    return found[-1] if found else None


def dockerfile_entrypoint(environment_dir: Path) -> list[str] | None:
    """The last exec-form (JSON) ENTRYPOINT, if any."""
    found = [value for value in _lines(environment_dir, "ENTRYPOINT")
             if value.startswith("[") and value.endswith("]")]
    if not found:
        return None
    try:
        words = json.loads(found[-1])
    except ValueError:
        return None
    return words if isinstance(words, list) and all(isinstance(w, str) for w in words) else None
