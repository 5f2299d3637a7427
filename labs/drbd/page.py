"""What the DRBD lab page shows: the recorded run, each measurement beside the model.

The model (labs/models/drbd.py) takes its inputs from the same run, never from the text:

- a write on DRBD with its peer disconnected is the local write (DRBD's own cost included);
- the peer's disk write is fio on the peer's own disk, measured before DRBD started;
- the round trip is ping's median over the link at that point of the sweep;
- the time to hand a write to the network at all is protocol A's median at the smallest
  added round trip (the one number the model takes from DRBD's own measurements: under an
  emulated CPU it is far from 0).

A write followed by fdatasync waits twice (the write, then the flush DRBD passes on to the
peer under B and C), so its model is the write's model plus the flush's, each with the
round trip. Pure page code: records and models, never the VMs.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
from labs.book.tables import wrapping_table
from labs.drbd.params import PING_COUNT, Parameters
from labs.models import drbd as model
from labs.records import RecordedRun, run_summary

PROTOCOL_COLOURS = alt.Scale(domain=["A", "B", "C"], range=["#009E73", "#E69F00", "#0072B2"])
ARTICLE_RATIOS_PCT = {"one zone": 62.5, "across zones": 26.9}  # data/reference/drbd-article.csv
CLIENTS = 10  # pgbench -c 10 (labs/drbd/run.py)


def _wide(run: RecordedRun, workloads: list[str], keys: list[str]) -> pd.DataFrame:
    """The rows of these workloads, one per config, metrics as columns, with `keys`."""
    rows = run.results[run.results["workload"].isin(workloads)]
    table = rows.pivot_table(index=["config", "workload"], columns="metric",
                             values="value").reset_index()
    table.columns.name = None
    present = [k for k in keys if k in rows.columns]
    dims = rows.drop_duplicates(["config", "workload"])[["config", "workload", *present]]
    return table.merge(dims, on=["config", "workload"], how="left")


def ping_results(run: RecordedRun) -> pd.DataFrame:
    return _wide(run, ["ping"], ["added_rtt_ms"])


def _local(fio: pd.DataFrame, config: str, variant: str) -> pd.Series:
    rows = fio[(fio["config"] == config) & (fio["variant"] == variant)]
    if len(rows) != 1:
        raise KeyError(f"{config} {variant}: {len(rows)} rows")
    return rows.iloc[0]


def send_ms(table: pd.DataFrame, variant: str, part: str = "write_p50_ms") -> float:
    """The model's one number fitted from the run: the time to hand a write to the network,
    read as protocol A's median at the smallest added round trip (A waits for nothing else).
    0 when the run measured no protocol A."""
    rows = table[(table["protocol"] == "A") & (table["variant"] == variant)]
    if rows.empty:
        return 0.0
    return float(rows.sort_values("added_rtt_ms").iloc[0][part])


def _predict(protocol: str, local: pd.Series, peer: pd.Series, rtt_ms: float,
             sends: dict[str, float], parts: tuple[str, ...]) -> float:
    return sum(model.write_latency_ms(protocol, local_write_ms=local[part],
                                      peer_write_ms=peer[part], rtt_ms=rtt_ms,
                                      send_ms=sends[part]) for part in parts)


def _parts(variant: str) -> tuple[str, ...]:
    return ("write_p50_ms", "sync_p50_ms") if variant == "fdatasync" else ("write_p50_ms",)


def fio_results(run: RecordedRun) -> pd.DataFrame:
    """One row per fio measurement; DRBD rows carry the model and its error."""
    table = _wide(run, ["fio-4k-direct", "fio-4k-fdatasync"],
                  ["variant", "protocol", "added_rtt_ms", "rtt_ms"])
    peer_host = run.meta["parameters"]["peer"]
    sends = {variant: {part: send_ms(table, variant, part) for part in _parts(variant)}
             for variant in ("direct", "fdatasync")}
    models = []
    for row in table.itertuples():
        if row.protocol not in model.PROTOCOLS:
            models.append(float("nan"))
            continue
        local = _local(table, "drbd-disconnected", row.variant)
        peer = _local(table, f"local-{peer_host}", row.variant)
        models.append(_predict(row.protocol, local, peer, row.rtt_ms, sends[row.variant],
                               _parts(row.variant)))
    table["model_ms"] = models
    # The measured figure the model is held to: a direct write's median latency; for a write
    # with fdatasync, the median write plus the median sync.
    table["measured_ms"] = table["write_p50_ms"] + table.get("sync_p50_ms", 0).fillna(0)
    table["error_pct"] = 100 * (table["measured_ms"] / table["model_ms"] - 1)
    table.attrs["send_ms"] = sends
    return table


def pgbench_results(run: RecordedRun) -> pd.DataFrame:
    """TPS per configuration; the model from the local run's work per transaction."""
    table = _wide(run, ["pgbench"], ["protocol", "added_rtt_ms", "rtt_ms"])
    fio = fio_results(run)
    local = table[table["config"] == "local"].iloc[0]
    local_commit = _local(fio, "drbd-disconnected", "fdatasync")
    local_commit_ms = local_commit["measured_ms"]
    cpu_ms = model.cpu_ms_per_transaction(local_tps=local["tps"], clients=CLIENTS,
                                          local_commit_ms=local_commit_ms)
    peer = _local(fio, f"local-{run.meta['parameters']['peer']}", "fdatasync")
    models = []
    for row in table.itertuples():
        if row.protocol not in model.PROTOCOLS:
            models.append(local["tps"])
            continue
        commit_ms = _predict(row.protocol, local_commit, peer, row.rtt_ms,
                             fio.attrs["send_ms"]["fdatasync"], _parts("fdatasync"))
        models.append(model.pgbench_tps(clients=CLIENTS, cpu_ms=cpu_ms, commit_ms=commit_ms))
    table["model_tps"] = models
    table["ratio_pct"] = 100 * table["tps"] / local["tps"]
    table["model_ratio_pct"] = 100 * table["model_tps"] / local["tps"]
    table["error_pct"] = 100 * (table["tps"] / table["model_tps"] - 1)
    table.attrs["cpu_ms"] = cpu_ms
    table.attrs["local_commit_ms"] = local_commit_ms
    return table


