"""labs.tools.netem against what tc (iproute2 6.1.0) and ping (iputils 20221126) printed on
the lab VM pair."""

from pathlib import Path

import numpy as np
import pytest

from labs.errors import UsageError
from labs.tools import netem

FIXTURES = Path(__file__).parent / "fixtures" / "netem"


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


# --- commands ------------------------------------------------------------------------------

def test_netem_commands():
    assert netem.netem_command("eth1", 5) == [
        "tc", "qdisc", "replace", "dev", "eth1", "root", "netem", "delay", "5ms"]
    assert netem.netem_command("eth1", 5, jitter_ms=1, loss_percent=2) == [
        "tc", "qdisc", "replace", "dev", "eth1", "root", "netem", "delay", "5ms", "1ms",
        "loss", "2%"]
    assert netem.netem_command("eth1", 0.5)[-1] == "0.5ms"
    assert netem.delete_command("eth1") == ["tc", "qdisc", "del", "dev", "eth1", "root"]
    assert netem.show_command("eth1") == ["tc", "qdisc", "show", "dev", "eth1"]
    assert netem.show_command("eth1", statistics=True) == [
        "tc", "-s", "qdisc", "show", "dev", "eth1"]
    assert netem.ping_command("10.77.0.2") == ["ping", "-c", "50", "-i", "0.2", "10.77.0.2"]
    assert netem.ping_command("10.77.0.2", count=20, interval_s=0.05, quiet=True) == [
        "ping", "-c", "20", "-i", "0.05", "-q", "10.77.0.2"]


@pytest.mark.parametrize("call, message", [
    (lambda: netem.netem_command("eth1", -1), "delay -1 ms is negative"),
    (lambda: netem.netem_command("eth1", 20_000), "over 10000 ms"),
    (lambda: netem.netem_command("eth1", float("nan")), "must be a number"),
    (lambda: netem.netem_command("eth1", "5ms"), "must be a number"),
    (lambda: netem.netem_command("eth1", 5, jitter_ms=-1), "jitter -1 ms is negative"),
    (lambda: netem.netem_command("eth1", 5, jitter_ms=6), "larger than the delay"),
    (lambda: netem.netem_command("eth1", 5, loss_percent=101), "loss must be 0-100"),
    (lambda: netem.netem_command("eth1; reboot", 5), "network interface"),
    (lambda: netem.ping_command("10.77.0.2", count=0), "count must be"),
    (lambda: netem.ping_command("10.77.0.2", interval_s=0), "interval must be"),
    (lambda: netem.ping_command("-f"), "ping target"),
])
def test_commands_refuse_bad_input_in_one_line(call, message):
    with pytest.raises(UsageError, match=message) as error:
        call()
    assert "\n" not in str(error.value)


def test_deleting_when_no_netem_is_recognised():
    # tc's real stderr (exit code 2) for `tc qdisc del dev eth1 root` with the default qdisc.
    assert netem.nothing_to_delete(text("tc-del-no-netem.stderr"))
    assert not netem.nothing_to_delete("Error: Invalid handle.")


# --- tc qdisc show ---------------------------------------------------------------------------

def test_default_qdisc_is_not_netem():
    (qdisc,) = netem.parse_qdisc_show(text("qdisc-default-eth1.txt"))
    assert qdisc.kind == "fq_codel" and qdisc.root and qdisc.dev is None
    assert qdisc.netem is None
    assert netem.root_netem(text("qdisc-default-eth1.txt")) is None
    assert netem.root_netem(text("qdisc-after-del-eth1.txt")) is None


def test_all_devices_listed():
    qdiscs = netem.parse_qdisc_show(text("qdisc-default-all.txt"))
    assert [(q.kind, q.dev) for q in qdiscs] == [
        ("noqueue", "lo"), ("fq_codel", "eth0"), ("fq_codel", "eth1")]
    assert netem.root_netem(text("qdisc-default-all.txt"), dev="eth1") is None


