"""What the DRBD explanation page shows: the model's tables and the numbers its text quotes.

Pure page code: it calls the model (labs/drbd/model.py) and reads the published figures
(labs/drbd/article.py). Nothing here touches a host.
"""

from __future__ import annotations

import pandas as pd

from labs.book import number_text as nt
from labs.drbd import model as drbd
from labs.drbd.article import (  # noqa: F401 - the page and its tests read them here
    ONE_ZONE,
    SAMPLE,
    TWO_ZONES,
    article_ratios,
    published,
    reference,
    sample_ms_per_transaction,
)

RTT_MS = tuple(round(0.1 * k, 1) for k in range(101))  # 0 to 10 ms, the charts' x axis
GIGABIT_MIB_S = 1e9 / 8 / 2**20   # a 1 Gbit/s link in MiB/s, for the transfer time
# The TPS chart's starting point: both disks 0.5 ms, the rest of a transaction chosen so the
# whole takes the sample output's time per transaction (illustrative, not measured).
CHART_DISK_MS = 0.5
# DRBD 8.4's default activity log: 1,237 extents of 4 MiB each (drbd.conf(5) for 8.4).
AL_EXTENTS, AL_EXTENT_MIB = 1237, 4
SLOW_LOCAL = (5.0, 1.0, 2.0)  # local write, peer write, round trip (ms): the page's example


def protocol_paths() -> pd.DataFrame:
    """For each protocol and round trip, the model's write split into two columns: what the
    network path takes with instant disks (`network_ms`), and how many peer disk writes it
    waits for (`peer_writes`: 1 for C, 0 for A and B). The model's latency is then
    max(local write, network_ms + peer_writes x peer write), which the charts compute in
    the browser as the sliders move (the tests check it against the model)."""
    rows = []
    for protocol in drbd.PROTOCOLS:
        for rtt in RTT_MS:
            network = drbd.write_latency_ms(protocol, local_write_ms=0, peer_write_ms=0,
                                            rtt_ms=rtt)
            with_peer = drbd.write_latency_ms(protocol, local_write_ms=0, peer_write_ms=1,
                                              rtt_ms=rtt)
            rows.append({"protocol": protocol, "rtt_ms": rtt, "network_ms": network,
                         "peer_writes": round(with_peer - network)})
    return pd.DataFrame(rows)


def latency_by_rtt(local_ms: float, peer_ms: float) -> pd.DataFrame:
    """The model's write latency by protocol and round trip, for one pair of disks."""
    return pd.DataFrame([
        {"protocol": p, "rtt_ms": rtt,
         "latency_ms": drbd.write_latency_ms(p, local_write_ms=local_ms, peer_write_ms=peer_ms,
                                             rtt_ms=rtt)}
        for p in drbd.PROTOCOLS for rtt in RTT_MS])


def tps_ratio_by_rtt(work_ms: float, disk_ms: float) -> pd.DataFrame:
    """TPS on the mirror as a fraction of the local disk's, by protocol and round trip, when
    a transaction works `work_ms` and commits with one write of `disk_ms` on either side."""
    rows = []
    for p in drbd.PROTOCOLS:
        for rtt in RTT_MS:
            commit = drbd.write_latency_ms(p, local_write_ms=disk_ms, peer_write_ms=disk_ms,
                                           rtt_ms=rtt)
            rows.append({"protocol": p, "rtt_ms": rtt,
                         "ratio": drbd.tps_ratio(cpu_ms=work_ms, local_commit_ms=disk_ms,
                                                 mirrored_commit_ms=commit)})
    return pd.DataFrame(rows)


