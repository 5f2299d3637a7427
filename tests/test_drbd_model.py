"""The DRBD model (labs/drbd/model.py): what each protocol waits for, and what a commit costs."""

from __future__ import annotations

import itertools

import pytest

from labs.drbd import model as drbd
from labs.drbd.article import article_ratios, sample_ms_per_transaction
from labs.drbd.databases import ZONES, zone_measures, zone_plan
from labs.errors import UsageError

GRID = [0.0, 0.1, 0.5, 1.0, 3.0, 8.0]


def latency(protocol, local, peer, rtt, transfer=0.0):
    return drbd.write_latency_ms(protocol, local_write_ms=local, peer_write_ms=peer,
                                 rtt_ms=rtt, transfer_ms=transfer)


@pytest.mark.parametrize(("local", "peer", "rtt", "transfer"),
                         list(itertools.product(GRID, GRID, GRID, [0.0, 0.03])))
def test_a_never_waits_longer_than_b_and_b_never_longer_than_c(local, peer, rtt, transfer):
    a, b, c = (latency(p, local, peer, rtt, transfer) for p in drbd.PROTOCOLS)
    assert local == a <= b <= c
    # Every protocol waits at least for the local disk; none for more than both paths in a row.
    assert c <= local + rtt + transfer + peer


def test_the_guides_example_3_ms_disks_and_a_0_2_ms_round_trip_make_3_2_ms():
    assert latency("C", 3, 3, 0.2) == pytest.approx(3.2)
    assert latency("C", 3, 3, 0.2) / 3 - 1 == pytest.approx(0.067, abs=0.001)  # "about 7 %"
    assert latency("B", 3, 3, 0.2) == latency("A", 3, 3, 0.2) == 3


def test_the_slower_path_sets_the_latency_not_the_sum():
    # A slow local disk hides the network: the peer's path (2 + 1 ms) finishes first.
    assert latency("C", 5, 1, 2) == 5
    assert latency("B", 5, 1, 2) == 5
    # Once the network path is the longer one, every extra ms of round trip shows.
    assert latency("C", 5, 1, 6) == 7
    assert latency("B", 5, 1, 6) == 6
    assert latency("C", 5, 1, 7) - latency("C", 5, 1, 6) == pytest.approx(1)
    # B does not wait for the peer's disk; C does.
    assert latency("B", 0.5, 9, 1) == 1 and latency("C", 0.5, 9, 1) == 10


def test_the_peers_flush_between_writes_adds_to_b_and_c_not_to_a():
    # One writer at queue depth 1: every write an epoch of its own, closed by the peer's flush.
    def waits(protocol, flush):
        return drbd.write_latency_ms(protocol, local_write_ms=0.2, peer_write_ms=0.1,
                                     rtt_ms=2.0, send_ms=0.3, peer_flush_ms=flush)
    assert waits("A", 11.0) == waits("A", 0.0) == 0.3
    # The peer's flush runs while the writer hands over its next write: the slower counts.
    assert waits("B", 11.0) == pytest.approx(11.0 + 2.0)
    assert waits("C", 11.0) == pytest.approx(11.0 + 2.0 + 0.1)
    assert waits("C", 0.1) == waits("C", 0.0) == pytest.approx(0.3 + 2.0 + 0.1)
    with pytest.raises(UsageError):
        waits("C", -1.0)


def test_an_fdatasync_waits_for_the_local_flush_and_the_next_write_for_the_rest_of_the_peers():
    assert drbd.flush_latency_ms(local_flush_ms=11.5) == 11.5
    # The peer flushed while the primary did: only what its flush takes beyond is left.
    assert drbd.flush_then_write_peer_flush_ms(peer_flush_ms=12.0,
                                               local_flush_ms=11.5) == pytest.approx(0.5)
    assert drbd.flush_then_write_peer_flush_ms(peer_flush_ms=3.0, local_flush_ms=11.5) == 0
    with pytest.raises(UsageError):
        drbd.flush_latency_ms(local_flush_ms=-1)


