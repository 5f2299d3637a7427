"""The zone PostgreSQL cannot lose without a failover: zone 1, the primary's.

Under ANY k a client commits numbered rows, and the primary and s1 (zone 1) are killed at
once. Writes stop: the primary was the only writer. The lab then does what a failover
manager does, without the wait a real one spends deciding that the primary is gone:

1. each survivor replays the WAL on its own disk; the acknowledged rows each holds are
   counted (ANY k: every acknowledged commit is on k standbys, at most one of them in zone 1,
   so on k - 1 survivors at least);
2. the survivor with the most WAL (`pg_last_wal_receive_lsn()`) is promoted, after its
   `synchronous_standby_names` was set to wait for the others (ANY k, or all of them when
   fewer than k are left), so that no commit it takes is on one copy only;
3. the other survivors stream from it; a new client commits on it, from the row after the
   last it holds.

Recorded: the acknowledged commits the new primary holds, how many survivors held every one
of them, and how long no commit returned (from the kill to the new client's first
acknowledgement). The failover is the run's last part: the copies keep its new layout.
"""

from __future__ import annotations

import json
import shlex
import time

from labs.errors import LabError
from labs.infra.acks import AckStream
from labs.infra.vm.servers import PSQL, SERVERS
from labs.progress import Progress
from labs.quorum_commit.copies import Copies, lsn
from labs.quorum_commit.params import Parameters
from labs.records import RunRecorder

STEPS = ("failover: commits under ANY k", "failover: zone 1 lost",
         "failover: the survivors' rows; the newest promoted",
         "failover: the others follow it; commits again")
CONFIG = "failover"


class Clock:
    """Seconds since the failover began, and the moments it marks."""

    def __init__(self) -> None:
        self.began = time.monotonic()
        self.events: dict[str, float] = {}

    def now(self) -> float:
        return time.monotonic() - self.began

    def mark(self, name: str) -> float:
        self.events[name] = self.now()
        return self.events[name]


def failover(copies: Copies, rec: RunRecorder, p: Parameters, progress: Progress) -> None:
    k, zone_one = p.quorum, p.primary_zone_standbys()
    progress.step(STEPS[0], f"ANY {k}, every other zone at {p.cross_zone_ms:g} ms")
    copies.set_layout(p, "even")
    copies.set_sync(f"ANY {k} ({', '.join(s.name for s in copies.standbys)})")
    copies.psql(copies.primary, "DROP TABLE IF EXISTS acks; "
                + SERVERS["postgres"].create_table_sql())
    clock = Clock()
    before = start_writer(copies, clock, first=1)
    # The window starts at the first commit, as in the drill: on a busy emulated machine the
    # client's SSH session and psql can take longer to start than the whole window.
    why = before.wait_for_first(timeout_s=120)
    if why:
        raise LabError(f"failover: the client committed nothing ({why})")
    clock.mark("commits")
    time.sleep(p.phase_s)
    lost = ", ".join(["the primary", *(f"s{n}" for n in zone_one)])
    progress.step(STEPS[1], f"{lost} killed at once")
    clock.mark("kill sent")
    copies.kill_with_primary(zone_one)
    clock.mark("zone 1 lost")  # every process of zone 1 gone
    before.thread.join(timeout=60)  # its server is gone: the client's loop ends
    progress.step(STEPS[2], "each survivor replays what it has; the one with the most WAL "
                            "is promoted")
    newest, newest_rows = count_survivors(copies, rec, p, before.acked)
    clock.mark("survivors counted")
    new_k = min(k, len(copies.standbys) - 1)
    others = [s.name for s in copies.standbys if s.number != newest]
    names = f"ANY {new_k} ({', '.join(others)})"
    copies.promote(newest, names)
    clock.mark("promoted")
    progress.step(STEPS[3], f"s{newest} the primary; {', '.join(others)} follow it "
                            f"({names})")
    copies.follow()
    # Its rows are 1 .. newest_rows (one client committed them in order): go on from there.
    after = start_writer(copies, clock, first=newest_rows + 1)
    copies.wait_streaming(others)
    clock.mark("followed")
    time.sleep(p.phase_s)
    clock.mark("end")
    copies.stop_client(after)
    copies.wait_replayed()
    record(rec, p, clock, before, after, new_k)
    count_at_end(copies, rec, after)
    progress.detail(f"{before.acked} acknowledged before; s{newest} promoted; first commit "
                    f"{first_ack_after(after, clock.events['zone 1 lost']):.1f} s after the "
                    "kill")


def start_writer(copies: Copies, clock: Clock, first: int) -> AckStream:
    primary = copies.primary
    writer = AckStream(SERVERS["postgres"].insert_loop(primary.data, socket=primary.socket,
                                                       first=first))
    writer.start(copies.ws.host, clock.began)
    return writer


