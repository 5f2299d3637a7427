"""The Device speed explanation page: every shape and number its text states, from the models."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import glued_names

from labs.devices import charts
from labs.devices import explain as page
from labs.models import cloud_volume, disk

PAGE = Path(__file__).resolve().parents[1] / "book" / "devices" / "explain.md"
FIGURES = page.explain_figures()


def number(name: str) -> float:
    return float(FIGURES[name].replace(",", ""))


def test_every_glued_name_exists_and_every_figure_is_used():
    used = glued_names(PAGE)
    assert used <= set(FIGURES), used - set(FIGURES)
    assert set(FIGURES) - used == set(), "figures nothing quotes"


def test_ostep_random_and_sequential_and_two_orders_of_magnitude():
    assert number("cheetah_rnd_ms") == pytest.approx(6.03, abs=0.01)   # OSTEP: about 6 ms
    assert number("cheetah_rnd_mb_s") == pytest.approx(0.66, abs=0.03)  # OSTEP rounds to 0.66
    assert number("barracuda_rnd_mb_s") == pytest.approx(0.31, abs=0.01)
    for drive in page.DRIVES:
        assert 100 <= number(f"{drive}_ratio") < 1000  # "two orders of magnitude"


def test_bigger_requests_only_ever_help_and_half_rate_is_where_text_says():
    rates = page.throughput_by_request_size()
    for _, curve in rates.groupby("drive"):
        assert curve["mb_s"].is_monotonic_increasing
    for drive in page.DRIVES:  # half the peak: transfer time equals positioning time
        size = number(f"{drive}_half_rate_mb") * disk.MB
        peak = disk.get_drive(drive).transfer_mb_s
        assert disk.random_io(drive, size).throughput_mb_s == pytest.approx(peak / 2, rel=0.01)


def test_queue_depth_one_makes_every_policy_the_same_and_fifo_never_gains():
    sweep = page.scheduler_sweep()
    for _, rows in sweep.groupby("drive"):
        depth1 = rows[rows.queue_depth == 1]["iops"]
        assert depth1.max() == pytest.approx(depth1.min())
        fifo = rows[rows.policy == "FIFO"]["iops"]
        assert fifo.max() == pytest.approx(fifo.min())
        at64 = rows[rows.queue_depth == 64].set_index("policy")["iops"]
        assert at64["SPTF"] > at64["SSTF"] > at64["FIFO"]
    for drive in page.DRIVES:
        assert number(f"{drive}_sptf4_gain") > 1.5
        assert number(f"{drive}_sptf64_gain") > number(f"{drive}_sptf4_gain")


def test_ssd_iops_stop_at_the_channels_and_then_only_latency_grows():
    curves = page.ssd_curves()
    for (channels, _read_us), rows in curves.groupby(["channels", "read_us"]):
        rows = rows.sort_values("queue_depth")
        assert rows["iops"].is_monotonic_increasing
        full = rows[rows.queue_depth >= channels]
        assert full["iops"].max() == full["iops"].min()
        # Little's law on every row: depth = IOPS x latency
        for row in rows.itertuples():
            assert row.iops * row.latency_ms / 1000 == pytest.approx(row.queue_depth, rel=1e-3)
    assert number("ssd_qd1_iops") == 10_000 and number("ssd_top_iops") == 80_000
    assert number("ssd_qd64_latency_ms") / 0.1 == pytest.approx(8)  # "eight times its service"
    assert number("gp3_qd_for_full_iops_at_1ms") == 3


def test_sc1_small_random_io_gets_a_few_dozen_operations_and_sequential_narrows_the_gap():
    assert 10 <= number("sc1_burst_iops") < 100 and number("sc1_baseline_iops") < 10
    assert number("ratio_baseline") > number("ratio_burst") > number("seq_ratio") > 1
    rates = page.volume_rates()
    random_300 = rates[(rates.sc1_gib == 300) & (rates.pattern == "random")]
    for volume, rows in random_300.groupby("volume"):
        if volume.startswith("sc1"):  # every I/O up to 1 MiB costs the same: IOPS flat
            assert rows["iops"].max() == pytest.approx(rows["iops"].min())


def test_the_burst_lasts_as_long_as_the_text_says_then_baseline():
    timeline = page.sc1_timeline()
    rows = timeline[timeline.sc1_gib == 300]
    hours = number("sc1_burst_hours")
    assert rows[rows.hours <= hours - 0.25]["mib_s"].min() == pytest.approx(
        number("sc1_burst_mib_s"), abs=0.05)
    assert rows[rows.hours >= hours + 0.25]["mib_s"].max() == pytest.approx(
        number("sc1_baseline_mib_s"), abs=0.01)


def test_one_thread_explains_the_article_at_about_a_millisecond():
    ratios = page.ratio_by_gp3_latency()
    assert ratios["ratio"].is_monotonic_decreasing
    assert ratios["ratio"].iloc[0] == pytest.approx(number("ratio_burst"), rel=0.01)
    fit = number("fit_latency_ms")
    assert 0.5 < fit < 2  # "about a millisecond", within gp3's "single-digit millisecond"
    assert page.one_thread_ratio(fit) == pytest.approx(page.ARTICLE_RATIO, rel=0.01)
    assert number("one_thread_1ms_ratio") == pytest.approx(page.ARTICLE_RATIO, abs=3)
    sc1 = cloud_volume.predict(cloud_volume.Sc1(300), 16, "random", "burst")
    assert 1000 / sc1.iops > 40  # "one thread keeps up unless each sc1 I/O takes over 40 ms"


def test_exercise_answers():
    assert (number("ex1_burst_iops"), number("ex1_baseline_iops")) == (160, 24)
    assert number("ex1_cap_iops") < 3000 and number("ex1_cap_baseline_iops") == 192
    assert number("ex2_in_flight") == 2 and number("ex2_disks") == 13


def test_every_chart_builds_small():
    for chart in (charts.random_read_chart(page.random_read_parts()),
                  charts.throughput_chart(page.throughput_by_request_size()),
                  charts.scheduler_chart(page.scheduler_sweep()),
                  charts.ssd_chart(page.ssd_curves()),
                  charts.volume_chart(page.volume_rates()),
                  charts.sc1_timeline_chart(page.sc1_timeline()),
                  charts.ratio_chart(page.ratio_by_gp3_latency(), 45, 0.95)):
        assert len(chart.to_json()) < 200_000

