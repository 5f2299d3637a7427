"""The quorum-commit lab on the session's shared vm1 (ci profile): six real PostgreSQL
servers, five of them standbys in network namespaces with netem delays.

Asserted: netem really added the round trips it was asked for; every point of the sweep
committed and carries the model beside it; a slow zone slows ANY k only once k reaches into
it (by the fastest commit of each point, which a busy machine cannot make faster); in the
drill, commits go on after a zone is lost and wait after one more copy, every acknowledged
commit is on every surviving standby, and all six copies hold them at the end; after a power
cut of every copy, no standby holds a commit the primary lacks, and under
synchronous_commit=on the newest standby lacks nothing acknowledged; after losing zone 1
(the primary and s1), the survivor with the most WAL holds every acknowledged commit, is
promoted and takes commits again; nothing is left in the VM. (Its kill test is the
fault-injection CI subset's VM kill.) Bad input stops with one line and makes nothing.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import PROJECT_ROOT, report

from labs.quorum_commit import failover_findings, power_cut_page
from labs.quorum_commit import findings as found

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ci_run(background_ci, request):
    # Started beside the power-loss tests (conftest.BackgroundCiRuns), or here if alone.
    run, seconds = background_ci.finish("quorum-commit", "--host", "vm1")
    f = found.findings(run)
    report(request.config, f"quorum-commit ci run on vm1: {seconds:.0f} s; p50 model error "
                           f"{abs(f.worst.error_p50_pct):.0f} % at most over "
                           f"{len(f.modelled)} modelled points")
    return run


def test_netem_added_the_round_trips_it_was_asked_for(ci_run):
    trips = found.findings(ci_run).round_trips
    assert len(trips) == 10  # five standbys, two layouts
    # At least what netem added, and not much more: the ci profile's five pings run beside
    # another lab's VM on two busy emulated processors, where one median took 78 ms for 60
    # added. Half as much again plus 10 ms is what such a machine may add; more is netem's.
    assert all(t.added_ms <= t.measured_ms < 1.5 * t.added_ms + 10 for t in trips), trips


def test_every_point_committed_and_has_the_model_beside_it(ci_run):
    f = found.findings(ci_run)
    assert len(f.points) == 14  # ci: no standby, ANY 1, 3, 5, FIRST 3, remote_apply, 4 clients
    assert all(p.commits > 0 and p.failed == 0 for p in f.points)
    waited = [p for p in f.points if p.point != "no standby"]
    assert all(p.modelled and p.model_p99_ms is not None for p in waited)
    assert all(p.p99_ms >= p.p50_ms for p in waited)


def fastest(run, layout: str, label: str) -> float:
    return found.findings(run).point(layout, label).min_ms


def test_a_slow_zone_slows_only_the_ks_that_reach_into_it(ci_run):
    # A commit that waits for a standby 500 ms away cannot take less than 500 ms; a busy
    # machine can only make commits slower. So: every commit that had to wait for the slow
    # zone took at least its round trip. The other way, a commit that did not wait for it
    # took less, unless the machine added 450 ms or more to every commit of the point (a
    # loaded CI machine once added 190 ms to every commit of the even layout's ANY 5; the
    # ci profile's slow zone is that far for this).
    params = found.findings(ci_run).params
    slow, cross = params.slow_zone_ms, params.cross_zone_ms
    assert slow >= cross + 450
    assert fastest(ci_run, "slow-zone", "ANY 5") > slow
    assert fastest(ci_run, "slow-zone", "FIRST 3") > slow  # FIRST 3 waits for s2 and s3
    assert fastest(ci_run, "slow-zone", "ANY 3") < slow
    assert fastest(ci_run, "even", "ANY 5") < slow
    assert fastest(ci_run, "even", "ANY 3") > cross  # a cross-zone standby's round trip


def test_the_drill_goes_on_after_a_zone_and_waits_after_one_more(ci_run):
    f = found.findings(ci_run)
    assert f.phase("all up").acknowledged > 0
    assert f.phase("zone lost").acknowledged > 0
    # (An acknowledgement already on its way when the copy died may arrive just after.)
    assert f.phase("zone + 1 lost").acknowledged <= 1
    assert f.phase("back").acknowledged > 0
    assert [p.model_goes_on for p in f.phases] == [True, True, False, True]
    assert f.syncrep_waiters >= 1


def test_every_acknowledged_commit_is_on_the_survivors_and_then_everywhere(ci_run):
    f = found.findings(ci_run)
    assert [s.standby for s in f.waiting_survivors] == ["s1", "s2"]
    assert all(s.held == f.acknowledged_at_wait for s in f.waiting_survivors)
    assert f.newest_survivor_found == f.acknowledged_at_wait
    assert f.end_copies == f.end_copies_holding_all == 6


def test_a_power_cut_of_every_copy_loses_nothing_acknowledged_under_on(ci_run):
    cuts = power_cut_page.cuts(ci_run).set_index("synchronous_commit")
    assert list(cuts.index) == ["on"]  # the ci profile's one cut
    assert (cuts["acknowledged"] > 0).all()
    # The safe setting: the answer waited for three standbys' flushes.
    assert cuts.loc["on", "acknowledged_lost"] == 0
    assert cuts.loc["on", "primary_acknowledged_found"] == cuts.loc["on", "acknowledged"]
    assert cuts.loc["on", "model_max_lost"] == 0


def test_after_a_cut_no_standby_holds_a_commit_the_primary_lacks(ci_run):
    # The primary sends only WAL it has flushed, so a standby can never be ahead of it.
    cuts = power_cut_page.cuts(ci_run)
    assert (cuts["acknowledged_found"] <= cuts["primary_acknowledged_found"]).all()
    held = power_cut_page.standbys(ci_run)
    assert len(held) == 5  # five standbys, one cut
    assert (held["acknowledged rows it held"] <= held["acknowledged"]).all()
    newest = held.groupby("synchronous_commit")["acknowledged rows it held"].max()
    assert dict(newest) == dict(zip(cuts["synchronous_commit"], cuts["acknowledged_found"],
                                     strict=True))


def test_a_failover_after_losing_zone_one_keeps_every_acknowledged_commit(ci_run):
    f = failover_findings.findings(ci_run)
    assert f.acknowledged > 0 and len(f.survivors) == 4  # s2 to s5
    # ANY 3: each acknowledged commit was on three standbys, at most one of them s1.
    assert f.model_survivors_holding_all == 2
    assert f.survivors_holding_all >= f.model_survivors_holding_all, f.survivors
    assert f.lost == 0  # the survivor with the most WAL held every one
    # Writes stopped with the primary, and came back on the new one.
    assert f.last_ack_before_kill_s <= 0.5
    assert f.writes_stopped_s >= f.promoted_after_s > 0
    assert f.acknowledged_after > 0
    assert f.quorum_after == 3  # still ANY 3: all three standbys that follow the new primary
    assert f.end_copies == 4 and f.end_copies_holding_all == 4
    # Its clients' loops (read line by line over a channel of their own) are in the record:
    # the drill's, the power cut's and the failover's two.
    loops = [c for c in ci_run.meta["commands"] if "echo ack" in c]
    assert len(loops) == 4, loops


def test_nothing_is_left_in_the_vm(ci_run, lab_vms):
    out = lab_vms.cli("leftovers", "--host", "vm1", timeout_s=300)
    first = out.stdout.splitlines()[0]
    assert "netns=0" in first and all(w.endswith("=0") for w in first.split()), first


@pytest.mark.parametrize("args, words", [
    (["--host", "local"], "inside a lab VM"),
    (["--quorum", "6"], "--quorum must be at most 5"),
    (["--zones", "4"], "does not divide"),
    (["--ks", "2,7"], "--ks must be at most 5"),
    (["--cross-zone-ms", "0.5"], "--cross-zone-ms"),
    (["--in-zone-ms", "25"], "delays must rise"),
    (["--host", "vm7"], "vm7 is not running"),
    (["--part", "cuts"], "--part cuts: use one of all, sweep, power-cut"),
    (["--cut-settings", "on,on"], "each setting once"),
    (["--cut-settings", "sometimes"], "--cut-settings sometimes: use one of"),
])
def test_bad_input_is_one_line_and_makes_nothing(args, words, runs_dir):
    ran = subprocess.run([sys.executable, "-m", "labs", "run", "quorum-commit", *args],
                         cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert ran.returncode != 0
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], ran.stderr
    assert not list(runs_dir.rglob("run.json"))
