"""Every number the DRBD lab page quotes, computed from the recorded run (the tables of
labs/drbd/results.py); book/drbd/lab.md glues them by name, and tests/test_drbd_recorded.py
holds the page's sentences about them true."""

from __future__ import annotations

import pandas as pd

from labs.book import number_text as nt
from labs.drbd import model
from labs.drbd.params import PING_COUNT
from labs.drbd.results import (
    article_results,
    drill_results,
    fio_results,
    link_results,
    local_row,
    pgbench_results,
    ping_results,
    resync_results,
    send_ms,
    sweep_bandwidths,
    sweep_rtts,
)
from labs.records import RecordedRun


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the lab page quotes, computed from the run."""
    params = run.meta["parameters"]
    host, peer = params["host"], params["peer"]
    fio = fio_results(run)
    pings = ping_results(run).set_index("config")
    top = max(params["added_rtt_ms"])
    f = _setup_figures(params, pings, top)
    f.update(_local_figures(fio, host, peer))
    direct = fio[(fio["variant"] == "direct") & fio["protocol"].isin(model.PROTOCOLS)]
    at_top = _by_protocol_at(direct, top)
    f["top_rtt_ms"] = nt.number(at_top["rtt_ms"].iloc[0])
    f.update(_p50_and_model_figures("top", at_top))
    first = min(params["added_rtt_ms"])
    at_first = _by_protocol_at(direct, first)
    f["first_rtt_ms"] = nt.number(at_first["rtt_ms"].iloc[0])
    a_points = direct[direct["protocol"] == "A"]["write_p50_ms"]
    if not a_points.empty:
        f["A_min_p50_ms"] = nt.number(a_points.min())
        f["A_max_p50_ms"] = nt.number(a_points.max())
    f.update(_p50_and_model_figures("first", at_first))
    sends = fio.attrs["send_ms"]
    f["send_ms"] = nt.number(sends["direct"]["write_p50_ms"])
    f["send_sync_ms"] = nt.number(sends["fdatasync"]["sync_p50_ms"])
    modelled = fio[fio["model_ms"].notna()]
    for variant in ("direct", "fdatasync"):
        f.update(_model_error_figures(modelled, variant, first))
    f.update(_c_above_model_figures(modelled))
    f.update(b_and_c_figures(direct))
    f.update(_write_and_flush_figures(modelled, at_top, first, top))
    tps = pgbench_results(run)
    f.update(_tps_figures(tps))
    f.update(pgbench_figures(tps, top))
    f.update(_a_and_b_tps_figures(tps))
    f.update(_cpu_figures(run, tps))
    f.update(_resync_figures(run))
    f.update(_drill_figures(run))
    if run.results["workload"].str.startswith("article-").any():  # runs since the jobs
        f.update(article_figures(run, first, top))
    f.update(_exercise_figures(fio, sends, at_top, peer))
    return f


def _setup_figures(params: dict, pings: pd.DataFrame, top: float) -> dict[str, str]:
    """The hosts, the round trips added, the durations, and the link's own round trip."""
    return {"primary": params["host"], "peer": params["peer"], "top_added": f"{top:g}",
            "added_list": ", ".join(f"{a:g}" for a in params["added_rtt_ms"]),
            "fio_s": str(params["fio_s"]), "pgbench_s": str(params["pgbench_s"]),
            "drill_s": str(params["drill_s"]), "ping_count": str(PING_COUNT),
            "link_rtt_ms": nt.number(pings.loc["link", "rtt_p50_ms"]),
            "link_rtt_p99_ms": nt.number(pings.loc["link", "rtt_p99_ms"])}


def _local_figures(fio: pd.DataFrame, host: str, peer: str) -> dict[str, str]:
    """Each host's own disk and DRBD disconnected: a write, and a write with its flush."""
    f, direct = {}, {}
    for name, config in (("local", f"local-{host}"), ("peer", f"local-{peer}"),
                         ("disc", "drbd-disconnected")):
        direct[name] = local_row(fio, config, "direct")
        synced = local_row(fio, config, "fdatasync")
        f[f"{name}_p50_ms"] = nt.number(direct[name]["write_p50_ms"])
        f[f"{name}_sync_ms"] = nt.number(synced["measured_ms"])
    # DRBD's own cost with no mirror: one writer's 4 KiB writes a second, against the disk's.
    bare, disc = direct["local"], direct["disc"]
    f["local_direct_iops"] = nt.count(bare["iops"])
    f["disc_direct_iops"] = nt.count(disc["iops"])
    f["disc_direct_iops_below_local"] = nt.percent(1 - disc["iops"] / bare["iops"])
    return f


