"""The shipped quorum-commit run, and every sentence of the page that describes its shape."""

import pytest
from conftest import PROJECT_ROOT, glued_names

from labs.quorum_commit import failover_findings, page
from labs.quorum_commit import findings as found
from labs.quorum_commit.params import STANDBYS
from labs.records import shipped_run

PAGE = PROJECT_ROOT / "book" / "quorum" / "quorum-commit.md"


@pytest.fixture(scope="module")
def run():
    return shipped_run("quorum-commit")


@pytest.fixture(scope="module")
def f(run):
    return found.findings(run)


def p50(f, layout, point, clients=1):
    return f.point(layout, point, clients).p50_ms


def test_the_shipped_run_is_a_full_run_and_the_page_quotes_only_its_figures(run, f):
    assert run.meta["parameters"]["profile"] == "full"
    # (pc_: the power-cut section's, from its own run: test_quorum_commit_power_cut_recorded.)
    assert glued_names(PAGE) <= set(page.figures(run))


def test_netem_gave_the_delays_asked_for_within_a_millisecond(f):
    # "links carry a round trip of up to X ms before any delay is added"
    assert len(f.round_trips) == 10  # five standbys, two layouts
    assert all(0 <= trip.base_ms < 1 for trip in f.round_trips)
    assert f.base_rtt_max_ms == max(trip.base_ms for trip in f.round_trips)


def test_any_1_waits_for_the_zone_mate_and_any_2_to_5_for_a_cross_zone_standby(f):
    # "ANY 1 waits for s1 ... and ANY 2 to ANY 5 all wait for a standby 20 ms away
    # (X to Y ms)": ANY 1 is the fastest, the others lie between ANY 2's and ANY 5's, and
    # all of them above the primary alone plus 20 ms.
    any1 = p50(f, "even", "ANY 1")
    others = [p50(f, "even", f"ANY {k}") for k in range(2, 6)]
    assert any1 < min(others)
    assert min(others) == others[0] and max(others) == others[-1]
    assert all(25 < x < 60 for x in others)


def test_a_slow_zone_leaves_any_3_far_below_its_round_trip_and_doubles_any_4(f):
    # "That is X % more, nowhere near the slow zone's 60 ms."; explain.md: "commits that
    # wait for 4 copies of 6 stay far below that zone's round trip".
    assert p50(f, "slow-zone", "ANY 3") < 60 < p50(f, "slow-zone", "ANY 4"), \
        "explain.md and the sweep: ANY 3 'far below' the slow zone's round trip"
    # "The model expected Y % more ... The rest is likely the run's noise, as the
    # remote_apply points below suggest": the model's rise is smaller, and remote_apply (which
    # waits longer) was faster than plain ANY 3 in that layout.
    measured, modelled = f.slow_zone_rise("ANY 3")
    assert 0 <= modelled < measured
    assert p50(f, "slow-zone", "ANY 3, remote_apply") < p50(f, "slow-zone", "ANY 3"), \
        "quorum-commit.md: 'as the remote_apply points below suggest'"
    assert f.slow_zone_rise("ANY 4")[0] > 1, \
        "explain.md: ANY 4 in the slow-zone layout 'more than twice as long'"
    # "FIRST 3 waits for s1, s2 and s3 ... although three faster answers were there"
    assert p50(f, "slow-zone", "FIRST 3") > 60 > p50(f, "slow-zone", "ANY 3")


def test_where_the_model_misses(f):
    # Verdict: "X of the Y points with a model are within 10 %": most of them.
    assert f.within >= 0.75 * len(f.modelled), "quorum-commit.md, the sweep's verdict: 'confirmed'"
    # "With one client, the model's error ran from A to B % (positive: too high)": both ways.
    least, most = f.one_client_errors_pct
    assert least < 0 < most
    # "The largest error ... is at the point with four clients"
    assert f.worst.clients > 1, "quorum-commit.md: 'The largest error ... four clients'"
    # Details: "in the slow-zone layout, ANY 4 took X ms and ANY 5 Y ms"
    assert p50(f, "slow-zone", "ANY 4") > p50(f, "slow-zone", "ANY 5"), \
        "quorum-commit.md, details: 'points can even come out in the wrong order'"
    # "most of its X ms is the emulated processors' time (a flush is Y ms)"
    assert f.flush_p50_ms < p50(f, "even", "no standby") / 2
    # "the primary alone had a p99 of X ms": above the model's p99 at the p99 misses
    assert f.point("even", "no standby").p99_ms > f.point("even", "ANY 1").model_p99_ms


