"""PostgreSQL and pgbench on the DRBD lab's disks: the bare disk, the mirror at every round
trip, and the source article's two zones on the run's own time scale.

The zones. The article measured pgbench on a mirror within one zone and across two as a
fraction of the local disk's TPS. Its transactions took about 0.9 ms each (its sample
output, read as one transaction at a time, labs/drbd/article.py); the lab's take k times as
long (k, the time scale, measured from the lab's own pgbench on the bare disk). A fraction
survives if every wait grows by the same k: each zone's round trip is the one at which a
commit here adds k times what the article's mirror added to a transaction, assuming a commit
waits one round trip (measured from pgbench under C at the link's own round trip). The run
then measures pgbench at those round trips, beside the model's fraction for the round trip
it measured.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable

from labs.drbd import article, drill, model
from labs.drbd.pair import (
    POSTGRES,
    Pair,
    cpu_s,
    drbd_state,
    drbdadm,
    reconnect_and_resync,
    record_rtt,
    set_added_rtt,
)
from labs.drbd.params import PGBENCH_CLIENTS, Parameters
from labs.infra.workspace import LabWorkspace
from labs.progress import Progress
from labs.records import RunRecorder
from labs.tools import drbd, pgbench

ZONES = ("one zone", "two zones")  # the article's keys (labs/drbd/article.py)


def databases(params: Parameters, pair: Pair, rec: RunRecorder, progress: Progress,
              largest: float, local_tps: float) -> None:
    """PostgreSQL on the mirror: pgbench at every point (and at the article's two zones),
    then the failover drills."""
    set_added_rtt(pair, 0.0)  # the set-up is no measurement: no added delay to wait through
    mount_point = start_postgres(pair.primary, pair.device, "drbd", rec, progress,
                                 params.pgbench_scale)
    under_c = pgbench_runs(params, pair, rec, progress, mount_point, largest)
    if params.article_zones:
        zone_runs(params, pair, rec, progress, mount_point, local_tps, under_c[0.0])
    for protocol in params.drill_protocols:
        drill.failover(params, pair, rec, progress, mount_point, protocol, largest)


def pgbench_on_the_bare_disk(params: Parameters, pair: Pair, rec: RunRecorder,
                             progress: Progress) -> float:
    """pgbench on the primary's own disk: the article's "local disk", no DRBD anywhere.
    Returns its TPS."""
    ws, disk = pair.primary, pair.disk(pair.primary)
    mount_point = start_postgres(ws, disk, "local", rec, progress,
                                 params.pgbench_scale)
    progress.step("baseline: pgbench on the primary's own disk", f"{ws.host.name}, "
                                                                    f"{params.pgbench_s} s")
    tps = pgbench_once(params, pair, rec, mount_point, "local", protocol="none",
                       added_rtt_ms=0.0, rtt_ms=None)
    ws.remove("server", f"{mount_point}/pg")
    ws.remove("mount", mount_point)
    return tps


def start_postgres(ws: LabWorkspace, device: str, name: str, rec: RunRecorder,
                   progress: Progress, scale: int) -> str:
    """ext4 on `device`, a PostgreSQL cluster on it, pgbench's tables; returns the mount point
    (the cluster's data directory is POINT/pg)."""
    progress.step("PostgreSQL on ext4", f"on {device}, with pgbench's tables "
                                        f"(scale {scale})")
    ws.make_filesystem(device, "ext4", label=f"{name}lab")
    mount_point = ws.mount(device, name)
    data = f"{mount_point}/pg"
    ws.host.sudo(POSTGRES.init_command(data), timeout_s=900)
    ws.start_server(data, POSTGRES.start_command(data, "synchronous_commit", "on"),
                    stop=POSTGRES.stop_command(data), pid_file=POSTGRES.pid_file(data))
    version = ws.host.sudo(POSTGRES.sql_command(data, "SHOW server_version"), timeout_s=120)
    rec.add_tool_version("postgres", version.stdout.strip())
    # Scale 1 (the article's) on purpose puts every client on one branch row.
    init = pgbench.init_command(scale, PGBENCH_CLIENTS, extra=["-h", data],
                                shared_branches=True)
    ws.host.sudo(f"runuser -u postgres -- {shlex.join(init)}", timeout_s=1800)
    return mount_point


def pgbench_once(params: Parameters, pair: Pair, rec: RunRecorder, mount_point: str, config: str,
                 *, protocol: str, added_rtt_ms: float, rtt_ms: float | None) -> float:
    data = f"{mount_point}/pg"
    command = pgbench.run_command(PGBENCH_CLIENTS, 2, params.pgbench_s, progress_s=1,
                                  extra=["-h", data])
    # DRBD's counters exist once the resource does (not for the bare disk's baseline).
    on_drbd = config != "local"
    # Each run starts clean: what the one before (or pgbench's set-up) left dirty is written
    # out first, not during this run's seconds.
    pair.primary.host.sudo(f"{POSTGRES.sql_command(data, 'CHECKPOINT')} >/dev/null && sync",
                           timeout_s=600)
    before = drbd_state(pair.primary) if on_drbd else None
    cpu_before = {ws.host.name: cpu_s(pair, ws) for ws in pair.both}
    started = time.monotonic()
    text = pair.primary.host.sudo(f"runuser -u postgres -- {shlex.join(command)} 2>&1",
                                  timeout_s=params.pgbench_s + 600).stdout
    wall_s = time.monotonic() - started
    cpu = {ws.host.name: cpu_s(pair, ws) - cpu_before[ws.host.name] for ws in pair.both}
    after = drbd_state(pair.primary) if on_drbd else None
    rec.add_raw(f"pgbench/{config}.txt", text)
    summary = pgbench.parse_summary(text, source=f"pgbench {config}")
    dims = {"protocol": protocol, "added_rtt_ms": added_rtt_ms,
            "rtt_ms": rtt_ms if rtt_ms is not None else float("nan")}
    rec.add_result(config=config, workload="pgbench", metric="tps", value=summary.tps,
                   unit="tps", **dims)
    rec.add_result(config=config, workload="pgbench", metric="latency_avg_ms",
                   value=summary.latency_avg_ms, unit="ms", **dims)
    if before is not None and after is not None:
        # What the run wrote to the local disk and sent to the peer (DRBD's own counters):
        # the bytes behind each transaction, commits and the data pages written back alike.
        rec.add_result(config=config, workload="pgbench", metric="disk_write_bytes",
                       value=(after.disk_write_kib - before.disk_write_kib) * 1024,
                       unit="bytes", **dims)
        rec.add_result(config=config, workload="pgbench", metric="sent_bytes",
                       value=(after.sent_kib - before.sent_kib) * 1024, unit="bytes", **dims)
    rec.add_result(config=config, workload="pgbench", metric="transactions",
                   value=summary.transactions, unit="count", **dims)
    # The CPU seconds each side used during the run (pgbench's own start and end included):
    # two lab VMs share this machine's processors, and their QEMUs' times say who had them.
    for role, ws in (("primary", pair.primary), ("peer", pair.peer)):
        rec.add_result(config=config, workload="pgbench", metric=f"{role}_cpu_s",
                       value=cpu[ws.host.name], unit="s", **dims)
    rec.add_result(config=config, workload="pgbench", metric="wall_s", value=wall_s, unit="s",
                   **dims)
    return summary.tps


def pgbench_runs(params: Parameters, pair: Pair, rec: RunRecorder, progress: Progress,
                 mount_point: str, largest: float) -> dict[float, tuple[float, float]]:
    """pgbench disconnected, under C at every added round trip, under the other protocols at
    the largest. Returns C's (TPS, measured round trip in ms) by added round trip."""
    name = pair.resource.name
    under_c = {}
    set_added_rtt(pair, 0.0)
    progress.step("pgbench on DRBD, the peer disconnected", f"{params.pgbench_s} s")
    drbdadm(pair.primary, pair, drbd.disconnect_command(name))
    pgbench_once(params, pair, rec, mount_point, "drbd-disconnected", protocol="none",
                 added_rtt_ms=0.0, rtt_ms=None)
    reconnect_and_resync(pair, rec, "resync-after-pgbench")
    drbdadm(pair.primary, pair, drbd.net_options_command(name, protocol="C"))
    for added in params.added_rtt_ms:
        set_added_rtt(pair, added)
        rtt = record_rtt(pair, rec, f"pgbench-added-{added:g}", added)
        progress.step("pgbench under C", f"round trip +{added:g} ms (measured {rtt:.1f} ms)")
        tps = pgbench_once(params, pair, rec, mount_point, f"drbd-C-added-{added:g}",
                           protocol="C", added_rtt_ms=added, rtt_ms=rtt)
        under_c[added] = (tps, rtt)
    others = [p for p in params.protocols if p != "C"]
    if others:
        set_added_rtt(pair, largest)
        rtt = record_rtt(pair, rec, f"pgbench-others-added-{largest:g}", largest)
        pgbench_under_each(params, pair, rec, progress, mount_point, others,
                           step="pgbench under another protocol",
                           detail=lambda p: f"{p}, round trip +{largest:g} ms",
                           config=lambda p: f"drbd-{p}-added-{largest:g}",
                           added_rtt_ms=largest, rtt_ms=rtt)
    return under_c


def pgbench_under_each(params: Parameters, pair: Pair, rec: RunRecorder, progress: Progress,
                       mount_point: str, protocols: list[str], *, step: str,
                       detail: Callable[[str], str], config: Callable[[str], str],
                       added_rtt_ms: float, rtt_ms: float) -> None:
    """pgbench under each protocol in turn at one round trip, then back to C (the resource
    file's). `detail` and `config` name each protocol's step and results."""
    name = pair.resource.name
    for protocol in protocols:
        progress.step(step, detail(protocol))
        drbdadm(pair.primary, pair, drbd.net_options_command(name, protocol=protocol))
        pgbench_once(params, pair, rec, mount_point, config(protocol), protocol=protocol,
                     added_rtt_ms=added_rtt_ms, rtt_ms=rtt_ms)
    drbdadm(pair.primary, pair, drbd.net_options_command(name, protocol="C"))


def zone_runs(params: Parameters, pair: Pair, rec: RunRecorder, progress: Progress,
              mount_point: str, local_tps: float, at_the_link: tuple[float, float]) -> None:
    """pgbench at the article's two zones on this run's time scale: under C in each, under
    the other protocols across zones. `at_the_link`: C's TPS and round trip (ms) with
    nothing added, where the commit's cost per round trip is measured from. Meant for
    --pgbench-scale 1 (Parameters.check refuses the zones otherwise): only commits that go
    one at a time add their whole wait to every transaction."""
    link_tps, link_rtt_ms = at_the_link
    plan = zone_plan(local_tps, link_tps, link_rtt_ms)
    for zone, target_rtt_ms in plan.items():
        added = round(max(0.0, target_rtt_ms - link_rtt_ms), 1)
        if 0 < added < 2 * params.jitter_ms:
            added = 2 * params.jitter_ms  # each side's delay at least its jitter, as checked
        set_added_rtt(pair, added)
        slug = zone.replace(" ", "-")
        rtt = record_rtt(pair, rec, f"zone-{slug}", added)
        for metric, value, unit in zone_measures(plan, zone, local_tps, link_tps, link_rtt_ms,
                                                 rtt):
            rec.add_result(config=f"zone-{slug}", workload="zones", metric=metric,
                           value=value, unit=unit, added_rtt_ms=added, rtt_ms=rtt)
        protocols = ["C"] + ([p for p in params.protocols if p != "C"]
                             if zone == ZONES[-1] else [])
        pgbench_under_each(
            params, pair, rec, progress, mount_point, protocols,
            step="pgbench at one of the article's zones",
            detail=lambda p, z=zone, r=rtt, t=target_rtt_ms: (
                f"{z}, {p}, round trip {r:.1f} ms (the model's {t:.1f} ms)"),
            config=lambda p, s=slug: f"zone-{s}-{p}", added_rtt_ms=added, rtt_ms=rtt)


def zone_plan(local_tps: float, link_tps: float, link_rtt_ms: float) -> dict[str, float]:
    """The round trip (ms) of each of the article's zones on this run's time scale: where a
    commit adds k times what the article's mirror added to a transaction. k times the
    article's time per transaction is the lab's own, so the target is the time that keeps
    the article's fraction of the lab's own rate; k is what it says about distances."""
    article_ms = article.sample_ms_per_transaction()
    scale = model.time_scale(lab_ms_per_transaction=1000 / local_tps,
                             article_ms_per_transaction=article_ms)
    ratios = article.article_ratios()
    return {zone: model.zone_round_trip_ms(
        target_added_ms=scale * model.added_commit_ms_for_ratio(
            ratios[zone], local_ms_per_transaction=article_ms),
        measured_added_ms=1000 / link_tps - 1000 / local_tps, measured_rtt_ms=link_rtt_ms)
        for zone in ZONES}


def zone_measures(plan: dict[str, float], zone: str, local_tps: float, link_tps: float,
                  link_rtt_ms: float, rtt_ms: float) -> list[tuple[str, float, str]]:
    """What the run records for one zone: the time scale, the round trip the model asked for
    and the one measured, the article's ratio and the model's at the measured round trip."""
    scale = model.time_scale(lab_ms_per_transaction=1000 / local_tps,
                             article_ms_per_transaction=article.sample_ms_per_transaction())
    return [("time_scale", scale, "ratio"), ("target_rtt_ms", plan[zone], "ms"),
            ("article_ratio", article.article_ratios()[zone], "ratio"),
            ("model_ratio", model.serial_commit_ratio(local_tps=local_tps, anchor_tps=link_tps,
                                                      anchor_rtt_ms=link_rtt_ms, rtt_ms=rtt_ms),
             "ratio")]