def _by_protocol_at(direct: pd.DataFrame, added: float) -> pd.DataFrame:
    return direct[direct["added_rtt_ms"] == added].set_index("protocol")


def _p50_and_model_figures(label: str, at: pd.DataFrame) -> dict[str, str]:
    f = {}
    for protocol in at.index:
        f[f"{label}_{protocol}_p50_ms"] = nt.number(at.loc[protocol, "write_p50_ms"])
        f[f"{label}_{protocol}_model_ms"] = nt.number(at.loc[protocol, "model_ms"])
    return f


def _model_error_figures(modelled: pd.DataFrame, variant: str, first: float) -> dict[str, str]:
    """How far one fio variant's points fell from the model: in all, and per protocol."""
    rows = modelled[modelled["variant"] == variant]
    key = "direct" if variant == "direct" else "sync"
    f = {f"{key}_points": str(len(rows)),
         f"{key}_max_abs_error_pct": f"{rows['error_pct'].abs().max():.0f}"}
    for protocol in model.PROTOCOLS:
        f.update(_protocol_error_figures(f"{key}_{protocol}", rows[rows["protocol"] == protocol],
                                         first))
    return f


def _protocol_error_figures(name: str, mine: pd.DataFrame, first: float) -> dict[str, str]:
    """One protocol's misses: with a round trip added, at every point, and at the first."""
    f = {}
    delayed = mine[mine["added_rtt_ms"] > first]["error_pct"]
    if not delayed.empty:
        f[f"{name}_delayed_max_abs_error_pct"] = f"{delayed.abs().max():.0f}"
        f[f"{name}_delayed_min_abs_error_pct"] = f"{delayed.abs().min():.0f}"
        f[f"{name}_delayed_min_error_pct"] = nt.number(delayed.min(), 0, signed=True)
    f[f"{name}_max_abs_error_pct"] = f"{mine['error_pct'].abs().max():.0f}"
    f[f"{name}_min_abs_error_pct"] = f"{mine['error_pct'].abs().min():.0f}"
    first_row = mine[mine["added_rtt_ms"] == first]
    if not first_row.empty:
        f[f"{name}_first_error_pct"] = nt.number(first_row["error_pct"].iloc[0], 0, signed=True)
    return f


def _c_above_model_figures(modelled: pd.DataFrame) -> dict[str, str]:
    """How many of C's plain writes took longer than the model, and by how much at most."""
    c_direct = modelled[(modelled["variant"] == "direct") & (modelled["protocol"] == "C")]
    f = {"direct_C_above_count": str(int((c_direct["error_pct"] > 0).sum())),
         "direct_C_points": str(len(c_direct))}
    above_ms = c_direct["measured_ms"] - c_direct["model_ms"]
    f["direct_C_above_max_ms"] = nt.number(above_ms.max())
    return f


def _write_and_flush_figures(modelled: pd.DataFrame, at_top: pd.DataFrame, first: float,
                             top: float) -> dict[str, str]:
    """Protocol C's write followed by fdatasync, at the first and the largest round trip."""
    f = {}
    synced = modelled[modelled["variant"] == "fdatasync"].set_index(["protocol", "added_rtt_ms"])
    for protocol in [p for p in ("C",) if p in at_top.index]:
        for label, added in (("first", first), ("top", top)):
            row = synced.loc[(protocol, added)]
            f[f"{label}_{protocol}_sync_p50_ms"] = nt.number(row["sync_p50_ms"])
            f[f"{label}_{protocol}_cycle_ms"] = nt.number(row["measured_ms"])
            f[f"{label}_{protocol}_cycle_model_ms"] = nt.number(row["model_ms"])
            f[f"{label}_{protocol}_cycle_error_pct"] = nt.number(row["error_pct"], 0, signed=True)
            # What each write-and-flush pair really took (1 / IOPS): fio's libaio engine
            # sends the fdatasync while the write is still on its way, so the two overlap.
            f[f"{label}_{protocol}_fio_pair_ms"] = nt.number(row["cycle_ms"])
            f[f"{label}_{protocol}_fio_pair_trips"] = f"{row['cycle_ms'] / row['rtt_ms']:.1f}"
    return f


