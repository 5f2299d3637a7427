"""The caches lab end to end (ci profile) on this machine, as root, with docker.

One real run (block level, RocksDB and Cassandra in containers on the lab's loop device),
then the claims the chapter makes, as shapes, never as measured numbers. Bad input stops
with one line and creates nothing; a killed run leaves nothing after `python -m labs clean`.
"""

import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import (
    journal_and_container_leftovers,
    kill_at_step_then_clean,
    local_lab_env,
    loops_over,
    run_cli,
    run_local_ci,
)

from labs.caches import tables
from labs.records import list_runs

pytestmark = pytest.mark.slow


def leftovers(base: Path) -> list[str]:
    """Journal entries, containers and loop devices of this test's state dir."""
    return journal_and_container_leftovers(base) + loops_over(base)


@pytest.fixture(scope="module")
def ci_run(docker_engine):
    # Not under pytest's basetemp: the lab's mount point must not move while it runs.
    base = Path(tempfile.mkdtemp(prefix="storage-labs-test-caches-", dir="/var/tmp"))
    yield run_local_ci("caches", base, timeout=1800)
    shutil.rmtree(base, ignore_errors=True)


def test_parameters_echoed_and_images_named(ci_run):
    lines = ci_run["stdout"].splitlines()
    assert lines[0].startswith("python -m labs run caches --host local --profile ci --seed")
    assert lines[1].startswith("using image storage-labs/cassandra:5.0.9")


def test_block_level_page_cache_reads_whole_pages_and_direct_io_reads_sectors(ci_run):
    block = tables.block_table(ci_run["run"])
    cold, warm = block[block.phase == "cold"], block[block.phase == "warm"]
    buffered = cold[cold.method == "buffered"]
    # Every buffered read brought at least most of a 4 KiB page, whatever it asked for.
    assert (buffered.measured > 0.9 * 4096).all()
    direct = cold[cold.method == "direct"]
    assert (direct.measured == direct.record_bytes.clip(lower=512)).all()
    # Warm: the page cache served everything; direct I/O read it all again.
    assert (warm[warm.method != "direct"].measured == 0).all()
    assert (warm[warm.method == "direct"].measured == direct.measured.values).all()
    mmap = cold[cold.method == "mmap"]
    with_ra = mmap[mmap.readahead_kib > 0].measured.min()
    assert with_ra > 4 * mmap[mmap.readahead_kib == 0].measured.max()
    assert (block[block.method == "direct"].resident_bytes == 0).all()


def test_engines_cold_costs_more_than_the_row_and_warm_costs_nothing(ci_run):
    engine = tables.engine_table(ci_run["run"])
    cold, warm = engine[engine.phase == "cold"], engine[engine.phase == "warm"]
    assert (cold.measured >= cold.row_bytes).all()
    # Warm: a repeat costs a small fraction of its cold read (the engine may read a page of
    # something else meanwhile, never the rows again).
    keys = ["engine", "setting", "compression", "readahead_kib", "row_bytes"]
    pairs = cold.merge(warm, on=keys, suffixes=("_cold", "_warm"))
    assert len(pairs) == len(cold)
    assert (pairs.measured_warm < 0.1 * pairs.measured_cold).all()
    results = ci_run["run"].results
    found = results[results.metric == "rows_found"]
    reads = ci_run["run"].meta["parameters"]["cold_reads"]
    assert set(found[found.leg == "engine"].value) == {reads}
    rocks = cold[cold.engine == "rocksdb"].set_index(["row_bytes", "readahead_kib", "setting"])
    for (row_bytes, readahead), _ in rocks.groupby(level=[0, 1]):
        assert rocks.loc[(row_bytes, readahead, "direct")].measured < \
            rocks.loc[(row_bytes, readahead, "buffered")].measured
    cassandra = cold[(cold.engine == "cassandra") & (cold.row_bytes == 100)]
    for setting in ("mmap_index_only", "standard"):
        one = cassandra[cassandra.setting == setting].set_index(["compression", "readahead_kib"])
        for readahead in set(one.index.get_level_values(1)):
            assert one.loc[("lz4", readahead)].measured > one.loc[("none", readahead)].measured


def test_direct_reads_leave_no_page_cache_and_buffered_reads_do(ci_run):
    memory = tables.memory_table(ci_run["run"])
    rocks = memory[memory.engine == "rocksdb"]
    assert (rocks[rocks.setting == "direct"].resident_bytes == 0).all()
    assert (rocks[rocks.setting == "buffered"].resident_bytes > 0).all()


def test_hit_ratio_falls_as_the_working_set_grows(ci_run):
    sweep = tables.sweep_table(ci_run["run"])
    for (label, pattern), group in sweep.groupby(["label", "pattern"]):
        group = group.sort_values("fraction")
        if pattern == "uniform":
            assert group.measured.iloc[-1] < group.measured.iloc[0], label
    rocks = sweep[sweep.engine == "rocksdb"].set_index(["pattern", "fraction", "cache"])
    for pattern, fraction in {(p, f) for p, f, _ in rocks.index}:
        assert rocks.loc[(pattern, fraction, "row")].measured >= \
            rocks.loc[(pattern, fraction, "block")].measured


def test_a_miss_costs_more_on_the_throttled_device(ci_run):
    slow = tables.throttled_table(ci_run["run"])
    cold = slow[slow.phase == "cold"]
    assert len(cold) >= 3
    assert (cold.measured > cold.unthrottled_ms).all()


def test_nothing_left_behind(ci_run):
    assert leftovers(ci_run["base"]) == []


@pytest.mark.parametrize("args, message", [
    (["--host", "vm1"], "run it with --host local"),
    (["--row-sizes", "0"], "--row-sizes must be at least"),
    (["--block-record-sizes", "384"], "powers of two"),
    (["--cql-memory-mib", "800", "--cql-heap-mib", "512"], "too little for a 512 MiB heap"),
    (["--engine", "scylla"], "docker pull scylladb/scylla"),
    (["--cold-reads", "5000", "--cql-rows", "1000"], "at most half"),
])
def test_bad_input_is_one_line_and_creates_nothing(docker_engine, tmp_path, args, message):
    env = local_lab_env(tmp_path)
    result = run_cli(["run", "caches", "--profile", "ci", *args], env, timeout=120)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert message in result.stderr
    assert leftovers(tmp_path) == []
    assert list_runs("caches", tmp_path / "runs") == []


def test_a_killed_run_leaves_nothing_after_clean(docker_engine):
    base = Path(tempfile.mkdtemp(prefix="storage-labs-test-caches-kill-", dir="/var/tmp"))
    # At "RocksDB engine": containers, a loop device, a mount, readahead set.
    kill_at_step_then_clean(["run", "caches", "--host", "local", "--profile", "ci"],
                            local_lab_env(base), "RocksDB engine", lambda: leftovers(base))
    assert list_runs("caches", base / "runs") == []
    shutil.rmtree(base, ignore_errors=True)
