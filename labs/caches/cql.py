"""A CQL engine in a container, driven through the Python driver: Cassandra or ScyllaDB.

One code path for both: the flavour only decides the container (image, arguments, data
folder, settings) and how a read skips the engine's own cache. Cassandra reads its files
through the page cache (`disk_access_mode` mmap_index_only or standard); ScyllaDB reads
with direct I/O into its own row cache, and `SELECT ... BYPASS CACHE` reads past that
cache without filling it, which is how a cold read is asked of it.
"""

from __future__ import annotations

import logging
import random
import shlex
import time
from dataclasses import dataclass

from docker.models.containers import Container

from labs.caches.hostside import LabDisk
from labs.caches.rocks import free_local_port
from labs.errors import LabError
from labs.infra.container_exec import exec_in
from labs.infra.containers import ContainerSpec
from labs.tools import nodetool
from labs.tools.cgroupmem import memory_accounting

KEYSPACE = "lab"
CQL_PORT = 9042


@dataclass(frozen=True)
class Flavor:
    engine: str  # "cassandra" or "scylla"
    data_dir: str  # inside the container
    settings: tuple[str, ...]  # the read settings it runs with (container restarts between)
    nodetool_user: str
    cold_suffix: str  # appended to a SELECT that must not be served by the engine's cache

    def container_spec(self, name: str, image: str, data: str, port: int, setting: str,
                       heap_mib: int, memory_mib: int, device: str, read_iops: int = 0,
                       read_bps: int = 0) -> ContainerSpec:
        limits = {"device_read_iops": {device: read_iops} if read_iops else {},
                  "device_read_bps": {device: read_bps} if read_bps else {}}
        health = ["bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{CQL_PORT}"]
        if self.engine == "scylla":
            # The official image's own flags (ScyllaDB docs, "best practices on Docker").
            command = ["--smp", "1", "--memory", f"{heap_mib}M", "--overprovisioned", "1",
                       "--developer-mode", "1", "--broadcast-rpc-address", "127.0.0.1"]
            return ContainerSpec(name=name, image=image, command=command,
                                 binds={data: self.data_dir}, ports={CQL_PORT: port},
                                 health_command=health, memory_limit_mib=memory_mib, **limits)
        environment = {"CASSANDRA_HEAP": f"{heap_mib}M", "CASSANDRA_DISK_ACCESS_MODE": setting,
                       "CASSANDRA_BROADCAST_RPC_ADDRESS": "127.0.0.1",
                       # One node, nobody to wait for: skip the ring and gossip waits.
                       "CASSANDRA_RING_DELAY_MS": "1000", "CASSANDRA_SKIP_GOSSIP_SETTLE": "1",
                       "CASSANDRA_NUM_TOKENS": "1"}
        return ContainerSpec(name=name, image=image, environment=environment,
                             binds={data: self.data_dir}, ports={CQL_PORT: port},
                             health_command=health, memory_limit_mib=memory_mib, **limits)


FLAVORS = {
    "cassandra": Flavor("cassandra", "/var/lib/cassandra", ("mmap_index_only", "standard"),
                        "cassandra", ""),
    "scylla": Flavor("scylla", "/var/lib/scylla", ("direct",), "root", " BYPASS CACHE"),
}


def table_name(row_bytes: int, compressed: bool) -> str:
    return f"t{row_bytes}_{'lz4' if compressed else 'none'}"


