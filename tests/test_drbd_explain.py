"""The DRBD explanation page: every number its text states, from the model and the sources."""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
import pytest
from conftest import glued_names

from labs.drbd import charts
from labs.drbd import explain as page
from labs.drbd import model as drbd

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "drbd" / "explain.md"
FIGURES = page.explain_figures()


def number(name: str) -> float:
    return float(FIGURES[name].replace(",", ""))


def test_every_glued_name_exists_and_every_figure_is_used():
    used = glued_names(PAGE)
    assert used <= set(FIGURES), used - set(FIGURES)
    assert set(FIGURES) - used == set(), "figures nothing quotes"


def test_the_reference_file_holds_the_articles_and_the_guides_figures():
    table = pd.read_csv(ROOT / "data" / "reference" / "drbd-article.csv", dtype=str)
    assert list(table.columns) == ["figure", "case", "value", "unit", "source_title",
                                   "source_url", "source_date", "notes"]
    assert table["source_url"].notna().all() and table["source_title"].notna().all()
    assert not table.duplicated(["figure", "case"]).any()
    assert page.published("pgbench_tps_vs_local", page.ONE_ZONE) == 62.5
    assert page.published("pgbench_tps_vs_local", page.TWO_ZONES) == 26.9
    assert page.published("pgbench_scale_factor", "sample output") == 1
    assert page.published("fio_iodepth", "job file [global]") == 1
    assert page.published("fio_direct", "job file [global]") == 1
    assert page.published("fio_runtime", "job file [global]") == 30
    blocks = table[table.figure == "fio_block"]["value"].astype(int).tolist()
    assert blocks == [1024, 1024, 512, 4]
    # The sample output is recorded as the sample only: no database is named.
    sample = table[table.figure == "pgbench_sample_tps"]
    assert len(sample) == 1 and "does not say which" in sample["case"].iloc[0]


def test_the_guides_example_is_the_models_protocol_c():
    assert (number("guide_disk_ms"), number("guide_rtt_ms"), number("guide_c_ms")) == (3, 0.2, 3.2)
    assert number("guide_increase_pct") == 7  # "about 7 %": 3.2 / 3 = 1.067
    assert drbd.write_latency_ms("C", local_write_ms=3, peer_write_ms=3,
                                 rtt_ms=0.2) == pytest.approx(3.2)
    assert (number("gige_rtt_low_us"), number("gige_rtt_high_us")) == (100, 200)


def test_a_slow_local_disk_hides_the_network_and_a_sum_would_overstate_it():
    local, peer, rtt = page.SLOW_LOCAL
    assert (number("slow_local_ms"), number("fast_peer_ms"), number("slow_rtt_ms")) == \
        (local, peer, rtt)
    assert peer + rtt < local  # "the peer's path finishes first"
    assert number("slow_local_c_ms") == local
    assert number("slow_local_sum_ms") == local + rtt > number("slow_local_c_ms")


def test_transfer_times_and_the_activity_log():
    assert number("transfer_4k_ms") == pytest.approx(4096 * 8 / 1e9 * 1000, abs=0.001)
    assert number("transfer_1m_ms") == pytest.approx(2**20 * 8 / 1e9 * 1000, abs=0.05)
    assert number("transfer_1m_ms") > 100 * number("transfer_4k_ms")
    assert number("al_extents") == 1237 and number("al_gib") == pytest.approx(4.8, abs=0.05)


