"""The RocksDB engine server of the rocksdb image, run here on the project's own rocksdict.

The image runs the same file with the same rocksdict version (the recipe's wheel pin equals
pyproject's, tested in test_image_prepare.py); here it runs in a thread, so its requests
and its bad-input answers are checked in a second, without a container.
"""

import importlib.util
import json
import threading
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer

import pytest

from labs.infra import images

SERVER_FILE = images.RECIPES["rocksdb"].folder / "rocks_engine.py"


@pytest.fixture
def engine(tmp_path, monkeypatch):
    monkeypatch.setenv("ROCKS_DATA", str(tmp_path))
    spec = importlib.util.spec_from_file_location("rocks_engine_under_test", SERVER_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = ThreadingHTTPServer(("127.0.0.1", 0), module.Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def call(path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(base + path, data=data)
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    yield call
    server.shutdown()
    module.close_db()


def test_load_then_read_every_key_back(engine):
    assert engine("/health") == (200, {"ok": True, "open": False})
    status, opened = engine("/open", {"name": "db-100", "block_cache_mib": 1})
    assert status == 200 and opened["block_cache_capacity"] == 2**20
    status, loaded = engine("/load", {"count": 3000, "value_bytes": 100, "seed": 3})
    assert status == 200 and loaded["sst_files"]
    status, got = engine("/gets", {"keys": [0, 2999, 1500, 1500]})
    assert status == 200 and got["found"] == 4 and len(got["latency_us"]) == 4
    status, missing = engine("/gets", {"keys": [3000]})
    assert missing["found"] == 0


def test_reopen_with_direct_reads_and_a_row_cache_takes_effect(engine):
    engine("/open", {"name": "db", "block_cache_mib": 1})
    engine("/load", {"count": 2000, "value_bytes": 100})
    status, reopened = engine("/open", {"name": "db", "direct_reads": True,
                                        "block_cache_mib": 0, "row_cache_mib": 4})
    assert status == 200 and reopened["direct_reads"] is True
    first = engine("/gets", {"keys": [7, 7, 7]})[1]["counters"]
    assert first["rocksdb.row.cache.miss"] == 1 and first["rocksdb.row.cache.hit"] == 2


@pytest.mark.parametrize("path, body, message", [
    ("/gets", {"keys": [1]}, "no database is open"),
    ("/open", {"name": "../etc"}, "name must be"),
    ("/open", {"name": "db", "block_cache_mib": -1}, "block_cache_mib must be"),
    ("/open", {"name": "db", "block_size": "big"}, "block_size must be"),
])
def test_bad_requests_get_one_line_and_400(engine, path, body, message):
    status, answer = engine(path, body)
    assert status == 400 and message in answer["error"]


def test_bad_keys_and_bodies_are_refused(engine):
    engine("/open", {"name": "db"})
    for body in ({"keys": []}, {"keys": [-1]}, {"keys": "1,2"}, {"keys": [True]}):
        status, answer = engine("/gets", body)
        assert status == 400 and "keys must be" in answer["error"]
    status, answer = engine("/load", {"count": 0, "value_bytes": 100})
    assert status == 400 and "count must be" in answer["error"]
    assert engine("/nowhere")[0] == 404
