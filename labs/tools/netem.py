"""netem and ping: add network delay or loss with `tc`, read it back, and measure round trips.

netem (the Linux network emulator qdisc) delays packets on their way OUT of an interface:
`delay 5ms` on vm1's eth1 adds 5 ms to vm1 -> vm2 only, so one round trip grows by 5 ms.
Set it on both ends to add it twice.

Commands built here (argv lists, run by the lab on a lab host):
    tc qdisc replace dev IF root netem delay Xms [Jms] [loss P%]
    tc qdisc del dev IF root        (back to the default qdisc)
    and netem on the packets to one address only, for a host whose interface carries other
    traffic too (netem_to_commands): a prio root qdisc that sends everything to its second
    band, netem as its third band, and a u32 filter that sends that address's packets there
    tc qdisc show dev IF
    ping -c N -i I [-q] TARGET

Readers: `tc [-s] qdisc show` (is netem there, with which delay, jitter and loss), and ping's
output: per-packet lines (`icmp_seq=3 ttl=64 time=6.42 ms`) for percentiles, and the summary
(`50 packets transmitted, 49 received, 2% packet loss, time 9881ms` and
`rtt min/avg/max/mdev = 5.298/7.138/12.713/1.583 ms`).

Formats: iproute2's tc/q_netem.c and utils.c (times print as ns/us/ms/s with three
significant digits, so 12.34 ms reads back as 12.3ms; the distribution is not printed), and
iputils ping, as captured on the lab VMs (iproute2 6.1.0, iputils 20221126).
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from labs.errors import LabError, UsageError

INTERFACE = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")
TARGET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,252}$")
# Beyond 10 s one way, DRBD's and TCP's timers fire long before a write completes: a lab
# asking for more has a typo (seconds for milliseconds).
MAX_DELAY_MS = 10_000.0


class NetemError(LabError):
    """tc or ping output that cannot be read."""


# --- commands --------------------------------------------------------------------------------

def _interface(name: str) -> str:
    if not INTERFACE.match(name):
        raise UsageError(f"network interface {name!r}: expected a name like eth1")
    return name


def _milliseconds(value: float, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UsageError(f"netem {what} must be a number of milliseconds, got {value!r}")
    if value < 0:
        raise UsageError(f"netem {what} {value} ms is negative")
    if value > MAX_DELAY_MS:
        raise UsageError(f"netem {what} {value} ms is over {MAX_DELAY_MS:.0f} ms "
                         "(seconds given as milliseconds?)")
    return f"{value:g}ms"


def netem_command(interface: str, delay_ms: float, jitter_ms: float | None = None,
                  loss_percent: float | None = None) -> list[str]:
    """Replace the root qdisc of `interface` with netem (idempotent: replace, not add)."""
    argv = ["tc", "qdisc", "replace", "dev", _interface(interface), "root", "netem",
            "delay", _milliseconds(delay_ms, "delay")]
    if jitter_ms is not None:
        if jitter_ms > delay_ms:
            raise UsageError(f"netem jitter {jitter_ms} ms is larger than the delay "
                             f"{delay_ms} ms (packets would be reordered)")
        argv.append(_milliseconds(jitter_ms, "jitter"))
    if loss_percent is not None:
        if (isinstance(loss_percent, bool) or not isinstance(loss_percent, int | float)
                or not 0 <= loss_percent <= 100):
            raise UsageError(f"netem loss must be 0-100 %, got {loss_percent!r}")
        argv += ["loss", f"{loss_percent:g}%"]
    return argv


def netem_to_commands(interface: str, target: str, delay_ms: float,
                      jitter_ms: float | None = None, loss_percent: float | None = None,
                      *, first: bool = True) -> list[list[str]]:
    """Delay (drop) only what `interface` sends to the IPv4 address `target`; the rest of the
    host's traffic goes by an undelayed band. `first`: set up the prio qdisc and the filter
    too (later calls only replace the netem)."""
    try:
        ipaddress.IPv4Address(target)
    except ValueError:
        raise UsageError(f"netem target {target!r}: expected an IPv4 address") from None
    device = _interface(interface)
    netem = netem_command(device, delay_ms, jitter_ms, loss_percent)
    child = ["tc", "qdisc", "replace", "dev", device, "parent", "1:3", "handle", "30:",
             *netem[netem.index("netem"):]]
    if not first:
        return [child]
    # priomap: every TOS priority to band 2 (1:2); only the filter uses band 3.
    root = ["tc", "qdisc", "replace", "dev", device, "root", "handle", "1:", "prio", "bands",
            "3", "priomap", *["1"] * 16]
    only = ["tc", "filter", "add", "dev", device, "parent", "1:", "protocol", "ip", "prio", "1",
            "u32", "match", "ip", "dst", f"{target}/32", "flowid", "1:3"]
    return [root, child, only]


def delete_command(interface: str) -> list[str]:
    """Remove netem: the interface gets its default qdisc back. With no netem there, tc
    fails with "Cannot delete qdisc with handle of zero" (see `nothing_to_delete`)."""
    return ["tc", "qdisc", "del", "dev", _interface(interface), "root"]


def nothing_to_delete(stderr: str) -> bool:
    """True when `tc qdisc del ... root` failed only because no qdisc of ours was there."""
    return ("Cannot delete qdisc with handle of zero" in stderr
            or "Cannot find specified qdisc on specified device" in stderr)


def show_command(interface: str, statistics: bool = False) -> list[str]:
    return ["tc", *(["-s"] if statistics else []), "qdisc", "show", "dev", _interface(interface)]


def ping_command(target: str, count: int = 50, interval_s: float = 0.2,
                 quiet: bool = False) -> list[str]:
    """ping with per-packet lines (quiet=False) so the lab can take percentiles.

    Intervals below 0.2 s need root (iputils); the lab VMs run commands as root.
    """
    if not TARGET.match(target):
        raise UsageError(f"ping target {target!r}: expected an address or host name")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 100_000:
        raise UsageError(f"ping count must be 1-100000, got {count!r}")
    if not 0.002 <= interval_s <= 60:
        raise UsageError(f"ping interval must be 0.002-60 s, got {interval_s!r}")
    return ["ping", "-c", str(count), "-i", f"{interval_s:g}", *(["-q"] if quiet else []),
            target]


# --- tc qdisc show ---------------------------------------------------------------------------

QDISC_LINE = re.compile(r"^qdisc (?P<kind>\S+) (?P<handle>[0-9a-f]*:)(?: dev (?P<dev>\S+))? "
                        r"(?P<parent>root|parent \S+)(?: refcnt (?P<refcnt>\d+))?(?P<rest>.*)$")
TIME = re.compile(r"^(?P<value>[\d.]+(?:e[+-]?\d+)?)(?P<unit>ns|us|usec|ms|msec|s|sec|secs)$")
PERCENT = re.compile(r"^(?P<value>[\d.]+(?:e[+-]?\d+)?)%$")
SENT = re.compile(r"Sent (?P<bytes>\d+) bytes (?P<packets>\d+) pkt \(dropped (?P<dropped>\d+)")
UNIT_MS = {"ns": 1e-6, "us": 1e-3, "usec": 1e-3, "ms": 1.0, "msec": 1.0, "s": 1e3, "sec": 1e3,
           "secs": 1e3}


@dataclass(frozen=True)
class Netem:
    """netem's settings as tc prints them back (times rounded to 3 significant digits)."""

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    delay_correlation_percent: float | None = None
    loss_percent: float = 0.0
    loss_correlation_percent: float | None = None
    duplicate_percent: float = 0.0
    corrupt_percent: float = 0.0
    reorder_percent: float = 0.0
    limit_packets: int | None = None
    other: str = ""  # anything else tc printed (rate, slot, ecn, ...), verbatim


