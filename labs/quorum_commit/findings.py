"""What a run of the quorum-commit lab's sweep and drill found, as typed values: the page
(book/quorum/quorum-commit.md) formats them, and the claim tests assert them.

Computed from the recorded run alone (labs/quorum_commit/run.py wrote it). The failover
(failover_findings.py) and the power cuts (power_cut_findings.py) have findings of their own.

    f = findings(run)
    f.point("slow-zone", "ANY 3").p50_ms     # one point of the sweep
    f.phase("zone lost").rate                # one phase of the drill
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from labs.quorum_commit.params import LAYOUTS, Parameters
from labs.records import RecordedRun

PHASES = ("all up", "zone lost", "zone + 1 lost", "back")
WITHIN_PCT = 10  # the sweep's verdict counts the points whose model is this close


# --- the run's tables -------------------------------------------------------------------------

def sweep(run: RecordedRun) -> pd.DataFrame:
    """One row per (layout, point): measured p50/p99 and mean, commits, the model, error."""
    results = run.results
    rows = results[results["config"].isin(LAYOUTS) & (results["workload"] != "ping")]
    table = rows.pivot_table(index=["layout", "workload", "method", "k", "clients",
                                    "synchronous_commit"],
                             columns="metric", values="value").reset_index()
    table = table.rename(columns={"workload": "point"})
    for column in ("k", "clients", "commits", "failed"):
        table[column] = table[column].astype(int)
    table["error_p50_pct"] = 100 * (table["model_p50_ms"] - table["latency_p50_ms"]) \
        / table["latency_p50_ms"]
    table["error_p99_pct"] = 100 * (table["model_p99_ms"] - table["latency_p99_ms"]) \
        / table["latency_p99_ms"]
    # The sweep's own order: the primary alone, ANY 1..5, FIRST k, remote_apply, clients.
    table["order"] = table.apply(lambda r: (
        0 if r["method"] == "none" else 2 if r["method"] == "FIRST"
        else 3 if r["synchronous_commit"] != "on" else 4 if r["clients"] > 1 else 1,
        r["k"]), axis=1)
    table["layout_order"] = table["layout"].map(LAYOUTS.index)
    return table.sort_values(["layout_order", "order"]).drop(
        columns=["order", "layout_order"]).reset_index(drop=True)


def rtts(run: RecordedRun) -> pd.DataFrame:
    """The measured round trip to each standby in each layout, beside what netem added."""
    results = run.results
    ping = results[(results["workload"] == "ping")]
    table = ping.pivot_table(index=["config", "standby", "zone", "added_rtt_ms"],
                             columns="metric", values="value").reset_index()
    table = table.rename(columns={"config": "layout"})
    table["zone"] = table["zone"].astype(int)
    table["base_ms"] = table["rtt_p50_ms"] - table["added_rtt_ms"]
    return table


def drill(run: RecordedRun) -> pd.DataFrame:
    """Per phase of the drill: standbys up, what the model says, commits acknowledged."""
    results = run.results
    rows = results[results["config"] == "drill"]
    out = []
    for phase in PHASES:
        mine = rows[rows["workload"] == phase]
        model = mine[mine["metric"] == "model_commits_go_on"].iloc[0]
        acked = mine[mine["metric"] == "commits_acknowledged"].iloc[0]
        rate = mine[mine["metric"] == "commits_per_s"].iloc[0]
        out.append({"phase": phase, "standbys up": int(model["standbys_up"]),
                    "model: commits go on": "yes" if model["value"] else "no (they wait)",
                    "seconds": float(acked["seconds"]),
                    "commits acknowledged": int(acked["value"]),
                    "commits per second": float(rate["value"])})
    return pd.DataFrame(out)


def survivors(run: RecordedRun) -> pd.DataFrame:
    """While the commit waited: each surviving standby's replay position and what it held."""
    results = run.results
    rows = results[(results["config"] == "drill") & (results["workload"] == "zone + 1 lost")]
    found = rows[rows["metric"] == "acknowledged_found"]
    held = rows[rows["metric"] == "rows_found"].set_index("standby")["value"]
    return pd.DataFrame([{"standby": r["standby"], "replay position": r["replay_lsn"],
                          "acknowledged commits it holds": int(r["value"]),
                          "acknowledged": int(r["acknowledged"]),
                          "rows it holds": int(held[r["standby"]])}
                         for r in found.to_dict("records")])


