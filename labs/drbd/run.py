"""Run the DRBD lab on a lab VM pair: baselines, one mirrored disk, a sweep, pgbench, a drill.

The order of the steps matters:

1. fio on each VM's own data disk (the local baselines), in its first 256 MiB: 4 KiB writes
   for latency, and the article's job file (1 MiB sequential, 1 MiB, 512 KiB and 4 KiB
   random writes, one at a time) for throughput; PostgreSQL and pgbench on the primary's
   own disk (the article's local disk); the link's round trip and bandwidth; both
   disks are zeroed whole: they hold the same bytes when DRBD starts, so the resource can
   skip its initial full sync truthfully (`new-current-uuid --clear-bitmap`).
2. The DRBD resource over the two disks; fio on it with the peer disconnected (DRBD's own
   cost, no network), then the sweep: at each added round trip (netem, half on each side;
   the round trip measured with ping, one TCP stream's bandwidth measured too) fio under
   every protocol, and the article's job file
   under C (and under the other protocols at the largest round trip).
3. A file system and PostgreSQL on the DRBD device; pgbench with the peer disconnected
   (DRBD's own cost: the same file system and database, only the replication off), the resync
   that follows, then pgbench at each round trip under C, and under A and B at the largest.
4. The failover drill (labs/drbd/drill.py).

`--part sweep` (the quick profile's) runs steps 1 and 2 without PostgreSQL: no pgbench on
the bare disk, none on DRBD, no drill.

`--flush-delay-ms N` first puts a dm-delay device over each side's disk that makes every
flush wait N ms (reads and writes pass at once); everything above uses those devices, and
the drill makes the rebooted primary's again before DRBD comes back up there. With
`--pgbench-scale 1` (the source article's), the clients all update one branch row, so
their commits go one at a time and each commit's wait adds to every transaction. With
`--article-zones` too, step 3 ends with pgbench at the article's two zones, whose round
trips the run sets on its own time scale (labs/drbd/databases.py).

Everything is made through a workspace per VM, journaled first: `python -m labs clean`
removes what a killed run leaves (the resource, netem, mounts, the server).
"""

from __future__ import annotations

import json

from labs.drbd import drill
from labs.drbd.databases import databases, pgbench_on_the_bare_disk
from labs.drbd.pair import (
    RESOURCE,
    Pair,
    drbdadm,
    in_sync,
    reconnect_and_resync,
    record_link_bandwidth,
    record_netem,
    record_rtt,
    set_added_rtt,
    wait_for,
)
from labs.drbd.params import Parameters
from labs.drbd.sides import SSH_DISK_MIB, check_pair
from labs.errors import LabError, UsageError
from labs.infra.facts import host_facts
from labs.infra.hosts import Host
from labs.infra.lab_run import LabRun
from labs.infra.workspace import LabWorkspace
from labs.progress import Progress
from labs.records import RecordedRun, RunRecorder
from labs.tools import drbd, fio
from labs.tools.drbd_state import drbd_major_version

