"""The disk, SSD and problem models against OSTEP's figures, hand-worked cases and themselves."""

import csv
import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from labs.errors import UsageError
from labs.models import disk, ssd
from labs.models.disk_problems import KINDS, make_problem

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "reference" / "ostep-drives.csv"


def ostep(drive_name: str) -> dict[str, float]:
    """The numeric rows of data/reference/ostep-drives.csv for one drive."""
    with REFERENCE.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["drive"] == drive_name]
    assert rows, drive_name
    numbers = {}
    for row in rows:
        assert row["source"].startswith("OSTEP v1.10, chapter 37"), row
        try:
            numbers[row["quantity"]] = float(row["value"])
        except ValueError:
            pass  # "SCSI", "16/32": printed as they are, not numbers
    return numbers


PRESETS = [(disk.CHEETAH_15K5, "Cheetah 15K.5"), (disk.BARRACUDA, "Barracuda")]


# ----------------------------------------------------------------------------------------
# The presets and OSTEP's figures
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("drive", "name"), PRESETS)
def test_presets_are_the_figures_in_the_reference_file(drive, name):
    ref = ostep(name)
    assert drive.name == name
    assert drive.rpm == ref["rpm"]
    assert drive.avg_seek_ms == ref["average_seek"]
    assert drive.transfer_mb_s == ref["max_transfer"]
    assert drive.capacity_gb == ref["capacity"]
    assert "figure 37.5" in drive.source


@pytest.mark.parametrize(("drive", "name"), PRESETS)
def test_random_4k_matches_ostep(drive, name):
    ref = ostep(name)
    estimate = disk.random_io(drive, 4096)
    assert estimate.latency_ms == pytest.approx(ref["random_4kb_io_time"], rel=0.01)
    # OSTEP rounds: 4096 B in 6.03 ms is 0.68 MB/s, printed "about 0.66".
    assert estimate.throughput_mb_s == pytest.approx(ref["random_4kb_rate"], rel=0.03)


def test_cheetah_components_match_ostep():
    ref = ostep("Cheetah 15K.5")
    estimate = disk.random_io(disk.CHEETAH_15K5, 4096)
    assert estimate.rotation_ms == ref["random_4kb_rotation"]
    assert estimate.transfer_ms * 1000 == pytest.approx(ref["random_4kb_transfer"], rel=0.1)


@pytest.mark.parametrize(("drive", "name"), PRESETS)
def test_sequential_100mb_matches_ostep(drive, name):
    ref = ostep(name)
    estimate = disk.sequential_io(drive, 100 * disk.MB)
    assert estimate.latency_ms == pytest.approx(ref["sequential_100mb_io_time"], rel=0.02)
    assert estimate.throughput_mb_s == pytest.approx(ref["sequential_rate"], rel=0.02)
    report = disk.random_vs_sequential(drive)
    assert report["streaming_mb_s"] == ref["sequential_rate"]


def test_the_gap_ostep_names():
    # "almost a factor of 200 or so for the Cheetah and more than a factor 300 ... Barracuda"
    assert 150 < disk.random_vs_sequential("cheetah")["ratio"] < 200
    assert disk.random_vs_sequential("barracuda")["ratio"] > 300


def test_describe_and_format():
    report = disk.describe("barracuda", 4096)
    assert report["drive"] == "Barracuda"
    assert report["full_stroke_ms"] == pytest.approx(27.0)
    text = disk.format_description(report)
    assert "Barracuda" in text and "0.31 MB/s" in text and "334x" in text


# ----------------------------------------------------------------------------------------
# Seek, rotation, transfer
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("settle", "exponent"), [(0.0, 1.0), (0.8, 0.5), (1.5, 1.0)])
def test_random_seeks_average_the_drive_average(settle, exponent):
    drive = disk.Drive("test", rpm=10_000, avg_seek_ms=5.0, transfer_mb_s=100, capacity_gb=500,
                       settle_ms=settle, seek_exponent=exponent)
    rng = np.random.default_rng(37)
    a, b = rng.integers(0, drive.tracks, size=(2, 100_000))
    mean = np.mean([disk.seek_ms(drive, x, y) for x, y in zip(a, b, strict=True)])
    assert mean == pytest.approx(5.0, rel=0.01)