def test_the_model_tails_are_too_low(f):
    # "The tails are another matter": the model's p99 is below the measured at most points.
    assert f.p99_too_low > len(f.modelled) / 2
    assert f.p99_worst_pct() >= f.p99_worst_pct(one_client=True) > 0


def test_four_clients_commit_more_and_each_waits_longer(f):
    assert f.point("even", "ANY 3", clients=4).commits > f.point("even", "ANY 3").commits
    assert p50(f, "even", "ANY 3", clients=4) > p50(f, "even", "ANY 3")


def test_the_drill_went_on_then_waited_then_resumed(f):
    assert f.phase("zone lost").acknowledged > 0
    # "Each commit now waited for the slowest of three ... yet the rate hardly moved. Both are
    # a standby 20 ms away: s2 to s5 are all that far."
    rise = f.phase("zone lost").rate / f.phase("all up").rate - 1
    assert abs(rise) < 0.1, "quorum-commit.md, the drill: 'the rate hardly moved'"
    far = [trip for trip in f.round_trips_in("even") if trip.zone > 1]
    assert len(far) == 4 and all(trip.added_ms == 20 for trip in far), \
        "'s2 to s5 are all that far'"
    assert f.phase("zone + 1 lost").acknowledged == 0  # "not one commit"
    assert not f.phase("zone + 1 lost").model_goes_on
    assert f.syncrep_waiters == 1  # "showed 1 session waiting"
    # "The waiting commit returned X s after the first start ... as soon as one restarted
    # standby made three again": before the three were all up, and before all caught up.
    assert f.resumed_after_s < f.restarted_after_s
    assert f.resumed_after_s <= f.caught_up_after_s
    # the stall covers the whole phase in which no commit returned
    assert f.stall_s >= f.phase("zone + 1 lost").seconds


def test_the_survivors_hold_every_acknowledged_commit_and_the_waiting_one(f):
    acked = f.acknowledged_at_wait
    assert all(s.held == acked for s in f.waiting_survivors)
    # "and one row more ... the primary ... found" the acknowledged count
    assert all(s.rows == acked + 1 for s in f.waiting_survivors)
    assert f.survivor_rows_max == acked + 1
    assert f.primary_rows_at_wait == acked
    assert f.end_copies == f.end_copies_holding_all == 6


def test_exercise_one_sum(run, f):
    # "In the slow-zone layout s1 answers first, then s4 and s5 (zone 3, X ms away), then the
    # slow zone. The second answer comes from zone 3"
    slow = sorted(f.round_trips_in("slow-zone"), key=lambda trip: trip.measured_ms)
    assert slow[0].standby == "s1" and slow[1].zone == slow[2].zone == 3
    assert {slow[1].standby, slow[2].standby} == {"s4", "s5"}
    assert f.exercise_any2_rtt_ms == slow[1].measured_ms
    # "... = Y ms": the numbers as the page prints them add up to its sum.
    shown = page.figures(run)
    total = sum(float(shown[key]) for key in ("slow_zone_none0_p50", "ex_any2_rtt_ms",
                                               "flush_p50_ms"))
    assert float(shown["ex_any2_sum_ms"]) == pytest.approx(total, abs=0.15)


def test_exercise_two_two_standbys_were_left(f):
    assert f.phase("zone + 1 lost").standbys_up == 2


def test_the_drill_phases_leave_out_only_what_came_before_and_after_them(run, f):
    # "Losing a zone, then one more copy": "The phases count X of the drill's Y
    # acknowledgements: A came before the lab marked the first phase's start, and B after it
    # marked the drill's end."
    acks = found.acks(run)
    total = f.phases_acknowledged + f.acked_before_phases + f.acked_after_end
    assert total == f.end_acknowledged == len(acks), (
        "Losing a zone: the phases, the commits before them and after them make the total")
    assert f.acked_before_phases > 0, "Losing a zone: some commits came before the first phase"
    assert f.acked_after_end > 0, "Losing a zone: some commits came after the drill's end mark"