# The activity log's smallest size (67 extents of 4 MiB): after a primary crashes, every
# extent in its log is resynced, and the default 1,237 extents (4.8 GiB) would cover the
# whole 1 GiB disk. A fixed resync rate (no dynamic controller) makes resync times readable.
DISK_OPTIONS = {"al-extents": 67, "c-plan-ahead": 0, "resync-rate": "100M"}
FIO_REGION_MIB = 256  # fio writes only here
FLUSH_DELAY_DM = "drbd-flush-delay"  # each side's disk under DRBD, with --flush-delay-ms
FIO_WARMUP_S = 2  # the activity log is cold on a first pass: fio's ramp_time hides it
VARIANTS = ("direct", "fdatasync")  # fio: O_DIRECT writes; the same, each followed by fdatasync
# The article's fio job file (libaio, iodepth=1, direct=1, one job after another): name, rw,
# block size in KiB. Its size=1g becomes FIO_REGION_MIB here, the first 256 MiB of a 1 GiB
# disk, where the activity log (67 extents, 268 MiB) covers every write once warm.
ARTICLE_JOBS = (("seq-write-1m", "write", 1024), ("rand-write-1m", "randwrite", 1024),
                ("rand-write-512k", "randwrite", 512), ("rand-write-4k", "randwrite", 4))


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    first, second = check_pair(params, host)
    peer_host = second.host
    largest = max(params.added_rtt_ms)
    progress.plan(steps(params))
    # The peer's workspace is opened first so that it closes last: the primary stops its
    # database and unmounts while the peer still mirrors what that writes.
    with LabRun(params, host, progress, peers=[peer_host]) as lab_run:
        rec, ws1, (ws2,) = lab_run.rec, lab_run.ws, lab_run.peer_workspaces
        rec.add_raw("peer-host.json", json.dumps(host_facts(peer_host), indent=2) + "\n")
        proc = host.sudo("modprobe drbd && cat /proc/drbd", timeout_s=120).stdout
        peer_host.sudo("modprobe drbd", timeout_s=120)
        major = drbd_major_version(proc)
        rec.add_tool_version("drbd", proc.splitlines()[0].strip())
        rec.add_tool_version("fio", host.run("fio --version", timeout_s=60).stdout.strip())
        disks = []
        for side, ws in ((first, ws1), (second, ws2)):
            # An SSH host's disk: a loop device over a new file in the lab's work dir, so
            # that nothing of the reader's is written (O_DIRECT through to that file).
            disks.append(side.disk or ws.make_loop_device("drbd-disk", SSH_DISK_MIB))
        if params.flush_delay_ms:
            progress.step("slowing each disk's flushes", f"{params.flush_delay_ms} ms, on "
                                                         f"{host.name} and {peer_host.name}")
            disks = [ws.make_dm_flush_delay(FLUSH_DELAY_DM, disk, params.flush_delay_ms)
                     for ws, disk in zip((ws1, ws2), disks, strict=True)]
        # drbdadm finds its own section of the resource file by `uname -n`.
        names = [ws.host.run("uname -n", timeout_s=60).stdout.strip() for ws in (ws1, ws2)]
        if names[0] == names[1]:
            raise UsageError(f"{host.name} and {peer_host.name} are both called {names[0]} "
                             "(uname -n): DRBD tells the two sides apart by that name")
        resource = drbd.DrbdResource(RESOURCE, hosts=(
            drbd.DrbdHost(names[0], first.address, disks[0]),
            drbd.DrbdHost(names[1], second.address, disks[1])),
            protocol="C", disk_options=DISK_OPTIONS)
        pair = Pair(ws1, ws2, resource, resource.hosts[0].device,
                    interfaces=(first.interface, second.interface), vms=first.disk is not None,
                    jitter_ms=params.jitter_ms, loss_pct=params.loss_pct,
                    link_probe_mib=params.link_probe_mib,
                    flush_delay_dm=FLUSH_DELAY_DM if params.flush_delay_ms else None)

        local_tps = measure_baselines(params, pair, rec, progress)
        progress.step("the link's own round trip", f"{first.address} to {second.address}")
        record_rtt(pair, rec, "link", 0.0)
        progress.step("the link's bandwidth", f"{params.link_probe_mib} MiB over one TCP "
                                              "connection")
        link_mib_s = record_link_bandwidth(pair, rec, "link", 0.0)
        progress.detail(f"link: {link_mib_s:.1f} MiB/s")
        bring_up(pair, resource, major, rec, progress)
        sweep(params, pair, rec, progress)
        if params.part == "all":
            databases(params, pair, rec, progress, largest, local_tps)
        progress.step("stopping PostgreSQL, taking DRBD and netem down; writing the run")
    return lab_run.recorded()


