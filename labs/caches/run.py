"""Run the caches lab on this machine: the block level, RocksDB, then the CQL engine.

Everything it makes lives in a LabWorkspace: the loop device and its ext4 file system (the
loop device reads its backing file with direct I/O, so what the lab's file system reads
comes from the disk and is cached only once), the containers, the probe script. The lab
sets readahead only on its own loop device and drops the page cache only of its own files.
"""

from __future__ import annotations

import time

import docker
import docker.errors

from labs.caches import legs
from labs.caches.cql import FLAVORS, CqlNode, table_name
from labs.caches.hostside import LabDisk
from labs.caches.params import Parameters
from labs.caches.rocks import RocksNode
from labs.errors import UsageError
from labs.infra import containers, images
from labs.infra.facts import require_memory_mib
from labs.infra.hosts import Host
from labs.infra.lab_run import LabRun
from labs.progress import Progress
from labs.records import RecordedRun


def choose_cql_image(engine: docker.DockerClient, p: Parameters) -> tuple[str, str]:
    """The CQL engine's image and how it was chosen; one line when it is not there."""
    if p.engine == "cassandra":
        choice = images.ensure_image(engine, True, "cassandra", p.cql_image)
        return choice.tag, choice.describe()
    tag = p.image_for_engine()
    try:
        engine.images.get(tag)
    except docker.errors.ImageNotFound:
        raise UsageError(f"the ScyllaDB image {tag} is not on this engine, and ScyllaDB cannot "
                         f"be built from Debian packages: where a registry is reachable, run "
                         f"`docker pull {tag}`, then this command again") from None
    return tag, f"image {tag} (official)"


def check_memory(host: Host, p: Parameters) -> None:
    require_memory_mib(host, p.cql_memory_mib + p.rocks_memory_mib + 512, "caches",
                       f"its containers (--cql-memory-mib {p.cql_memory_mib}, "
                       f"--rocks-memory-mib {p.rocks_memory_mib})")


def load_average(host: Host) -> float:
    """The host's 1-minute load average: how busy the machine was (latencies are noisy)."""
    return float(host.run(["cat", "/proc/loadavg"], timeout_s=60).stdout.split()[0])


def steps(p: Parameters) -> list[str]:
    """The run's steps, in order: the set-up, the block level, RocksDB, the CQL engine (one
    server per setting), the teardown."""
    block = (["recording the images' digests", "a file system on a loop device",
              "block level: a file of random bytes"]
             + ["block level: reads"] * len(legs.BLOCK_READAHEADS))
    rocks = (["RocksDB: starting its container"] + ["RocksDB: loading"] * len(p.row_sizes)
             + ["RocksDB engine: cold reads"] * (len(p.row_sizes) * len(legs.ROCKS_READS))
             + ["RocksDB: working set", "RocksDB on a throttled device"]
             + ["RocksDB unthrottled: cold reads"] * len(legs.ROCKS_READS)
             + ["RocksDB throttled: cold reads"] * len(legs.ROCKS_READS))
    return block + rocks + cql_steps(p) + ["removing the containers and the file system; "
                                           "writing the run"]


def cql_steps(p: Parameters) -> list[str]:
    """The CQL engine's steps: a server per setting, the tables loaded by the first, the
    cold passes on each, the sweep and the throttled passes on the last."""
    engine, settings = FLAVORS[p.engine].engine, FLAVORS[p.engine].settings
    tables = len(p.row_sizes) * len(legs.COMPRESSIONS)
    names = []
    for number in range(len(settings)):
        names += [f"{engine}: starting its container"]
        names += [f"{engine}: loading the tables"] if number == 0 else []
        names += [f"{engine} engine: cold reads"] * tables
    return names + [f"{engine}: working set", f"{engine} on a throttled device"] \
        + [f"{engine} unthrottled: cold reads"] * len(legs.COMPRESSIONS) \
        + [f"{engine} throttled: cold reads"] * len(legs.COMPRESSIONS)


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    p = params
    if not host.sudo("true", check=False, timeout_s=60).ok:
        raise UsageError(f"host {host.name}: the caches lab needs root there (a loop device, "
                         "a mount, readahead on it, containers): run it with sudo")
    # Before anything is made or printed: the images and the memory, one line if missing.
    engine = containers.engine_for(host)
    cql_image, cql_choice = choose_cql_image(engine, p)
    rocks_image = images.ensure_image(engine, True, "rocksdb", None).tag
    check_memory(host, p)
    progress.plan(steps(p))
    started = time.monotonic()
    with LabRun(p, host, progress) as lab_run:
        rec, ws = lab_run.rec, lab_run.ws
        out = legs.Recorder(rec)
        out.add("lab", "start", "load_average", load_average(host), "ratio")
        progress.step("recording the images' digests")
        for tag in (cql_image, rocks_image):
            rec.add_tool_version(f"image {tag}", images.image_digest(ws.engine(), tag))
        rec.add_tool_version("docker", ws.engine().version().get("Version", "unknown"))
        progress.say(f"using {cql_choice} and image {rocks_image}")
        progress.step("a file system on a loop device", f"ext4, {p.fs_size_mib} MiB")
        fs = ws.make_loop_filesystem("cachefs", p.fs_size_mib, direct_io=True)
        disk = LabDisk(ws, fs, rec)
        disk.install_probe()
        rec.add_tool_version("loop device", f"{fs.device}, logical block "
                                            f"{disk.logical_block_bytes()} bytes")
        legs.block_level(p, disk, out, progress)
        run_rocksdb(p, disk, out, rocks_image, progress)
        run_cql(p, disk, out, cql_image, progress)
        out.add("lab", "end", "load_average", load_average(host), "ratio")
        out.add("lab", "all", "wall_time", round(time.monotonic() - started, 1), "s")
        progress.step("removing the containers and the file system; writing the run")
    return lab_run.recorded()


