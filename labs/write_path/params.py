"""The write-path lab's parameters: which ways of writing, how long, how many cuts."""

from __future__ import annotations

from dataclasses import dataclass

from labs.errors import UsageError
from labs.lab import LabParameters, option
from labs.write_path.model import WAYS


@dataclass
class Parameters(LabParameters):
    LAB = "write-path"
    PROFILES = {
        "ci": {"cuts": 1, "write_s": 3.0},
        "quick": {"cuts": 1, "write_s": 10.0},
        "full": {},
    }

    host: str = option("vm1", "a lab VM: vm1 or vm2 (the lab uses its two lab disks)")
    ways: tuple[str, ...] = option(tuple(WAYS), "ways of writing, comma-separated",
                                   choices=tuple(WAYS))
    cuts: int = option(5, "cuts per way of writing (each on a new file system)",
                       minimum=1, maximum=20)
    write_s: float = option(12.0, "seconds of writing before each cut; above ext4's 5 s "
                                  "journal commit, an O_DIRECT record can be covered by "
                                  "the commit's flush", minimum=2.0, maximum=120.0)
    rate: float = option(40.0, "records written per second (4 KiB each)", minimum=1.0,
                         maximum=500.0)

    def check(self) -> None:
        if not (self.host.startswith("vm") and self.host[2:].isdigit()):
            raise UsageError(f"--host {self.host}: the write-path lab takes over a lab VM's "
                             "two lab disks; use vm1 (start it with `python -m labs vm up`)")
        if len(set(self.ways)) != len(self.ways):
            raise UsageError("--ways: each way of writing once")
        if self.records_needed() > MAX_RECORDS:
            raise UsageError(f"--rate {self.rate:g} x --write-s {self.write_s:g}: more than "
                             f"{MAX_RECORDS} records; the lab's file system holds that many")

    def records_needed(self) -> int:
        """Records the file holds: the writing time and 5 s more, at the rate."""
        return int(self.rate * (self.write_s + 5)) + 1


MAX_RECORDS = 8192  # 32 MiB of records on the lab's 64 MiB file system
