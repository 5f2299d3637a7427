"""Run the quorum-commit lab in a lab VM: six PostgreSQL copies over zones, like Aurora's.

1. The copies: a primary and five standbys (pg_basebackup), each standby in a network
   namespace of its own with netem on its link (labs/quorum_commit/copies.py).
2. The flush: fio times an 8 KiB write and its fdatasync on the data file system, what a
   standby does before it answers (an input of the model).
3. The sweep, for each layout (every other zone at the cross-zone delay; then one zone
   slow): the round trip to each standby (ping), then pgbench commits for a few seconds at
   each point: no standby waited for (the local commit), ANY 1..5, FIRST k, remote_apply and
   several clients; beside each, the model's k-th acknowledgement (labs/models/quorum.py).
4. The drill, under ANY k: a client commits numbered rows and the controller writes down
   each acknowledgement; a whole zone is killed, then one more copy; the primary's view of
   the waiting commit and the rows each survivor holds are counted; the copies come back.
5. The power cuts, one per synchronous_commit setting: every copy loses its power at once,
   and the rows the most advanced standby lacks are counted (labs/quorum_commit/power_cut.py).
   `--part power-cut` runs steps 1, 2 and the even layout's round trips, then this one;
   `--part sweep` (the quick profile's) runs steps 1 to 4 and 6, and no power cut.
6. The failover, under ANY k: zone 1 (the primary and s1) is lost mid-stream; the survivor
   with the most WAL is promoted, the others follow it, and the acknowledged commits it holds
   are counted (labs/quorum_commit/failover.py).

Everything the lab makes is journaled in a LabWorkspace: `clean` removes it after a crash.
"""

from __future__ import annotations

import json
import secrets
import time

from labs.errors import LabError, UsageError
from labs.infra import netns
from labs.infra.acks import AckStream
from labs.infra.facts import available_memory_mib
from labs.infra.hosts import Host
from labs.infra.lab_run import LabRun
from labs.infra.vm import machine
from labs.infra.vm.servers import PG_BIN, PGBENCH, SERVERS
from labs.infra.workspace import LabWorkspace
from labs.models import quorum as model
from labs.progress import Progress
from labs.quorum_commit import failover, power_cut
from labs.quorum_commit.copies import Copies, lsn
from labs.quorum_commit.params import LAYOUTS, STANDBYS, Parameters, Point, points
from labs.records import RecordedRun, RunRecorder
from labs.tools import fio, netem, pgbench

NEEDED = ("psql", "pgbench", "pg_basebackup", "ping", "tc", "ip", "fio", "runuser", "stdbuf")
MEMORY_PER_COPY_MIB = 96
SCRIPT = "INSERT INTO commits (client) VALUES (:client_id);"


DRILL_STEPS = ("drill: all up", "drill: a zone lost", "drill: one more copy lost",
               "drill: the waiting commit and the survivors' rows",
               "drill: the lost copies come back")