def acks(run: RecordedRun) -> pd.DataFrame:
    """Every acknowledgement of the drill's client, in seconds since the drill started."""
    return pd.read_csv(run.raw_dir / "drill" / "acks.csv")


def events(run: RecordedRun) -> dict[str, float]:
    """The moments the drill marked ("zone lost starts", ..., "end"), in seconds."""
    return json.loads((run.raw_dir / "drill" / "events.json").read_text())


# --- the findings -----------------------------------------------------------------------------

@dataclass(frozen=True)
class SweepPoint:
    """One point of the sweep in one layout: what the commits took, and the model."""

    layout: str  # even | slow-zone
    point: str  # "no standby", "ANY 3", "FIRST 3", "ANY 3, remote_apply"
    clients: int
    commits: int
    failed: int
    p50_ms: float
    p99_ms: float
    min_ms: float  # the fastest commit: a busy machine cannot make it faster
    model_p50_ms: float | None  # None: no model (the primary alone)
    model_p99_ms: float | None

    @property
    def modelled(self) -> bool:
        return self.model_p50_ms is not None

    @property
    def error_p50_pct(self) -> float | None:
        """The model's error at the median, in % of the measured (positive: too high)."""
        return None if self.model_p50_ms is None else \
            100 * (self.model_p50_ms - self.p50_ms) / self.p50_ms

    @property
    def error_p99_pct(self) -> float | None:
        return None if self.model_p99_ms is None else \
            100 * (self.model_p99_ms - self.p99_ms) / self.p99_ms


@dataclass(frozen=True)
class RoundTrip:
    layout: str
    standby: str  # s1 ... s5
    zone: int
    added_ms: float  # what netem added
    measured_ms: float  # ping's median

    @property
    def base_ms(self) -> float:
        """What the link carried before anything was added."""
        return self.measured_ms - self.added_ms


@dataclass(frozen=True)
class Phase:
    """One phase of the drill."""

    name: str  # all up | zone lost | zone + 1 lost | back
    standbys_up: int
    model_goes_on: bool  # the model: commits go on (enough standbys for ANY k)
    seconds: float
    acknowledged: int
    rate: float  # commits per second


@dataclass(frozen=True)
class WaitingSurvivor:
    """A standby left after a zone and one more copy were lost, while the commit waited."""

    standby: str
    replay_lsn: str
    held: int  # acknowledged commits it held
    rows: int  # every row it held


