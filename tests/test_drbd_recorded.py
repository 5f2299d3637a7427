"""The DRBD page's sentences about its recorded run, checked against that run.

Each test names the sentence it holds true (book/drbd/lab.md); the numbers themselves are
glued from labs/drbd/page.py and never typed into the page.
"""

from __future__ import annotations

import pandas as pd
import pytest

from labs import records
from labs.drbd import model, page
from labs.drbd.results import local_row


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


def test_drbd_with_its_peer_disconnected_still_costs_writes(run, fio):
    # "With its peer disconnected, DRBD still costs something": fewer writes a second
    host = run.meta["parameters"]["host"]
    bare = local_row(fio, f"local-{host}", "direct")
    disconnected = local_row(fio, "drbd-disconnected", "direct")
    assert disconnected["iops"] < bare["iops"], \
        "drbd/lab.md, the steps: 'With its peer disconnected, DRBD still costs something'"


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
    # "A's other points lie x to y % below it"
    assert (a[a["added_rtt_ms"] > first]["error_pct"] < 0).all()


def test_b_and_c_follow_the_round_trip_as_the_model_says(run, fio):
    # "with a round trip added, B is within n % ... and C within m %"; "The errors do not
    # shrink steadily as the round trip grows"; "B waits for less than C"
    params = run.meta["parameters"]
    first = min(params["added_rtt_ms"])
    direct = fio[(fio["variant"] == "direct") & fio["protocol"].isin(["B", "C"])]
    delayed = direct[direct["added_rtt_ms"] > first]
    assert (delayed["error_pct"].abs() <= 20).all(), delayed[["config", "error_pct"]]
    # "C sits above the model at n of its m round trips"
    c_all = direct[direct["protocol"] == "C"]
    assert (c_all["error_pct"] > 0).sum() > len(c_all) / 2
    # "by up to x ms"
    assert (c_all["measured_ms"] - c_all["model_ms"]).max() < 1.0
    # "the run found more. B was faster than C at every round trip, by x to y ms": more
    # than the peer's disk write, which is all the model puts between them
    peer_ms = local_row(fio, f"local-{params['peer']}", "direct")["write_p50_ms"]
    for added in params["added_rtt_ms"]:
        gap_ms = _direct(fio, "C", added)["write_p50_ms"] - _direct(fio, "B", added)["write_p50_ms"]
        assert gap_ms > 2 * peer_ms, added
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
    # "But fio did not wait ...: the two trips overlapped, and each pair took x ms, y round
    # trips": the real time per pair (1 / IOPS) is near one round trip, far below the sum.
    assert at_top["cycle_ms"] < 0.7 * at_top["measured_ms"]
    assert at_top["rtt_ms"] < at_top["cycle_ms"] < 1.3 * at_top["rtt_ms"]


def test_pgbench_falls_far_less_than_the_waiting_model_says(tps):
    # "the mirror costs far more than the model says at a short round trip, and from there
    # its rate falls by less than half as much as the model's"; "falling unevenly"
    c = tps[tps["protocol"] == "C"].sort_values("added_rtt_ms")
    assert c["ratio_pct"].iloc[0] < c["model_ratio_pct"].iloc[0] - 20
    assert c["ratio_pct"].iloc[0] - c["ratio_pct"].iloc[-1] < \
        0.5 * (c["model_ratio_pct"].iloc[0] - c["model_ratio_pct"].iloc[-1])
    # "hardly falls: x points of the local rate, against the model's y"
    assert c["ratio_pct"].iloc[0] - c["ratio_pct"].iloc[-1] < \
        0.2 * (c["model_ratio_pct"].iloc[0] - c["model_ratio_pct"].iloc[-1])
    # "between x and y % up to +10 ms, then z % at +top ms"
    assert c["ratio_pct"].iloc[-1] < c["ratio_pct"].iloc[:-1].min()
    # "Up to +x ms the account follows the measured rate": never more than n points away;
    # "At +top ms it starts to cost": the lowest processor time per transaction of the
    # sweep, the account far above the run, the fewest processors busy.
    gap = (c["ratio_pct"] - c["cpu_ratio_pct"]).abs()
    assert gap.iloc[:-1].max() <= 5
    assert gap.iloc[-1] > 2 * gap.iloc[:-1].max()
    assert c["cpu_ratio_pct"].iloc[-1] > c["ratio_pct"].iloc[-1]
    assert c["cpu_ms_per_tx"].iloc[-1] == c["cpu_ms_per_tx"].min()
    assert c["both_cores"].iloc[-1] < c["both_cores"].iloc[:-1].min()
    # "Protocol A ... makes the point": far below what the waiting model said
    a = tps[tps["protocol"] == "A"].iloc[0]
    assert a["ratio_pct"] < 0.5 * a["model_ratio_pct"]