def steps(params: Parameters) -> list[str]:
    """The run's steps, in order: the flushes slowed (--flush-delay-ms), the disks alone, the
    link, DRBD disconnected, each round trip with its measurements, then (the whole lab)
    PostgreSQL on DRBD, pgbench at each round trip, under each other protocol and at the
    article's zones (--article-zones), the drills; the teardown."""
    whole = params.part == "all"
    bare_pgbench = ["PostgreSQL on ext4", "baseline: pgbench on the primary's own disk"]
    names = ((["slowing each disk's flushes"] if params.flush_delay_ms else [])
             + ["baseline: fio on a side's own disk"] * 2 + (bare_pgbench if whole else [])
             + ["zeroing both disks", "the link's own round trip", "the link's bandwidth",
                "DRBD up", "fio on DRBD, the peer disconnected"])
    for added in params.added_rtt_ms:
        names += sweep_steps(params, added)
    if whole:
        others = [p for p in params.protocols if p != "C"]
        names += (["PostgreSQL on ext4", "pgbench on DRBD, the peer disconnected"]
                  + ["pgbench under C"] * len(params.added_rtt_ms)
                  + ["pgbench under another protocol"] * len(others)
                  + (["pgbench at one of the article's zones"] * (2 + len(others))
                     if params.article_zones else [])
                  + list(drill.DRILL_STEPS) * len(params.drill_protocols))
    return names + ["stopping PostgreSQL, taking DRBD and netem down; writing the run"]


def sweep_steps(params: Parameters, added: float) -> list[str]:
    """At one added round trip: the link measured, 4 KiB writes under every protocol, the
    article's throughput jobs under C (and under the others at the largest round trip)."""
    throughput = ["C"] + [p for p in params.protocols
                          if p != "C" and added == max(params.added_rtt_ms)]
    return (["a round trip: ping and one TCP stream"]
            + ["fio: 4 KiB writes"] * len(params.protocols)
            + ["fio: the article's throughput jobs"] * len(throughput))


def run_fio(ws: LabWorkspace, rec: RunRecorder, jobs: list[fio.FioJob], device: str,
            label: str, timeout_s: float) -> dict:
    """Run fio's jobs on `device`, keep its JSON as raw/fio/LABEL.json, return it parsed."""
    # Safe: fio writes only the lab's device (a lab VM disk or the lab's DRBD device).
    text = ws.run_guarded(fio.fio_command(jobs, output_format="json"), [device],
                          timeout_s=timeout_s).stdout
    rec.add_raw(f"fio/{label}.json", text)
    document = fio.load_fio_json(text, source=f"fio {label}")
    errors = fio.job_errors(document)
    if errors:
        raise LabError(f"fio {label}: job failed with errno {errors}")
    return document


def fio_write_latency(params: Parameters, ws: LabWorkspace, rec: RunRecorder, device: str,
                      config: str, *, protocol: str, added_rtt_ms: float,
                      rtt_ms: float | None) -> None:
    """4 KiB random writes at queue depth 1, O_DIRECT, and the same with fdatasync: with
    psync, a write() and then an fdatasync() in sequence, as a commit does."""
    for variant in VARIANTS:
        options: dict[str, str | int] = {"ramp_time": FIO_WARMUP_S}
        if variant == "fdatasync":
            options["fdatasync"] = 1
        job = fio.FioJob(name=f"{config}-{variant}", filename=device, rw="randwrite", bs="4k",
                         iodepth=1, size=f"{FIO_REGION_MIB}M", runtime_s=params.fio_s,
                         seed=params.seed, options=options,
                         ioengine="psync" if variant == "fdatasync" else "libaio")
        document = run_fio(ws, rec, [job], device, f"{config}-{variant}",
                           timeout_s=params.fio_s + 300)
        row = next(r for r in fio.fio_rows(document) if r["op"] == "write")
        values = {"write_p50_ms": row["clat_p50_us"] / 1000,
                  "write_p99_ms": row["clat_p99_us"] / 1000,
                  "write_mean_ms": row["lat_mean_us"] / 1000,
                  # At queue depth 1 one write (and its sync) follows another: the time
                  # between them is the whole cost a committing program waits for.
                  "cycle_ms": 1000 / row["iops"], "iops": row["iops"]}
        if variant == "fdatasync":
            sync = fio.sync_latencies(document, source=f"fio {config}-{variant}")
            values.update(sync_p50_ms=sync["sync_p50_us"] / 1000,
                          sync_p99_ms=sync["sync_p99_us"] / 1000)
        dims = {"variant": variant, "protocol": protocol, "added_rtt_ms": added_rtt_ms,
                "rtt_ms": rtt_ms if rtt_ms is not None else float("nan")}
        for metric, value in values.items():
            rec.add_result(config=config, workload=f"fio-4k-{variant}", metric=metric,
                           value=value, unit="iops" if metric == "iops" else "ms", **dims)