def test_seek_by_distance():
    cheetah = disk.CHEETAH_15K5
    assert disk.seek_ms(cheetah, 10, 10) == 0.0
    assert disk.seek_ms(cheetah, 0, cheetah.tracks - 1) == pytest.approx(12.0)  # 3x average
    assert disk.seek_ms_for_fraction(cheetah, 1 / 3) == pytest.approx(4.0)  # OSTEP's aside
    distances = [disk.seek_ms_for_fraction(cheetah, d) for d in np.linspace(0, 1, 11)]
    assert distances == sorted(distances)
    settled = disk.Drive("s", 7200, 8.0, 150, 1000, settle_ms=1.0)
    assert disk.seek_ms(settled, 0, 1) > 1.0  # any move pays the settle time
    with pytest.raises(UsageError, match="fraction of the stroke"):
        disk.seek_ms_for_fraction(cheetah, 1.5)


def test_rotation_waits_average_half_a_turn():
    drive = disk.BARRACUDA
    rng = np.random.default_rng(7)
    waits = [disk.rotation_wait_ms(drive, h, t) for h, t in rng.random((50_000, 2))]
    assert np.mean(waits) == pytest.approx(drive.avg_rotation_ms, rel=0.01)
    assert disk.rotation_wait_ms(drive, 0.25, 0.25) == 0.0
    assert disk.rotation_wait_ms(drive, 0.75, 0.25) == pytest.approx(drive.rotation_ms / 2)


def test_toy_geometry_is_what_the_problems_say():
    toy = disk.TOY
    assert (toy.tracks, toy.sectors, toy.rotation_ms) == (10, 120, pytest.approx(12.0))
    assert disk.transfer_ms(toy, 512) == pytest.approx(1.0)  # one sector per ms
    assert disk.seek_ms(toy, 2, 5) == pytest.approx(3.0)      # 1 ms per track
    assert [disk.track_of(toy, b) for b in (0, 11, 12, 119)] == [0, 0, 1, 9]
    assert disk.angle_of(toy, 13) == pytest.approx(1 / 12)     # no skew on the toy


def test_a_sequential_stream_runs_at_the_peak_rate_across_tracks():
    cheetah = disk.CHEETAH_15K5
    requests = [disk.Request(lba, 8) for lba in range(0, 8 * 500, 8)]  # crosses 4 tracks
    totals = disk.simulate(cheetah, requests).totals()
    assert totals["rotate_ms"] == pytest.approx(0.0, abs=1e-3)
    assert 500 * 4096 / totals["total_ms"] / 1000 == pytest.approx(125.0, rel=1e-3)


def test_without_track_skew_each_new_track_costs_almost_a_revolution():
    # Blocks 10, 11 end track 0; 12, 13 start track 1. The head starts over sector 10.
    requests = [disk.Request(lba, 1) for lba in range(10, 14)]
    plain = disk.simulate(disk.TOY, requests, head_angle=10 / 12).served
    # After 11 the head is at angle 0; the 1 ms seek to track 1 carries it to sector 1, so
    # sector 0 of track 1 comes round again only after 11 ms.
    assert [(s.seek_ms, round(s.rotate_ms, 9)) for s in plain] == [
        (0, 0), (0, 0), (1, 11), (0, 0)]
    skewed_toy = dataclasses.replace(disk.TOY, track_skew=1 / 12)  # one seek's worth
    skewed = disk.simulate(skewed_toy, requests, head_angle=10 / 12).served
    assert [(s.seek_ms, round(s.rotate_ms, 9)) for s in skewed] == [
        (0, 0), (0, 0), (1, 0), (0, 0)]


# ----------------------------------------------------------------------------------------
# Schedulers
# ----------------------------------------------------------------------------------------


