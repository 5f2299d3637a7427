"""The quorum lab's parameters: a layout, failure chances, and how many trials."""

from __future__ import annotations

from dataclasses import dataclass

from labs.lab import LabParameters, option
from labs.models import quorum as model

# Aurora's layout (Verbitski et al., SIGMOD 2017, section 2.1).
AURORA = {"nodes": 6, "write": 4, "read": 3, "azs": 3}


@dataclass
class Parameters(LabParameters):
    LAB = "quorum"
    PROFILES = {"quick": {"trials": 200_000}, "full": {}}

    seed: int = option(2017, "seed of the simulation's random numbers", minimum=0,
                       maximum=2**31 - 1)
    nodes: int = option(AURORA["nodes"], "copies of the data (N)", minimum=1, maximum=99)
    write: int = option(AURORA["write"], "write quorum W", minimum=1, maximum=99)
    read: int = option(AURORA["read"], "read quorum R", minimum=1, maximum=99)
    azs: int = option(AURORA["azs"], "availability zones Z (nodes placed round-robin)",
                      minimum=1, maximum=99)
    p_node: float = option(0.05, "chance a single node is down", minimum=0.0, maximum=1.0)
    p_az: float = option(0.01, "chance a whole zone is out", minimum=0.0, maximum=1.0)
    trials: int = option(2_000_000, "simulated worlds", minimum=1, maximum=10**9)

    def check(self) -> None:
        model.check_counts(self.nodes, self.write, self.read, self.azs)

    @property
    def config(self) -> str:
        return f"n{self.nodes}-w{self.write}-r{self.read}"

    @property
    def workload(self) -> str:
        return f"z{self.azs}-pnode{self.p_node:g}-paz{self.p_az:g}"