def test_commits_one_at_a_time_add_one_round_trip_to_every_transaction():
    # 100 TPS on the disk (10 ms a transaction); 80 TPS at a 2 ms round trip (12.5 ms, so
    # 2.5 ms added): at a 4 ms round trip, 4.5 ms added.
    ratio = drbd.serial_commit_ratio(local_tps=100, anchor_tps=80, anchor_rtt_ms=2.0,
                                     rtt_ms=4.0)
    assert ratio == pytest.approx(10 / 14.5)
    assert drbd.serial_commit_ratio(local_tps=100, anchor_tps=80, anchor_rtt_ms=2.0,
                                    rtt_ms=2.0) == pytest.approx(0.8)
    # A shorter round trip than the anchor's saves nothing in the model.
    assert drbd.serial_commit_ratio(local_tps=100, anchor_tps=80, anchor_rtt_ms=2.0,
                                    rtt_ms=1.0) == pytest.approx(0.8)
    with pytest.raises(UsageError):
        drbd.serial_commit_ratio(local_tps=0, anchor_tps=80, anchor_rtt_ms=2.0, rtt_ms=1.0)


def test_transfer_time_is_size_over_bandwidth_and_adds_to_b_and_c_only():
    assert drbd.transfer_ms(1024, 1000) == pytest.approx(1.0)   # 1 MiB at 1,000 MiB/s
    assert drbd.transfer_ms(4, 100) == pytest.approx(4 / 1024 / 100 * 1000)
    assert drbd.transfer_ms(4, 0) == 0   # an unlimited link
    assert latency("A", 1, 1, 1, transfer=2) == 1
    assert latency("B", 1, 1, 1, transfer=2) == 3
    assert latency("C", 1, 1, 1, transfer=2) == 4


def test_tps_follows_the_time_per_transaction():
    assert drbd.pgbench_tps(clients=1, cpu_ms=1, commit_ms=1) == pytest.approx(500)
    assert drbd.pgbench_tps(clients=10, cpu_ms=1, commit_ms=1) == pytest.approx(5000)
    # The work measured on the local disk: clients / TPS per transaction, minus the commit.
    assert drbd.cpu_ms_per_transaction(local_tps=5000, clients=10,
                                       local_commit_ms=1) == pytest.approx(1)
    assert drbd.cpu_ms_per_transaction(local_tps=5000, clients=10, local_commit_ms=5) == 0


def test_tps_ratio_is_one_when_mirroring_adds_nothing_and_falls_as_the_commit_grows():
    assert drbd.tps_ratio(cpu_ms=2, local_commit_ms=0.5, mirrored_commit_ms=0.5) == 1
    ratios = [drbd.tps_ratio(cpu_ms=2, local_commit_ms=0.5, mirrored_commit_ms=0.5 + extra)
              for extra in (0, 0.5, 1, 2, 5)]
    assert ratios == sorted(ratios, reverse=True)
    # More work per transaction dilutes the same extra commit time.
    assert drbd.tps_ratio(cpu_ms=20, local_commit_ms=0.5, mirrored_commit_ms=2) > \
        drbd.tps_ratio(cpu_ms=2, local_commit_ms=0.5, mirrored_commit_ms=2)
    # The ratio of two pgbench_tps at the same clients.
    local = drbd.pgbench_tps(clients=10, cpu_ms=2, commit_ms=0.5)
    mirrored = drbd.pgbench_tps(clients=10, cpu_ms=2, commit_ms=2)
    assert drbd.tps_ratio(cpu_ms=2, local_commit_ms=0.5,
                          mirrored_commit_ms=2) == pytest.approx(mirrored / local)


@pytest.mark.parametrize("local_ms", [0.25, 0.91, 2.5, 10])
@pytest.mark.parametrize("ratio", [1.0, 0.9, 0.625, 0.269, 0.05])
def test_added_commit_ms_for_ratio_inverts_tps_ratio(local_ms, ratio):
    added = drbd.added_commit_ms_for_ratio(ratio, local_ms_per_transaction=local_ms)
    # Split the local time any way between work and commit: only the sum matters.
    for commit in (0.0, local_ms / 2, local_ms):
        assert drbd.tps_ratio(cpu_ms=local_ms - commit, local_commit_ms=commit,
                              mirrored_commit_ms=commit + added) == pytest.approx(ratio)
    back = drbd.tps_ratio(cpu_ms=local_ms, local_commit_ms=0, mirrored_commit_ms=added)
    assert drbd.added_commit_ms_for_ratio(
        back, local_ms_per_transaction=local_ms) == pytest.approx(added)


