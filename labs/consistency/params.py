"""The consistency lab's parameters and profiles."""

from __future__ import annotations

from dataclasses import dataclass

from labs.errors import UsageError
from labs.lab import LabParameters, option

NODES = 3  # the cluster's size and the keyspace's replication factor
OLD, NEW = 1, 2  # every row holds OLD on every replica; then some replicas miss NEW
# The stale-read rows: name -> (row key, write level, nodes down while NEW was written).
CASES = {"A": (1, "ONE", (3,)), "B": (2, "QUORUM", (3,)), "C": (3, "ONE", (2, 3))}


@dataclass
class Parameters(LabParameters):
    LAB = "consistency"
    PROFILES = {
        # The smallest run that still takes every step on the real cluster (the tests).
        "ci": {"reads_per_case": 4},
        "quick": {"reads_per_case": 12},
        "full": {},
    }

    seed: int = option(5, "seed of the order in which each case's reads are made",
                       minimum=0, maximum=2**31 - 1)
    reads_per_case: int = option(30, "reads at each consistency level of each stale-read case",
                                 minimum=1, maximum=1000)
    heap_mib: int = option(256, "Java heap of each Cassandra node", minimum=256, maximum=8192)
    memory_mib: int = option(768, "memory limit of each node's container (heap, off-heap "
                                  "and page cache)", minimum=512, maximum=32768)
    cassandra_image: str | None = option(None, "Cassandra image (default: the local build, "
                                               "`python -m labs images build cassandra`)")

    def check(self) -> None:
        if self.host != "local":
            raise UsageError(f"--host {self.host}: the consistency lab talks to its three "
                             "nodes over this machine's container network: run it with "
                             "--host local")
        if self.memory_mib < self.heap_mib + 256:
            raise UsageError(f"--memory-mib {self.memory_mib} leaves a {self.heap_mib} MiB "
                             "heap too little room: give at least the heap plus 256 MiB")