def _tps_figures(tps: pd.DataFrame) -> dict[str, str]:
    """pgbench's rate under C beside the bare disk's, measured and modelled, at the first
    and the last round trip."""
    f = {}
    c = tps[tps["protocol"] == "C"].sort_values("added_rtt_ms")
    base = tps.attrs["base"]  # the bare disk, or the disconnected mirror in older runs
    f["local_tps"] = f"{tps[tps['config'] == base]['tps'].iloc[0]:,.0f}"
    f["tps_ratio_first_pct"] = f"{c['ratio_pct'].iloc[0]:.0f}"
    f["tps_ratio_last_pct"] = f"{c['ratio_pct'].iloc[-1]:.0f}"
    f["tps_max_abs_error_pct"] = f"{tps['error_pct'].abs().max():.0f}"
    f["cpu_ms"] = nt.number(tps.attrs["cpu_ms"])
    f["tps_model_first_pct"] = f"{c['model_ratio_pct'].iloc[0]:.0f}"
    f["tps_model_last_pct"] = f"{c['model_ratio_pct'].iloc[-1]:.0f}"
    f["tps_fall_points"] = f"{c['ratio_pct'].iloc[0] - c['ratio_pct'].iloc[-1]:.0f}"
    f["tps_model_fall_points"] = \
        f"{c['model_ratio_pct'].iloc[0] - c['model_ratio_pct'].iloc[-1]:.0f}"
    f["c_cpu_ms_per_tx_last"] = nt.number(c["cpu_ms_per_tx"].iloc[-1])
    return f


def _a_and_b_tps_figures(tps: pd.DataFrame) -> dict[str, str]:
    f = {}
    others = tps[tps["protocol"].isin(["A", "B"])].set_index("protocol")
    for protocol in others.index:
        f[f"tps_{protocol}_pct"] = f"{others.loc[protocol, 'ratio_pct']:.0f}"
        f[f"tps_{protocol}_model_pct"] = f"{others.loc[protocol, 'model_ratio_pct']:.0f}"
        f[f"tps_{protocol}_cpu_pct"] = f"{others.loc[protocol, 'cpu_ratio_pct']:.0f}"
    return f


def _cpu_figures(run: RecordedRun, tps: pd.DataFrame) -> dict[str, str]:
    """The processor-time account of pgbench: the bare disk's beside the mirrors'."""
    f = {}
    local = tps[tps["config"] == tps.attrs["base"]].iloc[0]
    mirrored = tps[tps["protocol"].isin(model.PROTOCOLS)]
    f["cores"] = str(run.meta["host"]["controller"]["cpu_count"])
    f["local_primary_cores"] = f"{local['primary_cores']:.1f}"
    f["local_primary_cpu_ms_per_tx"] = nt.number(local["primary_cpu_ms_per_tx"])
    f["mirror_primary_cpu_ms_per_tx_min"] = nt.number(mirrored["primary_cpu_ms_per_tx"].min())
    f["mirror_primary_cpu_ms_per_tx_max"] = nt.number(mirrored["primary_cpu_ms_per_tx"].max())
    f["local_both_cores"] = f"{local['both_cores']:.2f}"
    f["mirror_both_cores_min"] = f"{mirrored['both_cores'].min():.2f}"
    f["mirror_both_cores_max"] = f"{mirrored['both_cores'].max():.2f}"
    f["mirror_peer_cores_min"] = f"{mirrored['peer_cores'].min():.1f}"
    f["mirror_peer_cores_max"] = f"{mirrored['peer_cores'].max():.1f}"
    f["local_cpu_ms_per_tx"] = nt.number(local["primary_cpu_ms_per_tx"]
                                         + local["peer_cpu_ms_per_tx"])
    f["mirror_cpu_ms_per_tx_min"] = nt.number(mirrored["cpu_ms_per_tx"].min())
    f["mirror_cpu_ms_per_tx_max"] = nt.number(mirrored["cpu_ms_per_tx"].max())
    f["cpu_ratio_min_pct"] = f"{mirrored['cpu_ratio_pct'].min():.0f}"
    f["cpu_ratio_max_pct"] = f"{mirrored['cpu_ratio_pct'].max():.0f}"
    apart = 100 * (mirrored["ratio_pct"] / mirrored["cpu_ratio_pct"] - 1)
    f["cpu_max_abs_error_pct"] = f"{apart.abs().max():.0f}"
    f["mirror_peer_cpu_ms_per_tx_min"] = nt.number(mirrored["peer_cpu_ms_per_tx"].min())
    f["mirror_peer_cpu_ms_per_tx_max"] = nt.number(mirrored["peer_cpu_ms_per_tx"].max())
    f["sent_kib_per_tx_min"] = f"{mirrored['sent_kib_per_tx'].min():.0f}"
    f["sent_kib_per_tx_max"] = f"{mirrored['sent_kib_per_tx'].max():.0f}"
    return f