def test_the_articles_ratios_read_back_as_milliseconds():
    one_zone = drbd.added_commit_ms_for_ratio(0.625, local_ms_per_transaction=1)
    two_zones = drbd.added_commit_ms_for_ratio(0.269, local_ms_per_transaction=1)
    assert one_zone == pytest.approx(0.6)
    assert two_zones == pytest.approx(1 / 0.269 - 1)
    assert drbd.added_commit_ms_for_ratio(1, local_ms_per_transaction=3) == 0


def test_a_ratio_survives_the_time_scale_and_the_zone_round_trip_meets_it():
    # A transaction of 0.9 ms that a mirror makes 0.6 ms longer keeps 60 %; a lab whose
    # transaction takes 18 ms is k = 20 times slower, and its mirror must add 12 ms.
    k = drbd.time_scale(lab_ms_per_transaction=18, article_ms_per_transaction=0.9)
    assert k == pytest.approx(20)
    added = k * drbd.added_commit_ms_for_ratio(0.6, local_ms_per_transaction=0.9)
    assert added == pytest.approx(12)
    # Measured: the mirror added 7 ms at the link's own 2 ms; one round trip per commit makes
    # the other 5 ms a round trip 5 ms longer. A target below what was measured stays put.
    assert drbd.zone_round_trip_ms(target_added_ms=added, measured_added_ms=7,
                                   measured_rtt_ms=2) == pytest.approx(7)
    assert drbd.zone_round_trip_ms(target_added_ms=3, measured_added_ms=7,
                                   measured_rtt_ms=2) == 2
    assert drbd.tps_ratio(cpu_ms=18, local_commit_ms=0, mirrored_commit_ms=added) == \
        pytest.approx(0.6)


@pytest.mark.parametrize("local_tps, link_tps, link_rtt_ms", [
    (59.4, 41.4, 1.8), (150, 60, 0.5), (20, 19, 2.0), (300, 100, 0.2)])
def test_the_zone_plan_puts_the_models_fraction_on_the_articles(local_tps, link_tps,
                                                                 link_rtt_ms):
    plan = zone_plan(local_tps, link_tps, link_rtt_ms)
    assert list(plan) == list(ZONES) and plan["one zone"] <= plan["two zones"]
    for zone, rtt_ms in plan.items():
        measures = dict((m, v) for m, v, _ in zone_measures(
            plan, zone, local_tps, link_tps, link_rtt_ms, rtt_ms))
        assert measures["time_scale"] == pytest.approx(
            1000 / local_tps / sample_ms_per_transaction())
        assert rtt_ms >= link_rtt_ms
        if rtt_ms > link_rtt_ms:  # not held at the link's own: the model meets the article
            assert measures["model_ratio"] == pytest.approx(article_ratios()[zone])
        else:  # the link alone already costs more: the model keeps less than the article
            assert measures["model_ratio"] <= article_ratios()[zone]


def test_writes_in_flight_is_littles_law():
    assert drbd.writes_in_flight(2000, window_ms=10) == pytest.approx(20)
    assert drbd.writes_in_flight(0, window_ms=10) == 0


