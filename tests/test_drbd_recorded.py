"""The shipped DRBD run, and every claim book/drbd/lab.md makes about it.

Each test asserts typed findings (labs/drbd/findings.py) and names the paragraph it backs;
the numbers themselves are glued from labs/drbd/figures.py and never typed into the page.
"""

from __future__ import annotations

import dataclasses

import pytest

from labs import records
from labs.drbd import findings as drbd_findings
from labs.drbd import model, page
from labs.drbd.article import sample_ms_per_transaction
from labs.drbd.params import Parameters

# The bar for "the article's ratio, reproduced": within 15 % of it.
WITHIN_PCT = 15.0


@pytest.fixture(scope="module")
def run():
    return records.shipped_run("drbd")


@pytest.fixture(scope="module")
def found(run):
    return drbd_findings.findings(run)


def test_the_shipped_run_is_a_full_run_in_the_articles_regime(found):
    # "The experiment": pgbench at scale 1, slowed flushes, the zones; every protocol, both
    # drills. The book's run uses the full profile's defaults.
    params, full = found.params, Parameters.for_profile("full")
    assert params.profile == "full"
    for name in ("pgbench_scale", "flush_delay_ms", "article_zones", "added_rtt_ms",
                 "protocols", "pgbench_s", "fio_s"):
        assert getattr(params, name) == getattr(full, name), name
    assert params.pgbench_scale == 1 and params.flush_delay_ms > 0 and params.article_zones
    assert sorted(found.drills) == ["A", "C"]


def test_the_link_is_about_a_zone_pair_and_every_added_round_trip_shows_up(run, found):
    # "The experiment": "about what two zones of a cloud region see"
    assert 1.0 <= found.link_rtt_ms <= 3.0
    pings = page.ping_results(run)
    for added in found.params.added_rtt_ms:
        measured = pings.loc[pings["config"] == f"added-{added:g}", "rtt_p50_ms"].iloc[0]
        assert measured == pytest.approx(found.link_rtt_ms + added, abs=1.0 + 0.1 * added)
    # Details of the steps: "The first ping ... was slower than the later ones"
    assert found.before_drbd_rtt_ms > found.link_rtt_ms


def test_a_flush_took_at_least_what_was_asked_and_the_processors_were_not_the_limit(found):
    # "Slow flushes": "A flush then took x ms"; Details: "kept x of the machine's 2 cores busy"
    assert found.local_flush_ms >= found.params.flush_delay_ms
    assert found.local_write_ms < 0.1 * found.local_flush_ms  # writes were not held
    assert found.local_primary_cores < 1.0


def test_the_time_scale_is_the_labs_transaction_over_the_articles(found):
    # "A transaction here took x ms ... That ratio is the run's time scale, k"
    assert found.time_scale == pytest.approx(
        found.lab_ms_per_transaction / sample_ms_per_transaction())
    assert found.time_scale > 5  # the lab is slower than the article


def test_an_fdatasync_on_the_mirror_waited_for_the_local_flush_not_a_round_trip(run, found):
    # Details of "What each protocol waits for": "DRBD does not send that flush to the peer
    # and wait"; "at every point the pair was within x %"
    fio = page.fio_results(run)
    top = max(found.params.added_rtt_ms)
    synced = fio[(fio["variant"] == "fdatasync") & (fio["protocol"] == "C")
                 & (fio["added_rtt_ms"] == top)].iloc[0]
    assert synced["sync_p50_ms"] < found.local_flush_ms + 0.5 * synced["rtt_ms"]
    assert max(abs(p.error_pct) for p in found.pairs) <= 20
    # "Under B and C it always took a little longer than the model."
    assert all(p.error_pct > 0 for p in found.pairs if p.protocol in ("B", "C"))


def test_b_and_c_follow_the_model_with_the_peers_flush_and_a_waits_for_neither(found):
    # Verdict of "What each protocol waits for": every B and C write within x % of the model.
    bc = [p for p in found.waits if p.protocol in ("B", "C")]
    assert len(bc) == 2 * len(found.params.added_rtt_ms)
    assert max(abs(p.error_pct) for p in bc) <= WITHIN_PCT, \
        "backs the verdict of 'What each protocol waits for'"
    # The aside: without the peer's flush the model would miss by far more.
    for point in bc:
        assert point.measured > point.rtt_ms + 0.5 * found.peer_flush_ms
    # "A's writes took x to y ms at every round trip: A waits for no round trip."
    a = [p.measured for p in found.waits_of("A")]
    assert max(a) - min(a) < 1.0 and max(a) < 0.1 * max(found.params.added_rtt_ms)
    # Details: "At the link's own round trip both took less than the model."
    first = min(found.params.added_rtt_ms)
    for point in bc:
        if point.added_rtt_ms == first:
            assert point.error_pct < 0, point