def _resync_figures(run: RecordedRun) -> dict[str, str]:
    f = {}
    resync = resync_results(run).set_index("config")
    for name in resync.index:
        key = name.replace("resync-after-", "resync_")
        f[f"{key}_mib"] = f"{resync.loc[name, 'resync_bytes'] / 2**20:,.1f}"
        f[f"{key}_s"] = f"{resync.loc[name, 'resync_s']:.1f}"
        f[f"{key}_mib_s"] = f"{resync.loc[name, 'mib_s']:.1f}"
    return f


def _drill_figures(run: RecordedRun) -> dict[str, str]:
    f = {}
    drill = drill_results(run).set_index("protocol")
    for protocol in drill.index:
        f.update(_drill_protocol_figures(drill, protocol))
    return f


def _drill_protocol_figures(drill: pd.DataFrame, protocol: str) -> dict[str, str]:
    """One failover drill: what was acknowledged, lost and resynced, and what the model
    expected to lose."""
    f = {}
    row = drill.loc[protocol]
    f[f"drill_{protocol}_acked"] = f"{row['acknowledged']:,.0f}"
    f[f"drill_{protocol}_lost"] = f"{row['lost']:,.0f}"
    f[f"drill_{protocol}_noticed_s"] = f"{row['peer_noticed_s']:.0f}"
    f[f"drill_{protocol}_resync_s"] = f"{row['resync_s']:.0f}"
    f[f"drill_{protocol}_resync_mib"] = f"{row['resync_bytes'] / 2**20:,.0f}"
    f[f"drill_{protocol}_resync_mib_s"] = f"{row['resync_mib_s']:.1f}"
    f[f"drill_{protocol}_rate"] = f"{row['commits_per_s']:.0f}"
    f[f"drill_{protocol}_differing_mib"] = f"{row['differing_mib']:.0f}"
    f[f"drill_{protocol}_rtt_ms"] = nt.number(row["rtt_ms"])
    f[f"drill_{protocol}_commit_ms"] = nt.number(1000 / row["commits_per_s"])
    if protocol != "A" and "A" in drill.index:
        f.update(_beyond_a_figures(drill, protocol))
    # What protocol A's model expects to lose: the commits made during the time an
    # acknowledged write still travels to the peer (half a round trip, Little's law).
    expected = row["commits_per_s"] * row["rtt_ms"] / 2000
    f[f"drill_{protocol}_expected_lost"] = f"{expected:.1f}"
    f[f"drill_{protocol}_half_rtt_ms"] = nt.number(row["rtt_ms"] / 2)
    f[f"drill_{protocol}_newest"] = f"{row['newest_found']:,.0f}"
    unacked = max(0, row["newest_found"] - row["acknowledged"])
    f[f"drill_{protocol}_unacked_found"] = f"{unacked:,.0f}"
    # The commits lost, as a window of time at the rate the client was committing.
    f[f"drill_{protocol}_lost_window_ms"] = f"{1000 * row['lost'] / row['commits_per_s']:.0f}"
    return f


def _beyond_a_figures(drill: pd.DataFrame, protocol: str) -> dict[str, str]:
    """A drill commit's time beyond the same loop's under A (which does not wait for the peer,
    so its time is the client's and PostgreSQL's own), in ms and in round trips of the link."""
    commit_ms = 1000 / drill.loc[protocol, "commits_per_s"]
    beyond_ms = commit_ms - 1000 / drill.loc["A", "commits_per_s"]
    return {f"drill_{protocol}_beyond_a_ms": nt.number(beyond_ms),
            f"drill_{protocol}_beyond_a_trips": f"{beyond_ms / drill.loc[protocol, 'rtt_ms']:.1f}"}


