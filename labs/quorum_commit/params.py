"""The quorum-commit lab's parameters: the layout of six copies over zones, the delays
between zones, and how long each measurement lasts."""

from __future__ import annotations

from dataclasses import dataclass

from labs.errors import UsageError
from labs.lab import LabParameters, option

COPIES = 6  # a primary and five standbys, as Aurora keeps six copies
STANDBYS = COPIES - 1
# Layouts of the sweep: every zone but the primary's at the cross-zone delay ("even"), or
# zone 2 slow ("slow-zone"; with three zones, standbys s2 and s3).
LAYOUTS = ("even", "slow-zone")
# What the lab runs: everything (the sweep, the drill, the power cuts), the sweep and the
# drill without a power cut, or the power cuts alone (the copies, their round trips and a
# flush first, as the model needs them).
PARTS = ("all", "sweep", "power-cut")
# synchronous_commit under the power cuts, from the one that risks most to the safe one.
CUT_SETTINGS = ("off", "local", "remote_write", "on")


@dataclass
class Parameters(LabParameters):
    LAB = "quorum-commit"
    PROFILES = {
        # The smallest run that still takes every step on the real system (the tests). Its
        # slow zone is far slower than anything a busy emulated machine adds to a commit (a
        # loaded CI machine once added 190 ms to every commit of a 2 s point), so the fastest
        # commit of each point tells whether it waited for it.
        # One power cut, under the setting the chapter calls safe: each cut costs a boot and
        # a recovery of six servers, minutes on a busy emulated machine.
        "ci": {"point_s": 2, "phase_s": 3, "pings": 5, "ks": (1, 3, 5),
               "slow_zone_ms": 500.0, "cut_settings": ("on",)},
        # The part the chapter leads with; `--quick --part power-cut` for the power cuts.
        "quick": {"point_s": 3, "phase_s": 5, "pings": 10, "part": "sweep"},
        "full": {},
    }

    host: str = option("vm1", "a lab VM (the six copies and their delays live inside it)")
    zones: int = option(3, "zones the six copies are spread over, two per zone with three "
                           "(must divide 6; the primary is in zone 1)", minimum=2, maximum=6)
    quorum: int = option(3, "k of `ANY k` in the zone-loss drill: a commit waits for k "
                            "standbys (k = 3 keeps 4 of 6 copies)", minimum=1, maximum=STANDBYS)
    in_zone_ms: float = option(2.0, "added round trip to the standby in the primary's zone",
                               minimum=0.0, maximum=50.0)
    cross_zone_ms: float = option(20.0, "added round trip to a standby in another zone",
                                  minimum=1.0, maximum=500.0)
    slow_zone_ms: float = option(60.0, "added round trip to the slow zone's standbys",
                                 minimum=1.0, maximum=2000.0)
    ks: tuple[int, ...] = option((1, 2, 3, 4, 5), "the k of each `ANY k` point of the "
                                 "sweep, comma-separated", minimum=1, maximum=STANDBYS)
    clients: int = option(4, "clients of the multi-client points", minimum=2, maximum=32)
    point_s: int = option(8, "seconds of commits at each point of the sweep", minimum=1,
                          maximum=600)
    phase_s: int = option(10, "seconds of each phase of the zone-loss drill", minimum=2,
                          maximum=600)
    pings: int = option(20, "pings to each standby to measure its round trip", minimum=3,
                        maximum=1000)
    data_disk: str | None = option(None, "the VM disk the six data folders live on "
                                         "(default: the VM's first lab disk)")
    part: str = option("all", "which part of the lab to run: all, sweep (the sweep and the "
                              "zone-loss drill, no power cut), or power-cut (only the power "
                              "cuts, after the copies, their round trips and a flush)",
                       choices=PARTS)
    cut_settings: tuple[str, ...] = option(CUT_SETTINGS, "synchronous_commit of each power "
                                           "cut (one cut each, under ANY k; the lab VM's "
                                           "power is cut and the primary's disk counted as "
                                           "lost), comma-separated", choices=CUT_SETTINGS)

    def check(self) -> None:
        if not (self.host.startswith("vm") and self.host[2:].isdigit()):
            raise UsageError(f"--host {self.host}: the quorum-commit lab delays packets "
                             "between copies with netem inside a lab VM: use vm1 (start it "
                             "with `python -m labs vm up`)")
        if COPIES % self.zones:
            raise UsageError(f"--zones {self.zones} does not divide the {COPIES} copies "
                             "evenly: use 2, 3 or 6")
        if len(set(self.cut_settings)) != len(self.cut_settings):
            raise UsageError("--cut-settings: each setting once")
        if not self.in_zone_ms < self.cross_zone_ms < self.slow_zone_ms:
            raise UsageError(f"delays must rise from within a zone to across zones to the "
                             f"slow zone (got {self.in_zone_ms:g} < {self.cross_zone_ms:g} < "
                             f"{self.slow_zone_ms:g} ms: not so)")

    # --- the layout ---------------------------------------------------------------------

    def zone_of(self, copy: int) -> int:
        """Zone (1-based) of copy 0 (the primary) .. 5 (standby s5)."""
        return copy // (COPIES // self.zones) + 1

    def added_rtt_ms(self, standby: int, layout: str) -> float:
        """The round trip netem adds between the primary and standby `standby` (1..5)."""
        zone = self.zone_of(standby)
        if zone == 1:
            return self.in_zone_ms
        if layout == "slow-zone" and zone == 2:
            return self.slow_zone_ms
        return self.cross_zone_ms

    def lost_zone(self) -> list[int]:
        """The standbys of the zone the drill loses: the last one."""
        return [s for s in range(1, COPIES) if self.zone_of(s) == self.zones]

    def primary_zone_standbys(self) -> list[int]:
        """The standbys in zone 1, the primary's: lost with it in the failover."""
        return [s for s in range(1, COPIES) if self.zone_of(s) == 1]

    def one_more(self) -> int:
        """The copy lost after the zone: the last standby outside it and the primary's zone
        (the primary's zone-mate when every other zone is gone)."""
        others = [s for s in range(1, COPIES) if s not in self.lost_zone()]
        outside = [s for s in others if self.zone_of(s) != 1]
        return (outside or others)[-1]


@dataclass(frozen=True)
class Point:
    """One point of the sweep: what the primary waits for, and how many clients commit."""

    method: str  # none | ANY | FIRST
    k: int
    synchronous_commit: str = "on"
    clients: int = 1

    @property
    def label(self) -> str:
        if self.method == "none":
            return "no standby"
        extra = "" if self.synchronous_commit == "on" else f", {self.synchronous_commit}"
        return f"{self.method} {self.k}{extra}"

    @property
    def slug(self) -> str:
        return (f"{self.method.lower()}{self.k}-{self.synchronous_commit.replace('_', '')}-"
                f"c{self.clients}")

    def standby_names(self) -> str:
        """synchronous_standby_names for this point (empty: the primary waits for none)."""
        if self.method == "none":
            return ""
        return f"{self.method} {self.k} ({', '.join(f's{n}' for n in range(1, COPIES))})"


def points(params: Parameters) -> list[Point]:
    """The sweep, the same in each layout: the local commit, ANY 1..5, then at the drill's k
    FIRST k, remote_apply, and several clients."""
    k = params.quorum
    return [Point("none", 0), *(Point("ANY", n) for n in sorted(set(params.ks))),
            Point("FIRST", k), Point("ANY", k, "remote_apply"),
            Point("ANY", k, clients=params.clients)]
