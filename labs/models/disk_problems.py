"""Generated practice problems for the Device speed chapter, in the spirit of OSTEP's homework.

OSTEP's simulators print a problem from a random seed and print its answer only when asked
(their "-c" flag). Here `make_problem(kind, seed)` returns a Problem whose `text` states
every parameter (so it can be worked, and regenerated, from the text alone) and whose
`solve()` returns the worked answer. Same kind and seed, same problem; another seed, another.

Kinds:
- "random-vs-sequential": a preset drive and a block size; random and sequential rates;
- "schedule": the hand-sized toy disk, a head position and a queue; the service order and
  the seek/rotate/transfer times under FIFO, SSTF and SPTF;
- "littles-law": two of IOPS, latency and queue depth; find the third;
- "ssd-qd": an SSD's latency, channels and bandwidth; its IOPS at a queue depth.
"""

from __future__ import annotations

import numpy as np

from labs.models import disk, problems, ssd
from labs.models.problems import Kind, Problem, Solution

KINDS = ("random-vs-sequential", "schedule", "littles-law", "ssd-qd")


def make_problem(kind: str, seed: int) -> Problem:
    """The problem of `kind` generated from `seed` (a whole number >= 0)."""
    return problems.make(_KINDS, kind, seed, "(regenerate: make_problem({kind!r}, seed={seed}))")


def _pick(rng: np.random.Generator, choices):
    return choices[int(rng.integers(0, len(choices)))]


# ----------------------------------------------------------------------------------------
# random-vs-sequential
# ----------------------------------------------------------------------------------------


def _gen_random_vs_sequential(rng: np.random.Generator) -> dict:
    return {"drive": _pick(rng, ("cheetah", "barracuda")),
            "block_kib": _pick(rng, (4, 8, 16, 64, 256, 1024)),
            "sequential_mb": _pick(rng, (10, 100, 1000))}


def _text_random_vs_sequential(p: dict) -> str:
    d = disk.get_drive(p["drive"])
    return (f"A {d.name} drive: {d.rpm:,.0f} RPM, average seek {d.avg_seek_ms:g} ms, peak "
            f"transfer {d.transfer_mb_s:g} MB/s (1 MB = 10^6 bytes, 1 KiB = 1024 bytes).\n"
            f"(a) Reads of {p['block_kib']} KiB at random places, one at a time: how long does "
            f"each take, and what rate in MB/s is that?\n"
            f"(b) One sequential read of {p['sequential_mb']} MB: how long, and what rate?\n"
            f"(c) How many times faster is (b) than (a)?")


def _solve_random_vs_sequential(p: dict) -> Solution:
    d = disk.get_drive(p["drive"])
    r = disk.random_io(d, p["block_kib"] * 1024)
    s = disk.sequential_io(d, p["sequential_mb"] * disk.MB)
    ratio = s.throughput_mb_s / r.throughput_mb_s
    # Three significant digits, as on the pages (labs/book/number_text.py): "1.71x", "190x".
    ratio_text = f"{ratio:,.0f}" if ratio >= 1000 else f"{ratio:.3g}"
    text = "\n".join([
        f"Rotation: 60,000 / {d.rpm:,.0f} = {d.rotation_ms:.2f} ms per turn, half a turn "
        f"{d.avg_rotation_ms:.2f} ms on average.",
        f"(a) {r.seek_ms:g} + {r.rotation_ms:.2f} + {p['block_kib'] * 1024:,} B / "
        f"{d.transfer_mb_s:g} MB/s ({r.transfer_ms:.3f} ms) = {r.latency_ms:.3f} ms; "
        f"{p['block_kib'] * 1024:,} B / {r.latency_ms:.3f} ms = {r.throughput_mb_s:.3f} MB/s "
        f"({r.iops:.1f} IOPS).",
        f"(b) {s.seek_ms:g} + {s.rotation_ms:.2f} + {s.transfer_ms:.1f} = {s.latency_ms:.1f} ms; "
        f"{p['sequential_mb']} MB / {s.latency_ms:.1f} ms = {s.throughput_mb_s:.2f} MB/s.",
        f"(c) {s.throughput_mb_s:.2f} / {r.throughput_mb_s:.3f} = {ratio_text}x."])
    return Solution(text, {"random_latency_ms": r.latency_ms,
                           "random_mb_s": r.throughput_mb_s,
                           "sequential_latency_ms": s.latency_ms,
                           "sequential_mb_s": s.throughput_mb_s, "ratio": ratio})


