"""Run the consistency lab on this machine: a three-node Cassandra cluster, replication 3.

1. Availability: with 0, then 1, then 2 nodes stopped, node 1 writes and reads one row at
   each consistency level (ONE, QUORUM, ALL) and records what happened: done, or refused
   (`Unavailable`), beside what the model predicts.
2. Stale reads: three rows hold the value 1 on every replica. While node 3 is down, row A is
   overwritten with 2 at ONE and row B at QUORUM; while nodes 2 and 3 are down, row C at ONE.
   Then both nodes come back (with hinted handoff off, nothing tells them what they missed)
   and each node in turn coordinates reads of each row at each level. Each read is traced,
   so the run records which replicas answered it.

Everything the lab makes is a container in a LabWorkspace: `clean` removes it after a crash.
"""

from __future__ import annotations

import json
import random
import secrets
import time

from labs.consistency import model
from labs.consistency.cluster import Cluster
from labs.consistency.params import CASES, NEW, NODES, OLD, Parameters
from labs.errors import LabError
from labs.infra import images
from labs.infra.facts import require_memory_mib
from labs.infra.hosts import Host
from labs.infra.lab_run import LabRun
from labs.progress import Progress
from labs.records import RecordedRun, RunRecorder

KEYSPACE = "lab"
# speculative_retry NONE: a slow replica is not replaced by another mid-read; read_repair
# NONE: a read does not copy what it found to the replicas it read (each read leaves the
# rows as it found them, so every read samples the same state).
TABLE = (f"CREATE TABLE {KEYSPACE}.kv (k int PRIMARY KEY, v int) "
         "WITH speculative_retry = 'NONE' AND read_repair = 'NONE'")
AVAILABILITY_KEY = 0
# The nodes that coordinate the stale-read reads: node 1 holds every overwrite, node 2
# missed row C's, node 3 missed all three.
READERS = (1, 2, 3)


def check_memory(host: Host, p: Parameters) -> None:
    require_memory_mib(host, NODES * p.memory_mib + 512, "consistency",
                       f"{NODES} nodes of --memory-mib {p.memory_mib}")


# Part 1 stops no node, then node 3, then node 2: a write and a read at each level after each.
STOP_ORDER = (None, 3, 2)


def steps() -> list[str]:
    """The run's steps, in order (the parameters change none of them)."""
    part_1 = [step for to_stop in STOP_ORDER for step in
              (["stopping a node"] if to_stop is not None else [])
              + ["a write and a read at each level"]]
    return (["starting the nodes", "a keyspace"] + part_1
            + ["starting nodes 2 and 3 again", "stale reads", "removing the containers; "
               "writing the run"])


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    p = params
    progress.plan(steps())
    check_memory(host, p)
    started = time.monotonic()
    with LabRun(p, host, progress) as lab_run:
        rec, ws = lab_run.rec, lab_run.ws
        image = images.ensure_image(ws.engine(), True, "cassandra", p.cassandra_image)
        progress.say(f"using {image.describe()}")
        cluster = Cluster(ws, image.tag, secrets.token_hex(3), p.heap_mib, p.memory_mib)
        try:
            progress.step("starting the nodes", f"{NODES} Cassandra nodes (node 1, then 2 and 3 "
                                                   "together)")
            seconds = cluster.start()
            rec.add_result(config="cluster", workload="start", metric="seconds",
                           value=round(seconds, 1), unit="s")
            session = cluster.session(1)
            rec.add_tool_version("cassandra", str(session.execute(
                "SELECT release_version FROM system.local").one().release_version))
            progress.step("a keyspace", f"{KEYSPACE} with replication factor {NODES}")
            for statement in (f"CREATE KEYSPACE {KEYSPACE} WITH replication = {{'class': "
                              f"'SimpleStrategy', 'replication_factor': {NODES}}}", TABLE):
                session.execute(statement, timeout=120)
                rec.add_command(statement)
            measure_and_stop(cluster, rec, progress)
            progress.step("starting nodes 2 and 3 again", "hinted handoff is off")
            seconds = restart(cluster, (2, 3))
            rec.add_result(config="cluster", workload="restart", metric="seconds",
                           value=round(seconds, 1), unit="s")
            progress.step("stale reads", f"each node reads each row at each level, "
                                         f"{p.reads_per_case} times, traced")
            stale_reads(cluster, rec, p, progress)
        finally:
            cluster.disconnect()
        rec.add_result(config="lab", workload="all", metric="wall_time",
                       value=round(time.monotonic() - started, 1), unit="s")
        progress.step("removing the containers; writing the run")
    return lab_run.recorded()


