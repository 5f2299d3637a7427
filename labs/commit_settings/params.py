"""The commit-settings lab's parameters: which settings, how long to commit, how many cuts."""

from __future__ import annotations

from dataclasses import dataclass

from labs.commit_settings.model import SETTINGS
from labs.errors import UsageError
from labs.lab import LabParameters, option


@dataclass
class Parameters(LabParameters):
    LAB = "commit-settings"
    PROFILES = {
        # One safe setting and the one that survives a process crash but not a power cut.
        "ci": {"cuts": 1, "write_s": 3.0, "settings": ("pg-sync-on", "innodb-2")},
        "quick": {"cuts": 1, "write_s": 5.0},
        "full": {},
    }

    host: str = option("vm1", "a lab VM: vm1 or vm2 (the lab uses its two lab disks)")
    settings: tuple[str, ...] = option(tuple(SETTINGS), "commit settings, comma-separated",
                                       choices=tuple(SETTINGS))
    cuts: int = option(5, "cuts per setting (each on a new file system and database)",
                       minimum=1, maximum=20)
    write_s: float = option(8.0, "seconds the lab lets the client commit, from the first "
                                 "commit it saw, before each cut", minimum=2.0, maximum=60.0)

    def check(self) -> None:
        if not (self.host.startswith("vm") and self.host[2:].isdigit()):
            raise UsageError(f"--host {self.host}: the commit-settings lab takes over a lab "
                             "VM's two lab disks; use vm1 (start it with `python -m labs vm up`)")
        if len(set(self.settings)) != len(self.settings):
            raise UsageError("--settings: each setting once")