def _exercise_figures(fio: pd.DataFrame, sends: dict, at_top: pd.DataFrame,
                      peer: str) -> dict[str, str]:
    """The exercise: protocol C's write at the largest round trip, less the round trip
    itself, to two decimals so that the solution's arithmetic adds up as printed."""
    f = {}
    peer_ms = local_row(fio, f"local-{peer}", "direct")["write_p50_ms"]
    send_plus_peer = sends["direct"]["write_p50_ms"] + peer_ms
    f["ex_send_ms"] = nt.number(sends["direct"]["write_p50_ms"], 2)
    f["ex_peer_ms"] = nt.number(peer_ms, 2)
    f["ex_send_plus_peer_ms"] = nt.number(send_plus_peer, 2)
    if "C" in at_top.index:
        top_c = at_top.loc["C"]
        f["ex_c_p50_ms"] = nt.number(top_c["write_p50_ms"], 2)
        f["ex_rtt_ms"] = nt.number(top_c["rtt_ms"], 2)
        f["ex_c_beyond_rtt_ms"] = nt.number(top_c["write_p50_ms"] - top_c["rtt_ms"], 2)
        unexplained_ms = top_c["write_p50_ms"] - top_c["rtt_ms"] - send_plus_peer
        f["ex_unexplained_ms"] = nt.number(unexplained_ms, 2)
    f["ex_zone_c_ms"] = nt.number(model.write_latency_ms("C", local_write_ms=0.1, peer_write_ms=0.1,
                                                   rtt_ms=0.5), None)
    f["ex_zone_c_lab_send_ms"] = nt.number(model.write_latency_ms(
        "C", local_write_ms=0.1, peer_write_ms=0.1, rtt_ms=0.5,
        send_ms=sends["direct"]["write_p50_ms"]))
    return f


def b_and_c_figures(direct: pd.DataFrame) -> dict[str, str]:
    """How much longer C's plain writes took than B's, at each round trip (the model puts
    only the peer's disk write between them)."""
    by_protocol = direct.pivot_table(index="added_rtt_ms", columns="protocol",
                                     values="write_p50_ms")
    if not {"B", "C"} <= set(by_protocol.columns):
        return {}
    gap = by_protocol["C"] - by_protocol["B"]
    return {"bc_gap_min_ms": nt.number(gap.min()), "bc_gap_max_ms": nt.number(gap.max())}


def pgbench_figures(tps: pd.DataFrame, top: float) -> dict[str, str]:
    """The bare disk beside DRBD with its peer disconnected, and pgbench under C below the
    largest round trip and at it: its rate and the processor-time account."""
    f = {}
    base = tps[tps["config"] == tps.attrs["base"]].iloc[0]
    disconnected = tps[tps["config"] == "drbd-disconnected"].iloc[0]
    f["disc_tps"] = f"{disconnected['tps']:,.0f}"
    f["disc_tps_pct"] = f"{disconnected['ratio_pct']:.0f}"
    f["disc_cpu_ms_per_tx"] = nt.number(disconnected["cpu_ms_per_tx"])
    f["disc_both_cores"] = f"{disconnected['both_cores']:.2f}"
    f["base_both_cores"] = f"{base['both_cores']:.2f}"
    c = tps[tps["protocol"] == "C"].set_index("added_rtt_ms").sort_index()
    gap = (c["ratio_pct"] - c["cpu_ratio_pct"]).abs()
    below = c.index[c.index < top]
    if len(below) and top in c.index:
        f["c_below_top_added"] = f"{below.max():g}"
        f["tps_ratio_below_top_min_pct"] = f"{c.loc[below, 'ratio_pct'].min():.0f}"
        f["tps_ratio_below_top_max_pct"] = f"{c.loc[below, 'ratio_pct'].max():.0f}"
        f["c_rtt_top_ms"] = nt.number(c.loc[top, "rtt_ms"])
        f["c_cpu_gap_below_top_max"] = f"{gap[below].max():.0f}"
        f["c_cpu_ratio_top_pct"] = f"{c.loc[top, 'cpu_ratio_pct']:.0f}"
        f["c_both_cores_top"] = f"{c.loc[top, 'both_cores']:.2f}"
        f["c_both_cores_below_top_min"] = f"{c.loc[below, 'both_cores'].min():.2f}"
        f["c_cpu_ms_per_tx_below_top_max"] = nt.number(c.loc[below, "cpu_ms_per_tx"].max())
    return f