@dataclass(frozen=True)
class Qdisc:
    kind: str  # netem, fq_codel, noqueue, pfifo_fast, ...
    handle: str  # "8001:" or "0:"
    parent: str  # "root" or "parent 1:1"
    dev: str | None  # None when the command named the device (`show dev eth1` omits it)
    options: str
    netem: Netem | None = None
    sent_bytes: int | None = None  # with `tc -s`
    sent_packets: int | None = None
    dropped_packets: int | None = None

    @property
    def root(self) -> bool:
        return self.parent == "root"


def _time_ms(token: str, source: str) -> float:
    match = TIME.match(token)
    if not match:
        raise NetemError(f"{source}: {token!r} is not a tc time (like 5ms, 500us, 1.2s)")
    return float(match.group("value")) * UNIT_MS[match.group("unit")]


def _percent(token: str) -> float | None:
    match = PERCENT.match(token)
    return float(match.group("value")) if match else None


def _parse_netem(options: str, source: str) -> Netem:
    words = options.split()
    values: dict[str, Any] = {}
    other: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        following = words[index + 1] if index + 1 < len(words) else ""
        if word == "limit" and following.isdigit():
            values["limit_packets"] = int(following)
            index += 2
        elif word == "delay":
            values["delay_ms"] = _time_ms(following, source)
            index += 2
            if index < len(words) and TIME.match(words[index]):
                values["jitter_ms"] = _time_ms(words[index], source)
                index += 1
                if index < len(words) and _percent(words[index]) is not None:
                    values["delay_correlation_percent"] = _percent(words[index])
                    index += 1
        elif (word in ("loss", "duplicate", "corrupt", "reorder")
              and _percent(following) is not None):
            values[f"{word}_percent"] = _percent(following)
            index += 2
            if index < len(words) and _percent(words[index]) is not None:
                if word == "loss":
                    values["loss_correlation_percent"] = _percent(words[index])
                index += 1
        else:
            other.append(word)
            index += 1
    return Netem(**values, other=" ".join(other))