def steps(p: Parameters) -> list[str]:
    """The run's steps, in order: the set-up; with the sweep, the round trips of each layout,
    each point in each layout and the drill (the power-cut part alone: the even layout's
    round trips); the power cuts, if the part has them; the failover, with the sweep; the
    teardown."""
    sweeps, cuts = p.part in ("all", "sweep"), p.part in ("all", "power-cut")
    names = ["a file system", "a primary and five standbys", "the flush a standby makes"]
    if sweeps:
        names += (["netem and the round trips"] * len(LAYOUTS)
                  + ["a commit point"] * (len(points(p)) * len(LAYOUTS)) + list(DRILL_STEPS))
    else:
        names += ["netem and the round trips"]
    if cuts:
        names += list(power_cut.CUT_STEPS) * len(p.cut_settings)
    if sweeps:
        names += list(failover.STEPS)
    return names + ["stopping the six servers, removing the namespaces and the file system; "
                    "writing the run"]


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    p = params
    machine.require_lab_vm(host, p.LAB, NEEDED)
    needed_mib = (STANDBYS + 1) * MEMORY_PER_COPY_MIB + 256
    available_mib = available_memory_mib(host)
    if available_mib < needed_mib:
        raise UsageError(f"host {host.name} has {available_mib} MiB available; "
                         f"six copies need about {needed_mib} MiB (a lab VM started with "
                         "`python -m labs vm up` and its default memory has enough)")
    disk = machine.data_disk(host, p.data_disk)
    sweeps, cuts = p.part in ("all", "sweep"), p.part in ("all", "power-cut")
    progress.plan(steps(p))
    started = time.monotonic()
    with LabRun(p, host, progress) as lab_run:
        rec, ws = lab_run.rec, lab_run.ws
        progress.step("a file system", f"ext4 on {disk}, for the six copies")
        ws.make_filesystem(disk, "ext4", label="quorum")
        mount_point = ws.mount(disk, "data")
        for tool, command in (("postgres", f"{PG_BIN}/postgres --version"),
                              ("pgbench", "pgbench --version"), ("fio", "fio --version")):
            rec.add_tool_version(tool, host.sudo(command, timeout_s=60).stdout.strip())
        progress.step("a primary and five standbys", "pg_basebackup; each standby in a "
                      "network namespace of its own")
        copies = Copies(ws, mount_point, secrets.token_hex(2))
        for part, seconds in copies.create().items():
            rec.add_result(config="copies", workload="set-up", metric=f"{part}_s",
                           value=round(seconds, 1), unit="s")
        copies.psql(copies.primary, "CREATE TABLE commits (client int, "
                                    "at timestamptz DEFAULT clock_timestamp())")
        progress.step("the flush a standby makes", "before it answers (fio: 8 KiB, "
                                                          "fdatasync)")
        flush = measure_flush(ws, rec, mount_point, p)
        progress.detail(f"flush p50 {flush['p50_ms']:.2f} ms, p99 {flush['p99_ms']:.2f} ms")
        if sweeps:
            rtts = sweep(copies, rec, p, progress, flush)
            drill(copies, rec, p, progress)
        else:
            progress.step("netem and the round trips", "even: on each standby's link")
            rtts = measure_layout(copies, rec, p, "even")
        if cuts:
            power_cut.cuts(copies, rec, p, progress, disk, flush["p50_ms"], rtts)
        if sweeps:  # last: the copies keep the failover's new layout
            failover.failover(copies, rec, p, progress)
        rec.add_result(config="lab", workload="all", metric="wall_time",
                       value=round(time.monotonic() - started, 1), unit="s")
        progress.step("stopping the six servers, removing the namespaces and the file "
                      "system; writing the run")
    return lab_run.recorded()


# --- the model's inputs ----------------------------------------------------------------------

def measure_flush(ws: LabWorkspace, rec: RunRecorder, mount_point: str, p: Parameters) -> dict:
    """One 8 KiB WAL-sized write and its fdatasync, again and again, on the copies' disk."""
    job = fio.FioJob(name="flush", filename=f"{mount_point}/flush.fio", rw="write", bs="8k",
                     direct=False, ioengine="psync", size="16M",
                     runtime_s=max(2, min(p.point_s, 5)), options={"fdatasync": 1})
    # Safe: fio writes one file of its own on the lab's file system.
    text = ws.host.sudo(fio.fio_command([job], output_format="json"), timeout_s=300).stdout
    ws.host.sudo(["rm", "-f", "--", job.filename], timeout_s=60)
    rec.add_raw("fio/flush.json", text)
    document = fio.load_fio_json(text, source="fio flush")
    row = fio.fio_rows(document, source="fio flush")[0]
    sync = fio.sync_latencies(document, source="fio flush")
    p50_ms = (row["clat_p50_us"] + sync["sync_p50_us"]) / 1000
    p99_ms = (row["clat_p99_us"] + sync["sync_p99_us"]) / 1000
    for metric, value in (("p50_ms", p50_ms), ("p99_ms", p99_ms)):
        rec.add_result(config="flush", workload="fio 8k write+fdatasync", metric=metric,
                       value=round(value, 3), unit="ms")
    return {"p50_ms": p50_ms, "p99_ms": p99_ms,
            "sigma": model.lognormal_sigma(p50_ms, max(p99_ms, p50_ms))}