# --- operations ------------------------------------------------------------------------------

def statement(text: str, level: str):
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    return SimpleStatement(text, consistency_level=getattr(ConsistencyLevel, level))


def outcome_of(error: Exception) -> str:
    """What the coordinator answered, by the error's name (Unavailable, WriteTimeout...)."""
    from cassandra.cluster import NoHostAvailable

    if isinstance(error, NoHostAvailable) and error.errors:
        error = next(iter(error.errors.values()))
    return type(error).__name__


def write(cluster: Cluster, coordinator: int, key: int, value: int, level: str) -> str:
    try:
        cluster.session(coordinator).execute(
            statement(f"INSERT INTO {KEYSPACE}.kv (k, v) VALUES (%s, %s)", level), (key, value))
        return "done"
    except Exception as error:  # noqa: BLE001 - the driver's errors are the measurement
        return outcome_of(error)


def read(cluster: Cluster, coordinator: int, key: int, level: str) -> tuple[str, int | None]:
    try:
        row = cluster.session(coordinator).execute(
            statement(f"SELECT v FROM {KEYSPACE}.kv WHERE k = %s", level), (key,)).one()
        return "done", (row.v if row else None)
    except Exception as error:  # noqa: BLE001 - the driver's errors are the measurement
        return outcome_of(error), None


def must_write(cluster: Cluster, key: int, value: int, level: str, why: str,
               attempts: int = 3) -> None:
    """A write the experiment is built on. A timeout (a busy machine) is tried again: the
    same value written twice is the same row; a refusal is not."""
    for attempt in range(1, attempts + 1):
        outcome = write(cluster, 1, key, value, level)
        if outcome == "done":
            return
        if outcome not in ("WriteTimeout", "OperationTimedOut") or attempt == attempts:
            raise LabError(f"writing row {key} at {level} ({why}) failed: {outcome}")
        time.sleep(attempt)


# --- part 1: availability, and the writes the stopped nodes miss ---------------------------

def measure_and_stop(cluster: Cluster, rec: RunRecorder, progress: Progress) -> None:
    for key, _, _ in CASES.values():
        must_write(cluster, key, OLD, "ALL", "every replica holds the old value")
    stopped: list[int] = []
    for to_stop in STOP_ORDER:
        if to_stop is not None:
            progress.step("stopping a node", f"node {to_stop}")
            cluster.stop_node(to_stop)
            stopped.append(to_stop)
            cluster.wait_until(observer=1, up=set(cluster.nodes) - set(stopped))
        rec.add_raw(f"nodetool/status-{len(stopped)}-stopped.txt",
                    "\n".join(f"{s.code} {s.address} {s.host_id}" for s in cluster.status(1)))
        progress.step("a write and a read at each level", f"{len(stopped)} node(s) stopped")
        up = NODES - len(stopped)
        for level in model.LEVELS:
            for operation in ("write", "read"):
                began = time.perf_counter()
                outcome = (write(cluster, 1, AVAILABILITY_KEY, len(stopped), level)
                           if operation == "write" else
                           read(cluster, 1, AVAILABILITY_KEY, level)[0])
                answered_ms = (time.perf_counter() - began) * 1000
                config = f"{len(stopped)} stopped"
                dims = {"level": level, "nodes_up": up, "stopped": len(stopped)}
                rec.add_result(config=config, workload=operation, metric="succeeded",
                               value=int(outcome == "done"), unit="count", outcome=outcome,
                               **dims)
                rec.add_result(config=config, workload=operation, metric="answer_time",
                               value=round(answered_ms, 2), unit="ms", **dims)
                rec.add_result(config=config, workload=operation, metric="model_succeeds",
                               value=int(model.succeeds(level, up, NODES)), unit="count", **dims)
        # The overwrites made while exactly these nodes are down.
        for case, (key, level, down) in CASES.items():
            if tuple(sorted(down)) == tuple(sorted(stopped)):
                must_write(cluster, key, NEW, level, f"case {case}, nodes {down} down")


