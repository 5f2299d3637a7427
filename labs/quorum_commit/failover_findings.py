"""What a run of the quorum-commit lab's failover found, as typed values: the page's failover
section (book/quorum/quorum-commit.md) formats them and the claim tests assert them.

Computed from the recorded run alone (labs/quorum_commit/failover.py wrote it); None for a
run made before the lab had a failover.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from labs.quorum_commit.params import Parameters
from labs.records import RecordedRun

CONFIG = "failover"


@dataclass(frozen=True)
class Survivor:
    """One standby left after zone 1 was lost, once it had replayed the WAL on its disk."""

    standby: str  # s2 ... s5
    zone: int
    receive_lsn: str  # the last WAL it had flushed from the stream
    held: int  # the acknowledged commits it held
    rows: int  # every row it held, acknowledged or not


@dataclass(frozen=True)
class FailoverFindings:
    params: Parameters
    acknowledged: int  # commits the client saw acknowledged before the kill
    survivors: tuple[Survivor, ...]
    promoted: str  # the survivor with the most WAL: the new primary
    model_survivors_holding_all: int  # the rule: k less zone 1's standbys, at least
    quorum_after: int  # ANY k' the new primary waits for
    last_ack_before_kill_s: float  # negative: the last acknowledgement came before the kill
    counted_after_s: float  # from the kill: the lab's count of each survivor's rows done
    promoted_after_s: float  # ... and the newest promoted
    followed_after_s: float  # ... and the others streaming from it
    first_commit_after_s: float  # ... and the new client's first commit acknowledged
    writes_stopped_s: float  # from the last acknowledgement before to the first after
    rate_before: float  # commits per second
    rate_after: float
    acknowledged_after: int
    end_copies: int  # copies left at the end (the new primary and its standbys)
    end_copies_holding_all: int  # of them, those holding every commit acknowledged after

    @property
    def k(self) -> int:
        """ANY k before the failover."""
        return self.params.quorum

    @property
    def zone_one_standbys(self) -> int:
        """Standbys lost with the primary."""
        return len(self.params.primary_zone_standbys())

    @property
    def promoted_held(self) -> int:
        return next(s.held for s in self.survivors if s.standby == self.promoted)

    @property
    def lost(self) -> int:
        """Acknowledged commits the new primary lacked (ANY k promises none)."""
        return self.acknowledged - self.promoted_held

    @property
    def survivors_holding_all(self) -> int:
        return sum(s.held == self.acknowledged for s in self.survivors)

    @property
    def fewest_held(self) -> int:
        return min(s.held for s in self.survivors)

    @property
    def promoted_extra_rows(self) -> int:
        """Rows the new primary held beyond the acknowledged ones (a commit in flight)."""
        return next(s.rows for s in self.survivors if s.standby == self.promoted) \
            - self.promoted_held


def _value(results: pd.DataFrame, workload: str, metric: str) -> float:
    row = results[(results["workload"] == workload) & (results["metric"] == metric)]
    return float(row["value"].iloc[0])


def findings(run: RecordedRun) -> FailoverFindings | None:
    results = run.results[run.results["config"] == CONFIG]
    if results.empty:
        return None
    lost = results[results["workload"] == "zone 1 lost"]
    found = lost[lost["metric"] == "acknowledged_found"]
    rows = lost[lost["metric"] == "rows_found"].set_index("standby")["value"]
    survivors = tuple(Survivor(r["standby"], int(r["zone"]), r["receive_lsn"], int(r["value"]),
                               int(rows[r["standby"]])) for r in found.to_dict("records"))
    model = lost[lost["metric"] == "model_survivors_holding_all"]
    end = results[(results["workload"] == "end") & (results["metric"] == "acknowledged_found")]
    after = results[(results["workload"] == "after")
                    & (results["metric"] == "commits_acknowledged")]
    return FailoverFindings(
        params=Parameters.of(run),
        acknowledged=int(found["acknowledged"].iloc[0]),
        survivors=survivors,
        promoted=lost[lost["metric"] == "promoted"]["standby"].iloc[0],
        model_survivors_holding_all=int(model["value"].iloc[0]),
        quorum_after=int(_value(results, "after", "quorum_after")),
        **{name: _value(results, "failover", name) for name in (
            "last_ack_before_kill_s", "counted_after_s", "promoted_after_s", "followed_after_s",
            "first_commit_after_s", "writes_stopped_s")},
        rate_before=_value(results, "before", "commits_per_s"),
        rate_after=_value(results, "after", "commits_per_s"),
        acknowledged_after=int(after["value"].iloc[0]),
        end_copies=len(end),
        end_copies_holding_all=int((end["value"] == end["acknowledged"].astype(float)).sum()))


def acks(run: RecordedRun) -> pd.DataFrame:
    """Every acknowledgement of the failover, by the client before and the one after."""
    folder = run.raw_dir / CONFIG
    return pd.concat([pd.read_csv(folder / "acks-before.csv").assign(client="before"),
                      pd.read_csv(folder / "acks-after.csv").assign(client="after")],
                     ignore_index=True)


def events(run: RecordedRun) -> dict[str, float]:
    return json.loads((run.raw_dir / CONFIG / "events.json").read_text())