def measure_rtts(copies: Copies, rec: RunRecorder, p: Parameters, layout: str,
                 added: dict[int, float]) -> dict[int, float]:
    """Ping each standby from the primary's side of its link; the median round trip, ms."""
    rtts = {}
    for standby in copies.standbys:
        text = copies.ws.host.sudo(netem.ping_command(netns.inside_address(standby.number),
                                                      count=p.pings, interval_s=0.05),
                                   timeout_s=120).stdout
        rec.add_raw(f"ping/{layout}-{standby.name}.txt", text)
        summary = netem.rtt_summary(netem.parse_ping(text, source=f"ping {standby.name}"))
        rtts[standby.number] = summary.p50_ms
        for metric, value in (("rtt_p50_ms", summary.p50_ms), ("rtt_p99_ms", summary.p99_ms)):
            rec.add_result(config=layout, workload="ping", metric=metric,
                           value=round(value, 3), unit="ms", standby=standby.name,
                           zone=p.zone_of(standby.number),
                           added_rtt_ms=added[standby.number])
    return rtts


# --- the sweep ---------------------------------------------------------------------------

def measure_layout(copies: Copies, rec: RunRecorder, p: Parameters,
                   layout: str) -> dict[int, float]:
    """netem for `layout`, then the round trip to each standby (median, ms)."""
    added = copies.set_layout(p, layout)
    rec.add_raw(f"netem/{layout}.txt", copies.netem_shown())
    return measure_rtts(copies, rec, p, layout, added)


def sweep(copies: Copies, rec: RunRecorder, p: Parameters, progress: Progress,
          flush: dict) -> dict[int, float]:
    """The round trips of each layout, then each point in each layout in turn: the layouts
    are measured side by side, so a drift of the VM over the run cannot pass for theirs.
    Returns the even layout's round trips."""
    rtts: dict[str, dict[int, float]] = {}
    for layout in LAYOUTS:
        progress.step("netem and the round trips", f"{layout}: on each standby's link")
        rtts[layout] = measure_layout(copies, rec, p, layout)
        progress.detail("round trips (ms): " + ", ".join(
            f"s{n} {rtt:.1f}" for n, rtt in sorted(rtts[layout].items())))
    logs = f"{copies.mount_point}/pgbench"
    copies.ws.host.sudo(f"install -d -o postgres -g postgres {logs} && printf '%s\\n' "
                        f"{SCRIPT!r} > {logs}/commit.sql && chmod 644 {logs}/commit.sql",
                        timeout_s=60)
    local: dict[str, dict[str, float]] = {}  # per layout: the primary alone (no standby)
    for point in points(p):
        copies.set_sync(point.standby_names())
        for layout in LAYOUTS:
            progress.step("a commit point", f"{point.label}, {point.clients} client(s), "
                                                f"{layout}: {p.point_s} s")
            copies.set_layout(p, layout)
            measured = commit_point(copies, rec, p, logs, layout, point)
            progress.detail(f"p50 {measured['p50_ms']:.1f} ms, p99 {measured['p99_ms']:.1f} "
                            f"ms, {measured['commits']:.0f} commits")
            if point.method == "none":
                local[layout] = measured
            elif layout in local:
                order = [rtts[layout][n] for n in sorted(rtts[layout])]
                for quantile, metric in ((0.5, "model_p50_ms"), (0.99, "model_p99_ms")):
                    rec.add_result(config=layout, workload=point.label, metric=metric,
                                   value=round(model.quorum_commit_ms(
                                       order, point.k, local[layout]["p50_ms"],
                                       flush["p50_ms"], flush["sigma"], quantile,
                                       first=point.method == "FIRST"), 3),
                                   unit="ms", **point_dims(layout, point))
    return rtts["even"]


def point_dims(layout: str, point: Point) -> dict:
    return {"layout": layout, "method": point.method, "k": point.k, "clients": point.clients,
            "synchronous_commit": point.synchronous_commit}


