"""The devices lab page's claims, checked against the shipped run (data/runs/devices/SHIPPED).

Every sentence of book/devices/lab.md about the run's shape (holds its limit, the same
for 16 KiB and 1 MiB, bursts then falls, the throttle never bit, smaller than ours) is
asserted here, so a new shipped run that says otherwise fails until the text is changed.
"""

from __future__ import annotations

import pytest

from labs import records
from labs.devices import page
from labs.devices.params import Parameters
from labs.devices.run import volumes

RUN = records.shipped_run("devices")
FIO = page.fio_results(RUN)
F = page.figures(RUN)


def volume(name: str, workload: str):
    return FIO[(FIO["volume"] == name) & (FIO["workload"] == workload)]


def test_the_unthrottled_disk_is_far_above_both_contracts():
    assert (volume("unthrottled", "depth-sweep")["iops"] > 3000).all()


def test_gp3_holds_its_limit_at_every_depth_even_at_depth_one():
    gp3 = volume("gp3", "depth-sweep")
    assert (gp3["error_pct"].abs() < 3).all(), gp3[["depth", "iops", "model_iops"]]


def test_sc1_serves_its_budget_at_every_depth_and_fio_s_own_figure_reads_lower():
    sc1 = volume("sc1", "depth-sweep").sort_values("depth")
    assert (sc1["error_pct"].abs() < 2).all(), sc1[["depth", "iops", "model_iops"]]
    assert (sc1["lat_mean_ms"].diff().dropna() > 0).all()  # "waiting longer in the queue"
    deepest = sc1.iloc[-1]
    assert deepest["fio_iops"] < 0.9 * deepest["iops"]  # the parenthesis on fio's figure


def test_sc1_charges_every_read_size_the_same_and_gp3_climbs_to_125_mib_s():
    sc1 = volume("sc1", "block-sweep")["iops"]
    assert sc1.max() / sc1.min() < 1.05
    gp3 = volume("gp3", "block-sweep").sort_values("block_kib")
    rates = gp3["mib_s"].tolist()
    assert all(b >= a * 0.99 for a, b in zip(rates, rates[1:], strict=False))  # climbs, then flat
    assert gp3["mib_s"].iloc[-1] == pytest.approx(125, rel=0.05)


def test_the_error_summary_matches_the_table_and_names_every_outlier():
    modelled = FIO[FIO["model_iops"].notna()]
    assert int(F["within_5pct"]) == int((modelled["error_pct"].abs() <= 5).sum())
    outliers = modelled[modelled["error_pct"].abs() > 5]
    named = {("sc1", "sequential"), ("sc1", "write")}
    assert {(r.volume, r.workload) for r in outliers.itertuples()} == named
    assert (outliers["error_pct"] < 0).all()  # "below the model"
    assert abs(float(F["sc1_1m_error"])) < 5  # "came within"
    assert len(outliers) == 2, "devices/lab.md, details: 'The two measurements outside 5 %'"
    assert int(F["within_5pct"]) >= 0.9 * int(F["measurements"]), \
        "devices/lab.md, the contracts' verdict: 'confirmed'"


def test_the_emulated_gp3_answers_far_faster_than_a_real_one():
    # Contracts: "Each of its reads took only X ms, far less than the 1 ms the explanation
    # assumes for a real gp3"; the sysbench section: "so it gives a larger ratio".
    assert float(F["gp3_qd1_ms"]) < 0.5
    # The article's benchmark: "one sysbench read or write took X ms, so the ratio comes out
    # larger"; the summary: "about half the 1 ms assumed for a real gp3".
    assert 0.4 < float(F["sb_unthrottled_ms_per_op"]) < 0.7
    assert int(F["sb_ratio"]) > float(F["article_ratio_at_1ms"]), \
        "devices/lab.md, the article's benchmark: 'so the ratio comes out larger'"


def test_the_burst_holds_then_falls_to_the_baseline_and_starts_above_it():
    burst = page.burst_results(RUN)
    assert float(F["burst_measured_mib_s"]) == pytest.approx(float(F["burst_mib_s"]), rel=0.05)
    assert float(F["base_measured_mib_s"]) == pytest.approx(float(F["base_mib_s"]), rel=0.05)
    assert abs(float(F["burst_ended_s"]) - float(F["burst_model_s"])) <= 2
    assert abs(float(F["burst_ended_s"]) - float(F["burst_at_measured_s"])) <= 2
    assert burst["mib_s"].iloc[0] > float(F["burst_mib_s"])  # "the first second is above"


def test_sysbench_one_thread_never_reaches_gp3s_limit_and_sc1_is_held_below_its_budget():
    table = page.sysbench_results(RUN).set_index("volume")
    assert table.loc["gp3", "ops_per_s"] < 0.8 * 3000  # "the throttle never bit"
    assert abs(table.loc["gp3", "error_pct"]) < 15  # gp3 near the unthrottled figure
    # "gp3 came out above the same disk without a throttle, by more than the two
    # unthrottled runs differ"
    assert table.loc["gp3", "error_pct"] > float(F["sb_unthrottled_apart_pct"]) > 0
    assert table.loc["sc1", "ops_per_s"] < table.loc["sc1", "model_ops_per_s"]
    assert float(F["sb_fsyncs_per_op"]) > 1  # 128 fsyncs per 100 requests
    assert int(F["sb_ratio"]) > page.ARTICLE_RATIO  # "the article's ratio is smaller"
    # Verdict: "not reproduced ... The model ... says X times: close, but not within the 5 %
    # the contracts met": the model misses by more than 5 %, by less than a quarter.
    miss = int(F["sb_ratio"]) / int(F["sb_model_ratio"]) - 1
    assert 0.05 < abs(miss) < 0.25, "devices/lab.md, the article's benchmark: verdict"
    assert int(F["sb_ratio"]) > 1.5 * page.ARTICLE_RATIO, "verdict: 'not reproduced'"
    gp3 = volume("gp3", "block-sweep").set_index("block_kib")["mib_s"]
    assert gp3[64] == pytest.approx(125, rel=0.02)  # flat already above 42.7 KiB