def test_the_processor_time_account_of_the_mirrors_rate(run, tps):
    # "alone kept x of them busy", "every transaction cost ... instead of ...", "less than
    # the ... of the local run"
    cores = run.meta["host"]["controller"]["cpu_count"]
    local = tps[tps["config"] == tps.attrs["base"]].iloc[0]
    mirrored = tps[tps["protocol"].isin(model.PROTOCOLS)]
    assert local["primary_cores"] >= 0.8 * cores
    assert (mirrored["cpu_ms_per_tx"] > 1.3 * local["cpu_ms_per_tx"]).all()
    assert (mirrored["primary_cpu_ms_per_tx"] > local["primary_cpu_ms_per_tx"]).all()
    assert (mirrored["both_cores"] < local["both_cores"]).all()
    # The base is the bare disk, which has no DRBD counters; the mirror with its peer
    # disconnected sent nothing.
    assert tps.attrs["base"] == "local" and pd.isna(local["sent_bytes"])
    disconnected = tps[tps["config"] == "drbd-disconnected"].iloc[0]
    assert (mirrored["sent_kib_per_tx"] > 0).all() and disconnected["sent_bytes"] == 0
    # "On DRBD with its peer disconnected they ran x (n % of that), with the processors as
    # busy as before"
    assert disconnected["tps"] < local["tps"]
    assert disconnected["both_cores"] >= 0.95 * local["both_cores"]
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
    # "far below the 100 MiB/s the resource file allows and close to what one TCP stream
    # carried at this round trip"
    links = page.link_results(run).set_index("config")
    top = max(run.meta["parameters"]["added_rtt_ms"])
    stream = links.loc[f"added-{top:g}", "link_mib_s"]
    assert drill.loc["C", "resync_mib_s"] < 2 * stream < 20


def test_the_drills_commits_under_c_paid_about_one_round_trip_beyond_a(run):
    # "Its one client committed every x ms. That is y ms more than the same loop under A ...:
    # n round trips of r ms. PostgreSQL's commit ... paid about one round trip, where fio's
    # write and flush added up to two. The file system and DRBD spared it most of the
    # flush's second trip"
    drill = page.drill_results(run).set_index("protocol")
    c_ms, a_ms = 1000 / drill.loc["C", "commits_per_s"], 1000 / drill.loc["A", "commits_per_s"]
    trips = (c_ms - a_ms) / drill.loc["C", "rtt_ms"]
    assert a_ms < c_ms and 0.8 <= trips <= 1.2
    f = page.figures(run)
    assert float(f["drill_C_beyond_a_trips"]) == pytest.approx(trips, abs=0.05)
    assert float(f["drill_C_beyond_a_ms"]) == pytest.approx(c_ms - a_ms, abs=0.05)
    # fio's write and flush together took about two trips' worth in the model
    assert float(f["top_C_cycle_model_ms"]) > 1.8 * drill.loc["C", "rtt_ms"]


