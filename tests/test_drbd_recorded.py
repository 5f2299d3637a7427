"""The DRBD page's sentences about its recorded run, checked against that run.

Each test names the sentence it holds true (book/drbd/lab.md); the numbers themselves are
glued from labs/drbd/page.py and never typed into the page.
"""

from __future__ import annotations

import pytest

from labs import records
from labs.drbd import page
from labs.models import drbd as model


@pytest.fixture(scope="module")
def run():
    return records.shipped_run("drbd")


@pytest.fixture(scope="module")
def fio(run):
    return page.fio_results(run)


@pytest.fixture(scope="module")
def tps(run):
    return page.pgbench_results(run)


def _direct(fio, protocol, added):
    rows = fio[(fio["variant"] == "direct") & (fio["protocol"] == protocol)
               & (fio["added_rtt_ms"] == added)]
    assert len(rows) == 1
    return rows.iloc[0]


def test_the_shipped_run_is_a_full_run_with_every_protocol_and_both_drills(run):
    params = run.meta["parameters"]
    assert params["profile"] == "full"
    assert sorted(params["protocols"]) == ["A", "B", "C"]
    assert len(params["added_rtt_ms"]) >= 4 and min(params["added_rtt_ms"]) == 0
    assert sorted(page.drill_results(run)["protocol"]) == ["A", "C"]


def test_the_link_is_slower_than_a_zone_pair(run):
    # "its own round trip is ... longer than a round trip between two zones"
    pings = page.ping_results(run).set_index("config")
    assert pings.loc["link", "rtt_p50_ms"] > 1.0


def test_every_added_round_trip_shows_up_in_ping(run):
    pings = page.ping_results(run)
    link = pings.loc[pings["config"] == "link", "rtt_p50_ms"].iloc[0]
    for added in run.meta["parameters"]["added_rtt_ms"]:
        measured = pings.loc[pings["config"] == f"added-{added:g}", "rtt_p50_ms"].iloc[0]
        assert measured == pytest.approx(link + added, abs=1.0 + 0.1 * added)


def test_a_waits_for_nothing_on_the_network_but_more_than_the_local_write(run, fio):
    # "A's writes took between x and y ms, with no trend"; "But they did not take the local
    # write's ... either"; "costs about a millisecond here"; "scatter by up to n %"
    params = run.meta["parameters"]
    first, top = min(params["added_rtt_ms"]), max(params["added_rtt_ms"])
    a = fio[(fio["variant"] == "direct") & (fio["protocol"] == "A")]
    c = fio[(fio["variant"] == "direct") & (fio["protocol"] == "C")]
    assert a["write_p50_ms"].max() - a["write_p50_ms"].min() < 1.0
    assert c["write_p50_ms"].max() - c["write_p50_ms"].min() > 0.8 * top
    assert a["write_p50_ms"].max() < 0.1 * a["rtt_ms"].max()
    local = fio[(fio["config"] == "drbd-disconnected") & (fio["variant"] == "direct")]
    assert _direct(fio, "A", first)["write_p50_ms"] > 3 * local["write_p50_ms"].iloc[0]
    assert 0.5 <= fio.attrs["send_ms"]["direct"]["write_p50_ms"] <= 2.0
    assert (a["error_pct"].abs() <= 40).all()


def test_c_follows_the_model_once_the_round_trip_dominates(run, fio):
    # "with an added round trip it is within n %"; "At the link's own round trip both sit
    # above the model"
    params = run.meta["parameters"]
    first = min(params["added_rtt_ms"])
    direct = fio[(fio["variant"] == "direct") & fio["protocol"].isin(["B", "C"])]
    c_delayed = direct[(direct["protocol"] == "C") & (direct["added_rtt_ms"] > first)]
    assert (c_delayed["error_pct"].abs() <= 10).all(), c_delayed[["config", "error_pct"]]
    assert _direct(fio, "C", first)["error_pct"] > 10  # "C sits ... above the model"
    assert (direct[direct["protocol"] == "B"]["error_pct"].abs() <= 15).all()
    top = max(params["added_rtt_ms"])
    b_top, c_top = _direct(fio, "B", top), _direct(fio, "C", top)
    assert abs(b_top["write_p50_ms"] - c_top["write_p50_ms"]) < 2  # "inside this noise"
    for protocol in ("B", "C"):
        rows = direct[direct["protocol"] == protocol].sort_values("rtt_ms")
        assert rows["write_p50_ms"].iloc[-1] > rows["write_p50_ms"].iloc[0] + 10


