"""The shipped quorum-commit run, and every sentence of the page that describes its shape."""

import pytest
from conftest import PROJECT_ROOT, glued_names

from labs.quorum_commit import failover_findings, page
from labs.quorum_commit.params import STANDBYS, Parameters
from labs.records import shipped_run

PAGE = PROJECT_ROOT / "book" / "quorum" / "quorum-commit.md"


@pytest.fixture(scope="module")
def run():
    return shipped_run("quorum-commit")


@pytest.fixture(scope="module")
def figures(run):
    return page.figures(run)


def p50(run, layout, point, clients=1):
    table = page.sweep(run)
    row = table[(table["layout"] == layout) & (table["point"] == point)
                & (table["clients"] == clients)]
    assert len(row) == 1
    return float(row["latency_p50_ms"].iloc[0])


def test_the_shipped_run_is_a_full_run_and_the_page_quotes_only_its_figures(run, figures):
    assert run.meta["parameters"]["profile"] == "full"
    # (pc_: the power-cut section's, from its own run: test_quorum_commit_power_cut_recorded.)
    assert glued_names(PAGE) <= set(figures)


def test_netem_gave_the_delays_asked_for_within_a_millisecond(run, figures):
    # "links carry a round trip of up to X ms before any delay is added"
    rtts = page.rtts(run)
    assert (rtts["base_ms"] >= 0).all() and (rtts["base_ms"] < 1).all()
    assert float(figures["base_rtt_max_ms"]) == pytest.approx(rtts["base_ms"].max(), abs=0.05)


def test_any_1_waits_for_the_zone_mate_and_any_2_to_5_for_a_cross_zone_standby(run):
    # "ANY 1 waits for s1 ... and ANY 2 to ANY 5 all wait for a standby 20 ms away
    # (X to Y ms)": ANY 1 is the fastest, the others lie between ANY 2's and ANY 5's, and
    # all of them above the primary alone plus 20 ms... except where the page says why not.
    any1 = p50(run, "even", "ANY 1")
    others = [p50(run, "even", f"ANY {k}") for k in range(2, 6)]
    assert any1 < min(others)
    assert min(others) == others[0] and max(others) == others[-1]
    assert all(25 < x < 60 for x in others)


def test_a_slow_zone_leaves_any_3_far_below_its_round_trip_and_doubles_any_4(run, figures):
    # "That is X % more, nowhere near the slow zone's 60 ms."; explain.md: "commits that
    # wait for 4 copies of 6 stay far below that zone's round trip".
    assert p50(run, "slow-zone", "ANY 3") < 60 < p50(run, "slow-zone", "ANY 4"), \
        "explain.md and the sweep: ANY 3 'far below' the slow zone's round trip"
    # "The model expected Y % more ... The rest is likely the run's noise, as the
    # remote_apply points below suggest": the model's rise is smaller, and remote_apply (which
    # waits longer) was faster than plain ANY 3 in that layout.
    assert 0 <= int(figures["slow_any3_model_rise_pct"]) < int(figures["slow_any3_rise_pct"])
    assert p50(run, "slow-zone", "ANY 3, remote_apply") < p50(run, "slow-zone", "ANY 3"), \
        "quorum-commit.md: 'as the remote_apply points below suggest'"
    assert p50(run, "slow-zone", "ANY 4") > 2 * p50(run, "even", "ANY 4"), \
        "explain.md: ANY 4 in the slow-zone layout 'more than twice as long'"
    # "FIRST 3 waits for s1, s2 and s3 ... although three faster answers were there"
    assert p50(run, "slow-zone", "FIRST 3") > 60 > p50(run, "slow-zone", "ANY 3")


def test_where_the_model_misses(run, figures):
    table = page.sweep(run)
    with_model = table[table["model_p50_ms"].notna()]
    # Verdict: "X of the Y points with a model are within 10 %": most of them.
    assert int(figures["points_within_10"]) >= 0.75 * len(with_model), \
        "quorum-commit.md, the sweep's verdict: 'confirmed'"
    # "With one client, the model's error ran from A to B % (positive: too high)": both ways.
    assert int(figures["one_err_min_pct"]) < 0 < int(figures["one_err_max_pct"])
    # "The largest error ... is at the point with four clients"
    worst = with_model.loc[with_model["error_p50_pct"].abs().idxmax()]
    assert worst["clients"] > 1, "quorum-commit.md: 'The largest error ... four clients'"
    # Details: "in the slow-zone layout, ANY 4 took X ms and ANY 5 Y ms"
    assert p50(run, "slow-zone", "ANY 4") > p50(run, "slow-zone", "ANY 5"), \
        "quorum-commit.md, details: 'points can even come out in the wrong order'"
    # "most of its X ms is the emulated processors' time (a flush is Y ms)"
    assert float(figures["flush_p50_ms"]) < float(figures["even_none0_p50"]) / 2
    # "the primary alone had a p99 of X ms": above the model's p99 at the p99 misses
    assert float(figures["even_none0_p99"]) > float(figures["even_any1_model_p99"])


def test_the_model_tails_are_too_low(run, figures):
    assert int(figures["p99_too_low"]) > int(figures["points_with_model"]) / 2


def test_remote_apply_faster_in_the_slow_zone_layout(run):
    # "With the slow zone, the point with replay came out faster"
    assert p50(run, "slow-zone", "ANY 3, remote_apply") < p50(run, "slow-zone", "ANY 3")