class CqlNode:
    """One container of the CQL engine and a driver session to it (127.0.0.1 only)."""

    def __init__(self, disk: LabDisk, flavor: Flavor, image: str, name: str, setting: str,
                 heap_mib: int, memory_mib: int, read_iops: int = 0, read_bps: int = 0):
        self.disk, self.flavor, self.setting = disk, flavor, setting
        self.data = disk.make_folder(f"{disk.fs.mount_point}/cql")
        self.port = free_local_port()
        self.spec = flavor.container_spec(name, image, self.data, self.port, setting, heap_mib,
                                          memory_mib, disk.fs.device, read_iops, read_bps)
        self.container: Container | None = None
        self.cluster = self.session = None
        self.start_to_first_query_s = 0.0

    def start(self, timeout_s: float = 420) -> None:
        from cassandra.cluster import Cluster
        from cassandra.policies import WhiteListRoundRobinPolicy

        for name in ("cassandra", "cassandra.cluster", "cassandra.connection",
                     "cassandra.pool"):
            logging.getLogger(name).setLevel(logging.CRITICAL)  # retries while it boots
        started = time.monotonic()
        self.container = self.disk.ws.run_container(self.spec, health_timeout_s=timeout_s)
        deadline = started + timeout_s
        last_error = ""
        while time.monotonic() < deadline:
            cluster = Cluster(["127.0.0.1"], port=self.port, connect_timeout=5,
                              control_connection_timeout=5,
                              load_balancing_policy=WhiteListRoundRobinPolicy(["127.0.0.1"]))
            try:
                session = cluster.connect()
                session.execute("SELECT release_version FROM system.local")
                self.cluster, self.session = cluster, session
                self.start_to_first_query_s = time.monotonic() - started
                return
            except Exception as error:  # the driver raises many kinds while the node boots
                last_error = str(error).splitlines()[0][:200] if str(error) else repr(error)
                cluster.shutdown()
                time.sleep(1)
        raise LabError(f"{self.flavor.engine} in {self.spec.name} answered no CQL query "
                       f"within {timeout_s:.0f} s: {last_error}")

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.shutdown()
            self.cluster = self.session = None
        if self.container is not None:
            self.container.stop(timeout=60)  # a clean shutdown flushes the memtables
            self.disk.ws.remove("container", self.spec.name)
            self.container = None

    def version(self) -> str:
        row = self.session.execute("SELECT release_version FROM system.local").one()
        return str(row.release_version)

    def nodetool(self, *args: str) -> str:
        assert self.container is not None
        return exec_in(self.container, ["nodetool", *args], user=self.flavor.nodetool_user)

    def info(self) -> nodetool.NodeInfo | None:
        """Cassandra's cache counters (key, row, chunk cache); None for ScyllaDB."""
        if self.flavor.engine != "cassandra":
            return None
        return nodetool.parse_info(self.nodetool(*nodetool.info_command()[1:]))

    def cache_counters(self) -> dict[str, dict[str, int]]:
        """Cassandra's own caches (system_views.caches: keys, rows, chunks, counters)."""
        if self.flavor.engine != "cassandra":
            return {}
        rows = self.session.execute("SELECT name, hit_count, request_count, entry_count, "
                                    "size_bytes, capacity_bytes FROM system_views.caches")
        return {row.name: {"hits": row.hit_count, "requests": row.request_count,
                           "entries": row.entry_count, "size_bytes": row.size_bytes,
                           "capacity_bytes": row.capacity_bytes} for row in rows}

    def memory(self) -> dict[str, int]:
        assert self.container is not None
        return memory_accounting(self.container.stats(stream=False, one_shot=True),
                                 self.spec.name)

    def set_memory_limit_mib(self, mib: int, attempts: int = 8) -> int:
        """Lower the container's memory limit; the kernel must first reclaim page cache
        down to it, and refuses when it cannot yet: retry a little higher. The limit set."""
        import docker.errors

        assert self.container is not None
        for _ in range(attempts):
            try:
                self.container.update(mem_limit=f"{mib}m", memswap_limit=f"{mib}m")
                return mib
            except docker.errors.APIError as error:
                why = str(getattr(error, "explanation", error)).splitlines()[0][:200]
                mib += 8
        raise LabError(f"could not lower {self.spec.name}'s memory limit: {why}")

    def explain_death(self, error: Exception) -> None:
        """Turn a container killed for memory into one line that says what to change."""
        assert self.container is not None
        self.container.reload()
        if self.container.attrs["State"].get("OOMKilled"):
            raise LabError(f"{self.flavor.engine} in {self.spec.name} was killed for memory "
                           "in the sweep (its limit leaves it little room by design): raise "
                           "--cql-cache-budget-mib or --cql-memory-mib") from error

    def storage_order(self, rows: int) -> list[int]:
        """Keys 0..rows-1 in the order the engine stores them: by Murmur3 token."""
        import struct

        from cassandra.metadata import Murmur3Token

        return sorted(range(rows), key=lambda k: Murmur3Token.hash_fn(struct.pack(">q", k)))

    # --- schema and data -------------------------------------------------------------------

    def create_tables(self, tables: dict[str, bool]) -> list[str]:
        statements = [f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}"]
        for name, compressed in tables.items():
            # Default compression is LZ4 in 16 KiB chunks; 'enabled': false turns it off.
            options = "" if compressed else " WITH compression = {'enabled': 'false'}"
            statements.append(f"CREATE TABLE IF NOT EXISTS {KEYSPACE}.{name} "
                              f"(k bigint PRIMARY KEY, v blob){options}")
        for statement in statements:
            self.session.execute(statement, timeout=120)
        return statements

    def load(self, table: str, rows: int, row_bytes: int, seed: int) -> float:
        """Insert rows 0..rows-1 with random values, in unlogged batches of up to 40 KiB
        (under Cassandra's 50 KiB batch limit), several batches in flight."""
        from cassandra.concurrent import execute_concurrent
        from cassandra.query import BatchStatement, BatchType

        insert = self.session.prepare(f"INSERT INTO {KEYSPACE}.{table} (k, v) VALUES (?, ?)")
        per_batch = max(1, min(50, 40 * 1024 // row_bytes))
        rng = random.Random(seed)
        started = time.monotonic()
        for first in range(0, rows, 2000):
            batches = []
            for start in range(first, min(rows, first + 2000), per_batch):
                batch = BatchStatement(batch_type=BatchType.UNLOGGED)
                for k in range(start, min(rows, first + 2000, start + per_batch)):
                    batch.add(insert, (k, rng.randbytes(row_bytes)))
                batches.append((batch, ()))
            outcomes = execute_concurrent(self.session, batches, concurrency=4,
                                          raise_on_first_error=False)
            for (batch, _), (ok, _) in zip(batches, outcomes, strict=True):
                if not ok:
                    self.retry(batch)
        return time.monotonic() - started

    def retry(self, statement, attempts: int = 5) -> None:
        """Write again what timed out (the same keys and values: writing twice is harmless);
        a busy machine can keep a node from answering within its 2 s write timeout."""
        from cassandra import OperationTimedOut, WriteTimeout

        for attempt in range(1, attempts + 1):
            try:
                self.session.execute(statement, timeout=120)
                return
            except (WriteTimeout, OperationTimedOut):
                if attempt == attempts:
                    raise LabError(f"{self.flavor.engine} timed out {attempts} times on one "
                                   "write: the machine is too busy for this lab now") from None
                time.sleep(attempt)

    def flush_and_compact(self) -> list[str]:
        """Memtables to SSTables, then one SSTable per table: a read looks in one file."""
        commands = [["flush", KEYSPACE], ["compact", KEYSPACE]]
        for args in commands:
            self.nodetool(*args)
        return [shlex.join(["nodetool", *args]) for args in commands]

    def table_folder(self, table: str) -> str:
        out = self.disk.ws.host.sudo(["find", self.data, "-maxdepth", "3", "-type", "d",
                                      "-name", f"{table}-*"], timeout_s=60).stdout.split()
        if len(out) != 1:
            raise LabError(f"expected one folder for table {table} under {self.data}, "
                           f"found {len(out)}")
        return out[0]

    # --- reads -----------------------------------------------------------------------------

    def select(self, table: str, cold: bool):
        suffix = self.flavor.cold_suffix if cold else ""
        return self.session.prepare(f"SELECT v FROM {KEYSPACE}.{table} WHERE k = ?{suffix}")

    def timed_reads(self, statement, keys: list[int]) -> tuple[int, list[float]]:
        """Read the keys one after another; (rows found, latency of each in ms)."""
        found, latencies_ms = 0, []
        for key in keys:
            started = time.perf_counter()
            found += self.session.execute(statement, (key,)).one() is not None
            latencies_ms.append((time.perf_counter() - started) * 1000)
        return found, latencies_ms

    def concurrent_reads(self, statement, keys: list[int]) -> None:
        from cassandra.concurrent import execute_concurrent_with_args

        execute_concurrent_with_args(self.session, statement, [(k,) for k in keys],
                                     concurrency=32, raise_on_first_error=True)
