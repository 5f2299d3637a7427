"""The power-loss lab's parameters: which engines and settings, how long to write, how often."""

from __future__ import annotations

from dataclasses import dataclass

from labs.errors import UsageError
from labs.lab import LabParameters, option

# engine -> (setting, value) pairs, each with what the book calls it
SETTINGS = {
    "postgres": (("synchronous_commit", "on", "safe"), ("synchronous_commit", "off", "unsafe")),
    "mariadb": (("innodb_flush_log_at_trx_commit", "1", "safe"),
                ("innodb_flush_log_at_trx_commit", "0", "unsafe")),
}


@dataclass
class Parameters(LabParameters):
    LAB = "power-loss"
    PROFILES = {
        "ci": {"cuts": 1, "write_s": 12},
        "quick": {"cuts": 1, "write_s": 20},
        "full": {},
    }

    host: str = option("vm1", "a lab VM (its power is cut): vm1 or vm2")
    seed: int = option(3, "seed of the moment of each power cut within the writing window",
                       minimum=0, maximum=2**31 - 1)
    engines: tuple[str, ...] = option(("postgres", "mariadb"), "engines, comma-separated",
                                      choices=tuple(SETTINGS))
    cuts: int = option(3, "power cuts (each one: every engine and setting at once)",
                       minimum=1, maximum=20)
    write_s: int = option(30, "seconds of writing before the cut (the cut lands in the last "
                               "third of it, chosen by the seed)", minimum=5, maximum=600)
    data_disk: str | None = option(None, "the VM disk the data lives on (default: the VM's "
                                         "first lab disk)")

    def check(self) -> None:
        if not (self.host.startswith("vm") and self.host[2:].isdigit()):
            raise UsageError(f"--host {self.host}: the power-loss lab cuts a lab VM's power; "
                             "use vm1 (start it with `python -m labs vm up`)")
        if len(set(self.engines)) != len(self.engines):
            raise UsageError("--engines: each engine once")