@pytest.mark.parametrize("call", [
    lambda: latency("D", 1, 1, 1),
    lambda: latency("c", 1, 1, 1),
    lambda: latency("C", -1, 1, 1),
    lambda: latency("C", 1, -0.1, 1),
    lambda: latency("B", 1, 1, -1),
    lambda: latency("B", 1, 1, 1, transfer=-1),
    lambda: drbd.transfer_ms(-4, 100),
    lambda: drbd.transfer_ms(4, -1),
    lambda: drbd.cpu_ms_per_transaction(local_tps=0, clients=10, local_commit_ms=1),
    lambda: drbd.cpu_ms_per_transaction(local_tps=100, clients=0, local_commit_ms=1),
    lambda: drbd.cpu_ms_per_transaction(local_tps=100, clients=1, local_commit_ms=-1),
    lambda: drbd.pgbench_tps(clients=0, cpu_ms=1, commit_ms=1),
    lambda: drbd.pgbench_tps(clients=1, cpu_ms=0, commit_ms=0),
    lambda: drbd.pgbench_tps(clients=1, cpu_ms=-1, commit_ms=2),
    lambda: drbd.tps_ratio(cpu_ms=1, local_commit_ms=-1, mirrored_commit_ms=1),
    lambda: drbd.added_commit_ms_for_ratio(0, local_ms_per_transaction=1),
    lambda: drbd.added_commit_ms_for_ratio(1.2, local_ms_per_transaction=1),
    lambda: drbd.added_commit_ms_for_ratio(62.5, local_ms_per_transaction=1),  # a percent
    lambda: drbd.added_commit_ms_for_ratio(0.5, local_ms_per_transaction=-1),
    lambda: drbd.writes_in_flight(-1, window_ms=1),
    lambda: drbd.writes_in_flight(1, window_ms=-1),
    lambda: drbd.time_scale(lab_ms_per_transaction=0, article_ms_per_transaction=1),
    lambda: drbd.time_scale(lab_ms_per_transaction=1, article_ms_per_transaction=-1),
    lambda: drbd.zone_round_trip_ms(target_added_ms=-1, measured_added_ms=1,
                                    measured_rtt_ms=1),
    lambda: drbd.zone_round_trip_ms(target_added_ms=1, measured_added_ms=1,
                                    measured_rtt_ms=-1),
])
def test_bad_input_is_a_usage_error(call):
    with pytest.raises(UsageError):
        call()


def test_every_protocol_has_its_promise():
    assert set(drbd.PROTOCOL_PROMISES) == set(drbd.PROTOCOLS) == {"A", "B", "C"}
    assert "peer's disk" in drbd.PROTOCOL_PROMISES["C"]
    assert "received" in drbd.PROTOCOL_PROMISES["B"]


def depth1(protocol, block_kib, local=0.5, peer=0.5, rtt=2.0, link=100.0, send=0.0):
    return drbd.depth1_write_ms(protocol, block_kib=block_kib, local_write_ms=local,
                                peer_write_ms=peer, rtt_ms=rtt, link_mib_s=link, send_ms=send)


def test_a_stream_of_large_writes_waits_for_the_link_under_every_protocol():
    # 1 MiB over a 100 MiB/s link is 10 ms on the wire: A waits for it too (its send buffer
    # is full), B adds the round trip, C the round trip and the peer's write.
    assert depth1("A", 1024) == pytest.approx(10.0)
    assert depth1("B", 1024) == pytest.approx(12.0)
    assert depth1("C", 1024) == pytest.approx(12.5)
    assert drbd.depth1_mib_s(1024, depth1("C", 1024)) == pytest.approx(80.0)
    # 4 KiB writes hardly use the link: the round trip is what C waits for.
    assert depth1("C", 4, send=0.1) == pytest.approx(0.1 + 2.0 + 0.5 + 4 / 1024 / 100 * 1000)
    # A fast local disk under A: the link, not the disk; a slow one: the disk.
    assert depth1("A", 1024, local=25.0) == 25.0


def test_under_a_a_stream_waits_for_the_peers_pace_once_the_send_buffer_is_full():
    # Small writes under A: the peer takes one per flush and write, and that sets the pace.
    slow_peer = drbd.depth1_write_ms("A", block_kib=4, local_write_ms=0.2, peer_write_ms=0.1,
                                     rtt_ms=2.0, link_mib_s=100.0, send_ms=0.3,
                                     peer_flush_ms=11.0)
    assert slow_peer == pytest.approx(11.1)
    # B and C pay the flush on top of their round trip (and the sending, beside it).
    c = drbd.depth1_write_ms("C", block_kib=4, local_write_ms=0.2, peer_write_ms=0.1,
                             rtt_ms=2.0, link_mib_s=100.0, send_ms=0.3, peer_flush_ms=11.0)
    assert c == pytest.approx(11.0 + 2.0 + 4 / 1024 / 100 * 1000 + 0.1)


@pytest.mark.parametrize("block_kib, write_ms", [(-1, 1.0), (4, 0.0), (4, -2.0)])
def test_depth1_throughput_refuses_impossible_inputs(block_kib, write_ms):
    with pytest.raises(UsageError):
        drbd.depth1_mib_s(block_kib, write_ms)