def test_the_charts_formulas_are_the_model():
    """The charts compute latency and TPS in the browser from protocol_paths(); the same
    expressions, evaluated here, must give the model's numbers everywhere."""
    paths = page.protocol_paths()
    assert set(paths["peer_writes"]) == {0, 1}
    assert set(paths[paths.peer_writes == 1]["protocol"]) == {"C"}
    exprs = {name: compile(getattr(charts, name).replace("datum.", ""), name, "eval")
             for name in ("LATENCY_EXPR", "COMMIT_EXPR", "RATIO_PCT_EXPR", "CROSSING_EXPR")}
    disks = [0.1, 0.5, 3, 9.5]
    for row in paths[paths.rtt_ms.isin([0, 0.3, 1, 2.5, 7, 10])].itertuples():
        for local, peer in itertools.product(disks, disks):
            env = {"max": max, "LOCAL": local, "PEER": peer, "network_ms": row.network_ms,
                   "peer_writes": row.peer_writes}
            assert eval(exprs["LATENCY_EXPR"], env) == pytest.approx(
                drbd.write_latency_ms(row.protocol, local_write_ms=local, peer_write_ms=peer,
                                      rtt_ms=row.rtt_ms))
        for work, disk in itertools.product([0, 0.41, 5], disks):
            env = {"max": max, "DISK": disk, "WORK": work, "network_ms": row.network_ms,
                   "peer_writes": row.peer_writes}
            env["commit_ms"] = eval(exprs["COMMIT_EXPR"], env)
            expected = page.tps_ratio_by_rtt(work, disk).set_index(["protocol", "rtt_ms"])
            assert eval(exprs["RATIO_PCT_EXPR"], env) / 100 == pytest.approx(
                expected.loc[(row.protocol, row.rtt_ms), "ratio"])
    for ratio, (work, disk) in itertools.product([62.5, 26.9], [(0.41, 0.5), (2, 0.5)]):
        env = {"WORK": work, "DISK": disk, "ratio_pct": ratio}
        assert eval(exprs["CROSSING_EXPR"], env) == pytest.approx(
            drbd.added_commit_ms_for_ratio(ratio / 100, local_ms_per_transaction=work + disk))


def test_the_latency_table_orders_the_protocols_and_c_pays_every_round_trip():
    table = page.latency_by_rtt(3, 3).pivot(index="rtt_ms", columns="protocol",
                                            values="latency_ms")
    assert ((table["A"] <= table["B"]) & (table["B"] <= table["C"])).all()
    assert (table["A"] == 3).all()
    assert (table.loc[table.index <= 3, "B"] == 3).all()  # "B costs nothing until ..."
    assert table["C"].is_monotonic_increasing and table.loc[0.2, "C"] == pytest.approx(3.2)
    fast = page.latency_by_rtt(0.1, 0.1).pivot(index="rtt_ms", columns="protocol",
                                               values="latency_ms")
    # A fast local disk: B pays (almost) the whole round trip.
    assert (fast.loc[fast.index >= 1, "B"] == fast.index[fast.index >= 1]).all()


def test_tps_ratio_for_c_depends_only_on_the_total_time_per_transaction():
    a = page.tps_ratio_by_rtt(0.41, 0.5).set_index(["protocol", "rtt_ms"])["ratio"]
    b = page.tps_ratio_by_rtt(0.81, 0.1).set_index(["protocol", "rtt_ms"])["ratio"]
    assert a.loc["C"].values == pytest.approx(b.loc["C"].values)
    assert not a.loc["B"].values == pytest.approx(b.loc["B"].values)  # "for B it does not"
    assert (a.loc["A"] == 1).all()
    assert a.loc["C"].is_monotonic_decreasing


def test_the_articles_ratios_read_back_as_milliseconds():
    assert (number("article_one_zone_pct"), number("article_two_zones_pct")) == (62.5, 26.9)
    assert number("article_clients") == 10 and number("article_transactions") == 1000
    assert number("article_scale") == 1
    assert number("sample_tps") == 1098 and number("sample_latency_ms") == 9.11
    # One at a time: 1000 / TPS; the clients' 9.11 ms is ten of those (the queue).
    assert number("sample_ms_per_txn") == pytest.approx(1000 / 1097.77, abs=0.005)
    assert number("sample_ms_per_txn") * 10 == pytest.approx(number("sample_latency_ms"),
                                                             abs=0.05)
    t = 1000 / 1097.770942
    assert number("added_one_zone_ms") == pytest.approx(t * (1 / 0.625 - 1), abs=0.005)
    assert number("added_two_zones_ms") == pytest.approx(t * (1 / 0.269 - 1), abs=0.005)
    assert number("added_difference_ms") == pytest.approx(
        number("added_two_zones_ms") - number("added_one_zone_ms"), abs=0.01)
    # Read back in, the added time gives the article's ratios again.
    for name, ratio in (("one_zone", 0.625), ("two_zones", 0.269)):
        added = drbd.added_commit_ms_for_ratio(ratio, local_ms_per_transaction=t)
        assert drbd.tps_ratio(cpu_ms=t, local_commit_ms=0,
                              mirrored_commit_ms=added) == pytest.approx(ratio)
        assert number(f"added_{name}_ms") == pytest.approx(added, abs=0.005)
    # Ten clients side by side: ten times the time, ten times the milliseconds.
    assert number("parallel_ms_per_txn") == pytest.approx(10 * t, abs=0.005)
    assert number("parallel_one_zone_ms") == pytest.approx(10 * t * 0.6, abs=0.05)
    assert number("parallel_two_zones_ms") == pytest.approx(10 * t * (1 / 0.269 - 1), abs=0.05)
    # "far beyond the round trips of one region": well over the one-at-a-time reading.
    assert number("parallel_one_zone_ms") > 5 and number("parallel_two_zones_ms") > 20