def test_netem_delay_read_back():
    settings = netem.root_netem(text("qdisc-netem-delay1ms-eth1.txt"))
    assert settings == netem.Netem(delay_ms=1.0, limit_packets=1000)
    assert netem.root_netem(text("qdisc-netem-delay10ms-eth1.txt")).delay_ms == 10.0
    (qdisc,) = netem.parse_qdisc_show(text("qdisc-netem-delay10ms-eth1.txt"))
    assert qdisc.handle == "8001:" and qdisc.kind == "netem"


def test_netem_jitter_loss_and_correlation():
    settings = netem.root_netem(text("qdisc-netem-delay5ms-jitter1ms-loss2-eth1.txt"))
    assert (settings.delay_ms, settings.jitter_ms, settings.loss_percent) == (5.0, 1.0, 2.0)
    assert settings.other == ""
    # `delay 10ms 2ms 25% distribution normal`: tc does not print the distribution back.
    normal = netem.root_netem(text("qdisc-netem-delay10ms-jitter2ms-normal-eth1.txt"))
    assert (normal.delay_ms, normal.jitter_ms, normal.delay_correlation_percent) == (
        10.0, 2.0, 25.0)


def test_statistics_lines_belong_to_their_qdisc():
    (qdisc,) = netem.parse_qdisc_show(text("qdisc-s-netem-delay2ms-eth1.txt"))
    assert qdisc.netem.delay_ms == 2.0
    assert (qdisc.sent_bytes, qdisc.sent_packets, qdisc.dropped_packets) == (0, 0, 0)
    (default,) = netem.parse_qdisc_show(text("qdisc-s-default-eth1.txt"))
    assert default.kind == "fq_codel" and default.sent_packets == 0


@pytest.mark.parametrize("name, message", [
    ("ping-c50-i0.2-nonetem-vm1.txt", "line 1 is not a qdisc line"),
    ("tc-del-no-netem.stderr", "line 1 is not a qdisc line"),
])
def test_qdisc_garbage(name, message):
    with pytest.raises(netem.NetemError, match=message):
        netem.parse_qdisc_show(text(name), name)
    with pytest.raises(netem.NetemError, match="no qdisc lines"):
        netem.parse_qdisc_show("\n")


# --- ping ------------------------------------------------------------------------------------

def test_ping_per_packet_and_summary():
    result = netem.parse_ping(text("ping-c50-i0.2-nonetem-vm1.txt"))
    assert (result.target, result.transmitted, result.received) == ("10.77.0.2", 50, 50)
    assert result.loss_percent == 0.0 and result.time_ms == 10018
    assert (result.rtt_min_ms, result.rtt_avg_ms, result.rtt_max_ms, result.rtt_mdev_ms) == (
        0.957, 2.631, 18.636, 2.786)
    assert len(result.rtts_ms) == 50 and min(result.rtts_ms) == 0.957
    summary = netem.rtt_summary(result)
    assert summary.count == 50 and summary.max_ms == 18.6  # per-packet lines: 3 digits
    assert summary.p50_ms == pytest.approx(float(np.percentile(result.rtts_ms, 50)))
    assert summary.p99_ms == pytest.approx(float(np.percentile(result.rtts_ms, 99)))
    assert summary.mean_ms == pytest.approx(result.rtt_avg_ms, abs=0.01)


def test_ping_with_netem_delay():
    result = netem.parse_ping(text("ping-c50-i0.2-delay5ms-vm1.txt"))
    assert result.rtt_min_ms > 5.0  # netem on vm1's egress adds 5 ms to every round trip
    assert netem.rtt_summary(result).p50_ms > 5.0


def test_ping_with_loss():
    result = netem.parse_ping(text("ping-c50-delay5ms-jitter1ms-loss2-vm1.txt"))
    assert (result.transmitted, result.received, result.loss_percent) == (50, 49, 2.0)
    assert len(result.rtts_ms) == 49


def test_ping_quiet_has_summary_only():
    result = netem.parse_ping(text("ping-q-c20-nonetem-vm1.txt"))
    assert result.received == 20 and result.rtts_ms == [] and result.rtt_avg_ms == 5.828
    with pytest.raises(netem.NetemError, match="no per-packet times"):
        netem.rtt_summary(result)
    quiet_loss = netem.parse_ping(text("ping-q-c30-delay5ms-jitter1ms-loss2-vm1.txt"))
    assert quiet_loss.transmitted == 30 and quiet_loss.rtt_min_ms == 5.576