# ----------------------------------------------------------------------------------------
# schedule (on the toy disk)
# ----------------------------------------------------------------------------------------


def _gen_schedule(rng: np.random.Generator) -> dict:
    toy = disk.TOY
    count = int(rng.integers(3, 6))
    lbas = rng.choice(toy.sectors, size=count, replace=False)
    return {"head_track": int(rng.integers(0, toy.tracks)),
            "head_sector": int(rng.integers(0, 12)),
            "requests": [int(x) for x in lbas]}


def _text_schedule(p: dict) -> str:
    return (f"The toy disk: {disk.TOY.tracks} tracks of 12 sectors; sector k of track t is "
            f"block 12t + k. One revolution takes 12 ms, so a sector passes under the head in "
            f"1 ms; moving the arm costs 1 ms per track (0 on the same track). A transfer "
            f"begins at the start of its sector and reads one sector.\n"
            f"The head is on track {p['head_track']} at the start of sector "
            f"{p['head_sector']}, and these blocks are all queued, in this order: "
            f"{', '.join(map(str, p['requests']))}.\n"
            f"For FIFO, SSTF (shortest seek first) and SPTF (shortest positioning time first), "
            f"give the service order, each request's seek, rotation and transfer time, and "
            f"the total time. When two requests are equally close, the one queued first "
            f"goes first.")


def _schedule_of(p: dict, policy: str) -> disk.Schedule:
    requests = [disk.Request(lba, 1) for lba in p["requests"]]
    return disk.simulate(disk.TOY, requests, policy, queue_depth=len(requests),
                         head_track=p["head_track"], head_angle=p["head_sector"] / 12)


def _solve_schedule(p: dict) -> Solution:
    lines, numbers = [], {}
    for policy in disk.POLICIES:
        schedule = _schedule_of(p, policy)
        totals = schedule.totals()
        order = [p["requests"][i] for i in schedule.order]
        lines.append(f"{policy.upper()}: order {', '.join(map(str, order))}")
        for s in schedule.served:
            lines.append(f"  block {s.lba:3d} (track {s.track}): seek {s.seek_ms:4.1f}  rotate "
                         f"{s.rotate_ms:4.1f}  transfer {s.transfer_ms:3.1f}  ends at "
                         f"{s.end_ms:5.1f} ms")
        lines.append(f"  total {totals['total_ms']:.1f} ms (seek {totals['seek_ms']:.1f}, "
                     f"rotate {totals['rotate_ms']:.1f}, transfer {totals['transfer_ms']:.1f})")
        numbers[policy] = {"order": order, "total_ms": totals["total_ms"],
                           "seek_ms": totals["seek_ms"], "rotate_ms": totals["rotate_ms"],
                           "transfer_ms": totals["transfer_ms"]}
    best = min(numbers[policy]["total_ms"] for policy in disk.POLICIES)
    for policy in ("sstf", "sptf"):
        if numbers[policy]["total_ms"] > best:
            lines.append(f"{policy.upper()} is greedy: it takes the best next request, which "
                         f"need not give the shortest total.")
    return Solution("\n".join(lines), numbers)


# ----------------------------------------------------------------------------------------
# littles-law
# ----------------------------------------------------------------------------------------


def _gen_littles_law(rng: np.random.Generator) -> dict:
    queue_depth = _pick(rng, (1, 2, 4, 8, 16, 32, 64))
    latency_ms = _pick(rng, (0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0))
    unknown = _pick(rng, ("iops", "latency_ms", "queue_depth"))
    iops = ssd.iops_from(queue_depth, latency_ms)
    given = {"iops": iops, "latency_ms": latency_ms, "queue_depth": queue_depth}
    del given[unknown]
    return {"unknown": unknown, "given": given}


_NAMES = {"iops": "IOPS", "latency_ms": "the mean latency (ms)",
          "queue_depth": "the mean number of I/Os in flight (queue depth)"}