def fio_article_throughput(params: Parameters, ws: LabWorkspace, rec: RunRecorder,
                           device: str, config: str, *, protocol: str, added_rtt_ms: float,
                           rtt_ms: float | None) -> None:
    """The article's job file: four jobs at queue depth 1, one after another."""
    jobs = [fio.FioJob(name=name, filename=device, rw=rw, bs=f"{kib}k", iodepth=1,
                       size=f"{FIO_REGION_MIB}M", runtime_s=params.throughput_s, seed=params.seed)
            for name, rw, kib in ARTICLE_JOBS]
    document = run_fio(ws, rec, jobs, device, f"{config}-article",
                       timeout_s=len(jobs) * params.throughput_s + 300)
    writes = {row["job"]: row for row in fio.fio_rows(document) if row["op"] == "write"}
    for name, rw, kib in ARTICLE_JOBS:
        row = writes[name]
        dims = {"job": name, "rw": rw, "block_kib": kib, "protocol": protocol,
                "added_rtt_ms": added_rtt_ms,
                "rtt_ms": rtt_ms if rtt_ms is not None else float("nan")}
        for metric, value, unit in (("mib_s", row["bw_bytes_s"] / 2**20, "MiB/s"),
                                    ("iops", row["iops"], "iops"),
                                    # One write after another: the time between two writes.
                                    ("cycle_ms", 1000 / row["iops"], "ms"),
                                    ("write_p50_ms", row["clat_p50_us"] / 1000, "ms")):
            rec.add_result(config=config, workload=f"article-{name}", metric=metric,
                           value=value, unit=unit, **dims)


# --- the steps ---------------------------------------------------------------------------------

def measure_baselines(params: Parameters, pair: Pair, rec: RunRecorder,
                      progress: Progress) -> float:
    """fio on each side's own disk, pgbench on the primary's (the whole lab), both disks
    zeroed. Returns that pgbench's TPS (0 without it)."""
    for ws in pair.both:
        disk = pair.disk(ws)
        progress.step("baseline: fio on a side's own disk", f"{ws.host.name}'s {disk}")
        fio_write_latency(params, ws, rec, disk, f"local-{ws.host.name}", protocol="none",
                          added_rtt_ms=0.0, rtt_ms=None)
        fio_article_throughput(params, ws, rec, disk, f"local-{ws.host.name}",
                               protocol="none", added_rtt_ms=0.0, rtt_ms=None)
    local_tps = 0.0
    if params.part == "all":
        local_tps = pgbench_on_the_bare_disk(params, pair, rec, progress)
    progress.step("zeroing both disks", "whole, so that they hold the same bytes")
    for ws in pair.both:
        disk = pair.disk(ws)
        size_mib = int(ws.host.sudo(["blockdev", "--getsize64", disk], timeout_s=60).stdout) \
            // 2**20
        # Safe: the lab's disk (a lab VM's own data disk, or the loop device over the lab's
        # file on an SSH host), which the guard allowed. The whole disk, not only
        # fio's region: an earlier run on the same VMs may have left anything anywhere.
        ws.run_guarded(["dd", "if=/dev/zero", f"of={disk}", "bs=1M", f"count={size_mib}",
                        "oflag=direct", "status=none"], [disk], timeout_s=1800)
    return local_tps