@dataclass(frozen=True)
class Findings:
    params: Parameters
    wall_time_s: float
    flush_p50_ms: float  # fio's 8 KiB write + fdatasync on the standbys' disk
    flush_p99_ms: float
    setup_primary_s: float
    setup_base_backups_s: float
    setup_standbys_s: float
    points: tuple[SweepPoint, ...]
    round_trips: tuple[RoundTrip, ...]
    drill_k: int  # ANY k in the drill
    phases: tuple[Phase, ...]
    syncrep_waiters: int  # sessions pg_stat_activity showed waiting for the quorum
    syncrep_wait_s: float  # how long the waiting commit had waited when looked at
    acknowledged_at_wait: int  # commits acknowledged before it
    primary_rows_at_wait: int
    newest_survivor_found: int  # acknowledged commits the survivor with the most WAL held
    waiting_survivors: tuple[WaitingSurvivor, ...]
    restarted_after_s: float  # from the "back" phase's start: every lost copy started
    resumed_after_s: float  # ... the first commit acknowledged again
    caught_up_after_s: float  # ... every copy streaming and caught up
    stall_s: float  # the longest time without an acknowledgement
    drill_s: float
    end_acknowledged: int  # every commit the drill's client saw acknowledged
    end_copies: int
    end_copies_holding_all: int
    acked_before_phases: int  # acknowledged before the first phase's start mark
    acked_after_end: int  # ... and after the drill's end mark

    # --- the sweep ---

    def point(self, layout: str, point: str, clients: int = 1) -> SweepPoint:
        found = [p for p in self.points
                 if (p.layout, p.point, p.clients) == (layout, point, clients)]
        if len(found) != 1:
            raise KeyError(f"{layout}, {point}, {clients} client(s): {len(found)} points")
        return found[0]

    def has_point(self, layout: str, point: str, clients: int = 1) -> bool:
        return any((p.layout, p.point, p.clients) == (layout, point, clients)
                   for p in self.points)

    @property
    def modelled(self) -> tuple[SweepPoint, ...]:
        return tuple(p for p in self.points if p.modelled)

    @property
    def within(self) -> int:
        """Modelled points whose median the model met within WITHIN_PCT."""
        return sum(abs(p.error_p50_pct) <= WITHIN_PCT for p in self.modelled)

    @property
    def worst(self) -> SweepPoint:
        """The modelled point with the largest error at the median."""
        return max(self.modelled, key=lambda p: abs(p.error_p50_pct))

    @property
    def one_client_errors_pct(self) -> tuple[float, float]:
        """The least and the greatest error at the median over the one-client points."""
        errors = [p.error_p50_pct for p in self.modelled if p.clients == 1]
        return min(errors), max(errors)

    @property
    def p99_too_low(self) -> int:
        """Modelled points whose p99 the model put below the measured one."""
        return sum(p.error_p99_pct < 0 for p in self.modelled)

    def p99_worst_pct(self, one_client: bool = False) -> float:
        """How far below the measured p99 the model's fell at most, in % (positive)."""
        return -min(p.error_p99_pct for p in self.modelled if p.clients == 1 or not one_client)

    @property
    def p99_commits(self) -> tuple[int, int]:
        """The fewest and the most commits a modelled point's p99 rests on."""
        commits = [p.commits for p in self.modelled] or [0]
        return min(commits), max(commits)

    def slow_zone_rise(self, point: str) -> tuple[float, float] | None:
        """How much longer `point` took with the slow zone than in the even layout: (measured,
        modelled) as shares of the even layout's median; None if the run has no such point."""
        if not (self.has_point("even", point) and self.has_point("slow-zone", point)):
            return None
        even, slow = self.point("even", point), self.point("slow-zone", point)
        return slow.p50_ms / even.p50_ms - 1, slow.model_p50_ms / even.model_p50_ms - 1

    @property
    def base_rtt_max_ms(self) -> float:
        return max(trip.base_ms for trip in self.round_trips)

    def round_trips_in(self, layout: str) -> tuple[RoundTrip, ...]:
        return tuple(trip for trip in self.round_trips if trip.layout == layout)

    @property
    def exercise_any2_rtt_ms(self) -> float:
        """The first exercise: the second-nearest standby's round trip with the slow zone."""
        return sorted(trip.measured_ms for trip in self.round_trips_in("slow-zone"))[1]

    @property
    def exercise_any2_sum_ms(self) -> float:
        """... and its answer: the primary alone, that round trip, and a standby's flush."""
        return (self.point("slow-zone", "no standby").p50_ms + self.exercise_any2_rtt_ms
                + self.flush_p50_ms)

    # --- the drill ---

    def phase(self, name: str) -> Phase:
        return next(p for p in self.phases if p.name == name)

    @property
    def phases_acknowledged(self) -> int:
        return sum(p.acknowledged for p in self.phases)

    @property
    def survivor_rows_max(self) -> int:
        return max(s.rows for s in self.waiting_survivors)