def commit_point(copies: Copies, rec: RunRecorder, p: Parameters, logs: str, layout: str,
                 point: Point) -> dict[str, float]:
    """pgbench's clients commit for point_s seconds; every commit's latency from its log."""
    host = copies.ws.host
    name = f"{layout}-{point.slug}"
    command = pgbench.run_command(point.clients, point.clients, p.point_s,
                                  log_prefix=f"{logs}/{name}",
                                  extra=["-h", copies.primary.socket, "-f",
                                         f"{logs}/commit.sql"], program=PGBENCH)
    options = f"-c synchronous_commit={point.synchronous_commit}"
    # One command: pgbench, then each of its -l files (one per thread), then none left.
    out = host.sudo(f"cd {logs} && PGOPTIONS={options!r} runuser -u postgres -- "
                    + " ".join(command) + f" && for f in $(ls | grep -F -- '{name}.'); do "
                    "echo \"==> $f\"; cat \"$f\"; rm -f \"$f\"; done",
                    timeout_s=p.point_s + 300).stdout
    summary, _, texts = out.partition("==> ")
    rec.add_raw(f"pgbench/{name}.txt", summary)
    rec.add_raw(f"pgbench/{name}.log", "==> " + texts)
    files = [part.split("\n", 1) for part in texts.split("==> ")] if texts else []
    log = pgbench.parse_log_texts([(title.strip(), body) for title, body in files])
    measured = {"p50_ms": log.percentile_ms(50), "p99_ms": log.percentile_ms(99),
                "mean_ms": float(log.latencies_us.mean()) / 1000,
                "min_ms": log.percentile_ms(0)}
    dims = point_dims(layout, point)
    # (The fastest commit: a commit that waits for a standby 60 ms away cannot take less.)
    for metric, value in (("latency_min_ms", measured["min_ms"]),
                          ("latency_p50_ms", measured["p50_ms"]),
                          ("latency_p99_ms", measured["p99_ms"]),
                          ("latency_mean_ms", measured["mean_ms"])):
        rec.add_result(config=layout, workload=point.label, metric=metric,
                       value=round(value, 3), unit="ms", **dims)
    rec.add_result(config=layout, workload=point.label, metric="commits",
                   value=len(log.latencies_us), unit="count", **dims)
    rec.add_result(config=layout, workload=point.label, metric="failed", value=log.failed,
                   unit="count", **dims)
    measured["commits"] = float(len(log.latencies_us))
    return measured


# --- the drill -------------------------------------------------------------------------------

def drill(copies: Copies, rec: RunRecorder, p: Parameters, progress: Progress) -> None:
    k, lost, extra = p.quorum, p.lost_zone(), p.one_more()
    host, primary = copies.ws.host, copies.primary
    progress.step("drill: all up", f"ANY {k}, every other zone at {p.cross_zone_ms:g} ms; "
                  "a client commits numbered rows")
    copies.set_layout(p, "even")
    names = f"ANY {k} ({', '.join(s.name for s in copies.standbys)})"
    copies.set_sync(names)
    copies.psql(primary, SERVERS["postgres"].create_table_sql())
    writer = AckStream(SERVERS["postgres"].insert_loop(primary.data, socket=primary.socket))
    began = time.monotonic()
    writer.start(host, began)
    events: dict[str, float] = {}

    def now() -> float:
        return time.monotonic() - began

    def phase(name: str, standbys_up: int) -> None:
        events[f"{name} starts"] = now()
        rec.add_result(config="drill", workload=name, metric="model_commits_go_on",
                       value=int(model.commits_go_on(standbys_up, k)), unit="count",
                       standbys_up=standbys_up, k=k)

    why = writer.wait_for_first(timeout_s=120)
    if why:
        raise LabError(f"the drill's client committed nothing ({why})")
    phase("all up", STANDBYS)
    time.sleep(p.phase_s)
    zone = ", ".join(f"s{n}" for n in lost)
    progress.step("drill: a zone lost", f"zone {p.zones} ({zone} killed at once)")
    copies.kill(lost)
    phase("zone lost", STANDBYS - len(lost))
    time.sleep(p.phase_s)
    progress.step("drill: one more copy lost", f"s{extra} killed")
    copies.kill([extra])
    phase("zone + 1 lost", STANDBYS - len(lost) - 1)
    time.sleep(p.phase_s)
    progress.step("drill: the waiting commit and the survivors' rows")
    count_survivors(copies, rec, writer, [n for n in range(1, STANDBYS + 1)
                                          if n not in lost and n != extra])
    progress.step("drill: the lost copies come back", f"{len(lost) + 1} of them")
    target = lsn(copies.psql(primary, "SELECT pg_current_wal_lsn()"))
    acked_before = writer.acked
    phase("back", STANDBYS)
    copies.restart([*lost, extra])
    events["restarted"] = now()
    events["resumed"] = wait_for(lambda: writer.acked > acked_before, "commits to resume",
                                 began, timeout_s=600)
    events["caught up"] = wait_for(lambda: _every_standby_caught_up(copies, target),
                                   "every standby to catch up", began, 600)
    time.sleep(p.phase_s)
    events["end"] = now()
    copies.stop_client(writer)
    copies.wait_replayed()
    record_drill(rec, writer, events, copies)


