"""The DRBD lab's parameters: the pair, the delays and protocols to sweep, how long to measure."""

from __future__ import annotations

from dataclasses import dataclass

from labs.drbd.model import PROTOCOLS
from labs.errors import UsageError
from labs.lab import LabParameters, option

PING_COUNT = 20  # pings per round-trip measurement, 0.2 s apart
PGBENCH_CLIENTS = 10  # the article's -c 10
LINK_PROBE_PORT = 7790  # DRBD's own connection uses 7789
ADDED_RTT_MS_MAX = 200.0  # a round trip longer than this is no zone or region pair
# What the lab runs: everything, or the sweep the chapter leads with (the disks alone, the
# link, and fio on DRBD at every round trip; no pgbench and no failover drill).
PARTS = ("all", "sweep")


def is_vm_name(name: str) -> bool:
    return name.startswith("vm") and name[2:].isdigit()


@dataclass
class Parameters(LabParameters):
    LAB = "drbd"
    PROFILES = {
        # The ci profile adds a little jitter and loss, so that CI drives netem with both.
        # It also starts with the delayed point, where a kill test finds both DRBD and netem.
        "ci": {"protocols": ("A", "C"), "added_rtt_ms": (6.0, 0.0), "jitter_ms": 0.5,
               "loss_pct": 0.1, "link_probe_mib": 32, "fio_s": 2,
               "throughput_s": 1, "pgbench_s": 5, "drill_s": 4, "drill_protocols": ("C",)},
        # The quick profile is the part the chapter leads with, within 5 minutes with the
        # pair's start: two round trips (the link's own, and +10 ms, where the delay
        # outweighs everything else in a write). `--quick --part all` adds pgbench and both
        # drills.
        "quick": {"added_rtt_ms": (0.0, 10.0), "fio_s": 3, "throughput_s": 1,
                  "pgbench_s": 8, "link_probe_mib": 64, "drill_s": 5, "part": "sweep"},
        "full": {},
    }

    host: str = option("vm1", "the primary: a lab VM of a pair started with "
                              "`python -m labs vm up --pair` (vm1), or an SSH host of the "
                              "inventory")
    peer: str = option("vm2", "the secondary: the other VM of the pair (vm2), or another "
                              "SSH host of the inventory (two machines, e.g. in two zones)")
    protocols: tuple[str, ...] = option(PROTOCOLS, "DRBD protocols to measure at each round "
                                        "trip", choices=PROTOCOLS)
    added_rtt_ms: tuple[float, ...] = option(
        (0.0, 2.0, 5.0, 10.0, 20.0), "round trip added to the link with netem, ms (half on "
        "each VM's side); the run reports the round trip it measured", minimum=0.0,
        maximum=ADDED_RTT_MS_MAX)
    jitter_ms: float = option(0.0, "jitter of each side's delay at every added round trip, "
                              "ms (netem; packets may then arrive out of order)", minimum=0.0,
                              maximum=50.0)
    loss_pct: float = option(0.0, "percent of packets each side drops at every added round "
                             "trip (netem; TCP sends them again)", minimum=0.0, maximum=10.0)
    link_probe_mib: int = option(128, "MiB sent over one TCP connection to measure the link's "
                                 "bandwidth at each round trip", minimum=8, maximum=1024)
    fio_s: int = option(8, "seconds of each fio latency measurement (after a 2 s warm-up)",
                        minimum=2, maximum=120)
    throughput_s: int = option(5, "seconds of each job of the article's throughput job file "
                               "(1 MiB sequential, 1 MiB, 512 KiB and 4 KiB random writes, "
                               "queue depth 1)", minimum=1, maximum=120)
    pgbench_s: int = option(30, "seconds of each pgbench run (10 clients, the article's shape)",
                            minimum=3, maximum=600)
    drill_protocols: tuple[str, ...] = option(("C", "A"), "protocols of the failover drill "
                                              "(A runs at the largest added round trip)",
                                              choices=PROTOCOLS)
    drill_s: int = option(10, "seconds the drill's writer runs before the primary's power "
                              "is cut", minimum=2, maximum=120)
    # The three below put the lab in the article's regime (its scale 1, and commits that wait
    # on a disk rather than on an emulated processor); the book's run uses these defaults.
    pgbench_scale: int = option(1, "pgbench's scale factor: 1 (the article's) makes all 10 "
                                "clients update one branch row, so their commits go one at a "
                                "time; 10 or more gives each client a row of its own",
                                minimum=1, maximum=1000)
    flush_delay_ms: int = option(5, "ms each disk's flush is asked to wait (dm-delay under "
                                 "DRBD on both sides; reads and writes are not delayed): a "
                                 "commit then waits on its disk, not on an emulated processor "
                                 "(0 on machines whose flushes already cost time)",
                                 minimum=0, maximum=1000)
    article_zones: bool = option(True, "also run pgbench at the article's two zones on this "
                                 "run's time scale: under C within one zone and across two, "
                                 "and under the other protocols across two (with --part "
                                 "all; needs --pgbench-scale 1 and 0 among --added-rtt-ms)")
    seed: int = option(9, "seed of fio's random offsets", minimum=1, maximum=2**31 - 1)
    part: str = option("all", "which part of the lab to run: all, or sweep (the disks alone, "
                              "the link and fio on DRBD at every round trip; no pgbench and "
                              "no failover drill)", choices=PARTS)

    def check(self) -> None:
        for flag, name in (("--host", self.host), ("--peer", self.peer)):
            if name == "local":
                raise UsageError(f"{flag} local: the DRBD lab runs on a lab VM pair "
                                 "(`python -m labs vm up --pair`, then --host vm1 --peer vm2) "
                                 "or on two SSH hosts of the inventory, never on this machine")
        if self.host == self.peer:
            raise UsageError(f"--peer {self.peer}: the peer must be another host than --host")
        if is_vm_name(self.host) != is_vm_name(self.peer):
            raise UsageError(f"--host {self.host} --peer {self.peer}: both lab VMs of a pair or "
                             "both SSH hosts (a lab VM's link reaches only its pair)")
        for flag, values in (("--protocols", self.protocols), ("--added-rtt-ms", self.added_rtt_ms),
                             ("--drill-protocols", self.drill_protocols)):
            if len(set(values)) != len(values):
                raise UsageError(f"{flag}: each value once")
        if not self.protocols:
            raise UsageError("--protocols: give at least one of A, B, C")
        if not self.added_rtt_ms:
            raise UsageError("--added-rtt-ms: give at least one round trip, e.g. 0,5")
        if 1 < self.pgbench_scale < PGBENCH_CLIENTS:
            raise UsageError(f"--pgbench-scale {self.pgbench_scale}: use 1 (every client on "
                             f"one branch row, the article's) or at least {PGBENCH_CLIENTS} "
                             "(a row per client)")
        if self.article_zones and self.part == "all" and (
                0.0 not in self.added_rtt_ms or self.pgbench_scale != 1):
            raise UsageError("--article-zones: needs --pgbench-scale 1 (commits one at a time, "
                             "as in the article) and 0 among --added-rtt-ms (the zones start "
                             "from pgbench at the link's own round trip); or give "
                             "--no-article-zones")
        delayed = [a for a in self.added_rtt_ms if a > 0]
        if self.jitter_ms and delayed and self.jitter_ms > min(delayed) / 2:
            raise UsageError(f"--jitter-ms {self.jitter_ms:g}: at most each side's delay, half "
                             f"the smallest added round trip ({min(delayed) / 2:g} ms)")
