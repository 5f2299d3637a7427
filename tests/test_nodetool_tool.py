"""The nodetool parsers against real Cassandra 5.0.9 output (tests/fixtures/nodetool/)."""

from pathlib import Path

import pytest

from labs.errors import UsageError
from labs.tools import nodetool as nt

FIXTURES = Path(__file__).parent / "fixtures" / "nodetool"


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_info_of_a_fresh_node_with_the_automatic_key_cache():
    info = nt.parse_info(text("info-one-node-heap512m.txt"))
    assert info.gossip_active and info.native_transport_active
    assert (info.heap_used_mib, info.heap_max_mib, info.uptime_s) == (115.16, 512.0, 59)
    assert info.load_bytes == round(114.71 * 1024)
    assert (info.data_center, info.rack, info.exceptions) == ("datacenter1", "rack1", 0)
    key = info.key_cache
    # Automatic size: 5 % of a 512 MiB heap, printed rounded down to whole MiB.
    assert (key.entries, key.size_bytes, key.capacity_bytes) == (8, 640, 25 * 2**20)
    assert (key.hits, key.requests, key.misses, key.hit_rate) == (69, 76, 7, 0.908)
    assert key.save_period_s == 14400 and key.miss_latency is None
    assert info.row_cache.capacity_bytes == 0 and info.row_cache.hit_rate is None  # NaN
    assert info.chunk_cache is None  # the chunk cache is off: nodetool prints no line


def test_info_with_key_and_row_caches_sized_by_hand():
    info = nt.parse_info(text("info-key-row-caches-on.txt"))
    key, row = info.key_cache, info.row_cache
    assert (key.entries, key.size_bytes, key.capacity_bytes) == (
        2116, round(165.41 * 1024), 16 * 2**20)
    assert (key.hits, key.requests, key.hit_rate) == (588, 2703, 0.218)
    assert (row.entries, row.size_bytes, row.capacity_bytes) == (
        1061, round(264.18 * 1024), 8 * 2**20)
    assert (row.hits, row.misses, row.requests, row.hit_rate) == (439, 1061, 1500, 0.293)
    assert info.counter_cache.hit_rate is None
    assert info.fields["Network Cache"] == "size 8 MiB, overflow size: 0 bytes, capacity 32 MiB"


def test_info_with_the_key_cache_turned_off_counts_every_request_as_a_miss():
    key = nt.parse_info(text("info-key-cache-off.txt")).key_cache
    assert (key.capacity_bytes, key.entries, key.hits, key.requests) == (0, 0, 0, 8720)
    assert key.misses == 8720 and key.hit_rate == 0.0


def test_info_of_a_cluster_node_with_a_small_heap():
    info = nt.parse_info(text("info-cluster-node1.txt"))
    assert info.heap_max_mib == 256.0
    assert info.key_cache.capacity_bytes == 12 * 2**20  # 5 % of 256 MiB, whole MiB


def test_info_without_a_cache_line_is_refused_by_name():
    lines = [line for line in text("info-one-node-heap512m.txt").splitlines()
             if not line.startswith("Key Cache")]
    with pytest.raises(nt.NodetoolParseError, match="'Key Cache'"):
        nt.parse_info("\n".join(lines), "node1 info")


def test_info_with_a_damaged_cache_line_is_refused():
    damaged = text("info-one-node-heap512m.txt").replace("69 hits", "many hits")
    with pytest.raises(nt.NodetoolParseError, match="Key Cache line"):
        nt.parse_info(damaged)


def test_status_of_three_nodes_up():
    nodes = nt.parse_status(text("status-3-up.txt"))
    assert [n.address for n in nodes] == ["10.213.7.13", "10.213.7.11", "10.213.7.12"]
    assert all(n.code == "UN" and n.up and n.state == "normal" for n in nodes)
    assert [n.owns_pct for n in nodes] == [66.7, 66.7, 66.7]
    assert nodes[0].load_bytes == round(86.1 * 1024) and nodes[0].tokens == 1
    assert nodes[1].host_id == "c775da55-9dd4-4ac3-9589-43b74061734c"
    assert {n.rack for n in nodes} == {"rack1"} and {n.datacenter for n in nodes} == {
        "datacenter1"}


