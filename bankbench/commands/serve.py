"""`bankbench serve`."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="(not built yet)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    raise SystemExit("bankbench serve: not built yet")
