"""The caches chapter's model: read units, distinct units, hit ratios (pure, fast)."""

import math

import numpy as np
import pytest

from labs.caches import model
from labs.errors import UsageError


def test_a_small_record_costs_a_whole_page_and_a_sector_with_direct_io():
    assert model.units_spanned(100, 4096, aligned=True) == 1
    assert model.block_level_bytes_per_read("buffered", 128, 2**30, 1, 0) == pytest.approx(4096)
    assert model.block_level_bytes_per_read("direct", 128, 2**30, 1, 0) == 512
    assert model.block_level_bytes_per_read("direct", 4096, 2**30, 1, 0) == 4096


def test_unaligned_records_span_one_more_unit_on_average():
    assert model.units_spanned(4096, 4096) == pytest.approx(1 + 4095 / 4096)
    assert model.units_spanned(1, 4096) == 1


def test_mmap_reads_the_readahead_window_and_one_page_without_it():
    big = 2**40  # no sharing between reads
    assert model.block_level_bytes_per_read("mmap", 128, big, 10, 128 * 1024) == \
        pytest.approx(128 * 1024, rel=1e-6)
    assert model.block_level_bytes_per_read("mmap", 128, big, 10, 0) == pytest.approx(4096)


def test_warm_reads_cost_nothing_except_with_direct_io():
    for method in ("buffered", "mmap"):
        assert model.block_level_bytes_per_read(method, 128, 2**30, 10, 0, warm=True) == 0
    assert model.block_level_bytes_per_read("direct", 128, 2**30, 10, 0, warm=True) == 512


def test_distinct_units_approach_the_file_and_match_the_exact_expectation():
    assert model.distinct_units(100, 0) == 0
    assert model.distinct_units(100, 10_000) == pytest.approx(100, rel=1e-4)
    assert model.distinct_units(1000, 1) == pytest.approx(1)
    rng = np.random.default_rng(3)
    simulated = np.mean([len(set(rng.integers(0, 500, 300))) for _ in range(400)])
    assert model.distinct_units(500, 300) == pytest.approx(simulated, rel=0.01)


def test_working_set_and_its_inverse_agree():
    for rows, units, crossing in ((72_000, 2_000, False), (1_600, 25_600, True)):
        for hot in (10, 300, 1_000):
            ws = model.working_set_units(hot, rows, units, crossing)
            assert model.hot_keys_for_working_set(ws, rows, units, crossing) == \
                pytest.approx(hot, abs=1)
    assert model.hot_keys_for_working_set(10**9, 500, 100) == 500


def test_uniform_hit_ratio_is_cache_over_working_set():
    assert model.uniform_hit_ratio(50, 100) == 0.5
    assert model.uniform_hit_ratio(200, 100) == 1.0
    weights = np.full(1000, 1 / 1000)
    assert model.che_hit_ratio(weights, 250) == pytest.approx(0.25, abs=0.01)


def test_skewed_keys_hit_more_than_uniform_keys_in_the_same_cache():
    zipf = model.zipf_weights(10_000, 0.99)
    assert zipf.sum() == pytest.approx(1)
    assert zipf[0] > zipf[-1]
    for capacity in (100, 1_000, 5_000):
        assert model.che_hit_ratio(zipf, capacity) > capacity / 10_000
    assert model.che_hit_ratio(zipf, 20_000) == 1.0
    assert model.che_hit_ratio(zipf, 0) == 0.0


def test_unit_popularity_sums_the_keys_of_each_unit():
    popularity = model.unit_popularity(np.array([0.5, 0.25, 0.25]), np.array([7, 7, 9]))
    assert sorted(popularity.tolist()) == [0.25, 0.75]


def test_a_miss_on_a_throttled_device_waits_for_the_binding_limit():
    assert model.throttled_miss_ms(1, 4096, 100, 4 * 2**20) == pytest.approx(10)
    assert model.throttled_miss_ms(1, 64 * 2**10, 1000, 2**20, 0.5) == pytest.approx(62.5)
    # an engine slower than the limit is not held back by it
    assert model.throttled_miss_ms(1, 4096, 100, 0, unthrottled_ms=25) == 25


def test_cassandra_chunks_and_rocksdb_blocks():
    chunk = model.cassandra_data_unit_bytes(100, compressed=True)
    assert chunk == pytest.approx((1 + 99 / 16384) * (1 + 16383 / 4096) * 4096)
    assert model.cassandra_data_unit_bytes(100, compressed=False) == pytest.approx(4096 + 99)
    assert model.rocksdb_data_unit_bytes(4101, direct=True) < \
        model.rocksdb_data_unit_bytes(4101, direct=False)


def test_bad_sizes_are_refused():
    with pytest.raises(UsageError):
        model.units_spanned(0, 4096)
    with pytest.raises(UsageError):
        model.zipf_weights(0, 1.0)
    with pytest.raises(UsageError):
        model.block_level_bytes_per_read("sideways", 128, 2**20, 1, 0)
    assert math.isclose(model.row_cache_capacity_rows(2**20, 100, 16),
                        2**20 / (100 + 32 + model.ROW_CACHE_OVERHEAD_BYTES))


def test_first_read_misses_match_counting_and_a_simulation():
    units = 1000
    uniform = np.full(units, 1 / units)
    # No warm-up: every distinct unit read is a first read, N(1 - (1 - 1/N)^r) of r reads.
    reads = 3000
    expected = units * (1 - (1 - 1 / units) ** reads) / reads
    assert model.first_read_miss_ratio(uniform, 0, reads) == pytest.approx(expected)
    # A long warm-up leaves nothing unread.
    assert model.first_read_miss_ratio(uniform, 100 * units, reads) < 1e-9
    # Zipf keys after a warm-up: a seeded simulation of the same draws agrees.
    weights = model.zipf_weights(units, 0.99)
    rng = np.random.default_rng(5)
    warm, measured, trials, firsts = 2000, 2000, 200, 0
    for _ in range(trials):
        draws = rng.choice(units, size=warm + measured, p=weights)
        seen = set(draws[:warm].tolist())
        for unit in draws[warm:].tolist():
            if unit not in seen:
                firsts += 1
                seen.add(unit)
    simulated = firsts / (trials * measured)
    assert model.first_read_miss_ratio(weights, warm, measured) == \
        pytest.approx(simulated, rel=0.03)


def test_rocksdb_cuts_a_block_once_it_is_full_or_nearly_full():
    # Entries of 1,052 bytes: three make 3,156 bytes, under 90 % of 4 KiB, so a fourth goes
    # in (4,208 bytes, past 4 KiB); entries of 1,500 bytes: two make 3,000, and a third
    # would pass 4 KiB while two already hold 73 %, under 90 %, so it goes in too.
    assert model.entries_per_block(1052) == 4
    assert model.entries_per_block(1500) == 3
    assert model.entries_per_block(1900) == 2  # 3,800 >= 90 % of 4,096: cut before a third
    assert model.entries_per_block(124) == 33  # 4,092 bytes; a 34th would pass 4 KiB
    assert model.entries_per_block(5000) == 1
