"""Every number the DRBD lab page quotes, formatted from the run's typed findings
(labs/drbd/findings.py); book/drbd/lab.md glues them by name, and tests/test_drbd_recorded.py
asserts the findings behind its sentences."""

from __future__ import annotations

import math
from statistics import median
from typing import NamedTuple

from labs.book import number_text as nt
from labs.book.guide import quick_figures
from labs.drbd import article, model
from labs.drbd.findings import Drill, Findings, Zone, findings
from labs.drbd.results import resync_results, sweep_bandwidths
from labs.records import RecordedRun


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the lab page quotes, computed from the run."""
    found = findings(run)
    f = _setup_figures(found)
    f.update(_wait_figures(found))
    f.update(_zone_figures(found))
    f.update(_sweep_figures(found))
    f.update(_job_figures(run, found))
    f.update(_drill_figures(run, found))
    f.update(_exercise_figures(found))
    return f


def _setup_figures(found: Findings) -> dict[str, str]:
    params = found.params
    ratios = article.article_ratios()
    return {
        "primary": params.host, "peer": params.peer,
        "top_added": f"{max(params.added_rtt_ms):g}",
        "added_list": ", ".join(f"{a:g}" for a in params.added_rtt_ms),
        "pgbench_s": str(params.pgbench_s), "drill_s": str(params.drill_s),
        "throughput_s": str(params.throughput_s),
        "flush_asked_ms": str(params.flush_delay_ms),
        "link_rtt_ms": nt.number(found.link_rtt_ms),
        "before_drbd_rtt_ms": nt.number(found.before_drbd_rtt_ms),
        "local_flush_ms": nt.number(found.local_flush_ms),
        "local_primary_cores": f"{found.local_primary_cores:.1f}",
        "cores": str(found.cores),
        "lab_ms_per_txn": nt.number(found.lab_ms_per_transaction),
        "article_ms_per_txn": nt.number(article.sample_ms_per_transaction()),
        "k": f"{found.time_scale:.1f}",
        "k_inverse_ms": nt.number(1 / found.time_scale),
        "article_one_zone_pct": f"{100 * ratios['one zone']:g}",
        "article_two_zones_pct": f"{100 * ratios['two zones']:g}",
        "full_minutes": f"{found.wall_time_s / 60:.0f}",
        "quick_minutes": quick_figures()["quick_drbd_min"],  # data/timings/quick-runs.csv
    }


def _wait_figures(found: Findings) -> dict[str, str]:
    """Plain 4 KiB writes on the mirror beside the model, and a write followed by a flush."""
    top = max(found.params.added_rtt_ms)
    at_top = {p.protocol: p for p in found.waits if p.added_rtt_ms == top}
    pair_top = next(p for p in found.pairs if p.protocol == "C" and p.added_rtt_ms == top)
    a = [p.measured for p in found.waits_of("A")]
    bc = [p for p in found.waits if p.protocol in ("B", "C")]
    f = {"send_ms": nt.number(found.send_ms), "peer_flush_ms": nt.number(found.peer_flush_ms),
         "peer_write_ms": nt.number(found.peer_write_ms),
         "A_min_p50_ms": nt.number(min(a)), "A_max_p50_ms": nt.number(max(a)),
         "waits_bc_max_abs_error_pct": f"{max(abs(p.error_pct) for p in bc):.0f}",
         "top_rtt_ms": nt.number(at_top["C"].rtt_ms),
         "top_C_model_ms": nt.number(at_top["C"].model),
         "top_C_cycle_ms": nt.number(pair_top.measured),
         "top_C_cycle_model_ms": nt.number(pair_top.model),
         "top_C_cycle_error_pct": nt.number(pair_top.error_pct, 0, signed=True),
         "pairs_max_abs_error_pct": f"{max(abs(p.error_pct) for p in found.pairs):.0f}",
         "disc_direct_iops": nt.count(found.disconnected_iops),
         "disc_direct_iops_below_local": nt.percent(1 - found.disconnected_iops
                                                    / found.local_iops)}
    # A run may leave a protocol out.
    if found.waits_of("B"):
        f["waits_b_worst_error_pct"] = _worst_wait_error(found, "B")
    if found.waits_of("C"):
        f["waits_c_worst_error_pct"] = _worst_wait_error(found, "C")
        f["top_C_p50_ms"] = nt.number(at_top["C"].measured)
    if "A" in at_top:  # quoted by the lab's ci test beside C's
        f["top_A_p50_ms"] = nt.number(at_top["A"].measured)
    return f


def _worst_wait_error(found: Findings, protocol: str) -> str:
    """The model's largest miss of a write's wait under one protocol, signed."""
    worst = max(found.waits_of(protocol), key=lambda p: abs(p.error_pct))
    return nt.number(worst.error_pct, 0, signed=True)


def _zone_figures(found: Findings) -> dict[str, str]:
    """The article's two zones on the run's time scale: where, and what the mirror kept."""
    if not found.zones:
        return {}
    f = {"anchor_rtt_ms": nt.number(found.anchor.rtt_ms),
         "anchor_added_ms": nt.number(found.anchor_added_ms),
         "anchor_beyond_rtt_ms": nt.number(found.anchor_added_ms - found.anchor.rtt_ms),
         "anchor_fio_added_ms": nt.number(found.anchor_fio_added_ms),
         "anchor_sent_kib_per_tx": f"{found.anchor_sent_kib_per_tx:.0f}",
         "zones_rtt_miss_ms": nt.number(max(abs(z.rtt_ms - z.target_rtt_ms)
                                            for z in found.zones))}
    zones = {zone.name: _zone(found, zone) for zone in found.zones}
    if "one zone" in zones:
        one = zones["one zone"]
        f.update({"article_one_zone_added_ms": one.article_added_ms,
                  "one_zone_target_added_ms": one.target_added_ms,
                  "one_zone_target_rtt_ms": one.target_rtt_ms, "one_zone_rtt_ms": one.rtt_ms,
                  "one_zone_article_rtt_ms": one.article_rtt_ms, "one_zone_pct": one.pct,
                  "one_zone_model_error_pct": one.model_error_pct,
                  "one_zone_article_error_pct": one.article_error_pct})
    if "two zones" in zones:
        two = zones["two zones"]
        f.update({"article_two_zones_added_ms": two.article_added_ms,
                  "two_zones_target_added_ms": two.target_added_ms,
                  "two_zones_target_rtt_ms": two.target_rtt_ms, "two_zones_rtt_ms": two.rtt_ms,
                  "two_zones_article_rtt_ms": two.article_rtt_ms, "two_zones_pct": two.pct,
                  "two_zones_model_error_pct": two.model_error_pct,
                  "two_zones_article_error_pct": two.article_error_pct})
    # Protocols A and B across two zones, as a share of the local disk's TPS.
    if "A" in found.others_across:
        f["two_zones_A_pct"] = nt.number(100 * found.others_across["A"], 0)
    if "B" in found.others_across:
        f["two_zones_B_pct"] = nt.number(100 * found.others_across["B"], 0)
    return f


class ZoneFigures(NamedTuple):
    """One of the article's zones on the run's time scale, as the page prints it."""

    article_added_ms: str  # what the article's TPS implies the mirror added to a commit
    target_added_ms: str  # ... on the run's time scale
    target_rtt_ms: str  # the round trip the lab set for it
    rtt_ms: str  # the round trip it measured
    article_rtt_ms: str  # the measured one, back on the article's scale
    pct: str  # TPS as a share of the local disk's
    model_error_pct: str
    article_error_pct: str


def _zone(found: Findings, zone: Zone) -> ZoneFigures:
    added_ms = model.added_commit_ms_for_ratio(
        zone.article_ratio, local_ms_per_transaction=article.sample_ms_per_transaction())
    return ZoneFigures(
        article_added_ms=nt.number(added_ms),
        target_added_ms=nt.number(found.time_scale * added_ms),
        target_rtt_ms=nt.number(zone.target_rtt_ms), rtt_ms=nt.number(zone.rtt_ms),
        article_rtt_ms=nt.number(zone.rtt_ms / found.time_scale),
        pct=nt.number(100 * zone.ratio, 0),
        model_error_pct=nt.number(zone.model_error_pct, 0, signed=True),
        article_error_pct=nt.number(zone.article_error_pct, 0, signed=True))


def _sweep_figures(found: Findings) -> dict[str, str]:
    """pgbench under C at every round trip of the sweep, and A and B at the largest."""
    tested = [p for p in found.sweep if p is not found.sweep[0]]
    f = {"local_tps": f"{found.local_tps:,.0f}", "disc_tps": f"{found.disconnected_tps:,.0f}",
         "sweep_first_pct": nt.number(100 * found.sweep[0].measured, 0),
         "sweep_top_pct": nt.number(100 * found.sweep[-1].measured, 0),
         "sweep_top_model_pct": nt.number(100 * found.sweep[-1].model, 0)}
    if tested:
        f["sweep_max_abs_error_pct"] = f"{max(abs(p.error_pct) for p in tested):.0f}"
    # Protocols A and B at the largest round trip, as a share of the local disk's TPS.
    if "A" in found.others_at_top:
        f["tps_A_pct"] = nt.number(100 * found.others_at_top["A"], 0)
    if "B" in found.others_at_top:
        f["tps_B_pct"] = nt.number(100 * found.others_at_top["B"], 0)
    return f


def _job_figures(run: RecordedRun, found: Findings) -> dict[str, str]:
    """The article's fio jobs on the mirror: the link, 1 MiB writes in order, and how far
    the stream model missed."""
    params = found.params
    first, top = min(params.added_rtt_ms), max(params.added_rtt_ms)
    bandwidths = sweep_bandwidths(run)
    seq = {p.added_rtt_ms: p for p in found.jobs if p.protocol == "C"
           and p.what == "1 MiB sequential"}
    return {"art_link_first_mib_s": f"{bandwidths[first]:.1f}",
            "art_link_top_mib_s": f"{bandwidths[top]:.1f}",
            "art_seq1m_local_mib_s": nt.number(found.local_seq1m_mib_s),
            "art_seq1m_first_C_mib_s": nt.number(seq[first].measured),
            "art_seq1m_top_C_mib_s": nt.number(seq[top].measured),
            "art_seq1m_top_C_model_mib_s": nt.number(seq[top].model)} | _job_errors(found)


def _job_errors(found: Findings) -> dict[str, str]:
    """The stream model's misses: in all, per protocol, and A's small writes."""
    errors = [abs(p.error_pct) for p in found.jobs]
    f = {"art_points": str(len(found.jobs)), "art_max_abs_error_pct": f"{max(errors):.0f}",
         "art_median_abs_error_pct": f"{median(errors):.0f}"}
    under_c = [abs(p.error_pct) for p in found.jobs if p.protocol == "C"]
    if under_c:
        f["art_C_max_abs_error_pct"] = f"{max(under_c):.0f}"
    f["art_slowest_write_s"] = f"{found.slowest_job[3] / 1000:.0f}"
    if found.a_cycles_ms:
        f["A_cycle_min_ms"] = nt.number(min(found.a_cycles_ms))
        f["A_cycle_max_ms"] = nt.number(max(found.a_cycles_ms))
    small_a = [p for p in found.jobs if p.protocol == "A" and p.what == "4 KiB random"]
    if small_a:
        f["art_A_4k_mib_s"] = nt.number(small_a[0].measured)
        f["art_A_4k_model_mib_s"] = nt.number(small_a[0].model)
        f["art_A_4k_error_pct"] = nt.number(small_a[0].error_pct, 0, signed=True)
    return f


def _drill_figures(run: RecordedRun, found: Findings) -> dict[str, str]:
    f = {"drill_differing_mib": str(sum(d.differing_mib for d in found.drills.values()))}
    f.update(_beyond_a(found))
    if "A" in found.drills:
        f.update(_drill_a(found.drills["A"]))
    if "C" in found.drills:
        f.update(_drill_c(found.drills["C"]))
    resync = resync_results(run).set_index("config")
    f["resync_pgbench_mib"] = f"{resync.loc['resync-after-pgbench', 'resync_bytes'] / 2**20:,.1f}"
    return f


def _beyond_a(found: Findings) -> dict[str, str]:
    """A drill commit's time under C beyond the same loop's under A (which waits for no
    round trip), in ms and in round trips of the link."""
    if not {"A", "C"} <= set(found.drills):
        return {}
    c, a = found.drills["C"], found.drills["A"]
    beyond_ms = 1000 / c.commits_per_s - 1000 / a.commits_per_s
    return {"drill_C_beyond_a_ms": nt.number(beyond_ms),
            "drill_C_beyond_a_trips": f"{beyond_ms / c.rtt_ms:.1f}"}


def _drill_a(drill: Drill) -> dict[str, str]:
    """The drill under protocol A: what it acknowledged and lost, against the model."""
    return {"drill_A_acked": f"{drill.acknowledged:,}", "drill_A_lost": f"{drill.lost:,}",
            "drill_A_noticed_s": f"{drill.noticed_s:.0f}",
            "drill_A_resync_mib": f"{drill.resync_mib:,.0f}",
            "drill_A_rate": f"{drill.commits_per_s:.0f}",
            "drill_A_rtt_ms": nt.number(drill.rtt_ms),
            "drill_A_half_rtt_ms": nt.number(drill.rtt_ms / 2),
            "drill_A_commit_ms": nt.number(1000 / drill.commits_per_s),
            "drill_A_expected_lost": f"{drill.expected_lost:.1f}",
            # Commits at random moments: a cut takes none with probability e^-mean (Poisson).
            "drill_A_p_none_pct": f"{100 * math.exp(-drill.expected_lost):.0f}"}


def _drill_c(drill: Drill) -> dict[str, str]:
    """The drill under protocol C: what it acknowledged and lost, and its resync."""
    return {"drill_C_acked": f"{drill.acknowledged:,}", "drill_C_lost": f"{drill.lost:,}",
            "drill_C_noticed_s": f"{drill.noticed_s:.0f}",
            "drill_C_resync_mib": f"{drill.resync_mib:,.0f}",
            "drill_C_resync_s": f"{drill.resync_s:.0f}",
            "drill_C_rtt_ms": nt.number(drill.rtt_ms),
            "drill_C_commit_ms": nt.number(1000 / drill.commits_per_s)}


def _exercise_figures(found: Findings) -> dict[str, str]:
    """The exercises' arithmetic, from the same findings, to the digits they print."""
    top = max(found.params.added_rtt_ms)
    c_top = next(p for p in found.waits_of("C") if p.added_rtt_ms == top)
    zone_c = model.write_latency_ms("C", local_write_ms=0.1, peer_write_ms=0.1, rtt_ms=0.5,
                                    peer_flush_ms=0.05)
    handed_over = max(found.send_ms, found.peer_flush_ms)
    return {"ex_c_beyond_rtt_ms": nt.number(c_top.measured - c_top.rtt_ms),
            "ex_gap_ms": nt.number(abs(c_top.measured - c_top.rtt_ms
                                       - handed_over - found.peer_write_ms)),
            "ex_handed_over_ms": nt.number(handed_over),
            "ex_model_beyond_rtt_ms": nt.number(handed_over + found.peer_write_ms),
            "ex_half_k": f"{found.time_scale / 2:.1f}",
            "ex_zone_c_ms": nt.number(zone_c, None),
            "ex_zone_flush_pct": f"{100 * 0.05 / zone_c:.0f}"}
