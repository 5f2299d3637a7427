"""The caches lab's tables: a recorded run's measurements with the model beside each.

Pure page code (pandas and labs.caches.model): it reads results.csv and never touches a
host. Every table carries `measured`, `model` and `error` (model - measured, relative).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from labs.caches import model
from labs.caches.params import Parameters, sweep_warmup_reads
from labs.errors import LabError
from labs.records import RecordedRun

KEY_BYTES = 16  # RocksDB keys
ENTRY_OVERHEAD_BYTES = 8  # RocksDB: a block entry's lengths and shared-prefix count
INDEX_INTERVAL = 128  # Cassandra's index_interval: the summary samples every 128th key
SETTING_LABELS = {"buffered": "RocksDB, buffered reads", "direct": "RocksDB, direct reads",
                  "mmap_index_only": "Cassandra, mmap_index_only",
                  "standard": "Cassandra, standard"}


def _pick(results: pd.DataFrame, **where: object) -> pd.DataFrame:
    rows = results
    for key, value in where.items():
        rows = rows[rows[key] == value]
    return rows


def _value(rows: pd.DataFrame, metric: str, what: str) -> float:
    found = rows[rows.metric == metric]
    if found.empty:
        raise LabError(f"the run has no {metric} for {what}")
    return float(found.value.iloc[0])


def readahead_bytes(run: RecordedRun) -> int:
    text = run.meta["tool_versions"].get("loop device readahead (default)", "0 bytes")
    return int(text.split()[0])


def _error(frame: pd.DataFrame) -> pd.DataFrame:
    frame["error"] = [model.relative_error(m, x) if x else None
                      for m, x in zip(frame["model"], frame["measured"], strict=True)]
    return frame


# ---- block level ---------------------------------------------------------------------------

def block_table(run: RecordedRun) -> pd.DataFrame:
    results = run.results
    block = results[results.leg == "block"]
    rows = []
    for (method, ra_kib, record), group in block.groupby(["method", "readahead_kib",
                                                         "record_bytes"]):
        what = f"block {method} ra {ra_kib} record {record}"
        reads = _value(group, "reads", what)
        file_bytes = _value(group, "file_bytes", what)
        align = _value(group, "align_bytes", what)
        for phase in ("cold", "warm"):
            part = group[group.phase == phase]
            rows.append({
                "method": method, "readahead_kib": int(ra_kib), "record_bytes": int(record),
                "phase": phase, "reads": int(reads),
                "measured": _value(part, "device_bytes_per_read", what),
                "model": model.block_level_bytes_per_read(
                    method, int(record), file_bytes, int(reads), int(ra_kib) * 1024,
                    int(align), warm=phase == "warm"),
                "device_reads_per_read": _value(part, "device_reads_per_read", what),
                "latency_p50_us": _value(part, "latency_p50", what),
                "resident_bytes": _value(group, "resident_bytes", what),
            })
    return _error(pd.DataFrame(rows))


# ---- engines -------------------------------------------------------------------------------

def rocksdb_block_bytes(row_bytes: float, rows: float, data_file_bytes: float) -> float:
    """A data block's bytes on disk: the file divided by its blocks (about 4 KiB of entries
    each, cut as RocksDB cuts them)."""
    return data_file_bytes / (rows / rocksdb_rows_per_block(row_bytes))


def rocksdb_rows_per_block(row_bytes: float) -> int:
    return model.entries_per_block(row_bytes + KEY_BYTES + ENTRY_OVERHEAD_BYTES)


def engine_model(engine: str, setting: str, compression: str | None, row_bytes: float,
                 facts: dict[str, float], readahead: int) -> float:
    """Cold device bytes per row read, from the recorded file sizes (one read per unit)."""
    rows, reads = facts["rows"], facts["reads"]
    if engine == "rocksdb":
        block = rocksdb_block_bytes(row_bytes, rows, facts["data_file_bytes"])
        return model.rocksdb_data_unit_bytes(block, direct=setting == "direct")
    row_disk = facts["data_file_bytes"] / rows
    data = model.cassandra_data_unit_bytes(row_disk, compression == "lz4")
    index_file = facts.get("index_file_bytes", 0.0)
    if not index_file:
        return data
    if setting == "mmap_index_only":
        # Index faults read the readahead window around them; once read, it stays mapped.
        window = max(model.PAGE_BYTES, readahead)
        return data + min(index_file, reads * window) / reads
    scan = index_file / rows * INDEX_INTERVAL / 2  # on average half a sampling interval
    per_read = model.units_spanned(scan, model.PAGE_BYTES) * model.PAGE_BYTES
    return data + min(index_file, reads * per_read) / reads


def engine_table(run: RecordedRun, leg: str = "engine") -> pd.DataFrame:
    results = run.results
    part = results[results.leg == leg]
    keys = ["engine", "setting", "compression", "readahead_kib", "row_bytes"]
    part = part.assign(compression=part["compression"].fillna("-"))
    facts_of = {}
    for key, group in results[results.leg == "engine"].assign(
            compression=lambda f: f["compression"].fillna("-")).groupby(keys):
        setup = group[group.phase == "setup"].set_index("metric")["value"]
        facts_of[key] = setup.to_dict()
    rows = []
    for key, group in part.groupby(keys):
        engine, setting, compression, readahead_kib, row_bytes = key
        facts = facts_of.get(key) or next(
            (v for k, v in facts_of.items() if k[:3] == key[:3] and k[4] == key[4]), None)
        what = f"{leg} {'/'.join(map(str, key))}"
        for phase in ("cold", "warm"):
            one = group[group.phase == phase]
            if one.empty:
                continue
            cold_model = engine_model(engine, setting, None if compression == "-"
                                      else compression, row_bytes, facts,
                                      int(readahead_kib) * 1024) \
                if facts else float("nan")
            rows.append({
                "engine": engine, "setting": setting, "compression": compression,
                "row_bytes": int(row_bytes), "phase": phase,
                "readahead_kib": int(readahead_kib),
                "label": SETTING_LABELS.get(setting, setting)
                + ("" if compression == "-" else f", {compression}"),
                "measured": _value(one, "device_bytes_per_read", what),
                "model": 0.0 if phase == "warm" else cold_model,
                "device_reads_per_read": _value(one, "device_reads_per_read", what),
                "latency_p50": _value(one, "latency_p50", what),
                "latency_p99": _value(one, "latency_p99", what),
                "latency_mean": _value(one, "latency_mean", what),
                "latency_unit": one[one.metric == "latency_p50"].unit.iloc[0],
            })
    table = _error(pd.DataFrame(rows))
    table["amplification"] = table["measured"] / table["row_bytes"]
    return table


def memory_table(run: RecordedRun) -> pd.DataFrame:
    """After each cold and warm pass: the container's page cache and the files' residency."""
    results = run.results
    part = results[(results.leg == "engine") & (results.phase == "after")]
    keys = ["engine", "setting", "compression", "readahead_kib", "row_bytes"]
    part = part.assign(compression=part["compression"].fillna("-"))
    table = part.pivot_table(index=keys, columns="metric", values="value").reset_index()
    return table


# ---- sweep ---------------------------------------------------------------------------------

def sweep_table(run: RecordedRun) -> pd.DataFrame:
    results = run.results
    params = Parameters.of(run)
    part = results[results.leg == "sweep"]
    misses = part[part.metric == "bytes_per_miss"]
    rows = []
    keys = ["engine", "cache", "pattern", "fraction"]
    for (engine, cache, pattern, fraction), group in part[part.phase != "setup"].groupby(keys):
        setup = part[(part.phase == "setup") & (part.engine == engine) & (part.cache == cache)
                     & (part.pattern == pattern) & (part.fraction == fraction)]
        facts = setup.set_index("metric")["value"].to_dict()
        hot, rows_total = int(facts["hot_rows"]), int(facts["rows"])
        row_bytes = float(group.row_bytes.iloc[0])
        seed = int(params.seed) + int(fraction * 1000)
        _, hot_keys = model.hot_key_choice(rows_total, hot, seed)
        weights = (np.full(len(hot_keys), 1 / len(hot_keys)) if pattern == "uniform"
                   else model.zipf_weights(len(hot_keys), float(params.zipf_exponent)))
        if engine == "rocksdb" and cache == "block":
            block = rocksdb_block_bytes(row_bytes, rows_total, facts["data_file_bytes"])
            units = hot_keys // rocksdb_rows_per_block(row_bytes)
            capacity = facts["cache_bytes"] / block
        elif engine == "rocksdb":
            units = hot_keys
            capacity = model.row_cache_capacity_rows(facts["cache_bytes"], row_bytes, KEY_BYTES)
        else:  # the page cache: rows this large share no pages
            row_disk = facts["data_file_bytes"] / rows_total
            pages_per_row = model.units_spanned(row_disk, model.PAGE_BYTES)
            units = hot_keys
            capacity = facts["cache_bytes"] / (pages_per_row * model.PAGE_BYTES)
        popularity = model.unit_popularity(weights, units)
        # The steady state (Che), less what no cache can hit: first reads of units the
        # warm-up did not draw.
        measured_reads = params.sweep_reads if engine == "rocksdb" else params.cql_sweep_reads
        warm_reads = sweep_warmup_reads(engine, hot, measured_reads)
        first_reads = model.first_read_miss_ratio(popularity, warm_reads, measured_reads)
        predicted = min(model.che_hit_ratio(popularity, capacity), 1 - first_reads)
        if engine == "rocksdb":
            measured = _value(group, "hit_ratio", "sweep")
        else:
            per_miss = float(misses[misses.engine == engine].value.iloc[0])
            measured = 1 - _value(group, "device_bytes_per_read", "sweep") / per_miss
        rows.append({
            "engine": engine, "cache": cache, "pattern": pattern, "fraction": fraction,
            "hot_rows": hot, "working_set_units": len(popularity), "capacity_units": capacity,
            "working_set_mib": hot * row_bytes / 2**20,
            "measured": measured, "model": predicted,
            "latency_p50": _value(group, "latency_p50", "sweep"),
            "latency_unit": group[group.metric == "latency_p50"].unit.iloc[0],
            "device_bytes_per_read": _value(group, "device_bytes_per_read", "sweep"),
            "label": {"block": "RocksDB block cache", "row": "RocksDB row cache",
                      "page": "Cassandra, page cache"}.get(cache, cache),
        })
    table = pd.DataFrame(rows)
    table["error"] = table["model"] - table["measured"]  # hit ratios: absolute error
    return table


# ---- the throttled device --------------------------------------------------------------------

def throttled_table(run: RecordedRun) -> pd.DataFrame:
    """Mean read latency on the throttled device against the same passes just before it."""
    params = Parameters.of(run)
    slow = engine_table(run, "throttled")
    fast = engine_table(run, "unthrottled").set_index(["engine", "setting", "compression",
                                                       "row_bytes", "phase"])
    rows = []
    for _, row in slow.iterrows():
        base = fast.loc[(row.engine, row.setting, row.compression, row.row_bytes, row.phase)]
        to_ms = 1 / 1000 if row.latency_unit == "us" else 1.0
        unthrottled_ms = base.latency_mean * to_ms
        predicted = model.throttled_miss_ms(
            row.device_reads_per_read, row.measured, params.throttle_read_iops,
            params.throttle_read_kibps * 1024, unthrottled_ms)
        rows.append({"label": row.label, "engine": row.engine, "setting": row.setting,
                     "compression": row.compression, "phase": row.phase,
                     "unthrottled_ms": unthrottled_ms, "measured": row.latency_mean * to_ms,
                     "model": predicted, "device_reads_per_read": row.device_reads_per_read,
                     "device_bytes_per_read": row.measured})
    return _error(pd.DataFrame(rows))