def test_the_write_and_flush_points_of_c_fell_below_the_model_at_every_round_trip(run):
    fio = page.fio_results(run)
    sync_c = fio[(fio["variant"] == "fdatasync") & (fio["protocol"] == "C")
                 & fio["model_ms"].notna()]["error_pct"]
    assert len(sync_c) and (sync_c < 0).all()
    # "C is below the model at every round trip, by x to y %"
    f = page.figures(run)
    assert (f["sync_C_min_abs_error_pct"], f["sync_C_max_abs_error_pct"]) == (
        f"{sync_c.abs().min():.0f}", f"{sync_c.abs().max():.0f}")


def test_the_exercise_solutions_follow_from_the_run(run):
    f = page.figures(run)
    # Exercise 1's arithmetic adds up as printed, to two decimals.
    beyond = float(f["ex_c_beyond_rtt_ms"])
    assert beyond == pytest.approx(float(f["ex_c_p50_ms"]) - float(f["ex_rtt_ms"]), abs=0.011)
    parts = float(f["ex_send_plus_peer_ms"])
    assert parts == pytest.approx(float(f["ex_send_ms"]) + float(f["ex_peer_ms"]), abs=0.011)
    assert float(f["ex_unexplained_ms"]) == pytest.approx(beyond - parts, abs=0.011)
    assert float(f["ex_zone_c_ms"]) == pytest.approx(0.6)
    drill = page.drill_results(run).set_index("protocol")
    window = 1000 * drill.loc["A", "lost"] / drill.loc["A", "commits_per_s"]
    assert f["drill_A_lost_window_ms"] == f"{window:.0f}"


@pytest.fixture(scope="module")
def article(run):
    return page.article_results(run)


def test_one_stream_carries_less_over_the_link_as_the_round_trip_grows(run):
    # "One stream carried x MiB/s at the link's own round trip and y MiB/s at +top ms"
    links = page.link_results(run).set_index("added_rtt_ms")
    sweep = links[links["config"].str.startswith("added-")]["link_mib_s"].sort_index()
    assert sweep.iloc[-1] < 0.8 * sweep.iloc[0]
    assert (sweep.diff().dropna() < 0).all()  # "the longer the round trip, the less"
    # "the window grew more slowly than the round trip": x KiB in flight, then y KiB
    f = page.figures(run)
    first, top = float(f["art_window_first_kib"]), float(f["art_window_top_kib"])
    rtts = page.ping_results(run).set_index("config")["rtt_p50_ms"]
    added = sorted(a for a in run.meta["parameters"]["added_rtt_ms"] if a > 0)
    assert first < top < first * rtts[f"added-{added[-1]:g}"] / rtts[f"added-{added[0]:g}"]


def test_large_writes_go_at_the_links_pace_under_every_protocol(run, article):
    # "large writes go at the speed of the link, not of the disks"; "No protocol escapes it"
    host = run.meta["parameters"]["host"]
    for job in ("seq-write-1m", "rand-write-1m", "rand-write-512k"):
        rows = article[article["job"] == job]
        local = rows[rows["config"] == f"local-{host}"]["mib_s"].iloc[0]
        mirrored = rows[rows["protocol"].isin(model.PROTOCOLS)]
        assert (mirrored["mib_s"] < 0.1 * local).all(), job
        assert (mirrored["mib_s"] < 1.5 * mirrored["link_mib_s"]).all(), job
    top = max(run.meta["parameters"]["added_rtt_ms"])
    at_top = article[(article["job"] == "seq-write-1m") & (article["added_rtt_ms"] == top)
                     & article["protocol"].isin(model.PROTOCOLS)].set_index("protocol")
    # A waits for no round trip, yet it is held to the link too: within half of C's rate.
    assert at_top.loc["A", "mib_s"] < 1.5 * at_top.loc["C", "mib_s"]
    # "If that were all, B and C would beat the model too, and they did not": C's write took
    # longer beyond A's than the round trip and the peer's write the model puts between them.
    f = page.figures(run)
    assert float(f["art_seq1m_top_c_beyond_a_ms"]) > 1.3 * float(
        f["art_seq1m_top_model_c_beyond_a_ms"])
    large_top = article[(article["added_rtt_ms"] == top) & (article["block_kib"] >= 512)]
    for protocol in ("B", "C"):
        assert (large_top[large_top["protocol"] == protocol]["error_pct"] < 10).all()