def restart(cluster: Cluster, numbers: tuple[int, ...]) -> float:
    started = time.monotonic()
    for number in numbers:
        cluster.start_node(number)
    for observer in READERS:
        cluster.wait_until(observer=observer, up=set(cluster.nodes))
    return time.monotonic() - started


# --- part 2: stale reads ---------------------------------------------------------------------

def traced_read(cluster: Cluster, coordinator: int, key: int, level: str) -> dict:
    """One read through `coordinator`; the value, and the replicas that read the row."""
    session = cluster.session(coordinator)
    result = session.execute(statement(f"SELECT v FROM {KEYSPACE}.kv WHERE k = %s", level),
                             (key,), trace=True)
    row = result.one()
    trace = result.get_query_trace(max_wait_sec=30)
    needed = model.replicas_needed(level, NODES)
    replicas: list[int] = []
    for _ in range(50):
        # A replica that reads the row logs this event; the coordinator logs it only when
        # it reads its own copy. Other replicas' events reach the trace a little later.
        replicas = sorted({cluster.number_of(str(event.source)) or 0
                           for event in trace.events
                           if str(event.description).startswith("Executing single-partition")})
        if len(replicas) >= needed:
            break
        time.sleep(0.2)
        trace.populate(max_wait=30)
    return {"value": row.v if row else None, "replicas": replicas,
            "traced_coordinator": cluster.number_of(str(trace.coordinator))}


def stale_reads(cluster: Cluster, rec: RunRecorder, p: Parameters, progress: Progress) -> None:
    rng = random.Random(p.seed)
    reads: list[dict] = []
    for round_number in range(p.reads_per_case):
        order = [(case, level, coordinator) for case in CASES for level in model.LEVELS
                 for coordinator in READERS]
        rng.shuffle(order)  # no level or node always reads first in a round
        for case, level, coordinator in order:
            key = CASES[case][0]
            reads.append({"round": round_number, "case": case, "level": level,
                          "coordinator": coordinator,
                          **traced_read(cluster, coordinator, key, level)})
        progress.detail(f"round {round_number + 1}/{p.reads_per_case}", transient=True)
    rec.add_raw("reads.jsonl", "".join(json.dumps(r) + "\n" for r in reads))
    for case, (key, write_level, down) in CASES.items():
        for level in model.LEVELS:
            for coordinator in READERS:
                mine = [r for r in reads if (r["case"], r["level"], r["coordinator"])
                        == (case, level, coordinator)]
                record_case(rec, mine, case, key, write_level, down, level, coordinator)


def record_case(rec: RunRecorder, mine: list[dict], case: str, key: int, write_level: str,
                down: tuple[int, ...], level: str, coordinator: int) -> None:
    dims = {"write_level": write_level, "read_level": level, "replicas_missed": len(down),
            "row": key, "coordinator": coordinator}
    counts = {"reads": len(mine),
              "stale_reads": sum(r["value"] == OLD for r in mine),
              "fresh_reads": sum(r["value"] == NEW for r in mine),
              "reads_only_by_missed_replicas": sum(
                  bool(r["replicas"]) and set(r["replicas"]) <= set(down) for r in mine),
              "reads_by_the_coordinator_alone": sum(r["replicas"] == [coordinator]
                                                    for r in mine),
              "model_overlap_guaranteed": int(model.overlap_guaranteed(write_level, level,
                                                                       NODES)),
              "model_fresh_guaranteed": int(model.fresh_guaranteed(level, len(down), NODES))}
    config = f"case {case}, node {coordinator}"
    for metric, value in counts.items():
        rec.add_result(config=config, workload=f"read {level}", metric=metric, value=value,
                       unit="count", **dims)
    rec.add_result(config=config, workload=f"read {level}",
                   metric="model_stale_probability_uniform",
                   value=model.stale_probability_uniform(level, len(down), NODES),
                   unit="probability", **dims)
