"""`c<level>/host_load.json`: how busy the client host was while a level ran.

Written by the sweep (bankbench/hostload.py) when the level ends; read by analysis, which warns
when the host was saturated: a latency measured while other work held the cores is the
machine's, not the server's. Shares are of all the host's cores over the level (1.0 = every
core busy the whole time).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

HOST_LOAD_FILE = "host_load.json"
# At or above this share of all cores busy, the host is called saturated: requests queued for
# CPU as well as for the server.
SATURATED = 0.9


class HostLoad(BaseModel):
    cpus: int = Field(ge=1, description="Logical CPUs of the client host.")
    seconds: float = Field(ge=0, description="Wall time sampled.")
    samples: int = Field(ge=0, description="Samples taken (one a second).")
    cpu_busy: float = Field(ge=0, description="Share of all cores busy over the level, from "
                            "the host's own CPU counters (everything that ran).")
    cpu_busy_p95: float | None = Field(None, description="95th percentile of the per-sample "
                                       "busy share.")
    load1_max: float | None = Field(None, description="Highest 1-minute load average seen.")
    client_cpu: float = Field(ge=0, description="Share used by this sweep's own processes "
                              "(harness, agents, task sandboxes).")
    server_cpu: float | None = Field(None, description="Share used by the server processes of "
                                     "a stack the sweep started; None for a server it did not "
                                     "start (it may run elsewhere).")
    other_cpu: float = Field(ge=0, description="The rest of cpu_busy: other work on the host.")

    @property
    def saturated(self) -> bool:
        return self.cpu_busy >= SATURATED