def test_hand_worked_schedule_on_the_toy_disk():
    # Head on track 0 at the start of sector 0; queue: block 30 (track 2, sector 6),
    # block 5 (track 0, sector 5), block 18 (track 1, sector 6).
    requests = [disk.Request(30, 1), disk.Request(5, 1), disk.Request(18, 1)]
    fifo = disk.simulate(disk.TOY, requests, "fifo", queue_depth=3)
    # 30: seek 2, at t=2 the head is over sector 2: rotate 4, transfer 1 -> ends at 7
    # 5: seek 2 back to track 0, at t=9 over sector 9: rotate 8, transfer 1 -> ends at 18
    # 18: seek 1, at t=19 over sector 7: rotate 11, transfer 1 -> ends at 31
    assert [(s.seek_ms, round(s.rotate_ms, 9), s.transfer_ms) for s in fifo.served] == [
        (2, 4, 1), (2, 8, 1), (1, 11, 1)]
    assert fifo.total_ms == pytest.approx(31)
    sstf = disk.simulate(disk.TOY, requests, "sstf", queue_depth=3)
    # 5 first (same track): rotate 5, ends at 6 over sector 6; then 18 (1 track): seek 1,
    # rotate 11 (sector 7 -> 6), ends at 19; then 30: seek 1, at t=20 over sector 8: rotate 10
    assert sstf.order == [1, 2, 0]
    assert sstf.total_ms == pytest.approx(31)
    sptf = disk.simulate(disk.TOY, requests, "sptf", queue_depth=3)
    # From t=0: 30 costs 2+4, 5 costs 0+5, 18 costs 1+5 -> 5 (ends at 6, over sector 6).
    # Then 30 costs 2+10, 18 costs 1+11 -> tie at 12, the older (30) wins: ends at 19 over
    # sector 7; then 18 costs 1+10 -> ends at 31.
    assert sptf.order == [1, 0, 2]
    assert [round(s.end_ms, 6) for s in sptf.served] == [6, 19, 31]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_queue_depth_one_makes_every_policy_fifo(seed):
    requests = disk.random_requests("cheetah", 200, seed)
    runs = [disk.simulate("cheetah", requests, policy, queue_depth=1).served
            for policy in disk.POLICIES]
    assert runs[0] == runs[1] == runs[2]


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_deeper_queues_let_sstf_and_sptf_beat_fifo(seed):
    requests = disk.random_requests("cheetah", 400, seed)
    shallow = disk.compare_policies("cheetah", requests, 4)
    deep = disk.compare_policies("cheetah", requests, 16)
    for result in (shallow, deep):
        assert result["sstf"]["iops"] > 1.3 * result["fifo"]["iops"]
        assert result["sptf"]["iops"] > result["sstf"]["iops"]
    # FIFO does not care about depth; the others gain from it.
    assert deep["fifo"]["iops"] == pytest.approx(shallow["fifo"]["iops"])
    assert deep["sptf"]["iops"] > 1.5 * shallow["sptf"]["iops"]


def test_fifo_serves_in_order_and_the_drive_is_never_idle():
    requests = disk.random_requests("barracuda", 100, 5)
    for policy in disk.POLICIES:
        schedule = disk.simulate("barracuda", requests, policy, queue_depth=8)
        totals = schedule.totals()
        busy = totals["seek_ms"] + totals["rotate_ms"] + totals["transfer_ms"]
        assert busy == pytest.approx(totals["total_ms"])
        assert sorted(schedule.order) == list(range(100))
    fifo = disk.simulate("barracuda", requests, "fifo", queue_depth=8)
    assert fifo.order == list(range(100))


def test_littles_law_holds_in_the_simulation():
    requests = disk.random_requests("cheetah", 3000, 21)
    totals = disk.simulate("cheetah", requests, "sptf", queue_depth=8).totals()
    # Closed loop: 8 in flight all along (but the last few), so R = qd / X.
    expected = ssd.latency_ms_from(8, totals["iops"])
    assert totals["mean_response_ms"] == pytest.approx(expected, rel=0.01)


def test_random_requests_are_seeded_aligned_and_in_range():
    a = disk.random_requests("cheetah", 50, 3)
    assert a == disk.random_requests("cheetah", 50, np.random.default_rng(3))
    assert a != disk.random_requests("cheetah", 50, 4)
    assert all(r.lba % 8 == 0 and r.lba + 8 <= disk.CHEETAH_15K5.sectors for r in a)