def sample_cases() -> pd.DataFrame:
    """If the sample output (about 1,098 TPS) was the run on each of the three databases,
    and transactions ran one at a time: the local disk's time per transaction, and the
    milliseconds the two mirrors added to it."""
    ratios = article_ratios()
    sample = sample_ms_per_transaction()
    cases = {"local disk": 1.0, "one zone": ratios["one zone"],
             "two zones": ratios["two zones"]}
    rows = []
    for case, ratio in cases.items():
        local = sample * ratio  # that run's TPS was `ratio` of the local disk's
        row = {"sample_from": case, "local_ms": local}
        for name, r in ratios.items():
            row[f"added_ms_{name.replace(' ', '_')}"] = drbd.added_commit_ms_for_ratio(
                r, local_ms_per_transaction=local)
        rows.append(row)
    return pd.DataFrame(rows)


def chart_work_ms() -> float:
    """The TPS chart's starting work per transaction: with CHART_DISK_MS, the sample's time."""
    return round(sample_ms_per_transaction() - CHART_DISK_MS, 2)


def _latency(protocol: str, local_ms: float, peer_ms: float, rtt_ms: float) -> float:
    return drbd.write_latency_ms(protocol, local_write_ms=local_ms, peer_write_ms=peer_ms,
                                 rtt_ms=rtt_ms)


def explain_figures() -> dict[str, str]:
    """Every number the explanation page quotes, computed from the model and the sources."""
    f: dict[str, str] = {}
    disk = published("guide_latency_example", "local disk write")
    rtt = published("guide_latency_example", "network round trip")
    guide = _latency("C", disk, disk, rtt)
    f["guide_disk_ms"] = f"{disk:g}"
    f["guide_rtt_ms"] = f"{rtt:g}"
    f["guide_c_ms"] = f"{guide:g}"
    f["guide_increase_pct"] = f"{(guide / disk - 1) * 100:.0f}"
    f["gige_rtt_low_us"] = f"{published('guide_gigabit_rtt', 'lower end'):g}"
    f["gige_rtt_high_us"] = f"{published('guide_gigabit_rtt', 'upper end'):g}"
    # The max(): a slow local disk hides the network, for C as long as the peer's path is
    # the shorter one; adding the two paths' times would overstate it.
    slow_local, fast_peer, slow_rtt = SLOW_LOCAL
    f["slow_local_ms"] = f"{slow_local:g}"
    f["fast_peer_ms"] = f"{fast_peer:g}"
    f["slow_rtt_ms"] = f"{slow_rtt:g}"
    f["slow_local_c_ms"] = f"{_latency('C', slow_local, fast_peer, slow_rtt):g}"
    f["slow_local_sum_ms"] = f"{slow_local + slow_rtt:g}"
    f["al_extents"] = f"{AL_EXTENTS:,}"
    f["al_gib"] = f"{AL_EXTENTS * AL_EXTENT_MIB / 1024:.1f}"
    f["transfer_4k_ms"] = f"{drbd.transfer_ms(4, GIGABIT_MIB_S):.3f}"
    f["transfer_1m_ms"] = f"{drbd.transfer_ms(1024, GIGABIT_MIB_S):.1f}"
    ratios = article_ratios()
    f["article_one_zone_pct"] = f"{ratios['one zone'] * 100:g}"
    f["article_two_zones_pct"] = f"{ratios['two zones'] * 100:g}"
    f["article_clients"] = f"{published('pgbench_clients', 'all three databases'):.0f}"
    f["article_transactions"] = \
        f"{published('pgbench_transactions_per_client', 'all three databases'):,.0f}"
    f["article_scale"] = f"{published('pgbench_scale_factor', 'sample output'):.0f}"
    f["sample_tps"] = f"{published('pgbench_sample_tps', SAMPLE):,.0f}"
    f["sample_latency_ms"] = f"{published('pgbench_sample_latency_average', SAMPLE):.2f}"
    one_at_a_time = sample_ms_per_transaction()
    f["sample_ms_per_txn"] = nt.number(one_at_a_time, 2)
    added = {k: drbd.added_commit_ms_for_ratio(r, local_ms_per_transaction=one_at_a_time)
             for k, r in ratios.items()}
    f["added_one_zone_ms"] = nt.number(added["one zone"], 2)
    f["added_two_zones_ms"] = nt.number(added["two zones"], 2)
    f["added_difference_ms"] = nt.number(added["two zones"] - added["one zone"], 2)
    clients = published("pgbench_clients", "all three databases")
    parallel = clients * one_at_a_time  # each client's own time if none waited for another
    f["parallel_ms_per_txn"] = nt.number(parallel, 2)

    def added_parallel_ms(layout: str) -> str:
        added = drbd.added_commit_ms_for_ratio(ratios[layout], local_ms_per_transaction=parallel)
        return f"{added:.1f}"

    f["parallel_one_zone_ms"] = added_parallel_ms("one zone")
    f["parallel_two_zones_ms"] = added_parallel_ms("two zones")
    f.update(_sample_case_figures(sample_cases().set_index("sample_from")))
    f["chart_disk_ms"] = f"{CHART_DISK_MS:g}"
    f["chart_work_ms"] = f"{chart_work_ms():.2f}"
    f.update(exercise_figures())
    return f