def test_the_three_possible_sources_of_the_sample():
    cases = page.sample_cases().set_index("sample_from")
    t = 1000 / 1097.770942
    assert cases.loc["local disk", "local_ms"] == pytest.approx(t)
    assert cases.loc["one zone", "local_ms"] == pytest.approx(t * 0.625)
    assert cases.loc["two zones", "local_ms"] == pytest.approx(t * 0.269)
    assert number("case_local_disk_one_zone_ms") == number("added_one_zone_ms")
    assert number("case_local_disk_two_zones_ms") == number("added_two_zones_ms")
    for case in ("local_disk", "one_zone", "two_zones"):
        assert number(f"case_{case}_one_zone_ms") < number(f"case_{case}_two_zones_ms")
        assert number(f"case_{case}_one_zone_ms") == pytest.approx(
            number(f"case_{case}_local_ms") * 0.6, abs=0.01)
    # Whichever it was, crossing zones cost more than staying in one, and under 2.5 ms.
    assert cases["added_ms_two_zones"].max() < 2.5


def test_the_tps_charts_start_adds_up_to_the_samples_time():
    assert number("chart_disk_ms") + number("chart_work_ms") == pytest.approx(
        number("sample_ms_per_txn"), abs=0.01)
    ratios = page.tps_ratio_by_rtt(number("chart_work_ms"), number("chart_disk_ms"))
    c = ratios[ratios.protocol == "C"].set_index("rtt_ms")["ratio"]
    # The dots: C's curve crosses 62.5 % and 26.9 % where the text's round trips are.
    assert c.loc[0.5] > 0.625 > c.loc[0.6]
    assert c.loc[2.4] > 0.269 > c.loc[2.5]


def test_exercise_answers():
    assert (number("ex1_a_ms"), number("ex1_b_ms"), number("ex1_c_ms")) == (0.5, 0.5, 2.4)
    assert number("ex2_commit_ms") == 2
    assert (number("ex2_local_tps"), number("ex2_mirrored_tps")) == (400, 250)
    assert number("ex2_ratio_pct") == number("article_one_zone_pct")  # "the same fraction"
    assert number("ex3_added_ms") == pytest.approx(2.5 / 9, abs=0.005)
    assert number("ex3_added_ms") < 1  # less than a round trip between zones
    assert number("ex4_writes") == 20 and number("ex4_c_extra_ms") == 20


def test_the_page_links_the_article_and_the_lab():
    text = PAGE.read_text()
    assert "https://qiita.com/t-taku/items/b69135f4d59607883b47" in text
    assert "{doc}`lab`" in text


def test_every_chart_builds_small_with_its_controls_bound():
    paths = page.protocol_paths()
    latency = charts.latency_chart(paths)
    ratio = charts.tps_ratio_chart(paths, page.article_ratios(), page.chart_work_ms(),
                                   page.CHART_DISK_MS)
    for chart, names in ((latency, {"LOCAL", "PEER"}), (ratio, {"WORK", "DISK"})):
        spec = chart.to_dict()
        assert len(chart.to_json()) < 200_000
        assert {p["name"]: p["bind"]["input"] for p in spec["params"]} == \
            dict.fromkeys(names, "range")