@pytest.mark.parametrize(("call", "fragment"), [
    (lambda: disk.simulate("cheetah", [], "elevator"), "unknown policy 'elevator'"),
    (lambda: disk.simulate("cheetah", [], "fifo", 0), "queue depth must be at least 1"),
    (lambda: disk.simulate("toy", [disk.Request(119, 2)]), "runs past the end of toy"),
    (lambda: disk.simulate("toy", [], head_track=10), "head track 10 is past the last track"),
    (lambda: disk.get_drive("floppy"), "unknown drive 'floppy'"),
    (lambda: disk.random_io("cheetah", 0), "block size .bytes. must be positive"),
    (lambda: disk.random_requests("toy", 3, "seed"), "pass a seed"),
    (lambda: disk.Drive("bad", 7200, 5, 100, 1, settle_ms=6), "settle_ms must be in"),
    (lambda: disk.Drive("bad", -1, 5, 100, 1), "rpm must be positive"),
])
def test_bad_input_is_one_line(call, fragment):
    with pytest.raises(UsageError, match=fragment) as caught:
        call()
    assert "\n" not in str(caught.value)


# ----------------------------------------------------------------------------------------
# SSD and Little's law
# ----------------------------------------------------------------------------------------


FLASH = ssd.Ssd(read_latency_us=100, write_latency_us=400, channels=8, bandwidth_mb_s=2000)


def test_littles_law_helpers_agree():
    assert ssd.iops_from(16, 0.5) == pytest.approx(32_000)
    assert ssd.latency_ms_from(16, 32_000) == pytest.approx(0.5)
    assert ssd.queue_depth_from(32_000, 0.5) == pytest.approx(16)
    for bad in (0, -1, math.inf, math.nan, "3", True):
        with pytest.raises(UsageError):
            ssd.iops_from(bad, 1)


def test_ssd_iops_grow_with_queue_depth_until_the_channels_are_busy():
    results = [ssd.ssd_iops(FLASH, qd, 4096) for qd in (1, 2, 4, 8, 16, 64)]
    iops = [r.iops for r in results]
    assert iops[:4] == pytest.approx([10_000, 20_000, 40_000, 80_000])
    assert iops[4:] == pytest.approx([80_000, 80_000])
    assert [r.limit for r in results] == ["queue depth"] * 3 + ["channels"] * 3
    # Until the channels fill, a request takes just its service time; then it waits.
    assert [r.latency_ms for r in results] == pytest.approx([0.1] * 4 + [0.2, 0.8])


def test_ssd_bandwidth_caps_large_blocks():
    big = ssd.ssd_iops(FLASH, 64, 1024 * 1024)
    assert big.limit == "bandwidth"
    assert big.throughput_mb_s == pytest.approx(2000)
    assert ssd.saturation_queue_depth(FLASH, 1024 * 1024) < FLASH.channels
    assert ssd.saturation_queue_depth(FLASH, 4096) == pytest.approx(8)


def test_ssd_mixes_reads_and_writes_by_service_time():
    mixed = ssd.ssd_iops(FLASH, 8, 4096, read_fraction=0.5)
    assert mixed.iops == pytest.approx(8 / 250e-6)
    with pytest.raises(UsageError, match="read fraction"):
        FLASH.service_us(1.5)
    with pytest.raises(UsageError, match="channels must be a whole number"):
        ssd.Ssd(100, 100, 0, 1000)


# ----------------------------------------------------------------------------------------
# Generated problems
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_same_problem(kind):
    first, again = make_problem(kind, 42), make_problem(kind, 42)
    assert first == again
    assert first.solve() == again.solve()
    assert f"make_problem({kind!r}, seed=42)" in first.text


@pytest.mark.parametrize("kind", KINDS)
def test_different_seeds_different_problems(kind):
    params = {repr(make_problem(kind, seed).params) for seed in range(20)}
    assert len(params) >= 15