INSERTS = page.mariadb_results(RUN)


def _ratios(column: str) -> list[float]:
    by = INSERTS.set_index(["volume", "sessions"])[column]
    return [by[("sc1", n)] / by[("gp3", n)] for n in sorted(INSERTS["sessions"].unique())]


def test_the_inserts_ratio_is_far_from_the_articles_and_does_not_grow_with_sessions():
    measured = _ratios("wall_s")
    assert max(measured) < 0.8 * float(page.ARTICLE_INSERT_RATIO)  # "does not reproduce"
    assert F["mdb_ratio_min"] == f"{min(measured):.2f}"
    assert F["mdb_ratio_max"] == f"{max(measured):.2f}"
    # "the model says 1.00 at every session count": the CPUs' time, never the volume's
    assert all(r == pytest.approx(1.0) for r in _ratios("model_s"))
    assert F["mdb_model_ratio_max"] == "1.00"
    errors = INSERTS["error_pct"].dropna()
    assert errors.min() < 0 < errors.max()  # "in both directions"
    assert int(F["mdb_gp3_faster"]) >= 1  # "which no throttle can cause"
    assert volumes(Parameters())[0][0] == "unthrottled"  # "the unthrottled disk ran first"


def test_what_the_inserts_wrote_kept_the_volumes_busy_a_small_part_of_each_run():
    for row in INSERTS[INSERTS["volume"] != "unthrottled"].itertuples():
        busy = page.volume_busy_s(page.throttle_of(RUN, row.volume), row.write_requests,
                                  row.written_mib * 2**20)
        assert busy < 0.05 * row.wall_s, row  # "nothing reached them to do it with"
    assert float(F["mdb_busy_max_pct"]) < 5
    most = INSERTS[(INSERTS["volume"] == "sc1")
                   & (INSERTS["sessions"] == INSERTS["sessions"].max())].iloc[0]
    # "a run long enough for that" (30 s dirty: Linux's dirty_expire_centisecs, 3000)
    assert most["wall_s"] > 30 and most["written_mib"] > 0
    assert float(F["mdb_headroom"]) > 10  # "about N times the time it needed"
    short = INSERTS[INSERTS["wall_s"] < page.LINUX_DIRTY_EXPIRE_S]
    assert short["written_mib"].max() > 0  # "some shorter runs wrote too"
    # "the only run in which the tables' data reached it" (sc1): elsewhere a few KiB
    sc1_runs = INSERTS[INSERTS["volume"] == "sc1"].set_index("sessions")
    most = INSERTS["sessions"].max()
    sc1 = sc1_runs["written_mib"]
    assert sc1.idxmax() == most and (sc1.drop(most) < 0.1).all()
    # "sc1's other runs ... strayed as far": the one run with data is no outlier
    sc1_error = sc1_runs["error_pct"].abs()
    assert sc1_error.drop(most).max() >= sc1_error.loc[most], \
        "devices/lab.md, MariaDB inserts: 'sc1's other runs ... strayed as far'"


def test_more_sessions_insert_more_rows_a_second_but_two_processors_cap_them():
    assert min(RUN.meta["parameters"]["sessions"]) == 1  # "on its own"
    alone = float(F["mdb_rows_per_s_one"].replace(",", ""))
    together = float(F["mdb_rows_per_s_most"].replace(",", ""))
    assert alone < together < 2.2 * alone  # "(the VM has two processors)"
    assert RUN.meta["host"]["cpu_count"] == 2


def test_the_headline_carries_the_inserts_beside_the_model():
    table = page.headline(RUN)
    inserts = table[table["measure"].str.startswith("MariaDB inserts")]
    assert sorted(inserts["config"]) == ["gp3", "sc1", "unthrottled"]
    assert inserts[inserts["config"] != "unthrottled"]["model"].notna().all()


def test_the_articles_ratio_is_read_through_the_model_as_the_page_says():
    # "one thread got about 1,000 a second, which the model turns into about 43x against
    # sc1's burst (an answer in 0.95 ms would give the article's 45x exactly)"
    from labs.devices import explain
    from labs.models import cloud_volume

    f = F
    at_1ms = cloud_volume.fileio_ratio(300, 16, queue_depth=1, gp3_latency_ms=1)["ratio"]
    assert f["article_ratio_at_1ms"] == f"{at_1ms:.0f}" and at_1ms < explain.ARTICLE_RATIO
    exact = float(f["article_ratio_latency_ms"])
    ratio = cloud_volume.fileio_ratio(300, 16, queue_depth=1, gp3_latency_ms=exact)["ratio"]
    assert ratio == pytest.approx(explain.ARTICLE_RATIO, rel=0.01)