def run_rocksdb(p: Parameters, disk: LabDisk, out: legs.Recorder, image: str,
                progress: Progress) -> None:
    token = disk.token
    progress.step("RocksDB: starting its container")
    node = RocksNode(disk, image, f"caches-{token}-rocks", p.rocks_memory_mib)
    node.start()
    first = time.monotonic()
    node.open("probe", False, 1)
    out.add("startup", "rocksdb", "start_to_first_query", node.ready_s
            + time.monotonic() - first, "s", engine="rocksdb")
    out.rec.add_tool_version("rocksdict", "0.3.29 (the rocksdb image's pinned wheel)")
    for row_bytes in p.row_sizes:
        rows = legs.rocks_rows(p, row_bytes)
        progress.step("RocksDB: loading", f"{rows:,} rows of {row_bytes} B, flush, "
                                                 "compaction")
        node.open(f"db{row_bytes}", False, p.rocks_cold_cache_mib)
        loaded = node.call("/load", {"count": rows, "value_bytes": row_bytes, "seed": p.seed})
        out.add("load", "rocksdb", "load_time", loaded["load_s"], "s", engine="rocksdb",
                row_bytes=row_bytes)
    legs.rocks_cold_passes(p, node, disk, out, progress)
    progress.step("RocksDB: working set", "against a block cache and a row cache")
    legs.rocks_sweep(p, node, disk, out, progress)
    progress.step("RocksDB on a throttled device", f"{p.throttle_read_iops} reads/s, "
                  f"{p.throttle_read_kibps} KiB/s")
    # The same passes just before, unthrottled: the two differ only in the limits.
    legs.rocks_cold_passes(p, node, disk, out, progress, leg="unthrottled",
                           reads=p.throttled_reads, row_sizes=(min(p.row_sizes),))
    disk.set_read_limits(node.container, p.throttle_read_iops, p.throttle_read_kibps * 1024)
    legs.rocks_cold_passes(p, node, disk, out, progress, leg="throttled",
                           reads=p.throttled_reads, row_sizes=(min(p.row_sizes),))
    node.stop()


def run_cql(p: Parameters, disk: LabDisk, out: legs.Recorder, image: str,
            progress: Progress) -> None:
    flavor = FLAVORS[p.engine]
    token = disk.token
    tables = {table_name(s, c): c for s in p.row_sizes for c in legs.COMPRESSIONS}
    tables[legs.SWEEP_TABLE] = False
    for number, setting in enumerate(flavor.settings):
        progress.step(f"{flavor.engine}: starting its container", setting)
        node = CqlNode(disk, flavor, image, f"caches-{token}-cql{number}", setting,
                       p.cql_heap_mib, p.cql_memory_mib)
        node.start()
        out.add("startup", flavor.engine, "start_to_first_query", node.start_to_first_query_s,
                "s", engine=flavor.engine, setting=setting)
        out.rec.add_tool_version(flavor.engine, node.version())
        if number == 0:
            progress.step(f"{flavor.engine}: loading the tables", f"{len(tables)} of them")
            for statement in node.create_tables(tables):
                out.rec.add_command(statement)
            for name, compressed in tables.items():
                if name == legs.SWEEP_TABLE:
                    row_bytes, rows = p.sweep_row_kib * 1024, p.sweep_rows
                else:
                    row_bytes = int(name[1:].split("_")[0])
                    rows = legs.cql_rows(p, row_bytes, compressed)
                progress.detail(f"{name}: {rows:,} rows")
                seconds = node.load(name, rows, row_bytes, p.seed + row_bytes)
                out.add("load", flavor.engine, "load_time", seconds, "s", engine=flavor.engine,
                        row_bytes=row_bytes, compression="lz4" if compressed else "none")
            for command in node.flush_and_compact():
                out.rec.add_command(command)
        legs.cql_cold_passes(p, node, disk, out, progress)
        if flavor.engine == "cassandra":
            out.rec.add_raw(f"nodetool/info-{setting}.txt", node.nodetool("info"))
        if number == len(flavor.settings) - 1:
            progress.step(f"{flavor.engine}: working set", "against the page cache it may "
                                                                 "keep")
            legs.cql_sweep(p, node, disk, out, progress)
            progress.step(f"{flavor.engine} on a throttled device",
                          f"{p.throttle_read_iops} reads/s, {p.throttle_read_kibps} KiB/s")
            node.set_memory_limit_mib(p.cql_memory_mib)  # the sweep's limit no longer holds
            small_tables = [(min(p.row_sizes), c) for c in legs.COMPRESSIONS]
            legs.cql_cold_passes(p, node, disk, out, progress, leg="unthrottled",
                                 reads=p.throttled_reads, tables=small_tables)
            disk.set_read_limits(node.container, p.throttle_read_iops,
                                 p.throttle_read_kibps * 1024)
            legs.cql_cold_passes(p, node, disk, out, progress, leg="throttled",
                                 reads=p.throttled_reads, tables=small_tables)
        node.stop()