# The article's fio jobs, by the short names the figures' keys give them.
ARTICLE_JOB_KEYS = {"seq-write-1m": "seq1m", "rand-write-1m": "rand1m",
                    "rand-write-512k": "rand512k", "rand-write-4k": "rand4k"}


def article_figures(run: RecordedRun, first: float, top: float) -> dict[str, str]:
    """The throughput section's numbers: per job (seq1m, rand1m, rand512k, rand4k), the
    local disk, DRBD disconnected, and each protocol at the first and largest round trip."""
    table = article_results(run)
    host = run.meta["parameters"]["host"]
    links = link_results(run).set_index("config")
    bandwidths = sweep_bandwidths(run)
    f = _article_link_figures(run, links, bandwidths, first, top)
    for job, key in ARTICLE_JOB_KEYS.items():
        f.update(_article_job_figures(table[table["job"] == job], key, host, first, top))
    f.update(_large_write_exercise(run, table, bandwidths, top))
    f.update(_article_error_figures(table, top))
    return f


def _article_link_figures(run: RecordedRun, links: pd.DataFrame, bandwidths: dict,
                          first: float, top: float) -> dict[str, str]:
    """The link's bandwidth, one stream's at the first and largest round trip, and what
    one stream kept in flight."""
    probe_mib = links.loc["link", "link_bytes"] / 2**20
    f = {"art_link_mib_s": f"{links.loc['link', 'link_mib_s']:.1f}",
         "art_link_first_mib_s": f"{bandwidths[first]:.1f}",
         "art_link_top_mib_s": f"{bandwidths[top]:.1f}",
         "link_probe_mib": f"{probe_mib:.0f}",
         "throughput_s": str(run.meta["parameters"]["throughput_s"])}
    # What one stream kept in flight: its bandwidth times the round trip (KiB), at every
    # point with a round trip added (the link's own is too short to fill the window).
    windows = {added: bandwidths[added] * 1.024 * rtt for added, rtt in sweep_rtts(run).items()
               if added > 0}
    if windows:
        f["art_window_first_added"] = f"{min(windows):g}"
        f["art_window_first_kib"] = f"{windows[min(windows)]:.0f}"
        f["art_window_top_kib"] = f"{windows[max(windows)]:.0f}"
    return f


def _article_job_figures(rows: pd.DataFrame, key: str, host: str, first: float,
                         top: float) -> dict[str, str]:
    """One job's rate on the local disk, DRBD disconnected, and each protocol at the first
    and largest round trip."""
    local = rows[rows["config"] == f"local-{host}"].iloc[0]
    f = {f"art_{key}_local_mib_s": nt.number(local["mib_s"])}
    disconnected = rows[rows["config"] == "drbd-disconnected"]["mib_s"].iloc[0]
    f[f"art_{key}_disc_mib_s"] = nt.number(disconnected)
    for label, added in (("first", first), ("top", top)):
        for row in rows[rows["added_rtt_ms"] == added].itertuples():
            if row.protocol not in model.PROTOCOLS:
                continue
            name = f"art_{key}_{label}_{row.protocol}"
            f[f"{name}_mib_s"] = nt.number(row.mib_s)
            f[f"{name}_model_mib_s"] = nt.number(row.model_mib_s)
            f[f"{name}_error_pct"] = nt.number(row.error_pct, 0, signed=True)
            f[f"{name}_pct_local"] = f"{100 * row.mib_s / local['mib_s']:.1f}"
    return f