@pytest.mark.parametrize("name, down", [
    ("status-1-down.txt", {"10.213.7.13"}),
    ("status-2-down.txt", {"10.213.7.13", "10.213.7.12"}),
])
def test_status_with_stopped_nodes(name, down):
    nodes = nt.parse_status(text(name))
    assert {n.address for n in nodes if not n.up} == down
    assert {n.code for n in nodes if not n.up} == {"DN"}
    assert len(nodes) == 3


def test_status_with_a_garbled_node_line_is_refused():
    garbled = text("status-3-up.txt").replace("66.7%             94609a6b", "lots 94609a6b")
    with pytest.raises(nt.NodetoolParseError, match="cannot read node line"):
        nt.parse_status(garbled)


def test_status_without_nodes_is_refused():
    with pytest.raises(nt.NodetoolParseError, match="no node lines"):
        nt.parse_status(text("info-cluster-node1.txt"))


def test_tablestats_of_a_compressed_table_after_compaction():
    stats = nt.parse_tablestats(text("tablestats-lz4-one-sstable.txt"))
    assert (stats.keyspace, stats.table, stats.sstable_count) == ("lab", "t_lz4", 1)
    assert stats.space_used_live_bytes == stats.space_used_total_bytes == 13183804
    assert stats.partitions_estimate == 100383
    assert (stats.local_read_count, stats.local_read_latency_ms) == (4300, 0.598)
    assert (stats.local_write_count, stats.local_write_latency_ms) == (0, None)  # NaN
    assert stats.compression_ratio == 0.8745
    assert (stats.bloom_filter_false_positives, stats.bloom_filter_false_ratio) == (0, 0.0)
    assert (stats.bloom_filter_space_used_bytes, stats.bloom_filter_off_heap_bytes) == (
        125496, 125488)
    assert nt.parse_size_bytes(stats.fields["Max SSTable size"]) == round(12.573 * 2**20)


def test_tablestats_of_an_uncompressed_table_has_no_ratio():
    stats = nt.parse_tablestats(text("tablestats-uncompressed.txt"))
    assert stats.table == "t_none" and stats.compression_ratio is None  # printed -1.00000


def test_tablestats_before_a_flush_shows_only_the_memtable():
    stats = nt.parse_tablestats(text("tablestats-memtable-only.txt"))
    assert (stats.sstable_count, stats.space_used_live_bytes) == (0, 0)
    assert (stats.memtable_cell_count, stats.local_write_count) == (48, 48)
    assert stats.local_write_latency_ms == 0.565


@pytest.mark.parametrize("table", ["t_none", "lab.t_none"])
def test_tablestats_picks_one_table_of_a_keyspace(table):
    stats = nt.parse_tablestats(text("tablestats-keyspace-two-tables.txt"), table)
    assert stats.table == "t_none" and stats.space_used_live_bytes == 14833323


def test_tablestats_of_a_keyspace_needs_a_table_name():
    with pytest.raises(nt.NodetoolParseError, match="lab.t_lz4, lab.t_none"):
        nt.parse_tablestats(text("tablestats-keyspace-two-tables.txt"))
    with pytest.raises(nt.NodetoolParseError, match="table 'kv'"):
        nt.parse_tablestats(text("tablestats-keyspace-two-tables.txt"), "kv")


def test_tablestats_with_a_damaged_count_is_refused():
    damaged = text("tablestats-lz4-one-sstable.txt").replace("SSTable count: 1",
                                                             "SSTable count: one")
    with pytest.raises(nt.NodetoolParseError, match="SSTable count is 'one'"):
        nt.parse_tablestats(damaged)


@pytest.mark.parametrize("printed, size", [
    ("640 bytes", 640), ("0B", 0), ("166.45 KiB", 170445), ("25 MiB", 25 * 2**20),
    ("12.587MiB", round(12.587 * 2**20)), ("2 GiB", 2 * 2**30),
])
def test_sizes_as_cassandra_prints_them(printed, size):
    assert nt.parse_size_bytes(printed) == size


def test_a_size_without_a_unit_is_refused():
    with pytest.raises(nt.NodetoolParseError, match="not a size"):
        nt.parse_size_bytes("12 parsecs")


def test_commands():
    assert nt.info_command() == ["nodetool", "info"]
    assert nt.status_command("lab") == ["nodetool", "status", "lab"]
    assert nt.tablestats_command("lab", "t_lz4") == ["nodetool", "tablestats", "lab.t_lz4"]
    assert nt.flush_command("lab") == ["nodetool", "flush", "lab"]
    with pytest.raises(UsageError, match="table name"):
        nt.tablestats_command("lab", "t; rm -rf /")
