"""The registry of server profiles: name → the object that checks, starts, stops and watches it.

A new profile (or a stack with its own router) is one module implementing
`bankbench.serve.base.StackProfile` and one line below.
"""

from __future__ import annotations

import difflib

from bankbench.serve import cpu_mocker, cpu_tiny
from bankbench.serve.base import StackProfile
from bankbench.serve.errors import ServeError
from bankbench.serve.external import ExternalProfile
from bankbench.serve.gpu import GpuStack

REGISTRY: dict[str, StackProfile] = {
    p.name: p
    for p in (
        cpu_mocker.PROFILE,
        cpu_tiny.PROFILE,
        GpuStack("gpu-sglang", "Dynamo + SGLang workers in NGC containers (Docker + GPUs)"),
        GpuStack("gpu-vllm", "Dynamo + vLLM workers in NGC containers (Docker + GPUs)"),
        GpuStack("gpu-sglang-disagg",
                 "Dynamo + SGLang prefill/decode workers on separate GPUs (Docker + GPUs)"),
        ExternalProfile(),
    )
}


def get(name: str) -> StackProfile:
    """The profile called `name`; ServeError lists the known ones otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(REGISTRY), n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ServeError(f"unknown profile {name!r} ({hint}known: {', '.join(REGISTRY)})"
                         ) from None