def _large_write_exercise(run: RecordedRun, table: pd.DataFrame, bandwidths: dict,
                          top: float) -> dict[str, str]:
    """The exercise: one 1 MiB write in order under C at the largest round trip, taken
    apart."""
    seq_top = table[(table["job"] == "seq-write-1m") & (table["protocol"] == "C")
                    & (table["added_rtt_ms"] == top)]
    if seq_top.empty:
        return {}
    row = seq_top.iloc[0]
    transfer = model.transfer_ms(1024, bandwidths[top])
    send = send_ms(fio_results(run), "direct", part="cycle_ms")
    peer = table[(table["config"] == f"local-{run.meta['parameters']['peer']}")
                 & (table["job"] == "seq-write-1m")]["cycle_ms"].iloc[0]
    # One decimal at least, whatever the size: the exercise adds these up.
    f = {"ex_art_cycle_ms": nt.number(row["cycle_ms"], 1),
         "ex_art_link_mib_s": f"{bandwidths[top]:.2f}",
         "ex_art_transfer_ms": nt.number(transfer, 1),
         "ex_art_rtt_ms": nt.number(row["rtt_ms"]),
         "ex_art_send_ms": nt.number(send),
         "ex_art_peer_ms": nt.number(peer)}
    expected = transfer + row["rtt_ms"] + send + peer
    f["ex_art_expected_ms"] = nt.number(expected, 1)
    f["ex_art_gap_ms"] = nt.number(abs(expected - row["cycle_ms"]))
    f.update(_c_beyond_a_figures(table, row, top))
    return f


def _c_beyond_a_figures(table: pd.DataFrame, row: pd.Series, top: float) -> dict[str, str]:
    """C's large write beyond A's, measured and modelled (a round trip and the peer's
    write)."""
    a_top = table[(table["job"] == "seq-write-1m") & (table["protocol"] == "A")
                  & (table["added_rtt_ms"] == top)]
    if a_top.empty:
        return {}
    a_row = a_top.iloc[0]
    return {"art_seq1m_top_c_beyond_a_ms": nt.number(row["cycle_ms"] - a_row["cycle_ms"]),
            "art_seq1m_top_a_saved_pct":
                f"{100 * (row['cycle_ms'] - a_row['cycle_ms']) / row['cycle_ms']:.0f}",
            # A 1 MiB write's time is 1000 / (MiB/s) ms.
            "art_seq1m_top_model_c_beyond_a_ms": nt.number(
                1000 / row["model_mib_s"] - 1000 / a_row["model_mib_s"])}


def _article_error_figures(table: pd.DataFrame, top: float) -> dict[str, str]:
    """How far the stream model missed the jobs' rates: in all, by block size, and where
    it missed most."""
    modelled = table[table["model_mib_s"].notna()]
    f = {"art_points": str(len(modelled)),
         "art_max_abs_error_pct": f"{modelled['error_pct'].abs().max():.0f}"}
    a_large = modelled[(modelled["protocol"] == "A") & (modelled["block_kib"] >= 512)]
    if not a_large.empty:
        f["art_A_large_min_error_pct"] = f"{a_large['error_pct'].abs().min():.0f}"
        f["art_A_large_max_error_pct"] = f"{a_large['error_pct'].abs().max():.0f}"
    large = modelled[modelled["block_kib"] >= 512]
    f["art_large_max_abs_error_pct"] = f"{large['error_pct'].abs().max():.0f}"
    small = modelled[modelled["block_kib"] < 512]
    f["art_small_max_abs_error_pct"] = f"{small['error_pct'].abs().max():.0f}"
    f.update(_worst_miss_figures(table, modelled))
    bc_large_top = large[(large["added_rtt_ms"] == top) & large["protocol"].isin(["B", "C"])]
    if not bc_large_top.empty:
        f["art_BC_large_top_min_error_pct"] = f"{bc_large_top['error_pct'].abs().min():.0f}"
        f["art_BC_large_top_max_error_pct"] = f"{bc_large_top['error_pct'].abs().max():.0f}"
    return f


def _worst_miss_figures(table: pd.DataFrame, modelled: pd.DataFrame) -> dict[str, str]:
    """The largest miss, and the stream DRBD's own connection beat or lagged there."""
    worst = modelled.loc[modelled["error_pct"].abs().idxmax()]
    f = {"art_worst_added": f"{worst['added_rtt_ms']:g}",
         "art_worst_error_pct": f"{abs(worst['error_pct']):.0f}"}
    seq_there = table[(table["job"] == "seq-write-1m") & (table["protocol"] == worst["protocol"])
                      & (table["added_rtt_ms"] == worst["added_rtt_ms"])].iloc[0]
    f["art_worst_seq1m_mib_s"] = nt.number(seq_there["mib_s"])
    f["art_worst_link_mib_s"] = nt.number(seq_there["link_mib_s"])
    return f