def _sample_case_figures(cases: pd.DataFrame) -> dict[str, str]:
    """If the sample output was the run on each database: its local time per transaction,
    and what each mirror added to it (sample_cases)."""
    local, one, two = cases.loc["local disk"], cases.loc["one zone"], cases.loc["two zones"]
    return {
        "case_local_disk_local_ms": nt.number(local.local_ms, 2),
        "case_local_disk_one_zone_ms": nt.number(local.added_ms_one_zone, 2),
        "case_local_disk_two_zones_ms": nt.number(local.added_ms_two_zones, 2),
        "case_one_zone_local_ms": nt.number(one.local_ms, 2),
        "case_one_zone_one_zone_ms": nt.number(one.added_ms_one_zone, 2),
        "case_one_zone_two_zones_ms": nt.number(one.added_ms_two_zones, 2),
        "case_two_zones_local_ms": nt.number(two.local_ms, 2),
        "case_two_zones_one_zone_ms": nt.number(two.added_ms_one_zone, 2),
        "case_two_zones_two_zones_ms": nt.number(two.added_ms_two_zones, 2),
    }


def exercise_figures() -> dict[str, str]:
    """The worked answers of the explanation page's exercises, from the model."""
    f: dict[str, str] = {}
    # 1. A fast local disk, a slower peer, a round trip within a zone.
    f["ex1_a_ms"] = f"{_latency('A', 0.5, 2, 0.4):g}"
    f["ex1_b_ms"] = f"{_latency('B', 0.5, 2, 0.4):g}"
    f["ex1_c_ms"] = f"{_latency('C', 0.5, 2, 0.4):g}"
    # 2. 2 ms of work and a 0.5 ms commit, mirrored with C over a 1.5 ms round trip.
    commit = _latency("C", 0.5, 0.5, 1.5)
    f["ex2_commit_ms"] = f"{commit:g}"
    ratio = drbd.tps_ratio(cpu_ms=2, local_commit_ms=0.5, mirrored_commit_ms=commit)
    f["ex2_ratio_pct"] = f"{ratio * 100:.1f}"
    f["ex2_local_tps"] = f"{drbd.pgbench_tps(clients=1, cpu_ms=2, commit_ms=0.5):.0f}"
    f["ex2_mirrored_tps"] = f"{drbd.pgbench_tps(clients=1, cpu_ms=2, commit_ms=commit):.0f}"
    # 3. How much may mirroring add to a 2.5 ms transaction and keep 90 % of the TPS?
    f["ex3_added_ms"] = f"{drbd.added_commit_ms_for_ratio(0.9, local_ms_per_transaction=2.5):.2f}"
    # 4. Protocol A across regions: 2,000 acknowledged writes a second, 10 ms one way.
    f["ex4_writes"] = f"{drbd.writes_in_flight(2000, window_ms=10):.0f}"
    f["ex4_c_extra_ms"] = f"{_latency('C', 0.5, 0.5, 20) - 0.5:g}"
    return f
