"""RocksDB (through rocksdict) behind a small JSON-over-HTTP server, for the labs.

Runs inside the rocksdb image (python3 and rocksdict only). One database is open at a
time, under ROCKS_DATA (default /data); ROCKS_PORT (default 8080).

    GET  /health                        200 while the server runs
    POST /open   {"name", "direct_reads", "block_cache_mib", "row_cache_mib",
                  "block_size"}          open (create) /data/NAME with these settings
    POST /load   {"count", "value_bytes", "seed"}   write keys 0..count-1, flush, compact
    POST /gets   {"keys": [int, ...]}    point reads in this order, each timed here
    GET  /stats                          caches, ticker counters, SST files
    POST /close                          close the open database

Keys are b"key%013d" % i; values are random bytes (seeded), so compression would gain
nothing and is off. `block_cache_mib` 0 means no block cache at all; `row_cache_mib` 0
means no row cache. Bad requests get 400 and {"error": one line}.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import rocksdict

DATA = os.environ.get("ROCKS_DATA", "/data")
PORT = int(os.environ.get("ROCKS_PORT", "8080"))
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,40}$")
TICKERS = ("rocksdb.block.cache.data.hit", "rocksdb.block.cache.data.miss",
           "rocksdb.block.cache.index.hit", "rocksdb.block.cache.index.miss",
           "rocksdb.block.cache.filter.hit", "rocksdb.block.cache.filter.miss",
           "rocksdb.row.cache.hit", "rocksdb.row.cache.miss", "rocksdb.bytes.read",
           "rocksdb.number.keys.read")
MAX_KEYS_PER_REQUEST = 200_000
LOCK = threading.Lock()
STATE: dict = {}


class BadRequest(ValueError):
    pass


def key(i: int) -> bytes:
    return b"key%013d" % i


def number(body: dict, name: str, low: float, high: float, default: float | None = None,
           integer: bool = True) -> float:
    value = body.get(name, default)
    if value is None:
        raise BadRequest(f"{name} is required")
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or (integer and not isinstance(value, int)) or not low <= value <= high:
        raise BadRequest(f"{name} must be a number from {low:g} to {high:g}, not {value!r}")
    return value


def options(direct_reads: bool, block_cache_mib: float, row_cache_mib: float,
            block_size: int) -> rocksdict.Options:
    opts = rocksdict.Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.set_use_direct_reads(direct_reads)
    opts.set_compression_type(rocksdict.DBCompressionType.none())
    table = rocksdict.BlockBasedOptions()
    table.set_block_size(block_size)
    if block_cache_mib > 0:
        table.set_block_cache(rocksdict.Cache(int(block_cache_mib * 2**20)))
    else:
        table.disable_cache()
    table.set_bloom_filter(10, False)
    opts.set_block_based_table_factory(table)
    if row_cache_mib > 0:
        opts.set_row_cache(rocksdict.Cache(int(row_cache_mib * 2**20)))
    opts.enable_statistics()
    return opts


def open_db(body: dict) -> dict:
    name = body.get("name", "")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise BadRequest(f"name must be lower-case letters, digits, - or _, not {name!r}")
    settings = {
        "direct_reads": bool(body.get("direct_reads", False)),
        "block_cache_mib": number(body, "block_cache_mib", 0, 65536, 8, integer=False),
        "row_cache_mib": number(body, "row_cache_mib", 0, 65536, 0, integer=False),
        "block_size": int(number(body, "block_size", 512, 1 << 20, 4096)),
    }
    close_db()
    opts = options(**settings)
    path = os.path.join(DATA, name)
    # Options per column family, or a reopened database keeps those of its OPTIONS file.
    db = rocksdict.Rdict(path, opts, column_families={"default": opts})
    STATE.update(db=db, opts=opts, path=path, name=name, **settings)
    return stats()


def close_db() -> None:
    db = STATE.pop("db", None)
    if db is not None:
        db.close()
    STATE.clear()


def need_db() -> rocksdict.Rdict:
    if "db" not in STATE:
        raise BadRequest("no database is open: POST /open first")
    return STATE["db"]


def counters() -> dict[str, int]:
    text = STATE["opts"].get_statistics() or ""
    found = {}
    for name in TICKERS:
        match = re.search(re.escape(name) + r" COUNT : (\d+)", text)
        found[name] = int(match.group(1)) if match else 0
    return found


def sst_files() -> dict[str, int]:
    return {entry.name: entry.stat().st_size for entry in os.scandir(STATE["path"])
            if entry.name.endswith(".sst")}


def stats() -> dict:
    db = need_db()
    return {"name": STATE["name"], "direct_reads": STATE["direct_reads"],
            "block_cache_mib": STATE["block_cache_mib"],
            "row_cache_mib": STATE["row_cache_mib"], "block_size": STATE["block_size"],
            "block_cache_usage": db.property_int_value("rocksdb.block-cache-usage"),
            "block_cache_capacity": db.property_int_value("rocksdb.block-cache-capacity"),
            "estimate_num_keys": db.property_int_value("rocksdb.estimate-num-keys"),
            "sst_files": sst_files(), "counters": counters()}


def load(body: dict) -> dict:
    db = need_db()
    count = int(number(body, "count", 1, 50_000_000))
    value_bytes = int(number(body, "value_bytes", 1, 1 << 20))
    rng = random.Random(number(body, "seed", 0, 2**31 - 1, 0))
    started = time.monotonic()
    for i in range(count):
        db[key(i)] = rng.randbytes(value_bytes)
    db.flush()
    db.compact_range(None, None)  # one sorted run: every read looks in one place
    return {"count": count, "value_bytes": value_bytes,
            "load_s": round(time.monotonic() - started, 3), "sst_files": sst_files()}


def gets(body: dict) -> dict:
    db = need_db()
    keys = body.get("keys")
    if not isinstance(keys, list) or not 1 <= len(keys) <= MAX_KEYS_PER_REQUEST \
            or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0
                       for k in keys):
        raise BadRequest(f"keys must be a list of 1 to {MAX_KEYS_PER_REQUEST} "
                         "non-negative integers")
    before = counters()
    latencies_us, found = [], 0
    for k in keys:
        started = time.perf_counter_ns()
        found += db.get(key(k)) is not None
        latencies_us.append(round((time.perf_counter_ns() - started) / 1000, 1))
    after = counters()
    return {"gets": len(keys), "found": found, "latency_us": latencies_us,
            "counters": {name: after[name] - before[name] for name in after}}


class Handler(BaseHTTPRequestHandler):
    def reply(self, code: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_request(self, routes: dict) -> None:
        action = routes.get(self.path)
        if action is None:
            self.reply(404, {"error": f"no such request: {self.path}"})
            return
        try:
            with LOCK:
                self.reply(200, action())
        except BadRequest as error:
            self.reply(400, {"error": str(error)})
        except Exception as error:  # the lab reads one line, not a traceback
            self.reply(500, {"error": f"{type(error).__name__}: {error}".splitlines()[0]})

    def do_GET(self) -> None:  # the http.server naming
        self.handle_request({"/health": lambda: {"ok": True, "open": "db" in STATE},
                             "/stats": stats})

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError as error:
            self.reply(400, {"error": f"the body must be a JSON object ({error})"})
            return
        self.handle_request({"/open": lambda: open_db(body), "/load": lambda: load(body),
                             "/gets": lambda: gets(body),
                             "/close": lambda: (close_db(), {"closed": True})[1]})

    def log_message(self, *args: object) -> None:
        pass  # one line per request would drown the container's log


def main() -> None:
    os.makedirs(DATA, exist_ok=True)
    print(f"rocks-engine: rocksdict at {DATA}, port {PORT}", flush=True)
    ThreadingHTTPServer(("0.0.0.0", PORT), Handler).serve_forever()


if __name__ == "__main__":
    main()