def test_the_zones_keep_the_articles_fractions(found):
    # Verdict of "The article's two zones": both within 15 % of the article's.
    assert [z.name for z in found.zones] == ["one zone", "two zones"]
    for zone in found.zones:
        assert abs(zone.article_error_pct) <= WITHIN_PCT, \
            f"backs the verdict of 'The article's two zones' ({zone.name})"
    one, two = found.zone("one zone"), found.zone("two zones")
    assert two.ratio < one.ratio
    # "Protocol A, which waits for no round trip, kept x % across zones"; the answer to
    # "Predict first": "A ... kept nearly all of its rate"
    assert found.others_across["A"] >= 0.85
    # "B kept y %, about as much as C"
    assert found.others_across["B"] == pytest.approx(two.ratio, abs=0.05)


def test_a_commit_costs_less_than_a_plain_write_and_the_zones_read_as_shorter_trips(found):
    # "That is less than a plain write's wait above"
    first = min(found.params.added_rtt_ms)
    c_first = next(p for p in found.waits_of("C") if p.added_rtt_ms == first)
    assert found.anchor_added_ms < c_first.measured
    # "divided by k ... That is less than the x and y ms the explanation read as round trips.
    # Here a commit costs the mirror z ms beyond its round trip"
    for zone in found.zones:
        read = model.added_commit_ms_for_ratio(
            zone.article_ratio, local_ms_per_transaction=sample_ms_per_transaction())
        assert zone.rtt_ms / found.time_scale < read, zone.name
    assert found.anchor_added_ms > found.anchor.rtt_ms


def test_the_zones_were_placed_where_the_model_asked(found):
    # Details: "The round trip asked for and the one measured differ by at most x ms"
    for zone in found.zones:
        assert zone.rtt_ms == pytest.approx(zone.target_rtt_ms, abs=1.0 + 0.05 * zone.rtt_ms)
    # "So the lab's first zone sits x − y ms beyond the link's round trip: at z ms"
    for zone in found.zones:
        target_added = found.time_scale * model.added_commit_ms_for_ratio(
            zone.article_ratio, local_ms_per_transaction=sample_ms_per_transaction())
        assert zone.target_rtt_ms == pytest.approx(
            found.anchor.rtt_ms + target_added - found.anchor_added_ms, abs=0.01)
    # "each ms of round trip beyond that adds a ms to every transaction" is the model the
    # plan and the fraction both use.
    for zone in found.zones:
        assert zone.model_ratio == pytest.approx(model.serial_commit_ratio(
            local_tps=found.local_tps, anchor_tps=found.anchor.measured * found.local_tps,
            anchor_rtt_ms=found.anchor.rtt_ms, rtt_ms=zone.rtt_ms))


def test_the_mirror_sent_more_than_a_write_per_transaction(found):
    # Details of "The sweep": "fio's write and flush took only x ms longer there"; "DRBD sent
    # y KiB to the peer per transaction"
    assert found.anchor_fio_added_ms < found.anchor_added_ms
    assert found.anchor_sent_kib_per_tx > 4


def test_the_sweep_follows_one_round_trip_per_commit(found):
    # Verdict of "The sweep": every point within x % of the model; the fraction falls.
    tested = found.sweep[1:]
    assert len(tested) == len(found.params.added_rtt_ms) - 1
    assert max(abs(p.error_pct) for p in tested) <= WITHIN_PCT, \
        "backs the verdict of 'The sweep: the fraction kept as the round trip grows'"
    assert found.sweep[-1].measured < found.sweep[0].measured
    # "At +x ms, A kept y % and B z %": neither waits for the peer's disk, A for no trip.
    assert found.others_at_top["A"] > found.sweep[-1].measured


def _job(found, protocol, added, what):
    return next(p for p in found.jobs
                if (p.protocol, p.added_rtt_ms, p.what) == (protocol, added, what))


