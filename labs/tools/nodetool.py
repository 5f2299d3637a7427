"""nodetool (Apache Cassandra 5.0): build its command lines and parse what it prints.

Three outputs are parsed, as Cassandra 5.0.9's nodetool prints them:

- `nodetool info`: one `Name : value` line per fact. The cache lines read
  `Key Cache : entries N, size S, capacity C, H hits, R requests, F recent hit rate,
  P save period in seconds` (likewise Row Cache and Counter Cache). The chunk cache line,
  printed only when the chunk cache is on, counts misses instead of hits and ends with a
  miss latency: `entries N, size S, capacity C, M misses, R requests, F recent hit rate,
  L <unit> miss latency` (format string of org.apache.cassandra.tools.nodetool.Info).
  A cache that has served no request shows `NaN recent hit rate`.
- `nodetool status`: per datacenter, one line per node: a two-letter code (status U/D,
  state N/L/J/M), address, load, tokens, ownership, host id and rack. Ownership is `?`
  without a keyspace argument when keyspaces replicate differently, and load is `?`
  for a node whose load is unknown.
- `nodetool tablestats KEYSPACE.TABLE`: a keyspace block and, indented, one block per
  table of `Name: value` lines. Latencies read `0.598 ms` or `NaN ms`; sizes are plain
  byte counts, except `Max SSTable size` and the `Bytes ...repaired` lines (`12.587MiB`).

Sizes are printed by Cassandra as `640 bytes`, `166.45 KiB`, `25 MiB` or `12.587MiB`; the
parsers turn them into bytes (binary units).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from labs.errors import LabError, UsageError


class NodetoolParseError(LabError):
    """nodetool output that cannot be read."""


NAME_RE = re.compile(r"^[A-Za-z0-9_]+$")


# ---- commands ---------------------------------------------------------------------------

def info_command() -> list[str]:
    return ["nodetool", "info"]


def status_command(keyspace: str | None = None) -> list[str]:
    """With a keyspace, ownership is the effective ownership for its replication."""
    return ["nodetool", "status", *([_name(keyspace, "keyspace")] if keyspace else [])]


def tablestats_command(keyspace: str, table: str) -> list[str]:
    return ["nodetool", "tablestats", f"{_name(keyspace, 'keyspace')}.{_name(table, 'table')}"]


def flush_command(keyspace: str, table: str | None = None) -> list[str]:
    """Write memtables to SSTables, so reads that follow come from disk files."""
    return ["nodetool", "flush", _name(keyspace, "keyspace"),
            *([_name(table, "table")] if table else [])]


def _name(value: str, what: str) -> str:
    if not NAME_RE.match(value or ""):
        raise UsageError(f"nodetool: {what} name {value!r} must be letters, digits and _")
    return value


# ---- sizes ------------------------------------------------------------------------------

UNITS = {"bytes": 1, "B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(bytes|B|KiB|MiB|GiB|TiB)\s*$")


def parse_size_bytes(text: str, source: str = "nodetool") -> int:
    """`640 bytes`, `166.45 KiB`, `25 MiB`, `0B`, `12.587MiB` -> bytes."""
    match = SIZE_RE.match(text)
    if not match:
        raise NodetoolParseError(f"{source}: {text.strip()!r} is not a size")
    return round(float(match.group(1)) * UNITS[match.group(2)])


def _float_or_none(text: str, source: str) -> float | None:
    """A number, or None for Cassandra's NaN (no request yet)."""
    try:
        value = float(text)
    except ValueError:
        raise NodetoolParseError(f"{source}: {text!r} is not a number") from None
    return None if math.isnan(value) else value


# ---- info -------------------------------------------------------------------------------

@dataclass
class CacheStats:
    name: str  # "Key Cache", "Row Cache", "Counter Cache", "Chunk Cache"
    entries: int
    size_bytes: int
    capacity_bytes: int
    requests: int
    hits: int
    misses: int
    hit_rate: float | None  # recent hit rate; None while the cache has served nothing
    save_period_s: int | None = None  # key, row and counter caches
    miss_latency: float | None = None  # chunk cache only, in miss_latency_unit
    miss_latency_unit: str | None = None


@dataclass
class NodeInfo:
    host_id: str
    gossip_active: bool
    native_transport_active: bool
    load_bytes: int
    uptime_s: int
    heap_used_mib: float
    heap_max_mib: float
    off_heap_mib: float
    data_center: str
    rack: str
    exceptions: int
    key_cache: CacheStats
    row_cache: CacheStats
    counter_cache: CacheStats
    chunk_cache: CacheStats | None  # None: the chunk cache is off (no line printed)
    fields: dict[str, str] = field(default_factory=dict)  # every `Name : value` line


