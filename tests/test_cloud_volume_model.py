"""The EBS volume model against AWS's published tables; its QEMU mapping against QEMU's rules."""

import csv
import math
from pathlib import Path

import pytest

from labs.errors import UsageError
from labs.models import cloud_volume as cv

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "reference" / "ebs-volumes.csv"
MIB = 1024 ** 2


def reference_rows() -> list[dict[str, str]]:
    with REFERENCE.open(newline="") as f:
        return list(csv.DictReader(f))


def test_constants_are_the_reference_file_and_every_row_is_sourced():
    rows = reference_rows()
    from_file = {(r["volume_type"], r["quantity"]): float(r["value"]) for r in rows}
    assert from_file == cv.PUBLISHED
    for row in rows:
        assert row["source_url"].startswith("https://docs.aws.amazon.com/"), row
        assert row["source_title"] and row["source_date"] and row["unit"], row


# The sc1 table of "Throughput Optimized HDD and Cold HDD volumes" (Amazon EBS User Guide):
# volume size (TiB) -> base and burst throughput (MiB/s), typed from the page.
SC1_TABLE = [(0.125, 1.5, 10), (0.5, 6, 40), (1, 12, 80), (2, 24, 160), (3, 36, 240),
             (3.125, 37.5, 250), (4, 48, 250), (10, 120, 250), (16, 192, 250)]


@pytest.mark.parametrize(("tib", "base", "burst"), SC1_TABLE)
def test_sc1_throughput_table(tib, base, burst):
    vol = cv.Sc1(tib * 1024)
    assert vol.baseline_mib_s == pytest.approx(base)
    assert vol.burst_mib_s == pytest.approx(burst)


# The same page's scan times with a full bucket (hours), sc1 column, typed from the page.
SC1_SCAN_HOURS = [(1, 3.64), (2, 3.64), (4, 4.66), (5, 5.83), (8, 9.32), (16, 18.64)]


@pytest.mark.parametrize(("tib", "hours"), SC1_SCAN_HOURS)
def test_sc1_full_scan_times(tib, hours):
    assert cv.Sc1(tib * 1024).full_scan_seconds / 3600 == pytest.approx(hours, abs=0.006)


def test_sc1_bucket_burst_and_refill():
    vol = cv.Sc1(1024)  # 1 TiB: bucket 1 TiB, drains at 80 - 12 = 68 MiB/s while bursting
    assert vol.bucket_mib == 1024 * 1024
    assert vol.burst_seconds() == pytest.approx(1024 * 1024 / 68)
    assert vol.burst_seconds(0.5) == pytest.approx(vol.burst_seconds() / 2)
    assert vol.refill_seconds() == pytest.approx(1024 * 1024 / 12)
    assert vol.refill_seconds(1.0) == 0.0


def test_small_random_io_on_sc1_is_charged_a_whole_mib():
    vol = cv.Sc1(300)  # the seed article's size
    burst = cv.predict(vol, 16, "random", "burst")
    base = cv.predict(vol, 16, "random", "baseline")
    assert burst.iops == pytest.approx(80 * 300 / 1024)  # 23.4 I/Os per second
    assert base.iops == pytest.approx(12 * 300 / 1024)   # 3.5
    assert burst.mib_s == pytest.approx(burst.iops / 64)  # 16 KiB each
    # Sequential 16 KiB is merged into 1 MiB units: the full MiB/s, 64 times the I/Os.
    seq = cv.predict(vol, 16, "sequential", "burst")
    assert seq.mib_s == pytest.approx(80 * 300 / 1024)
    assert seq.iops == pytest.approx(64 * burst.iops)
    # Larger random I/O counts whole MiB units: 1.5 MiB costs 2.
    assert cv.predict(vol, 1536, "random").units_per_io == 2


def test_sc1_per_volume_iops_cap():
    vol = cv.Sc1(16 * 1024)
    assert cv.predict(vol, 1024, "random").iops == pytest.approx(250)
    assert cv.predict(vol, 4, "random").iops == pytest.approx(250)