def _text_littles_law(p: dict) -> str:
    g = p["given"]
    shown = []
    if "iops" in g:
        shown.append(f"{g['iops']:,.0f} IOPS")
    if "latency_ms" in g:
        shown.append(f"a mean latency of {g['latency_ms']:g} ms")
    if "queue_depth" in g:
        io = "I/O" if g["queue_depth"] == 1 else "I/Os"
        shown.append(f"{g['queue_depth']} {io} in flight on average")
    return (f"A device in steady state shows {' and '.join(shown)}. "
            f"What is {_NAMES[p['unknown']]}?")


def _solve_littles_law(p: dict) -> Solution:
    g, unknown = p["given"], p["unknown"]
    if unknown == "iops":
        value = ssd.iops_from(g["queue_depth"], g["latency_ms"])
        text = f"IOPS = qd / latency = {g['queue_depth']} / {g['latency_ms']:g} ms = {value:,.0f}"
    elif unknown == "latency_ms":
        value = ssd.latency_ms_from(g["queue_depth"], g["iops"])
        text = (f"latency = qd / IOPS = {g['queue_depth']} / {g['iops']:,.0f} = "
                f"{value:g} ms")
    else:
        value = ssd.queue_depth_from(g["iops"], g["latency_ms"])
        text = (f"qd = IOPS x latency = {g['iops']:,.0f} x {g['latency_ms']:g} ms = "
                f"{value:g}")
    return Solution(f"Little's law: {text}.", {unknown: value})


# ----------------------------------------------------------------------------------------
# ssd-qd
# ----------------------------------------------------------------------------------------


def _gen_ssd_qd(rng: np.random.Generator) -> dict:
    return {"read_latency_us": _pick(rng, (50, 60, 80, 100, 120)),
            "channels": _pick(rng, (4, 8, 16, 32)),
            "bandwidth_mb_s": _pick(rng, (500, 1000, 2000, 3500)),
            "block_kib": _pick(rng, (4, 16, 64, 128)),
            "queue_depth": _pick(rng, (1, 2, 4, 8, 16, 32, 64, 128))}


def _ssd_of(p: dict) -> ssd.Ssd:
    return ssd.Ssd(read_latency_us=p["read_latency_us"], write_latency_us=p["read_latency_us"],
                   channels=p["channels"], bandwidth_mb_s=p["bandwidth_mb_s"])


def _text_ssd_qd(p: dict) -> str:
    return (f"An SSD serves a {p['block_kib']} KiB random read in {p['read_latency_us']} us "
            f"on each of its {p['channels']} independent channels, and moves at most "
            f"{p['bandwidth_mb_s']:,} MB/s (1 MB = 10^6 bytes). Reads are issued with "
            f"{p['queue_depth']} in flight. Using IOPS = min(min(qd, channels) / latency, "
            f"bandwidth / block size): what IOPS and MB/s does it give, what limits it, and "
            f"what latency does a request see?")


def _solve_ssd_qd(p: dict) -> Solution:
    model = _ssd_of(p)
    block = p["block_kib"] * 1024
    est = ssd.ssd_iops(model, p["queue_depth"], block)
    by_parallelism = min(p["queue_depth"], p["channels"]) / (p["read_latency_us"] / 1e6)
    by_bandwidth = p["bandwidth_mb_s"] * ssd.MB / block
    text = "\n".join([
        f"Parallelism: min({p['queue_depth']}, {p['channels']}) / {p['read_latency_us']} us = "
        f"{by_parallelism:,.0f} IOPS.",
        f"Bandwidth: {p['bandwidth_mb_s']:,} MB/s / {block:,} B = {by_bandwidth:,.0f} IOPS.",
        f"IOPS = {est.iops:,.0f} (limited by {est.limit}), {est.throughput_mb_s:,.1f} MB/s.",
        f"Latency (Little's law): {p['queue_depth']} / {est.iops:,.0f} = "
        f"{est.latency_ms * 1000:,.1f} us."])
    return Solution(text, est.as_dict())


_KINDS = {
    "random-vs-sequential": Kind(_gen_random_vs_sequential, _text_random_vs_sequential,
                                 _solve_random_vs_sequential),
    "schedule": Kind(_gen_schedule, _text_schedule, _solve_schedule),
    "littles-law": Kind(_gen_littles_law, _text_littles_law, _solve_littles_law),
    "ssd-qd": Kind(_gen_ssd_qd, _text_ssd_qd, _solve_ssd_qd),
}