def test_four_clients_commit_more_and_each_waits_longer(run, figures):
    assert int(figures["even_any3_multi_commits"]) > int(figures["even_any3_commits"])
    assert p50(run, "even", "ANY 3", clients=4) > p50(run, "even", "ANY 3")


def test_the_drill_went_on_then_waited_then_resumed(run, figures):
    phases = page.drill(run).set_index("phase")
    assert phases.loc["zone lost", "commits acknowledged"] > 0
    # "Each commit now waited for the slowest of three ... yet the rate hardly moved. Both are
    # a standby 20 ms away: s2 to s5 are all that far."
    rise = (phases.loc["zone lost", "commits per second"]
            / phases.loc["all up", "commits per second"] - 1)
    assert abs(rise) < 0.1, "quorum-commit.md, the drill: 'the rate hardly moved'"
    even = page.rtts(run).query("layout == 'even' and zone > 1")
    assert (even["added_rtt_ms"] == 20).all() and len(even) == 4, "'s2 to s5 are all that far'"
    assert phases.loc["zone + 1 lost", "commits acknowledged"] == 0  # "not one commit"
    assert figures["syncrep_waiters"] == "1"  # "showed 1 session waiting"
    # "The waiting commit returned X s after the first start ... as soon as one restarted
    # standby made three again": before the three were all up, and before all caught up.
    assert float(figures["resumed_after_s"]) < float(figures["restarted_after_s"])
    assert float(figures["resumed_after_s"]) <= float(figures["caught_up_after_s"])
    # the stall covers the whole phase in which no commit returned
    assert float(figures["stall_s"]) >= float(figures["drill_zone_plus_1_lost_s"])


def test_the_survivors_hold_every_acknowledged_commit_and_the_waiting_one(run, figures):
    held = page.survivors(run)
    acked = int(figures["acked_at_wait"])
    assert (held["acknowledged commits it holds"] == acked).all()
    # "and one row more ... the primary ... found" the acknowledged count
    assert (held["rows it holds"] == acked + 1).all()
    assert int(figures["primary_rows_at_wait"]) == acked
    assert figures["end_copies_holding_all"] == "6"


def test_exercise_one_sum(figures):
    total = (float(figures["slow_zone_none0_p50"]) + float(figures["ex_any2_rtt_ms"])
             + float(figures["flush_p50_ms"]))
    assert float(figures["ex_any2_sum_ms"]) == pytest.approx(total, abs=0.15)


def test_exercise_two_two_standbys_were_left(run):
    phases = page.drill(run).set_index("phase")
    assert phases.loc["zone + 1 lost", "standbys up"] == 2


def test_the_drill_phases_leave_out_only_what_came_before_and_after_them(run, figures):
    # "Losing a zone, then one more copy": "The phases count X of the drill's Y
    # acknowledgements: A came before the lab marked the first phase's start, and B after it
    # marked the drill's end."
    acks = page.acks(run)
    marks = page.events(run)
    phases = int(figures["drill_phases_acked"])
    before, after = int(figures["drill_acked_before_phases"]), int(figures["drill_acked_after_end"])
    assert phases == page.drill(run)["commits acknowledged"].sum()
    assert phases + before + after == int(figures["end_acked"]) == len(acks), (
        "Losing a zone: the phases, the commits before them and after them make the total")
    assert before == (acks["seconds"] < marks["all up starts"]).sum() and before > 0, (
        "Losing a zone: some commits came before the first phase's start")
    assert after == (acks["seconds"] >= marks["end"]).sum() and after > 0, (
        "Losing a zone: some commits came after the drill's end mark")


def test_each_p99_rests_on_the_commits_of_its_point(run, figures):
    # "The tails are another matter": "Each p99 also rests on few commits: X to Y per point
    # with a model, so only about A to B commits lie above it."
    table = page.sweep(run)
    commits = table[table["model_p50_ms"].notna()]["commits"]
    assert figures["p99_commits_min"] == str(commits.min()), "The tails: fewest commits"
    assert figures["p99_commits_max"] == str(commits.max()), "The tails: most commits"
    assert int(figures["p99_tail_min"]) >= 1 and int(figures["p99_tail_max"]) < 10, (
        "The tails: 'only about A to B commits lie above' each p99")
    # "The table's commits column gives that n for each point."
    shown = page.sweep_table(run)
    assert list(shown["commits"]) == list(table["commits"]), "The tails: the commits column"


def test_losing_the_primarys_zone_leaves_standbys_enough_but_no_writer(run):
    # The opening and the exercise quorum-commit-ex-zone-one: the primary is in zone 1 with
    # s1; the drill lost another zone; losing zone 1 would leave four standbys, more than
    # ANY k needs, but no primary.
    params = Parameters(zones=run.meta["parameters"]["zones"])
    k = page.drill_k(run)
    assert params.zone_of(0) == 1, "quorum-commit-ex-zone-one: the primary is in zone 1"
    zone_one = [s for s in range(1, STANDBYS + 1) if params.zone_of(s) == 1]
    assert zone_one == [1], "quorum-commit-ex-zone-one: s1 shares the primary's zone"
    assert all(params.zone_of(s) != 1 for s in params.lost_zone()), (
        "Losing a zone: the drill loses a zone without the primary")
    assert STANDBYS - len(zone_one) == 4 > k, (
        "quorum-commit-ex-zone-one: four standbys would be left, more than ANY k needs")
    rtts = page.rtts(run)
    assert set(rtts[rtts["zone"] == 1]["standby"]) == {"s1"}, (
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