def count_survivors(copies: Copies, rec: RunRecorder, p: Parameters,
                    acked: int) -> tuple[int, int]:
    """Once each survivor has replayed all the WAL it received: the acknowledged rows it
    holds (one command for all of them, so the count adds little to the stop). Returns the
    number of the survivor with the most WAL received (and flushed to its disk), and the rows
    it holds."""
    if acked == 0:
        raise LabError("failover: the client had no commit acknowledged before the kill")
    query = (f"SELECT pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn(), "
             f"pg_last_wal_receive_lsn(), count(*) FILTER (WHERE id <= {acked}), count(*) "
             "FROM acks")
    # Each survivor: ask again (for up to 30 s) until its replay has reached what it received.
    script = "; ".join(
        f"for i in $(seq 300); do out=$(runuser -u postgres -- {PSQL} -h {shlex.quote(c.socket)} "
        f"-XAtq -c {shlex.quote(query)}); case $out in t*) echo {c.name}\\|$out; break;; esac; "
        "sleep 0.1; done" for c in copies.standbys)
    lines = copies.ws.host.sudo(f"cd / && {script}", timeout_s=120).stdout.split()
    if len(lines) != len(copies.standbys):
        raise LabError(f"failover: a survivor did not finish replaying within 30 s ({lines})")
    received, rows_held = {}, {}
    for line in lines:
        name, _, position, found, rows = line.split("|")
        number = int(name.removeprefix("s"))
        received[number], rows_held[number] = lsn(position), int(rows)
        dims = {"standby": name, "zone": p.zone_of(number), "receive_lsn": position,
                "acknowledged": acked}
        rec.add_result(config=CONFIG, workload="zone 1 lost", metric="acknowledged_found",
                       value=int(found), unit="count", **dims)
        rec.add_result(config=CONFIG, workload="zone 1 lost", metric="rows_found",
                       value=int(rows), unit="count", **dims)
    newest = max(received, key=received.get)
    rec.add_result(config=CONFIG, workload="zone 1 lost", metric="promoted", value=1,
                   unit="count", standby=f"s{newest}")
    return newest, rows_held[newest]


def first_ack_after(writer: AckStream, moment_s: float) -> float:
    """Seconds from `moment_s` to the writer's first acknowledgement after it."""
    times = [t for _, t in writer.acks if t > moment_s]
    if not times:
        raise LabError("failover: no commit was acknowledged on the new primary")
    return min(times) - moment_s


def record(rec: RunRecorder, p: Parameters, clock: Clock, before: AckStream,
           after: AckStream, new_k: int) -> None:
    events = clock.events
    rec.add_raw("failover/acks-before.csv", before.csv())
    rec.add_raw("failover/acks-after.csv", after.csv())
    rec.add_raw("failover/events.json", json.dumps(events, indent=2) + "\n")
    kill = events["zone 1 lost"]
    last_before = max(t for _, t in before.acks)
    first_after = kill + first_ack_after(after, kill)
    seconds = {"last_ack_before_kill_s": last_before - kill,
               "counted_after_s": events["survivors counted"] - kill,
               "promoted_after_s": events["promoted"] - kill,
               "followed_after_s": events["followed"] - kill,
               "first_commit_after_s": first_after - kill,
               "writes_stopped_s": first_after - last_before}
    for metric, value in seconds.items():
        rec.add_result(config=CONFIG, workload="failover", metric=metric,
                       value=round(value, 2), unit="s")
    for workload, writer, start, end in (("before", before, events["commits"], kill),
                                         ("after", after, first_after, events["end"])):
        rec.add_result(config=CONFIG, workload=workload, metric="commits_acknowledged",
                       value=len(writer.acks), unit="count", last_id=writer.acked)
        rec.add_result(config=CONFIG, workload=workload, metric="commits_per_s",
                       value=round(len(writer.acks) / max(end - start, 1e-9), 2), unit="tps")
    # The model: every acknowledged commit was on k standbys, and zone 1 held at most
    # len(zone 1's standbys) of them.
    rec.add_result(config=CONFIG, workload="zone 1 lost", metric="model_survivors_holding_all",
                   value=max(p.quorum - len(p.primary_zone_standbys()), 0), unit="count",
                   k=p.quorum)
    rec.add_result(config=CONFIG, workload="after", metric="quorum_after", value=new_k,
                   unit="count")


def count_at_end(copies: Copies, rec: RunRecorder, after: AckStream) -> None:
    """Every copy left holds every commit the new primary acknowledged."""
    for copy in [copies.primary, *copies.standbys]:
        found = int(copies.psql(copy, f"SELECT count(*) FROM acks WHERE id BETWEEN "
                                      f"{after.acks[0][0]} AND {after.acked}"))
        rec.add_result(config=CONFIG, workload="end", metric="acknowledged_found",
                       value=found, unit="count", standby=copy.name,
                       acknowledged=len(after.acks))