def test_a_commit_on_c_costs_two_round_trips(run, fio):
    # "C is within n % at every round trip: a commit ... costs two round trips, not one"
    params = run.meta["parameters"]
    top = max(params["added_rtt_ms"])
    synced = fio[(fio["variant"] == "fdatasync") & (fio["protocol"] == "C")]
    assert (synced["error_pct"].abs() <= 20).all()
    at_top = synced[synced["added_rtt_ms"] == top].iloc[0]
    assert at_top["measured_ms"] > 1.8 * at_top["rtt_ms"]


def test_pgbench_falls_far_less_than_the_waiting_model_says(tps):
    # "the mirror costs far more than the model says at a short round trip, and the cost
    # hardly grows with the round trip"
    c = tps[tps["protocol"] == "C"].sort_values("added_rtt_ms")
    assert c["ratio_pct"].iloc[0] < c["model_ratio_pct"].iloc[0] - 20
    assert c["ratio_pct"].iloc[0] - c["ratio_pct"].iloc[-1] < \
        0.5 * (c["model_ratio_pct"].iloc[0] - c["model_ratio_pct"].iloc[-1])
    assert c["ratio_pct"].iloc[-1] <= c["ratio_pct"].iloc[0]  # "no steady fall": x % ... y %
    others = tps[tps["protocol"].isin(["B", "C"])]
    top = others["added_rtt_ms"].max()
    at_top = others[others["added_rtt_ms"] == top].set_index("protocol")
    assert at_top.loc["B", "tps"] < at_top.loc["C", "tps"]  # "B below C again"


def test_the_processor_time_account_of_the_mirrors_rate(run, tps):
    # "alone kept x of them busy", "every transaction cost ... instead of ...", "less than
    # the ... of the local run"
    cores = run.meta["host"]["controller"]["cpu_count"]
    local = tps[tps["config"] == "local"].iloc[0]
    mirrored = tps[tps["protocol"].isin(model.PROTOCOLS)]
    assert local["primary_cores"] >= 0.8 * cores
    assert (mirrored["cpu_ms_per_tx"] > 1.3 * local["cpu_ms_per_tx"]).all()
    assert (mirrored["primary_cpu_ms_per_tx"] > local["primary_cpu_ms_per_tx"]).all()
    assert (mirrored["both_cores"] < local["both_cores"]).all()
    assert (mirrored["sent_kib_per_tx"] > 0).all() and local["sent_bytes"] == 0
    # The account is exact: rate = processors busy / processor time per transaction.
    account = mirrored["both_cores"] * 1000 / mirrored["cpu_ms_per_tx"]
    assert (account / mirrored["tps"]).between(0.9, 1.1).all()


def test_the_drill_under_c_lost_nothing_and_under_a_lost_a_little_from_a_consistent_copy(run):
    drill = page.drill_results(run).set_index("protocol")
    assert drill.loc["C", "lost"] == 0 and drill.loc["C", "acknowledged"] > 100
    assert drill.loc["A", "lost"] > 0
    expected = drill.loc["A", "commits_per_s"] * drill.loc["A", "rtt_ms"] / 2000
    assert drill.loc["A", "lost"] <= 3 * expected + 1  # "That is what the model expects"
    for protocol in ("A", "C"):
        row = drill.loc[protocol]
        # A prefix: every row up to the newest one found is there.
        assert row["found"] == min(row["newest_found"], row["acknowledged"])
        assert row["disks_match"] == 1
        assert row["peer_noticed_s"] > 10  # longer than one keep-alive interval
        assert row["differing_mib"] == 0


def test_a_crashed_primary_resends_its_activity_log_and_a_planned_gap_only_its_changes(run):
    drill = page.drill_results(run).set_index("protocol")
    resync = page.resync_results(run).set_index("config")
    activity_log_bytes = 67 * 4 * 2**20
    assert drill.loc["C", "resync_bytes"] <= activity_log_bytes * 1.05
    assert drill.loc["C", "resync_bytes"] > 2 * resync.loc["resync-after-pgbench",
                                                          "resync_bytes"]


def test_the_exercise_solutions_follow_from_the_run(run):
    f = page.figures(run)
    assert float(f["ex_c_beyond_rtt_ms"]) == pytest.approx(
        float(f["top_C_p50_ms"]) - float(f["top_rtt_ms"]), abs=0.15)
    assert float(f["ex_zone_c_ms"]) == pytest.approx(0.6)
    drill = page.drill_results(run).set_index("protocol")
    window = 1000 * drill.loc["A", "lost"] / drill.loc["A", "commits_per_s"]
    assert f["drill_A_lost_window_ms"] == f"{window:.0f}"
