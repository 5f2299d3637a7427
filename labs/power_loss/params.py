"""The power-loss lab's parameters: which engines and settings, how long to write, how often."""

from __future__ import annotations

from dataclasses import dataclass

from labs.errors import UsageError
from labs.lab import LabParameters, option

# The torn-page legs (labs/power_loss/torn.py), on a disk that writes each page in pieces:
# PostgreSQL with full_page_writes on and off, InnoDB with its doublewrite buffer on and off.
TORN_SETTINGS = {
    "postgres": (("full_page_writes", "on", "safe"), ("full_page_writes", "off", "unsafe")),
    "mariadb": (("innodb_doublewrite", "ON", "safe"), ("innodb_doublewrite", "OFF", "unsafe")),
}
# The torn-page legs' table: one row per 8 KiB PostgreSQL page (16 MiB), two per 16 KiB
# InnoDB page (16 MiB).
TORN_ROWS = 2000

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
        # The part the chapter leads with, within 5 minutes: what a cut takes with each
        # setting. `--quick --tear-delay-ms 1000` adds the four torn-page servers.
        "quick": {"cuts": 1, "write_s": 20, "tear_delay_ms": 0},
        "full": {},
    }

    host: str = option("vm1", "a lab VM (its power is cut): vm1 or vm2")
    seed: int = option(3, "seed of the moment of each power cut within the writing window",
                       minimum=0, maximum=2**31 - 1)
    engines: tuple[str, ...] = option(("postgres", "mariadb"), "engines, comma-separated",
                                      choices=tuple(SETTINGS))
    tear_delay_ms: int = option(1000, "how long the second lab disk holds each write in the "
                                      "VM's memory, under the torn-page legs (PostgreSQL "
                                      "full_page_writes and InnoDB's doublewrite buffer, on "
                                      "and off); 0 leaves those legs out",
                                minimum=0, maximum=5000)
    cuts: int = option(3, "power cuts (each one: every engine and setting at once)",
                       minimum=1, maximum=20)
    write_s: int = option(30, "seconds of writing before the cut (the cut lands in the last "
                               "third of it, chosen by the seed)", minimum=5, maximum=600)
    data_disk: str | None = option(None, "the VM disk the data lives on (default: the VM's "
                                         "first lab disk; the torn-page legs also use the "
                                         "other one)")

    def check(self) -> None:
        if not (self.host.startswith("vm") and self.host[2:].isdigit()):
            raise UsageError(f"--host {self.host}: the power-loss lab cuts a lab VM's power; "
                             "use vm1 (start it with `python -m labs vm up`)")
        if len(set(self.engines)) != len(self.engines):
            raise UsageError("--engines: each engine once")