CACHE_RE = re.compile(
    r"entries (\d+), size (.+?), capacity (.+?), (\d+) (hits|misses), (\d+) requests, "
    r"(\S+) recent hit rate, (?:(\d+) save period in seconds|(\S+) (\S+) miss latency)$")


def parse_cache_line(name: str, text: str, source: str = "nodetool info") -> CacheStats:
    match = CACHE_RE.match(text.strip())
    if not match:
        raise NodetoolParseError(f"{source}: cannot read the {name} line: {text.strip()!r}")
    (entries, size, capacity, count, kind, requests, rate, period, latency,
     unit) = match.groups()
    requests_n, count_n = int(requests), int(count)
    hits = count_n if kind == "hits" else requests_n - count_n
    src = f"{source}, {name}"
    return CacheStats(
        name=name, entries=int(entries), size_bytes=parse_size_bytes(size, src),
        capacity_bytes=parse_size_bytes(capacity, src), requests=requests_n, hits=hits,
        misses=requests_n - hits, hit_rate=_float_or_none(rate, src),
        save_period_s=int(period) if period is not None else None,
        miss_latency=_float_or_none(latency, src) if latency is not None else None,
        miss_latency_unit=unit)


def _colon_fields(text: str, source: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip():
            fields[name.strip()] = value.strip()
    if not fields:
        raise NodetoolParseError(f"{source}: no `Name : value` lines")
    return fields


def parse_info(text: str, source: str = "nodetool info") -> NodeInfo:
    fields = _colon_fields(text, source)

    def need(name: str) -> str:
        if name not in fields:
            raise NodetoolParseError(f"{source}: no {name!r} line")
        return fields[name]

    heap = re.match(r"^([0-9.]+) / ([0-9.]+)$", need("Heap Memory (MB)"))
    if not heap:
        raise NodetoolParseError(f"{source}: cannot read Heap Memory (MB): "
                                 f"{fields['Heap Memory (MB)']!r}")
    try:
        uptime_s, exceptions = int(need("Uptime (seconds)")), int(need("Exceptions"))
        off_heap_mib = float(need("Off Heap Memory (MB)"))
    except ValueError as error:
        raise NodetoolParseError(f"{source}: {error}") from None
    chunk = fields.get("Chunk Cache")
    return NodeInfo(
        host_id=need("ID"), gossip_active=need("Gossip active") == "true",
        native_transport_active=need("Native Transport active") == "true",
        load_bytes=parse_size_bytes(need("Load"), f"{source}, Load"), uptime_s=uptime_s,
        heap_used_mib=float(heap.group(1)), heap_max_mib=float(heap.group(2)),
        off_heap_mib=off_heap_mib, data_center=need("Data Center"), rack=need("Rack"),
        exceptions=exceptions,
        key_cache=parse_cache_line("Key Cache", need("Key Cache"), source),
        row_cache=parse_cache_line("Row Cache", need("Row Cache"), source),
        counter_cache=parse_cache_line("Counter Cache", need("Counter Cache"), source),
        chunk_cache=parse_cache_line("Chunk Cache", chunk, source) if chunk else None,
        fields=fields)


# ---- status -----------------------------------------------------------------------------

STATUS_NAMES = {"U": "up", "D": "down"}
STATE_NAMES = {"N": "normal", "L": "leaving", "J": "joining", "M": "moving"}
NODE_RE = re.compile(
    r"^([UD])([NLJM])\s+(\S+)\s+(\?|[0-9.]+ ?(?:bytes|B|KiB|MiB|GiB|TiB))\s+(\d+)\s+"
    r"(\?|[0-9.]+%)\s+([0-9a-f-]{36})\s+(\S.*?)\s*$")


@dataclass
class NodeStatus:
    code: str  # two letters as printed: "UN", "DN", "UJ", ...
    address: str
    load_bytes: int | None  # None when nodetool prints "?"
    tokens: int
    owns_pct: float | None  # None when nodetool prints "?"
    host_id: str
    rack: str
    datacenter: str

    @property
    def up(self) -> bool:
        return self.code[0] == "U"

    @property
    def state(self) -> str:
        return STATE_NAMES[self.code[1]]


def parse_status(text: str, source: str = "nodetool status") -> list[NodeStatus]:
    nodes: list[NodeStatus] = []
    datacenter = None
    for line in text.splitlines():
        if line.startswith("Datacenter:"):
            datacenter = line.partition(":")[2].strip()
            continue
        if not line[:2] or line[:2] not in {s + t for s in "UD" for t in "NLJM"}:
            continue
        match = NODE_RE.match(line)
        if not match or datacenter is None:
            raise NodetoolParseError(f"{source}: cannot read node line {line.strip()!r}")
        status, state, address, load, tokens, owns, host_id, rack = match.groups()
        nodes.append(NodeStatus(
            code=status + state, address=address,
            load_bytes=None if load == "?" else parse_size_bytes(load, source),
            tokens=int(tokens), owns_pct=None if owns == "?" else float(owns.rstrip("%")),
            host_id=host_id, rack=rack, datacenter=datacenter))
    if not nodes:
        raise NodetoolParseError(f"{source}: no node lines (UN, DN, ...)")
    return nodes


# ---- tablestats -------------------------------------------------------------------------

@dataclass
class TableStats:
    keyspace: str
    table: str
    sstable_count: int
    space_used_live_bytes: int
    space_used_total_bytes: int
    partitions_estimate: int
    local_read_count: int
    local_read_latency_ms: float | None  # None (NaN) before the first read
    local_write_count: int
    local_write_latency_ms: float | None
    bloom_filter_false_positives: int
    bloom_filter_false_ratio: float
    bloom_filter_space_used_bytes: int
    bloom_filter_off_heap_bytes: int
    compression_ratio: float | None  # None when the table is not compressed (-1.0 printed)
    memtable_cell_count: int
    fields: dict[str, str] = field(default_factory=dict)  # every line of the table's block


def _table_blocks(text: str, source: str) -> list[tuple[str, str, dict[str, str]]]:
    blocks: list[tuple[str, str, dict[str, str]]] = []
    keyspace = None
    current: dict[str, str] | None = None
    for line in text.splitlines():
        name, sep, value = line.strip().partition(":")
        if not sep:
            continue
        name, value = name.strip(), value.strip()
        if name == "Keyspace" and not line.startswith("\t\t"):
            keyspace, current = value, None
        elif name == "Table":
            if keyspace is None:
                raise NodetoolParseError(f"{source}: a Table line before any Keyspace line")
            current = {}
            blocks.append((keyspace, value, current))
        elif current is not None and line.startswith("\t\t"):
            current[name] = value
    return blocks


def parse_tablestats(text: str, table: str | None = None,
                     source: str = "nodetool tablestats") -> TableStats:
    """One table's block; `table` ("ks.name" or "name") picks one when several are printed."""
    blocks = _table_blocks(text, source)
    if table is not None:
        blocks = [b for b in blocks if table in (b[1], f"{b[0]}.{b[1]}")]
    if len(blocks) != 1:
        names = ", ".join(f"{k}.{t}" for k, t, _ in _table_blocks(text, source)) or "none"
        want = f"table {table!r}" if table else "exactly one table"
        raise NodetoolParseError(f"{source}: expected {want}; found {names}")
    keyspace, name, fields = blocks[0]
    src = f"{source} {keyspace}.{name}"

    def need(key: str) -> str:
        if key not in fields:
            raise NodetoolParseError(f"{src}: no {key!r} line")
        return fields[key]

    def integer(key: str) -> int:
        try:
            return int(need(key))
        except ValueError:
            raise NodetoolParseError(f"{src}: {key} is {fields[key]!r}, not a count") from None

    def latency_ms(key: str) -> float | None:
        value = need(key)
        if not value.endswith(" ms"):
            raise NodetoolParseError(f"{src}: {key} is {value!r}, not `N ms`")
        return _float_or_none(value[:-3], src)

    ratio = _float_or_none(need("SSTable Compression Ratio"), src)
    return TableStats(
        keyspace=keyspace, table=name, sstable_count=integer("SSTable count"),
        space_used_live_bytes=integer("Space used (live)"),
        space_used_total_bytes=integer("Space used (total)"),
        partitions_estimate=integer("Number of partitions (estimate)"),
        local_read_count=integer("Local read count"),
        local_read_latency_ms=latency_ms("Local read latency"),
        local_write_count=integer("Local write count"),
        local_write_latency_ms=latency_ms("Local write latency"),
        bloom_filter_false_positives=integer("Bloom filter false positives"),
        bloom_filter_false_ratio=_float_or_none(need("Bloom filter false ratio"), src) or 0.0,
        bloom_filter_space_used_bytes=integer("Bloom filter space used"),
        bloom_filter_off_heap_bytes=integer("Bloom filter off heap memory used"),
        compression_ratio=None if ratio is None or ratio < 0 else ratio,
        memtable_cell_count=integer("Memtable cell count"), fields=fields)