def resync_results(run: RecordedRun) -> pd.DataFrame:
    table = _wide(run, ["resync"], [])
    table["mib_s"] = table["resync_bytes"] / 2**20 / table["resync_s"]
    return table


def drill_results(run: RecordedRun) -> pd.DataFrame:
    table = _wide(run, ["drill"], ["protocol", "added_rtt_ms", "rtt_ms"])
    table["resync_mib_s"] = table["resync_bytes"] / 2**20 / table["resync_s"]
    return table


def _ms(value: float) -> str:
    return f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def _pct(value: float) -> str:
    text = f"{value:+.0f}"
    return "0" if text in ("+0", "-0") else text


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the lab page quotes, computed from the run."""
    params = run.meta["parameters"]
    host, peer = params["host"], params["peer"]
    fio = fio_results(run)
    pings = ping_results(run).set_index("config")
    top = max(params["added_rtt_ms"])
    f = {"primary": host, "peer": peer, "top_added": f"{top:g}",
         "added_list": ", ".join(f"{a:g}" for a in params["added_rtt_ms"]),
         "fio_s": str(params["fio_s"]), "pgbench_s": str(params["pgbench_s"]),
         "drill_s": str(params["drill_s"]), "ping_count": str(PING_COUNT),
         "link_rtt_ms": _ms(pings.loc["link", "rtt_p50_ms"]),
         "link_rtt_p99_ms": _ms(pings.loc["link", "rtt_p99_ms"])}
    for name, config in (("local", f"local-{host}"), ("peer", f"local-{peer}"),
                         ("disc", "drbd-disconnected")):
        direct, synced = _local(fio, config, "direct"), _local(fio, config, "fdatasync")
        f[f"{name}_p50_ms"] = _ms(direct["write_p50_ms"])
        f[f"{name}_sync_ms"] = _ms(synced["measured_ms"])
    direct = fio[(fio["variant"] == "direct") & fio["protocol"].isin(model.PROTOCOLS)]
    at_top = direct[direct["added_rtt_ms"] == top].set_index("protocol")
    f["top_rtt_ms"] = _ms(at_top["rtt_ms"].iloc[0])
    for protocol in at_top.index:
        f[f"top_{protocol}_p50_ms"] = _ms(at_top.loc[protocol, "write_p50_ms"])
        f[f"top_{protocol}_model_ms"] = _ms(at_top.loc[protocol, "model_ms"])
    modelled = fio[fio["model_ms"].notna()]
    f["max_abs_error_pct"] = f"{modelled['error_pct'].abs().max():.0f}"
    f["points"] = str(len(modelled))
    tps = pgbench_results(run)
    c = tps[tps["protocol"] == "C"].sort_values("added_rtt_ms")
    f["local_tps"] = f"{tps[tps['config'] == 'local']['tps'].iloc[0]:,.0f}"
    f["tps_ratio_first_pct"] = f"{c['ratio_pct'].iloc[0]:.0f}"
    f["tps_ratio_last_pct"] = f"{c['ratio_pct'].iloc[-1]:.0f}"
    f["tps_max_abs_error_pct"] = f"{tps['error_pct'].abs().max():.0f}"
    f["cpu_ms"] = _ms(tps.attrs["cpu_ms"])
    drill = drill_results(run).set_index("protocol")
    for protocol in drill.index:
        row = drill.loc[protocol]
        f[f"drill_{protocol}_acked"] = f"{row['acknowledged']:,.0f}"
        f[f"drill_{protocol}_lost"] = f"{row['lost']:,.0f}"
        f[f"drill_{protocol}_noticed_s"] = f"{row['peer_noticed_s']:.0f}"
        f[f"drill_{protocol}_resync_s"] = f"{row['resync_s']:.0f}"
        f[f"drill_{protocol}_resync_mib"] = f"{row['resync_bytes'] / 2**20:,.0f}"
    return f


# --- charts ----------------------------------------------------------------------------------

def latency_chart(run: RecordedRun) -> alt.LayerChart:
    """Write latency by measured round trip, per protocol: points measured, lines the model;
    a menu picks plain O_DIRECT writes or writes each followed by fdatasync."""
    table = fio_results(run)
    table = table[table["protocol"].isin(model.PROTOCOLS)].copy()
    variant = alt.param(name="variant", value="direct", bind=alt.binding_select(
        options=["direct", "fdatasync"], name="writes: "))
    tooltip = ["protocol:N", alt.Tooltip("added_rtt_ms:Q", title="added RTT (ms)"),
               alt.Tooltip("rtt_ms:Q", title="measured RTT (ms)", format=".2f"),
               alt.Tooltip("measured_ms:Q", title="measured (ms)", format=".2f"),
               alt.Tooltip("model_ms:Q", title="model (ms)", format=".2f"),
               alt.Tooltip("error_pct:Q", title="error %", format="+.0f")]
    x = alt.X("rtt_ms:Q", title="round trip measured on the link (ms)")
    colour = alt.Color("protocol:N", scale=PROTOCOL_COLOURS, legend=alt.Legend(orient="bottom"))
    base = alt.Chart(table).transform_filter(alt.datum.variant == variant)
    measured = base.mark_point(filled=True, size=70).encode(
        x=x, y=alt.Y("measured_ms:Q", title="write latency, median (ms)"), color=colour,
        tooltip=tooltip)
    predicted = base.mark_line(strokeDash=[5, 3]).encode(x=x, y="model_ms:Q", color=colour,
                                                          tooltip=tooltip)
    return alt.layer(predicted, measured).add_params(variant).properties(
        width=460, height=300, title={"text": "4 KiB writes on DRBD, queue depth 1",
                                      "subtitle": "points: measured; dashed: the model"})


def pgbench_chart(run: RecordedRun) -> alt.LayerChart:
    """pgbench TPS as a share of the local disk's, by round trip, beside the model and the
    article's two ratios."""
    table = pgbench_results(run)
    table = table[table["protocol"].isin(model.PROTOCOLS)]
    x = alt.X("rtt_ms:Q", title="round trip measured on the link (ms)")
    colour = alt.Color("protocol:N", scale=PROTOCOL_COLOURS, legend=alt.Legend(orient="bottom"))
    tooltip = ["protocol:N", alt.Tooltip("rtt_ms:Q", title="RTT (ms)", format=".2f"),
               alt.Tooltip("tps:Q", format=",.0f"),
               alt.Tooltip("ratio_pct:Q", title="% of local", format=".0f"),
               alt.Tooltip("model_ratio_pct:Q", title="model %", format=".0f")]
    measured = alt.Chart(table).mark_point(filled=True, size=70).encode(
        x=x, y=alt.Y("ratio_pct:Q", title="TPS, % of the local disk",
                     scale=alt.Scale(domain=[0, 110])), color=colour, tooltip=tooltip)
    c_only = table[table["protocol"] == "C"]
    predicted = alt.Chart(c_only).mark_line(strokeDash=[5, 3]).encode(
        x=x, y="model_ratio_pct:Q", color=colour, tooltip=tooltip)
    article = pd.DataFrame([{"label": f"article, {k}: {v} %", "pct": v}
                            for k, v in ARTICLE_RATIOS_PCT.items()])
    rules = alt.Chart(article).mark_rule(color="#999999", strokeDash=[2, 2]).encode(y="pct:Q")
    labels = alt.Chart(article).mark_text(align="right", dy=-6, color="#666666").encode(
        y="pct:Q", text="label:N", x=alt.value(455))
    return alt.layer(rules, labels, predicted, measured).properties(
        width=460, height=300, title={"text": "pgbench, 10 clients, on DRBD",
                                      "subtitle": "points: measured; dashed: the model (C)"})