def test_ping_nothing_came_back():
    silent = netem.parse_ping(text("ping-unreachable-vm1.txt"))
    assert (silent.received, silent.loss_percent, silent.errors) == (0, 100.0, 0)
    assert silent.rtt_avg_ms is None and silent.rtts_ms == []
    errors = netem.parse_ping(text("ping-host-unreachable-errors-vm1.txt"))
    assert (errors.transmitted, errors.received, errors.errors) == (6, 0, 6)
    assert errors.error_lines == 6 and errors.time_ms == 5200


def test_ping_garbage_and_cut_output():
    with pytest.raises(netem.NetemError, match="no 'N packets transmitted"):
        netem.parse_ping(text("qdisc-default-eth1.txt"), "qdisc")
    # A real run cut before ping printed its rtt line.
    cut = text("ping-c50-i0.2-nonetem-vm1.txt").rsplit("rtt min", 1)[0]
    with pytest.raises(netem.NetemError, match="50 replies but no rtt summary"):
        netem.parse_ping(cut)
    # A real run whose first reply lines were lost.
    lines = text("ping-c50-i0.2-nonetem-vm1.txt").splitlines()
    with pytest.raises(netem.NetemError, match="48 reply lines but the summary says 50"):
        netem.parse_ping("\n".join(lines[:1] + lines[3:]))


def test_percentile_matches_numpy_and_refuses_nonsense():
    values = netem.parse_ping(text("ping-c50-i0.2-delay5ms-vm1.txt")).rtts_ms
    for percent in (0, 10, 50, 90, 99, 100):
        assert netem.percentile(values, percent) == pytest.approx(
            float(np.percentile(values, percent)))
    with pytest.raises(UsageError, match="no values"):
        netem.percentile([], 50)
    with pytest.raises(UsageError, match="outside 0-100"):
        netem.percentile(values, 101)


# `tc qdisc show dev eth1` with netem on the packets for one address only (netem_to_commands).
PRIO_WITH_NETEM = """qdisc prio 1: root refcnt 2 bands 3 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
qdisc netem 30: parent 1:3 limit 1000 delay 3ms  499us loss 0.1%
"""


def test_netem_for_one_address_is_a_prio_band_and_a_filter():
    root, child, only = netem.netem_to_commands("eth1", "10.77.0.2", 3, 0.5, 0.1)
    assert root == ["tc", "qdisc", "replace", "dev", "eth1", "root", "handle", "1:", "prio",
                    "bands", "3", "priomap", *["1"] * 16]
    assert child == ["tc", "qdisc", "replace", "dev", "eth1", "parent", "1:3", "handle", "30:",
                     "netem", "delay", "3ms", "0.5ms", "loss", "0.1%"]
    assert only == ["tc", "filter", "add", "dev", "eth1", "parent", "1:", "protocol", "ip",
                    "prio", "1", "u32", "match", "ip", "dst", "10.77.0.2/32", "flowid", "1:3"]
    # Later changes replace the netem only (the filter is there already).
    assert netem.netem_to_commands("eth1", "10.77.0.2", 0, None, 100, first=False) == [
        ["tc", "qdisc", "replace", "dev", "eth1", "parent", "1:3", "handle", "30:", "netem",
         "delay", "0ms", "loss", "100%"]]
    for bad in ("vm2", "10.77.0.2/24", "10.77.0.2; reboot", ""):
        with pytest.raises(UsageError, match="expected an IPv4 address"):
            netem.netem_to_commands("eth1", bad, 3)


def test_the_netem_of_an_interface_is_found_under_a_prio_root_too():
    settings = netem.interface_netem(PRIO_WITH_NETEM)
    assert settings.delay_ms == 3 and settings.jitter_ms == pytest.approx(0.499)
    assert settings.loss_percent == pytest.approx(0.1)
    assert netem.root_netem(PRIO_WITH_NETEM) is None  # the root is prio
    assert netem.interface_netem("qdisc fq_codel 0: root refcnt 2 limit 10240p flows 1024\n") \
        is None
