"""The quorum-commit model (labs/models/quorum.py), the lab's layout and sweep, and the
network-namespace commands (labs/infra/netns.py): pure functions, no VM."""

from __future__ import annotations

import numpy as np
import pytest

from labs.errors import UsageError
from labs.infra import netns
from labs.models import quorum as model
from labs.quorum_commit.params import Parameters, Point, points

RTTS = [2.0, 20.0, 20.0, 20.0, 20.0]
SLOW = [2.0, 60.0, 60.0, 20.0, 20.0]


def commit_ms(rtts, k, quantile=0.5, first=False):
    return model.quorum_commit_ms(rtts, k, 5.0, 2.0, 0.4, quantile, first)


def test_the_commit_waits_for_the_kth_fastest_answer():
    # ANY 1: the in-zone standby; ANY 2..5: a cross-zone one, 20 ms away, each a bit later
    # (the k-th of more equal draws is later).
    assert 5 + 2 < commit_ms(RTTS, 1) < 5 + 20
    latencies = [commit_ms(RTTS, k) for k in range(2, 6)]
    assert all(25 < x < 35 for x in latencies) and latencies == sorted(latencies)


def test_a_slow_zone_does_not_slow_any_3_but_slows_any_4_and_first_3():
    assert commit_ms(SLOW, 3) == pytest.approx(commit_ms(RTTS, 3), abs=1.0)
    assert commit_ms(SLOW, 4) > 5 + 60 > commit_ms(RTTS, 4)
    # FIRST 3 waits for s1, s2 and s3, two of them in the slow zone.
    assert commit_ms(SLOW, 3, first=True) > 5 + 60
    assert commit_ms(RTTS, 3, first=True) < 5 + 20 + 10


def test_the_model_matches_a_simulated_order_statistic():
    replicas = [model.ReplicaLatency(rtt, 2.0, 0.4) for rtt in SLOW]
    samples = model.simulate_kth_ack(replicas, 3, 200_000, np.random.default_rng(1))
    for quantile in (0.5, 0.99):
        assert commit_ms(SLOW, 3, quantile) - 5.0 == pytest.approx(
            np.quantile(samples, quantile), rel=0.01)


def test_lognormal_sigma_and_bad_k():
    sigma = model.lognormal_sigma(2.0, 6.0)
    assert np.exp(np.log(2.0) + 2.3263479 * sigma) == pytest.approx(6.0)
    with pytest.raises(UsageError):
        model.lognormal_sigma(3.0, 2.0)
    with pytest.raises(UsageError, match="between 1 and the 5"):
        commit_ms(RTTS, 6)


def test_commits_go_on_while_k_standbys_answer():
    assert model.commits_go_on(3, 3) and not model.commits_go_on(2, 3)


def test_three_zones_two_copies_each_and_the_drill_loses_zone_3_then_s3():
    p = Parameters.for_profile("full")
    assert [p.zone_of(c) for c in range(6)] == [1, 1, 2, 2, 3, 3]
    assert [p.added_rtt_ms(s, "even") for s in range(1, 6)] == [2, 20, 20, 20, 20]
    assert [p.added_rtt_ms(s, "slow-zone") for s in range(1, 6)] == [2, 60, 60, 20, 20]
    assert p.lost_zone() == [4, 5] and p.one_more() == 3


def test_other_zone_counts_keep_the_layout_rules():
    two = Parameters.for_profile("full", zones=2)
    assert [two.zone_of(c) for c in range(6)] == [1, 1, 1, 2, 2, 2]
    assert two.lost_zone() == [3, 4, 5] and two.one_more() == 2
    six = Parameters.for_profile("full", zones=6)
    assert six.lost_zone() == [5] and six.one_more() == 4