def test_the_stream_model_holds_for_c_and_misses_as_the_page_says(run, found):
    # Verdict of "Large writes, one at a time" (partly confirmed) and its Details.
    first, top = min(found.params.added_rtt_ms), max(found.params.added_rtt_ms)
    verdict = "backs the verdict of 'Large writes, one at a time: the article's job file'"
    c = [p for p in found.jobs if p.protocol == "C"]
    assert max(abs(p.error_pct) for p in c) <= 40, verdict
    assert _job(found, "A", top, "4 KiB random").error_pct > 100, verdict
    protocol, added, what, write_ms = found.slowest_job
    assert (protocol, added, what) == ("B", top, "1 MiB sequential") and write_ms > 1000, verdict
    # "Under C the large jobs ran faster than the model at the link's own round trip and
    # slower at +x ms."
    large = ("1 MiB sequential", "1 MiB random", "512 KiB random")
    assert all(_job(found, "C", first, what).error_pct > 0 for what in large)
    assert all(_job(found, "C", top, what).error_pct < 0 for what in large)
    # "The sweep's 4 KiB runs under A ... did go at about that pace"
    for cycle_ms in found.a_cycles_ms:
        assert cycle_ms == pytest.approx(found.peer_flush_ms + found.peer_write_ms, rel=0.2)
    # "B's 1 MiB writes at random places there went at C's pace"; the stall exercise: "here
    # neither stalled" (A and C in order).
    assert _job(found, "B", top, "1 MiB random").measured == pytest.approx(
        _job(found, "C", top, "1 MiB random").measured, rel=0.15)
    table = page.article_results(run)
    in_order = table[(table["job"] == "seq-write-1m") & (table["added_rtt_ms"] == top)
                     & table["protocol"].isin(["A", "C"])]
    assert len(in_order) == 2 and (in_order["write_p50_ms"] < 1000).all()
    # "Large writes go at the pace of the link, not of the disks."
    seq_top = _job(found, "C", top, "1 MiB sequential")
    assert seq_top.measured < 0.05 * found.local_seq1m_mib_s


def test_the_drill_under_c_lost_nothing_and_the_disks_matched(run, found):
    # Verdict of "The failover drill"
    c, a = found.drills["C"], found.drills["A"]
    assert c.lost == 0 and c.acknowledged > 100, "backs the verdict of 'The failover drill'"
    assert a.lost <= 3 * a.expected_lost + 1, "backs the verdict of 'The failover drill'"
    # "So at any moment the model expects less than one commit in flight"
    assert a.expected_lost < 1
    drill = page.drill_results(run).set_index("protocol")
    for protocol in ("A", "C"):
        row = drill.loc[protocol]
        # A prefix: every row up to the newest one found is there ("a consistent copy").
        assert row["found"] == min(row["newest_found"], row["acknowledged"])
        assert row["disks_match"] == 1 and row["differing_mib"] == 0
        assert row["peer_noticed_s"] > 10  # longer than one keep-alive interval


def test_a_commit_under_c_cost_about_one_round_trip_beyond_a(found):
    # Details of the drill: "Here it cost about one"
    c, a = found.drills["C"], found.drills["A"]
    trips = (1000 / c.commits_per_s - 1000 / a.commits_per_s) / c.rtt_ms
    assert 0.8 <= trips <= 1.4


def test_a_crashed_primary_resends_its_activity_log_and_a_planned_gap_only_its_changes(run):
    # Details of the drill: "all of them are resent"; "only what changed"
    drill = page.drill_results(run).set_index("protocol")
    resync = page.resync_results(run).set_index("config")
    activity_log_bytes = 67 * 4 * 2**20
    assert drill.loc["C", "resync_bytes"] <= activity_log_bytes * 1.05
    assert drill.loc["C", "resync_bytes"] > 2 * resync.loc["resync-after-pgbench",
                                                          "resync_bytes"]
    # "The drill under A came after that reboot, so its log held only the extents written
    # since"
    assert drill.loc["A", "resync_bytes"] < drill.loc["C", "resync_bytes"]


def test_the_exercise_solutions_add_up(run):
    f = page.figures(run)
    assert float(f["ex_c_beyond_rtt_ms"]) == pytest.approx(
        float(f["top_C_p50_ms"]) - float(f["top_rtt_ms"]), abs=0.11)
    assert float(f["ex_model_beyond_rtt_ms"]) == pytest.approx(
        max(float(f["send_ms"]), float(f["peer_flush_ms"])) + float(f["peer_write_ms"]),
        abs=0.11)


def test_a_sweep_part_run_has_a_headline_without_pgbench(run):
    # A reader's `--quick` run is the sweep part: no pgbench, no zones, no drill. Its headline
    # for "your run beside the book's" keeps the 4 KiB writes and their model, and nothing
    # else.
    sweep_rows = ~run.results["workload"].isin(["pgbench", "drill", "zones"])
    sweep = dataclasses.replace(
        run, meta={**run.meta, "parameters": {**run.meta["parameters"], "part": "sweep"}},
        results=run.results[sweep_rows].reset_index(drop=True))
    whole, part = page.headline(run), page.headline(sweep)
    assert set(part["measure"]) == {m for m in whole["measure"] if m.startswith("4 KiB")}
    assert part["model"].notna().all() and len(part) == len(model.PROTOCOLS)
    page.latency_chart(sweep).to_dict()  # the panel's chart draws from it too