def test_small_writes_rank_the_set_ups_as_in_the_article(run, article):
    # "ranks the set-ups as the article's did": disk alone, then C near, then C far
    host = run.meta["parameters"]["host"]
    params = run.meta["parameters"]
    small = article[article["job"] == "rand-write-4k"]
    local = small[small["config"] == f"local-{host}"]["mib_s"].iloc[0]
    c = small[small["protocol"] == "C"].set_index("added_rtt_ms")["mib_s"]
    assert local > c[min(params["added_rtt_ms"])] > c[max(params["added_rtt_ms"])]


def test_the_stream_model_misses_both_ways(run, article):
    # "Its largest miss is at +x ms, where C's 1 MiB random writes ran n % faster than it
    # says", "there
    # DRBD's own connection ... carried more than that one"; "At +top ms it went the other
    # way for B and C ... while A's ran x to y % faster"
    top = max(run.meta["parameters"]["added_rtt_ms"])
    modelled = article[article["model_mib_s"].notna()]
    assert len(modelled) >= 20
    assert modelled["error_pct"].abs().max() <= 50
    worst = modelled.loc[modelled["error_pct"].abs().idxmax()]
    assert worst["protocol"] == "C" and worst["error_pct"] > 0 and worst["added_rtt_ms"] < top
    assert worst["job"] == "rand-write-1m"
    seq = article[(article["job"] == "seq-write-1m") & (article["protocol"] == "C")
                  & (article["added_rtt_ms"] == worst["added_rtt_ms"])].iloc[0]
    assert seq["mib_s"] > seq["link_mib_s"]
    large_top = modelled[(modelled["block_kib"] >= 512) & (modelled["added_rtt_ms"] == top)]
    assert (large_top[large_top["protocol"].isin(["B", "C"])]["error_pct"] < 0).all()
    assert (large_top[large_top["protocol"] == "A"]["error_pct"] > 0).all()


def test_the_large_write_exercise_adds_up(run):
    # "the model expects ..."; "x ms slower than that"; "the transfer is most of the write"
    f = page.figures(run)
    cycle, transfer = float(f["ex_art_cycle_ms"]), float(f["ex_art_transfer_ms"])
    parts = transfer + float(f["ex_art_rtt_ms"]) + float(f["ex_art_send_ms"]) + float(
        f["ex_art_peer_ms"])
    expected = float(f["ex_art_expected_ms"])
    assert expected == pytest.approx(parts, abs=0.2)
    assert float(f["ex_art_gap_ms"]) == pytest.approx(abs(expected - cycle), abs=0.2)
    assert transfer == pytest.approx(1000 / float(f["ex_art_link_mib_s"]), rel=0.01)
    assert transfer > 0.5 * cycle
    # "Under A, DRBD took the same writes at x MiB/s, with one stream carrying y": A kept pace
    # with the stream, and C ran slower than the model.
    assert float(f["art_seq1m_top_A_mib_s"]) == pytest.approx(float(f["art_link_top_mib_s"]),
                                                              rel=0.05)
    assert cycle > expected  # "slower than that"


def test_a_sweep_part_run_has_a_headline_without_pgbench(run):
    # A reader's `--quick` run is the sweep part: no pgbench, no drill. Its headline for
    # "your run beside the book's" keeps the 4 KiB writes and their model, and nothing else.
    import dataclasses

    sweep_rows = ~run.results["workload"].isin(["pgbench", "drill"])
    sweep = dataclasses.replace(
        run, meta={**run.meta, "parameters": {**run.meta["parameters"], "part": "sweep"}},
        results=run.results[sweep_rows].reset_index(drop=True))
    whole, part = page.headline(run), page.headline(sweep)
    assert set(part["measure"]) == {m for m in whole["measure"] if m.startswith("4 KiB")}
    assert part["model"].notna().all() and len(part) == len(model.PROTOCOLS)
    page.latency_chart(sweep).to_dict()  # the panel's chart draws from it too