def parse_qdisc_show(text: str, source: str = "tc qdisc show") -> list[Qdisc]:
    """`tc [-s] qdisc show [dev IF]` -> its qdiscs, with netem's settings read out."""
    qdiscs: list[Qdisc] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = QDISC_LINE.match(line.rstrip())
        if match:
            netem = (_parse_netem(match.group("rest"), source)
                     if match.group("kind") == "netem" else None)
            qdiscs.append(Qdisc(kind=match.group("kind"), handle=match.group("handle"),
                                parent=match.group("parent"), dev=match.group("dev"),
                                options=match.group("rest").strip(), netem=netem))
            continue
        if not qdiscs or not line[:1].isspace():
            raise NetemError(f"{source}: line {number} is not a qdisc line: {line.strip()!r}")
        sent = SENT.search(line)
        if sent:  # `tc -s`: the statistics belong to the qdisc above
            last = qdiscs[-1]
            qdiscs[-1] = Qdisc(**{**asdict(last), "netem": last.netem,
                                  "sent_bytes": int(sent.group("bytes")),
                                  "sent_packets": int(sent.group("packets")),
                                  "dropped_packets": int(sent.group("dropped"))})
    if not qdiscs:
        raise NetemError(f"{source}: no qdisc lines")
    return qdiscs


def interface_netem(text: str, source: str = "tc qdisc show") -> Netem | None:
    """The netem settings on the one interface `tc qdisc show dev IF` printed: its root
    qdisc's, or the band's under a prio root (netem_to_commands); None without netem."""
    for qdisc in parse_qdisc_show(text, source):
        if qdisc.netem is not None:
            return qdisc.netem
    return None


def root_netem(text: str, dev: str | None = None, source: str = "tc qdisc show") -> Netem | None:
    """The netem settings of the root qdisc (of `dev`, when the text lists several devices),
    or None when the root qdisc is not netem."""
    for qdisc in parse_qdisc_show(text, source):
        if qdisc.root and (dev is None or qdisc.dev in (None, dev)):
            return qdisc.netem
    return None


# --- ping ------------------------------------------------------------------------------------

REPLY = re.compile(r"^\d+ bytes from (?P<peer>[^:]+): icmp_seq=(?P<seq>\d+)(?: ttl=\d+)? "
                   r"time[=<](?P<time>[\d.]+) ms(?P<dup> \(DUP!\))?")