@pytest.mark.parametrize(("block_kib", "iops", "limit"), [
    (16, 3000, "3,000 IOPS"),        # 47 MiB/s: IOPS bind
    (64, 2000, "125 MiB/s"),         # 3,000 x 64 KiB would be 188 MiB/s
    (256, 500, "125 MiB/s"),
    (1024, 125, "125 MiB/s"),        # 4 units of 256 KiB: 750 by IOPS, 125 by throughput
])
def test_gp3_baseline_predictions(block_kib, iops, limit):
    p = cv.predict(cv.Gp3(100), block_kib, "random")
    assert (p.iops, p.limit) == (pytest.approx(iops), limit)


def test_gp3_provisioned_and_units():
    vol = cv.Gp3(200, iops=16_000, throughput_mib_s=1000)
    assert cv.predict(vol, 4, "random").iops == pytest.approx(16_000)
    assert cv.predict(vol, 1024, "random").units_per_io == 4
    assert cv.predict(vol, 64, "sequential").units_per_io == pytest.approx(0.25)


def test_a_client_bound_by_its_own_queue_depth():
    p = cv.predict(cv.Gp3(300), 16, "random", queue_depth=1, latency_ms=1.0)
    assert p.iops == pytest.approx(1000) and p.limit.startswith("queue depth 1")
    with pytest.raises(UsageError, match="both queue_depth and latency_ms"):
        cv.predict(cv.Gp3(300), 16, queue_depth=1)


def test_fileio_ratio():
    limits_only = cv.fileio_ratio(300, 16)
    assert limits_only["ratio"] == pytest.approx(3000 / (80 * 300 / 1024))  # 128x
    assert cv.fileio_ratio(300, 16, "baseline")["ratio"] == pytest.approx(3000 / (12 * 300 / 1024))
    # The seed article measured about 45x: less than the limits allow, as a single client
    # at queue depth 1 and the page cache both hold gp3 back.
    assert limits_only["ratio"] > 45
    one_client = cv.fileio_ratio(300, 16, queue_depth=1, gp3_latency_ms=2.0)
    assert one_client["ratio"] == pytest.approx(500 / (80 * 300 / 1024))


@pytest.mark.parametrize(("call", "fragment"), [
    (lambda: cv.Gp3(0.5), "gp3 volumes are 1 to 65,536 GiB"),
    (lambda: cv.Gp3(70_000), "gp3 volumes are 1 to 65,536 GiB"),
    (lambda: cv.Sc1(100), "sc1 volumes are 125 to 16,384 GiB"),
    (lambda: cv.Sc1(16_385), "sc1 volumes are 125 to 16,384 GiB"),
    (lambda: cv.Gp3(32, iops=16_001), "gp3 of 32 GiB takes 3,000 to 16,000 IOPS"),
    (lambda: cv.Gp3(500, iops=80_001), "takes 3,000 to 80,000 IOPS"),
    (lambda: cv.Gp3(500, iops=2_000), "takes 3,000 to"),
    (lambda: cv.Gp3(500, iops=4_000, throughput_mib_s=1_001), "takes 125 to 1000 MiB/s"),
    (lambda: cv.Gp3(500, iops=80_000, throughput_mib_s=2_001), "takes 125 to 2000 MiB/s"),
    (lambda: cv.volume("io2", 100), "unknown volume type 'io2'"),
    (lambda: cv.volume("sc1", 500, iops=300), "sc1 has no provisioned IOPS"),
    (lambda: cv.predict(cv.Sc1(500), 16, "zigzag"), "pattern must be one of"),
    (lambda: cv.predict(cv.Sc1(500), 16, "random", "turbo"), "sc1 phase must be"),
    (lambda: cv.predict(cv.Sc1(500), -4), "block_kib must be greater than 0"),
    (lambda: cv.Sc1(500).burst_seconds(1.5), "credit fraction must be between 0 and 1"),
])
def test_bad_input_is_one_line(call, fragment):
    with pytest.raises(UsageError, match=fragment) as caught:
        call()
    assert "\n" not in str(caught.value)


def test_gp3_largest_provisioning_is_accepted():
    assert cv.Gp3(160, iops=80_000, throughput_mib_s=2_000).iops == 80_000
    assert cv.Gp3(8, iops=4_000, throughput_mib_s=1_000).throughput_mib_s == 1_000


