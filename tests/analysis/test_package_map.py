"""analysis/__init__.py's package map names every module and subpackage of analysis/, so a
new module is placed in it (and in a layer) when it is added."""

from __future__ import annotations

import re
from pathlib import Path

import analysis

ROOT = Path(analysis.__file__).parent


def test_the_package_map_names_every_module():
    named = set(re.findall(r"`([a-z_]+)/?`", analysis.__doc__ or ""))
    modules = {p.stem for p in ROOT.glob("*.py") if p.stem != "__init__"}
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert (modules | packages) - named == set()