def test_problem_texts_print_every_parameter():
    for seed in range(10):
        p = make_problem("random-vs-sequential", seed)
        drive = disk.get_drive(p.params["drive"])
        for shown in (f"{drive.rpm:,.0f} RPM", f"average seek {drive.avg_seek_ms:g} ms",
                      f"{drive.transfer_mb_s:g} MB/s", f"{p.params['block_kib']} KiB",
                      f"{p.params['sequential_mb']} MB"):
            assert shown in p.text
        s = make_problem("schedule", seed)
        assert f"track {s.params['head_track']} at the start of sector " \
               f"{s.params['head_sector']}" in s.text
        assert ", ".join(map(str, s.params["requests"])) in s.text
        q = make_problem("ssd-qd", seed)
        for key in ("read_latency_us", "channels", "block_kib", "queue_depth"):
            assert f"{q.params[key]}" in q.text


def test_solutions_agree_with_the_models():
    for seed in range(15):
        p = make_problem("random-vs-sequential", seed).solve().numbers
        params = make_problem("random-vs-sequential", seed).params
        direct = disk.random_io(params["drive"], params["block_kib"] * 1024)
        assert p["random_mb_s"] == pytest.approx(direct.throughput_mb_s)
        law = make_problem("littles-law", seed)
        answer = law.solve().numbers[law.params["unknown"]]
        values = dict(law.params["given"], **{law.params["unknown"]: answer})
        assert values["iops"] * values["latency_ms"] / 1000 == pytest.approx(values["queue_depth"])
        q = make_problem("ssd-qd", seed)
        est = q.solve().numbers
        assert est["latency_ms"] == pytest.approx(q.params["queue_depth"] / est["iops"] * 1000)


def test_schedule_solutions_are_consistent():
    for seed in range(25):
        problem = make_problem("schedule", seed)
        numbers = problem.solve().numbers
        for policy in disk.POLICIES:
            n = numbers[policy]
            assert sorted(n["order"]) == sorted(problem.params["requests"])
            assert n["seek_ms"] + n["rotate_ms"] + n["transfer_ms"] == pytest.approx(
                n["total_ms"])
        assert numbers["fifo"]["order"] == problem.params["requests"]
        # SPTF's first pick is the cheapest to reach from where the head starts.
        first = numbers["sptf"]["order"][0]
        start_costs = {
            lba: disk.seek_ms(disk.TOY, problem.params["head_track"], disk.track_of(disk.TOY, lba))
            for lba in problem.params["requests"]}
        head = problem.params["head_sector"] / 12
        reach = {lba: cost + disk.rotation_wait_ms(
            disk.TOY, (head + cost / 12) % 1, disk.angle_of(disk.TOY, lba))
            for lba, cost in start_costs.items()}
        assert reach[first] == pytest.approx(min(reach.values()))


def test_bad_problem_requests():
    with pytest.raises(UsageError, match="unknown problem kind 'raid'"):
        make_problem("raid", 1)
    with pytest.raises(UsageError, match="seed must be a whole number"):
        make_problem("schedule", -1)


def test_sweeps_for_charts():
    rows = disk.queue_depth_sweep("cheetah", 120, 9, [1, 8])
    assert [(r["queue_depth"], r["policy"]) for r in rows] == [
        (1, "fifo"), (1, "sstf"), (1, "sptf"), (8, "fifo"), (8, "sstf"), (8, "sptf")]
    assert rows[0]["iops"] == rows[2]["iops"] < rows[5]["iops"]
    curve = ssd.queue_depth_curve(FLASH, 4096)
    assert [r["queue_depth"] for r in curve] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert curve[-1]["iops"] == pytest.approx(80_000)


def test_a_tie_goes_to_the_request_queued_first_as_the_problems_say():
    toy = disk.TOY
    # The head on track 5; one request two tracks up, one two tracks down, queued in turn.
    up, down = 12 * 7, 12 * 3
    for first, second in ((up, down), (down, up)):
        schedule = disk.simulate(toy, [disk.Request(first, 1), disk.Request(second, 1)],
                                 "sstf", queue_depth=2, head_track=5)
        assert [served.lba for served in schedule.served] == [first, second]


@pytest.mark.parametrize("seed", range(10))
def test_the_ratio_in_a_solution_keeps_three_significant_digits(seed):
    solution = make_problem("random-vs-sequential", seed).solve()
    printed = float(solution.text.rsplit("= ", 1)[1].rstrip("x.").replace(",", ""))
    assert printed == pytest.approx(solution.numbers["ratio"], rel=0.005)