# ----------------------------------------------------------------------------------------
# Burst then baseline, over time
# ----------------------------------------------------------------------------------------


def test_sc1_bursts_then_settles_to_baseline():
    vol = cv.Sc1(300)
    empty_at = vol.burst_seconds()  # about 4.3 h
    rows = cv.sc1_over_time(vol, 8 * 3600, 600, block_kib=1024, pattern="sequential")
    for t, rate, credit in zip(rows["time_s"], rows["charged_mib_s"], rows["credit_mib"],
                               strict=True):
        if t <= empty_at:
            assert rate == pytest.approx(vol.burst_mib_s)
            assert credit == pytest.approx(vol.bucket_mib - (vol.burst_mib_s
                                                             - vol.baseline_mib_s) * t)
        elif t - 600 >= empty_at:
            assert rate == pytest.approx(vol.baseline_mib_s) and credit == 0
    # Credit is conserved: what was delivered = start credit + what accrued - what is left.
    delivered = sum(r * 600 for r in rows["charged_mib_s"])
    accrued = vol.baseline_mib_s * 8 * 3600
    assert delivered == pytest.approx(vol.bucket_mib + accrued - rows["credit_mib"][-1])


def test_sc1_over_time_in_guest_terms():
    vol = cv.Sc1(300)
    rows = cv.sc1_over_time(vol, 3600, 60, block_kib=16, pattern="random",
                            credit_fraction=0.0)
    assert rows["iops"] == pytest.approx([vol.baseline_mib_s] * 60)  # 1 MiB charged per I/O
    assert rows["mib_s"][0] == pytest.approx(vol.baseline_mib_s / 64)
    assert rows["credit_fraction"] == [0.0] * 60
    partial = cv.sc1_over_time(vol, 90, 60)
    assert partial["time_s"] == [60, 90]


# ----------------------------------------------------------------------------------------
# QEMU throttling
# ----------------------------------------------------------------------------------------

# The -drive names in QEMU's docs/throttle.txt (the total-limit ones this mapping uses).
QEMU_NAMES = {"throttling.iops-total", "throttling.bps-total", "throttling.iops-size",
              "throttling.iops-total-max", "throttling.iops-total-max-length",
              "throttling.bps-total-max", "throttling.bps-total-max-length"}


def qemu_accepts(options: dict[str, int]) -> bool:
    """QEMU's own checks, after util/throttle.c throttle_is_valid()."""
    for kind in ("iops-total", "bps-total"):
        avg = options.get(f"throttling.{kind}", 0)
        top = options.get(f"throttling.{kind}-max", 0)
        length = options.get(f"throttling.{kind}-max-length", 1)
        if not all(isinstance(v, int) and v >= 0 for v in (avg, top, length)):
            return False
        if avg > 10 ** 15 or top > 10 ** 15 or length == 0:
            return False
        if length > 1 and not top:              # burst length set without burst rate
            return False
        if top and length > 10 ** 15 // top:    # burst length too high for this burst rate
            return False
        if top and (not avg or top < avg):      # max needs avg, and max >= avg
            return False
    if options.get("throttling.iops-size") and not options.get("throttling.iops-total"):
        return False                            # iops size requires an iops value
    return True


def test_sc1_mapping_charges_every_small_io_a_mib():
    throttle = cv.qemu_throttle(cv.Sc1(300), rate_scale=4, time_scale=60)
    options = throttle.options()
    assert set(options) == QEMU_NAMES and qemu_accepts(options)
    assert throttle.iops_size == MIB
    # A 16 KiB random workload gets about bps / 1 MiB operations per second.
    expected = throttle.bps_total / MIB
    assert throttle.predicted_iops(16 * 1024) == pytest.approx(expected, abs=0.5)
    assert throttle.predicted_iops(16 * 1024, burst=True) == pytest.approx(
        throttle.bps_total_max / MIB, abs=0.5)
    # ... which is what EBS's own rule predicts for the scaled volume.
    ebs = cv.predict(cv.Sc1(300), 16, "random", "baseline").iops * 4
    assert throttle.predicted_iops(16 * 1024) == pytest.approx(ebs, abs=0.5)
    # Large I/O counts proportionally (docs/throttle.txt), bytes as they are.
    assert throttle.predicted_iops(4 * MIB) == pytest.approx(throttle.bps_total / (4 * MIB),
                                                             rel=0.01)


