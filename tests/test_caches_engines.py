"""The CQL engines' containers: one code path, two flavours (Cassandra, ScyllaDB).

ScyllaDB's image cannot be had on the machines that test this project (no registry), so
its container is checked as a specification here, and the lab's live test checks that
`--engine scylla` without the image stops with one line; everything else the ScyllaDB leg
does is the Cassandra leg's code, which the live test runs.
"""

from labs.caches.cql import FLAVORS, table_name
from labs.caches.params import SCYLLA_IMAGE, Parameters


def spec(engine: str, **limits):
    return FLAVORS[engine].container_spec("caches-x-cql0", "image:1", "/lab/mnt/cql", 45123,
                                          FLAVORS[engine].settings[0], 1024, 1536,
                                          "/dev/loop9", **limits)


def test_scylla_runs_the_official_image_with_its_own_flags():
    scylla = spec("scylla")
    assert scylla.command[:8] == ["--smp", "1", "--memory", "1024M", "--overprovisioned", "1",
                                  "--developer-mode", "1"]
    assert "--broadcast-rpc-address" in scylla.command
    assert scylla.binds == {"/lab/mnt/cql": "/var/lib/scylla"}
    assert scylla.ports == {9042: 45123} and scylla.memory_limit_mib == 1536
    assert FLAVORS["scylla"].cold_suffix == " BYPASS CACHE"
    assert FLAVORS["scylla"].settings == ("direct",)


def test_cassandra_gets_its_setting_through_the_image_entrypoint():
    cassandra = spec("cassandra")
    assert cassandra.command is None
    assert cassandra.environment["CASSANDRA_DISK_ACCESS_MODE"] == "mmap_index_only"
    assert cassandra.environment["CASSANDRA_HEAP"] == "1024M"
    assert cassandra.binds == {"/lab/mnt/cql": "/var/lib/cassandra"}
    assert FLAVORS["cassandra"].settings == ("mmap_index_only", "standard")
    assert FLAVORS["cassandra"].cold_suffix == ""


def test_both_flavours_share_the_health_check_and_device_limits():
    for engine in FLAVORS:
        limited = spec(engine, read_iops=100, read_bps=4096)
        assert limited.device_read_iops == {"/dev/loop9": 100}
        assert limited.device_read_bps == {"/dev/loop9": 4096}
        assert limited.health_command[-1] == "exec 3<>/dev/tcp/127.0.0.1/9042"


def test_image_choice_and_table_names():
    assert Parameters.for_profile("ci", engine="scylla").image_for_engine() == SCYLLA_IMAGE
    assert Parameters.for_profile("ci").image_for_engine() == "storage-labs/cassandra:5.0.9"
    assert Parameters.for_profile("ci", cql_image="x/y:1").image_for_engine() == "x/y:1"
    assert table_name(100, True) == "t100_lz4" and table_name(4096, False) == "t4096_none"