def findings(run: RecordedRun) -> Findings:
    results = run.results
    value = results.set_index(["config", "workload", "metric"])["value"]
    times, marks = acks(run)["seconds"], events(run)  # the drill client's, read once
    return Findings(
        params=Parameters.of(run),
        wall_time_s=float(value[("lab", "all", "wall_time")]),
        flush_p50_ms=float(value[("flush", "fio 8k write+fdatasync", "p50_ms")]),
        flush_p99_ms=float(value[("flush", "fio 8k write+fdatasync", "p99_ms")]),
        **{f"setup_{part}_s": float(value[("copies", "set-up", f"{part}_s")])
           for part in ("primary", "base_backups", "standbys")},
        points=_points(run),
        round_trips=tuple(RoundTrip(r["layout"], r["standby"], int(r["zone"]),
                                    float(r["added_rtt_ms"]), float(r["rtt_p50_ms"]))
                          for r in rtts(run).to_dict("records")),
        drill_k=int(results[results["metric"] == "model_commits_go_on"]["k"].iloc[0]),
        phases=tuple(Phase(r["phase"], r["standbys up"], r["model: commits go on"] == "yes",
                           r["seconds"], r["commits acknowledged"], r["commits per second"])
                     for r in drill(run).to_dict("records")),
        **_waiting(run),
        **_way_back(value, times, marks),
        **_end(results, times, marks))


def _points(run: RecordedRun) -> tuple[SweepPoint, ...]:
    def optional(row: dict, column: str) -> float | None:
        return None if pd.isna(row.get(column)) else float(row[column])

    return tuple(SweepPoint(r["layout"], r["point"], r["clients"], r["commits"], r["failed"],
                            float(r["latency_p50_ms"]), float(r["latency_p99_ms"]),
                            float(r["latency_min_ms"]), optional(r, "model_p50_ms"),
                            optional(r, "model_p99_ms"))
                 for r in sweep(run).to_dict("records"))


def _waiting(run: RecordedRun) -> dict:
    """The commit that waited once a zone and one more copy were lost, and the survivors."""
    results = run.results
    wait = results[(results["config"] == "drill") & (results["workload"] == "zone + 1 lost")]
    by_metric = wait.drop_duplicates("metric").set_index("metric")["value"]
    held = survivors(run)
    return {"syncrep_waiters": int(by_metric["syncrep_waiters"]),
            "syncrep_wait_s": float(by_metric["syncrep_wait_s"]),
            "acknowledged_at_wait": int(held["acknowledged"].iloc[0]),
            "primary_rows_at_wait": int(by_metric["primary_rows"]),
            "newest_survivor_found": int(by_metric["newest_survivor_acknowledged_found"]),
            "waiting_survivors": tuple(
                WaitingSurvivor(r["standby"], r["replay position"],
                                r["acknowledged commits it holds"], r["rows it holds"])
                for r in held.to_dict("records"))}


def _way_back(value: pd.Series, times: pd.Series, marks: dict[str, float]) -> dict:
    """The lost copies started again: the lab's marks, and the acknowledgements themselves
    (the lab only looks once all are started)."""
    back = marks["back starts"]
    return {"restarted_after_s": float(value[("drill", "back", "restarted_after_s")]),
            "resumed_after_s": float(times[times > back].min() - back),
            "caught_up_after_s": float(value[("drill", "back", "caught_up_after_s")]),
            "stall_s": float(times.diff().max()),
            "drill_s": float(marks["end"])}


def _end(results: pd.DataFrame, times: pd.Series, marks: dict[str, float]) -> dict:
    """What every copy held at the drill's end, and the acknowledgements outside the phases
    (the phases count from the first phase's start mark to the drill's end mark)."""
    end = results[(results["config"] == "drill") & (results["workload"] == "end")]
    first = min(t for name, t in marks.items() if name.endswith("starts"))
    return {"end_acknowledged": int(end["acknowledged"].iloc[0]),
            "end_copies": len(end),
            "end_copies_holding_all": int((end["value"] == end["acknowledged"]).sum()),
            "acked_before_phases": int((times < first).sum()),
            "acked_after_end": int((times >= marks["end"]).sum())}