ERROR_REPLY = re.compile(r"^From \S+ icmp_seq=\d+ ")
SUMMARY = re.compile(r"^(?P<sent>\d+) packets transmitted, (?P<received>\d+) (?:packets )?"
                     r"received,(?: \+(?P<dups>\d+) duplicates,)?(?: \+(?P<errors>\d+) "
                     r"errors,)? (?P<loss>[\d.]+)% packet loss(?:, time (?P<time>\d+)ms)?")
RTT = re.compile(r"^(?:rtt|round-trip) min/avg/max(?:/mdev)? = (?P<min>[\d.]+)/(?P<avg>[\d.]+)"
                 r"/(?P<max>[\d.]+)(?:/(?P<mdev>[\d.]+))? ms")
HEADER = re.compile(r"^PING (?P<target>\S+) \((?P<address>[^)]+)\)")


@dataclass
class PingResult:
    target: str | None
    transmitted: int
    received: int
    loss_percent: float
    errors: int = 0
    duplicates: int = 0
    time_ms: int | None = None
    rtt_min_ms: float | None = None  # None when nothing came back
    rtt_avg_ms: float | None = None
    rtt_max_ms: float | None = None
    rtt_mdev_ms: float | None = None
    rtts_ms: list[float] = field(default_factory=list)  # per reply, in order (not with -q)
    error_lines: int = 0  # "From X icmp_seq=N Destination Host Unreachable" and the like


def parse_ping(text: str, source: str = "ping") -> PingResult:
    """ping's output, with or without -q (then `rtts_ms` is empty)."""
    target = None
    rtts: list[float] = []
    error_lines = 0
    summary = rtt = None
    for line in text.splitlines():
        stripped = line.strip()
        if (match := HEADER.match(stripped)):
            target = match.group("target")
        elif (match := REPLY.match(stripped)):
            if not match.group("dup"):  # a duplicate is not a round trip of its own
                rtts.append(float(match.group("time")))
        elif ERROR_REPLY.match(stripped):
            error_lines += 1
        elif (match := SUMMARY.match(stripped)):
            summary = match
        elif (match := RTT.match(stripped)):
            rtt = match
    if summary is None:
        raise NetemError(f"{source}: no 'N packets transmitted, M received' line "
                         "(did ping finish?)")
    result = PingResult(
        target=target, transmitted=int(summary.group("sent")),
        received=int(summary.group("received")), loss_percent=float(summary.group("loss")),
        errors=int(summary.group("errors") or 0), duplicates=int(summary.group("dups") or 0),
        time_ms=int(summary.group("time")) if summary.group("time") else None,
        rtts_ms=rtts, error_lines=error_lines)
    if rtt is not None:
        result.rtt_min_ms, result.rtt_avg_ms, result.rtt_max_ms = (
            float(rtt.group(k)) for k in ("min", "avg", "max"))
        result.rtt_mdev_ms = float(rtt.group("mdev")) if rtt.group("mdev") else None
    elif result.received:
        raise NetemError(f"{source}: {result.received} replies but no rtt summary line")
    if rtts and len(rtts) != result.received:
        raise NetemError(f"{source}: {len(rtts)} reply lines but the summary says "
                         f"{result.received} received (output cut?)")
    return result


def percentile(values: Sequence[float], percent: float) -> float:
    """Linear interpolation between closest ranks (numpy's default method)."""
    if not values:
        raise UsageError("percentile of no values")
    if not 0 <= percent <= 100:
        raise UsageError(f"percentile {percent} is outside 0-100")
    ordered = sorted(values)
    position = (len(ordered) - 1) * percent / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class RttSummary:
    count: int
    min_ms: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float


def rtt_summary(result: PingResult) -> RttSummary:
    """Percentiles of the per-packet round trips (run ping without -q)."""
    if not result.rtts_ms:
        raise NetemError("ping: no per-packet times to summarise (was it run with -q, "
                         "or did nothing come back?)")
    rtts = result.rtts_ms
    return RttSummary(count=len(rtts), min_ms=min(rtts), p50_ms=percentile(rtts, 50),
                      p99_ms=percentile(rtts, 99), max_ms=max(rtts),
                      mean_ms=sum(rtts) / len(rtts))