def test_the_sweep_points():
    labels = [point.label for point in points(Parameters.for_profile("full"))]
    assert labels == ["no standby", "ANY 1", "ANY 2", "ANY 3", "ANY 4", "ANY 5", "FIRST 3",
                      "ANY 3, remote_apply", "ANY 3"]
    assert Point("ANY", 3).standby_names() == "ANY 3 (s1, s2, s3, s4, s5)"
    assert Point("none", 0).standby_names() == ""
    assert len({point.slug for point in points(Parameters.for_profile("full"))}) == 9


@pytest.mark.parametrize("overrides, words", [
    ({"zones": 4}, "does not divide"),
    ({"in_zone_ms": 30.0}, "delays must rise"),
    ({"slow_zone_ms": 10.0}, "delays must rise"),
    ({"host": "local"}, "inside a lab VM"),
])
def test_bad_layouts_are_refused(overrides, words):
    with pytest.raises(UsageError, match=words):
        Parameters.for_profile("ci", **overrides)


def test_namespace_commands():
    script = netns.create_command("qcab12s3", 3)
    assert "ip netns add qcab12s3" in script and "10.231.3.1/30" in script
    assert "10.231.3.2/30 dev qcab12s3n" in script
    assert netns.delay_command("qcab12s3", 20).endswith(
        "tc qdisc replace dev qcab12s3n root netem delay 20ms")
    assert "qdisc del dev qcab12s3n root" in netns.delay_command("qcab12s3", 0)
    for name, index in (("Bad", 1), ("a" * 12, 1), ("ok1", 0), ("x;rm", 1)):
        with pytest.raises(UsageError):
            netns.create_command(name, index)


def test_too_little_memory_is_refused_before_anything_is_made(monkeypatch):
    """The lab's memory check, on a stand-in host (a VM with 500 MiB free): one-line error,
    raised before a recorder or a workspace exists."""
    from types import SimpleNamespace

    from labs.quorum_commit import run as lab

    monkeypatch.setattr(lab.machine, "require_lab_vm", lambda *args, **kwargs: None)
    monkeypatch.setattr(lab, "available_memory_mib", lambda host: 500)
    monkeypatch.setattr(lab, "RunRecorder", None)  # would fail loudly if reached
    host = SimpleNamespace(name="vm1", lab_devices=["/dev/vdb"])
    with pytest.raises(UsageError, match=r"host vm1 has 500 MiB available; six copies need"):
        lab.run(Parameters.for_profile("ci"), host, progress=None)


# --- the power cut's model (labs/quorum_commit/power_cut_model.py) ---------------------------

def test_the_window_shrinks_as_the_commit_waits_for_more():
    from labs.quorum_commit import power_cut_model as cut

    # The way to s1, the round trip to s1 and to the third, a flush (a recorded run's, ms).
    out, near, kth, flush = 0.34, 2.7, 20.8, 2.8
    windows = [cut.window_ms(s, out, kth, flush) for s in cut.SETTINGS]
    assert windows == sorted(windows, reverse=True)
    assert cut.window_ms("off", out, kth, flush) == pytest.approx(600 + 0.34 + 2.8)
    assert cut.window_ms("local", out, kth, flush) == pytest.approx(0.34 + 2.8)
    # The third answer, 20.8 ms away, comes long after the nearest standby flushed.
    assert cut.window_ms("remote_write", out, kth, flush) == 0
    # With the nearest standby's answer alone (ANY 1), its flush outlasts the answer.
    assert cut.window_ms("remote_write", out, near, flush) == pytest.approx(0.34 + 2.8 - 2.7)
    # On a symmetric network the way out is half the round trip: a longer window.
    assert cut.window_ms("local", near / 2, kth, flush) > cut.window_ms("local", out, kth, flush)
    assert cut.window_ms("on", out, kth, flush) == 0
    assert cut.max_lost(100.0, 600.0) == pytest.approx(60.0)
    with pytest.raises(UsageError, match="synchronous_commit='sometimes'"):
        cut.window_ms("sometimes", out, kth, flush)