def test_each_p99_rests_on_the_commits_of_its_point(run, f):
    # "The tails are another matter": "Each p99 also rests on few commits: X to Y per point
    # with a model, so only about A to B commits lie above it."
    fewest, most = f.p99_commits
    assert fewest == min(p.commits for p in f.modelled) > 0
    assert 1 <= round(fewest / 100) and round(most / 100) < 10, (
        "The tails: 'only about A to B commits lie above' each p99")
    # "The table's commits column gives that n for each point."
    shown = page.sweep_table(run)
    assert list(shown["commits"]) == [p.commits for p in f.points], \
        "The tails: the commits column"


def test_losing_the_primarys_zone_leaves_standbys_enough_but_no_writer(f):
    # The opening and the exercise quorum-commit-ex-zone-one: the primary is in zone 1 with
    # s1; the drill lost another zone; losing zone 1 would leave four standbys, more than
    # ANY k needs, but no primary.
    params = f.params
    assert params.zone_of(0) == 1, "quorum-commit-ex-zone-one: the primary is in zone 1"
    zone_one = [s for s in range(1, STANDBYS + 1) if params.zone_of(s) == 1]
    assert zone_one == [1], "quorum-commit-ex-zone-one: s1 shares the primary's zone"
    assert all(params.zone_of(s) != 1 for s in params.lost_zone()), (
        "Losing a zone: the drill loses a zone without the primary")
    assert STANDBYS - len(zone_one) == 4 > f.drill_k, (
        "quorum-commit-ex-zone-one: four standbys would be left, more than ANY k needs")
    assert {trip.standby for trip in f.round_trips if trip.zone == 1} == {"s1"}, (
        "quorum-commit-ex-zone-one: the run's own layout puts s1 alone beside the primary")


# --- the failover: "Losing the primary's zone: a failover" ----------------------------------

@pytest.fixture(scope="module")
def failover(run):
    found = failover_findings.findings(run)
    assert found is not None, "the shipped run has no failover: record one with this lab"
    return found


def test_the_failover_lost_no_acknowledged_commit(failover):
    f = failover
    assert f.acknowledged > 0
    assert f.lost == 0, "verdict: 'The new primary ... held all ... acknowledged commits'"
    assert f.survivors_holding_all >= f.model_survivors_holding_all, \
        "verdict: '... of the survivors held every one; the model said at least ...'"


def test_the_failover_layout_is_the_one_the_section_describes(failover):
    f = failover
    # "Four standbys survive, more than ANY 3 needs"; "Zone 1 holds only one standby, so at
    # least 2 survivors hold every acknowledged commit"; step 4 "wait for the other three".
    assert len(f.survivors) == 4 and f.k == 3, "'Four standbys survive, more than ANY 3'"
    assert f.zone_one_standbys == 1 and f.model_survivors_holding_all == 2, \
        "'Zone 1 holds only one standby, so at least 2 survivors ...'"
    assert f.quorum_after == 3, "step 4: 'wait for the other three'; details: 'ANY 3 of its three'"
    assert f.promoted in {s.standby for s in f.survivors}


def test_the_failover_details_hold(failover):
    f = failover
    # "No commit returned for X s, from the last acknowledgement on the old primary to the
    # first on the new one": the old client's last came before the kill.
    assert f.last_ack_before_kill_s <= 0 < f.writes_stopped_s
    # "The lab's count ... X s after the kill. The promotion took Y s more. The other three
    # were streaming Z s after that": the moments come in that order.
    assert 0 < f.counted_after_s <= f.promoted_after_s <= f.followed_after_s
    # "so its first commit waited for all three to follow": the lab sees the three streaming
    # by polling, a second or so late, so the first commit may come up to that much earlier.
    assert f.first_commit_after_s >= f.followed_after_s - 1.5, \
        "details: 'its first commit waited for all three to follow'"
    assert f.survivors_holding_all == len(f.survivors) > f.model_survivors_holding_all, \
        "failover: 'All four held every one, more than the model's 2'"
    assert len({s.receive_lsn for s in f.survivors}) == 1, \
        "failover: 'all four had received the same WAL (the positions ... are equal)'"
    assert f.promoted_extra_rows == 0, \
        "details: 'The new primary held no row beyond the acknowledged ones'"
    # "At the end, N of the N copies left held every commit the new primary acknowledged."
    assert f.acknowledged_after > 0
    assert f.end_copies == 4 == f.end_copies_holding_all, "details: 'At the end, ...'"