def bring_up(pair: Pair, resource: drbd.DrbdResource, major: int, rec: RunRecorder,
             progress: Progress) -> None:
    progress.step("DRBD up", f"resource {resource.name}: metadata, up on both, "
                  f"{pair.primary.host.name} primary (no initial sync: both disks hold the "
                  "same zeros)")
    text = drbd.resource_file(resource, major)
    rec.add_raw("drbd/resource.res", text)
    for ws in pair.both:
        ws.make_drbd(resource, text, section=pair.node(ws).name)
    wait_for(pair.primary, lambda s: s.connection == "Connected", "Connected", timeout_s=120)
    drbdadm(pair.primary, pair, drbd.new_current_uuid_command(resource.name))
    drbdadm(pair.primary, pair, drbd.primary_command(resource.name))
    wait_for(pair.primary, in_sync, "UpToDate on both sides", timeout_s=120)
    # The resource file must survive a power cut of the primary (the drill brings it back).
    pair.primary.host.sudo("sync", timeout_s=120)


def sweep(params: Parameters, pair: Pair, rec: RunRecorder, progress: Progress) -> None:
    name = pair.resource.name
    progress.step("fio on DRBD, the peer disconnected", "DRBD's own cost, no network")
    drbdadm(pair.primary, pair, drbd.disconnect_command(name))
    fio_write_latency(params, pair.primary, rec, pair.device, "drbd-disconnected",
                      protocol="none", added_rtt_ms=0.0, rtt_ms=None)
    fio_article_throughput(params, pair.primary, rec, pair.device, "drbd-disconnected",
                           protocol="none", added_rtt_ms=0.0, rtt_ms=None)
    reconnect_and_resync(pair, rec, "resync-after-fio")
    largest = max(params.added_rtt_ms)
    for added in params.added_rtt_ms:
        set_added_rtt(pair, added)
        progress.step("a round trip: ping and one TCP stream", f"+{added:g} ms, over the link")
        record_netem(pair, rec, f"added-{added:g}")
        rtt = record_rtt(pair, rec, f"added-{added:g}", added)
        # One stream's bandwidth falls as the round trip grows (its window must cover the
        # round trip): measured here, at the round trip the jobs below see.
        link_mib_s = record_link_bandwidth(pair, rec, f"added-{added:g}", added)
        progress.detail(f"+{added:g} ms: round trip {rtt:.1f} ms, one stream "
                        f"{link_mib_s:.1f} MiB/s")
        # 4 KiB latency under every protocol; the article's throughput jobs under C at every
        # round trip, under the others at the largest.
        measurements = [(p, "fio: 4 KiB writes", fio_write_latency) for p in params.protocols] + [
            (p, "fio: the article's throughput jobs", fio_article_throughput)
            for p in ["C"] + [p for p in params.protocols if p != "C" and added == largest]]
        for protocol, what, measure in measurements:
            progress.step(what, f"round trip +{added:g} ms (measured {rtt:.1f} ms), "
                                f"protocol {protocol}")
            drbdadm(pair.primary, pair, drbd.net_options_command(name, protocol=protocol))
            measure(params, pair.primary, rec, pair.device, f"drbd-{protocol}-added-{added:g}",
                    protocol=protocol, added_rtt_ms=added, rtt_ms=rtt)
    # Back to the resource file's protocol while connected: a node that reconnects with
    # another protocol than its peer's is refused ("incompatible protocol settings").
    drbdadm(pair.primary, pair, drbd.net_options_command(name, protocol="C"))
