"""fincore and docker's memory counters, parsed from real captured output."""

import json
from pathlib import Path

import pytest

from labs.tools import cgroupmem, fincore

FIXTURES = Path(__file__).parent / "fixtures" / "caches"


def test_fincore_json_gives_resident_bytes_per_file():
    found = fincore.parse((FIXTURES / "fincore-three-files.json").read_text())
    assert len(found) == 3
    hostname = found["/etc/hostname"]
    assert (hostname.resident_bytes, hostname.resident_pages, hostname.size_bytes) == \
        (4096, 1, 3)
    assert all(r.resident_bytes == r.resident_pages * 4096 for r in found.values())


def test_fincore_command_and_bad_output():
    assert fincore.command(["/a b"]) == ["fincore", "--json", "--bytes", "--", "/a b"]
    with pytest.raises(fincore.FincoreParseError, match="not fincore's JSON"):
        fincore.parse("RES PAGES SIZE FILE\n4K 1 3B /etc/hostname\n")
    with pytest.raises(fincore.FincoreParseError, match="cannot read entry"):
        fincore.parse('{"fincore": [{"file": "x", "res": "lots"}]}')


def test_docker_stats_of_a_cgroup_v1_container():
    stats = json.loads((FIXTURES / "docker-stats-v1-rocksdb-idle.json").read_text())
    memory = cgroupmem.memory_accounting(stats)
    assert memory["page_cache_bytes"] == 921600
    assert memory["anon_bytes"] == 10674176
    assert memory["usage_bytes"] == 12505088
    assert memory["mapped_file_bytes"] <= memory["page_cache_bytes"]


def test_docker_stats_of_a_stopped_container_is_one_line():
    with pytest.raises(cgroupmem.MemoryStatsError, match="no memory counters"):
        cgroupmem.memory_accounting({"memory_stats": {}}, "caches-x")