def test_sc1_mapping_keeps_the_burst_shape_scaled_in_time():
    vol = cv.Sc1(300)
    throttle = cv.qemu_throttle(vol, rate_scale=4, time_scale=60)
    assert throttle.burst_seconds == pytest.approx(vol.burst_seconds() / 60, rel=0.01)
    assert throttle.iops_total_max_length == throttle.bps_total_max_length
    assert throttle.drive_suffix().startswith(",throttling.iops-total=14,")


def test_a_slower_workload_fills_the_burst_bucket_later():
    throttle = cv.qemu_throttle(cv.Sc1(1024), time_scale=3600)
    burst, base = throttle.bps_total_max, throttle.bps_total
    assert throttle.burst_seconds_at(burst) == throttle.burst_seconds
    assert throttle.burst_seconds_at(2 * burst) == throttle.burst_seconds  # held to the max
    halfway = (burst + base) / 2  # fills at half the speed: lasts twice as long
    assert throttle.burst_seconds_at(halfway) == pytest.approx(2 * throttle.burst_seconds)
    assert throttle.burst_seconds_at(base) == math.inf  # never fills


def test_gp3_mapping_counts_in_256_kib():
    vol = cv.Gp3(300)
    throttle = cv.qemu_throttle(vol)
    assert qemu_accepts(throttle.options())
    assert throttle.options() == {"throttling.iops-total": 3000,
                                  "throttling.bps-total": 125 * MIB,
                                  "throttling.iops-size": 256 * 1024}
    for block_kib in (4, 16, 256, 1024):
        assert throttle.predicted_iops(block_kib * 1024) == pytest.approx(
            cv.predict(vol, block_kib, "random").iops)
    assert throttle.burst_seconds == 0.0


@pytest.mark.parametrize(("vol", "scale", "fragment"), [
    (cv.Sc1(300), 1, r"3\.5 IOPS and 3\.69 MB/s .* use rate_scale >= 2\.85"),
    (cv.Gp3(100), 0.003, r"9\.0 IOPS"),          # too few IOPS
    (cv.Gp3(100), 0.01, r"30\.0 IOPS and 1\.31 MB/s"),  # enough IOPS, too few bytes
])
def test_limits_too_small_for_qemu_are_refused(vol, scale, fragment):
    with pytest.raises(UsageError, match=fragment) as caught:
        cv.qemu_throttle(vol, rate_scale=scale)
    assert "\n" not in str(caught.value)
    assert "hang" in str(caught.value)


def test_the_suggested_rate_scale_is_enough():
    throttle = cv.qemu_throttle(cv.Sc1(300), rate_scale=2.85)
    assert throttle.iops_total >= cv.QEMU_MIN_IOPS and throttle.bps_total >= cv.QEMU_MIN_BPS
    assert qemu_accepts(throttle.options())


@pytest.mark.parametrize("size_gib", [125, 300, 1024, 3200, 16_384])
def test_every_sc1_size_maps_to_a_config_qemu_accepts(size_gib):
    vol = cv.Sc1(size_gib)
    scale = max(1.0, math.ceil(cv.QEMU_MIN_BPS / (vol.baseline_mib_s * MIB) * 100) / 100,
                math.ceil(cv.QEMU_MIN_IOPS / vol.baseline_mib_s * 100) / 100)
    throttle = cv.qemu_throttle(vol, rate_scale=scale, time_scale=100)
    assert qemu_accepts(throttle.options())


def test_describe_and_format():
    refused = cv.describe("sc1", 300)
    assert "qemu_refused" in refused and len(refused["predictions"]) == 2
    scaled = cv.describe("sc1", 300, rate_scale=4, time_scale=60)
    assert scaled["qemu"]["options"]["throttling.iops-size"] == MIB
    text = cv.format_description(scaled)
    assert "burst: 23.4 IOPS" in text and "throttling.iops-total=14" in text
    gp3 = cv.format_description(cv.describe("gp3", 300))
    assert "3,000.0 IOPS" in gp3 and "throttling.iops-size=262144" in gp3