def _every_standby_caught_up(copies: Copies, target: int) -> bool:
    """Every standby streams again and has replayed up to `target`."""
    return (all(row["state"] == "streaming" and lsn(row["replay_lsn"]) >= target
                for row in copies.replication().values())
            and len(copies.replication()) == STANDBYS)


def wait_for(ready, what: str, began: float, timeout_s: float) -> float:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise LabError(f"drill: waited {timeout_s:.0f} s for {what}")
        time.sleep(0.2)
    return time.monotonic() - began


def count_survivors(copies: Copies, rec: RunRecorder, writer: AckStream,
                    survivors: list[int]) -> None:
    """While the commit waits: what the primary shows, and which acknowledged rows each
    surviving standby holds (the one with the newest WAL should hold them all)."""
    primary = copies.primary
    waiting = copies.psql(primary, "SELECT count(*), coalesce(round(max(extract(epoch FROM "
                                   "now() - query_start))::numeric, 2), 0) FROM "
                                   "pg_stat_activity WHERE wait_event = 'SyncRep'")
    waiters, waited_s = waiting.split("|")
    acked = writer.acked
    dims = {"acknowledged": acked}
    rec.add_result(config="drill", workload="zone + 1 lost", metric="syncrep_waiters",
                   value=int(waiters), unit="count", **dims)
    rec.add_result(config="drill", workload="zone + 1 lost", metric="syncrep_wait_s",
                   value=float(waited_s), unit="s", **dims)
    rec.add_result(config="drill", workload="zone + 1 lost", metric="primary_rows",
                   value=int(copies.psql(primary, "SELECT count(*) FROM acks")), unit="count",
                   **dims)
    holds, replays = {}, {}
    for number in survivors:
        copy = copies.copies[number]
        replay, found, rows = copies.psql(copy, f"SELECT pg_last_wal_replay_lsn(), count(*) "
                                                f"FILTER (WHERE id <= {acked}), count(*) "
                                                "FROM acks").split("|")
        holds[number] = int(found)
        rec.add_result(config="drill", workload="zone + 1 lost", metric="acknowledged_found",
                       value=int(found), unit="count", standby=copy.name, replay_lsn=replay,
                       **dims)
        rec.add_result(config="drill", workload="zone + 1 lost", metric="rows_found",
                       value=int(rows), unit="count", standby=copy.name, **dims)
        replays[number] = lsn(replay)
    newest = max(replays, key=replays.get)
    rec.add_result(config="drill", workload="zone + 1 lost",
                   metric="newest_survivor_acknowledged_found", value=holds[newest],
                   unit="count", standby=f"s{newest}", **dims)


def record_drill(rec: RunRecorder, writer: AckStream, events: dict[str, float],
                 copies: Copies) -> None:
    rec.add_raw("drill/acks.csv", writer.csv())
    rec.add_raw("drill/events.json", json.dumps(events, indent=2) + "\n")
    marks = sorted((t, name) for name, t in events.items() if name.endswith("starts"))
    for index, (start, name) in enumerate(marks):
        end = marks[index + 1][0] if index + 1 < len(marks) else events["end"]
        acked = sum(start <= t < end for _, t in writer.acks)
        phase = name.removesuffix(" starts")
        rec.add_result(config="drill", workload=phase, metric="commits_acknowledged",
                       value=acked, unit="count", seconds=round(end - start, 2))
        rec.add_result(config="drill", workload=phase, metric="commits_per_s",
                       value=round(acked / max(end - start, 1e-9), 2), unit="tps")
    back = events["back starts"]
    # When the waiting commit returned, by the client's own acknowledgements (the lab only
    # looks for it once every lost copy was started again).
    resumed = min((t for _, t in writer.acks if t > back), default=events["resumed"])
    rec.add_result(config="drill", workload="back", metric="resumed_after_s",
                   value=round(resumed - back, 2), unit="s")
    rec.add_result(config="drill", workload="back", metric="caught_up_after_s",
                   value=round(events["caught up"] - back, 2), unit="s")
    rec.add_result(config="drill", workload="back", metric="restarted_after_s",
                   value=round(events["restarted"] - back, 2), unit="s")
    acked = writer.acked
    for copy in copies.copies:
        found = int(copies.psql(copy, f"SELECT count(*) FROM acks WHERE id <= {acked}"))
        rec.add_result(config="drill", workload="end", metric="acknowledged_found",
                       value=found, unit="count", standby=copy.name, acknowledged=acked)