def chart(run: RecordedRun) -> alt.LayerChart:
    """The panel's chart: write latency by round trip."""
    return latency_chart(run)


# --- tables, headline, provenance, panel ----------------------------------------------------

def drill_table(run: RecordedRun) -> pd.DataFrame:
    table = drill_results(run)
    return pd.DataFrame({
        "protocol": table["protocol"],
        "round trip (ms)": table["rtt_ms"].map(_ms),
        "commits acknowledged": table["acknowledged"].map("{:,.0f}".format),
        "found on the survivor": table["found"].map("{:,.0f}".format),
        "lost": table["lost"].map("{:,.0f}".format),
        "peer noticed after (s)": table["peer_noticed_s"].map("{:.0f}".format),
        "resync (MiB in s)": [f"{b / 2**20:,.0f} in {s:.0f}"
                              for b, s in zip(table["resync_bytes"], table["resync_s"],
                                              strict=True)],
        "disks match": table["disks_match"].map({1.0: "yes", 0.0: "no"}),
    })


def headline(run: RecordedRun) -> pd.DataFrame:
    """The run's headline measures for labs.book.compare, each beside the model."""
    from labs.book.compare import headline_table

    fio = fio_results(run)
    rows = []
    first = min(run.meta["parameters"]["added_rtt_ms"])
    direct = fio[(fio["variant"] == "direct") & (fio["added_rtt_ms"] == first)
                 & fio["protocol"].isin(model.PROTOCOLS)]
    for row in direct.itertuples():
        rows.append({"measure": f"4 KiB write p50 on DRBD, +{first:g} ms", "config": row.protocol,
                     "value": row.measured_ms, "unit": "ms", "better": "lower",
                     "model": row.model_ms})
    tps = pgbench_results(run)
    for row in tps[tps["config"] == "local"].itertuples():
        rows.append({"measure": "pgbench TPS, 10 clients", "config": "local disk",
                     "value": row.tps, "unit": "tps", "better": "higher", "model": None})
    c = tps[(tps["protocol"] == "C") & (tps["added_rtt_ms"] == first)]
    for row in c.itertuples():
        rows.append({"measure": "pgbench TPS, 10 clients", "config": f"C, +{first:g} ms",
                     "value": row.tps, "unit": "tps", "better": "higher",
                     "model": row.model_tps})
    return headline_table(rows)


def provenance(run: RecordedRun) -> pd.DataFrame:
    table = run_summary(run)
    commands = run.meta["commands"]
    table.loc[table[""] == "command", "recorded run"] = (
        f"{commands[0]} (then {len(commands) - 1} commands in the two VMs, listed in run.json)")
    return table


def provenance_table(run: RecordedRun):
    return wrapping_table(provenance(run))


def panel() -> LabPanel:
    # needs_root: the lab VMs run from root's image cache (`sudo ... vm build` / `vm up`).
    return LabPanel(Parameters, fields=("host", "peer", "profile", "seed"), chart=chart,
                    title="DRBD between two lab VMs", defaults={"profile": "quick"},
                    needs_root=True)
