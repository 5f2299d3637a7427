"""What the torn-pages pages show: the figures quoted in the text, tables, charts, the panel.

Pure page code (pandas, Altair, the book's plumbing): it reads a recorded run and never
touches a host or a container. `figures(run)` computes every number the lab page quotes
(the words around them are the page's, and tests/test_torn_pages_recorded.py checks them
against the run); `explain_figures()` does the same for the model alone on the explanation
page.
"""

from __future__ import annotations

import math

import pandas as pd

from labs import PROJECT_ROOT
from labs.book import number_text as nt
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.book.tables import wrapping_table
from labs.records import RecordedRun
from labs.torn_pages import charts, model, tables
from labs.torn_pages.burst import burst_figures
from labs.torn_pages.params import Parameters

REFERENCE_DIR = PROJECT_ROOT / "data" / "reference"
# The explanation page's worked example: a table the size of this lab's full profile
# (pgbench scale 16: about 26,000 pages of accounts), one page changed per transaction.
EXAMPLE = {"pages": 26_000, "tps": 1500, "interval_s": 300, "base_bytes": 420,
           "image_bytes": 8192}
# A model within this share of the measurement is called close.
CLOSE = 0.15
# A write-limited disk that took less than this share of its limit was not held back by it.
SATURATED = 0.8


def reference_rds() -> pd.DataFrame:
    return pd.read_csv(REFERENCE_DIR / "rds-optimized-writes.csv")


def settings_chart(results):
    return charts.settings_chart(results)


def burst_chart(results):
    return charts.burst_chart(results)


def comparison_chart(results):
    return charts.comparison_chart(results, reference_rds())


def settings_table(results) -> pd.DataFrame:
    """The settings side by side, measured and modelled, with readable headings."""
    table = tables.settings(results)

    def pair(a, b, digits):
        return [f"{x:.{digits}f} / {y:.{digits}f}" for x, y in zip(a, b, strict=True)]

    out = pd.DataFrame({
        "disk": table["disk"], "setting": table["setting"],
        "TPS on / off": pair(table["tps_on"], table["tps_off"], 0),
        "images per tx, on: measured / model": pair(table["fpi_per_tx_on"],
                                                    table["model_fpi_per_tx_on"], 3),
        "WAL on ÷ off: measured / model": pair(table["wal_on_over_off"],
                                               table["model_wal_on_over_off"], 1),
    })
    if "model_tps_on" in table:
        out["TPS on / off: model"] = [
            "" if pd.isna(a) else f"{a:.0f} / {b:.0f}"
            for a, b in zip(table["model_tps_on"], table["model_tps_off"], strict=True)]
    return out


def settings_figures(run: RecordedRun) -> dict[str, str]:
    table = tables.settings(run.results)
    fast = table[table["disk"] == tables.NO_LIMIT]
    out = _interval_figures(fast)
    out.update(_device_figures(table))
    errors = fast["wal_ratio_error"].abs()
    out["wal_ratio_error_max"] = nt.percent(errors.max(), size_only=True) if len(errors) else nt.NA
    out["wal_ratio_min"] = f"{fast['wal_on_over_off'].min():.1f}"
    out["wal_ratio_max"] = f"{fast['wal_on_over_off'].max():.1f}"
    tps = fast["tps_off_over_on"]
    out["nolimit_tps_min"] = f"{tps.min():.2f}"
    out["nolimit_tps_max"] = f"{tps.max():.2f}"
    out.update(slow_figures(run, table))
    return out


def _steady(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a settings table with a checkpoint_timeout setting (not a forced one)."""
    return table[table["setting"].str.startswith("checkpoint_timeout")]


def _interval_figures(fast: pd.DataFrame) -> dict[str, str]:
    """The shortest and longest checkpoint_timeout on the unlimited disk: images per
    transaction with full-page writes on, measured and modelled ("n/a" with one setting)."""
    steady = _steady(fast)
    if len(steady) < 2:
        return dict.fromkeys(("timeout_short_s", "timeout_long_s", "fpi_short", "fpi_long",
                              "model_fpi_short", "model_fpi_long"), nt.NA)
    short, long = steady.iloc[0], steady.iloc[-1]
    return {"timeout_short_s": f"{short['checkpoint_interval_s']:.0f}",
            "timeout_long_s": f"{long['checkpoint_interval_s']:.0f}",
            "fpi_short": f"{short['fpi_per_tx_on']:.3f}",
            "fpi_long": f"{long['fpi_per_tx_on']:.3f}",
            "model_fpi_short": f"{short['model_fpi_per_tx_on']:.3f}",
            "model_fpi_long": f"{long['model_fpi_per_tx_on']:.3f}"}


def device_errors(table: pd.DataFrame) -> pd.DataFrame:
    """Every leg of a settings table (disk, setting, full_page_writes): the model's bytes
    per transaction over those the loop device took, less 1."""
    return pd.DataFrame([{"disk": row["disk"], "setting": row["setting"],
                          "full_page_writes": side, "error": row[f"device_error_{side}"]}
                         for row in table.to_dict("records") for side in ("on", "off")])


def _device_figures(table: pd.DataFrame) -> dict[str, str]:
    """How many legs' bytes the model counts closely, and by how much it misses the others."""
    errors = device_errors(table)["error"] if len(table) else pd.Series(dtype=float)
    near = errors.abs()[errors.abs() <= CLOSE]
    far = errors[errors.abs() > CLOSE]
    return {"device_legs": nt.count(len(errors)), "device_close_legs": nt.count(len(near)),
            "device_close_max": nt.percent(near.max() if len(near) else None),
            "device_far_legs": nt.count(len(far)),
            "device_far_min": nt.percent(far.abs().min() if len(far) else None),
            "device_far_max": nt.percent(far.abs().max() if len(far) else None)}


def slow_figures(run: RecordedRun, table: pd.DataFrame) -> dict[str, str]:
    """The write-limited disk: its limit, TPS off over on per setting (measured, modelled and
    with recycled WAL segments), and how the model's TPS compares leg by leg."""
    slow = _steady(table[table["disk"] != tables.NO_LIMIT])
    out = {"clients": str(Parameters.of(run).clients)}
    if slow.empty:
        return {**out, **dict.fromkeys(
            ("slow_limit_mibps", "slow_recycled_ratio_min", "slow_recycled_ratio_max",
             "slow_tps_ratio_short",
             "slow_model_ratio_short", "slow_tps_ratio_long", "slow_model_ratio_long",
             "slow_on_wal_error_max"), nt.NA),
            **_slow_leg_figures(pd.DataFrame())}
    short, long = slow.iloc[0], slow.iloc[-1]
    recycled = slow["model_tps_off_over_on_recycled"]
    out.update({
        "slow_limit_mibps": f"{float(slow['write_limit_mibps'].iloc[0]):g}",
        "slow_recycled_ratio_min": f"{recycled.min():.2f}",
        "slow_recycled_ratio_max": f"{recycled.max():.2f}",
        "slow_tps_ratio_short": f"{short['tps_off_over_on']:.2f}",
        "slow_model_ratio_short": f"{short['model_tps_off_over_on']:.2f}",
        "slow_tps_ratio_long": f"{long['tps_off_over_on']:.2f}",
        "slow_model_ratio_long": f"{long['model_tps_off_over_on']:.2f}",
        "slow_on_wal_error_max": nt.percent(
            (slow["model_wal_bytes_per_tx_on"] / slow["wal_bytes_per_tx_on"] - 1).abs().max())})
    out.update(_slow_leg_figures(tables.slow_legs(run.results)))
    return out


SLOW_LEG_FIGURES = ("slow_legs", "slow_busy_legs", "slow_busy_min_share",
                    "slow_off_error_max", "slow_on_below_min", "slow_on_below_max",
                    "slow_on_bytes_min", "slow_on_bytes_max")


def _slow_leg_figures(legs: pd.DataFrame) -> dict[str, str]:
    """The write-limited legs one by one (tables.slow_legs): how many wrote at the limit, and
    how the model's TPS and bytes compare with the measured, with full-page writes off and on."""
    if legs.empty:
        return dict.fromkeys(SLOW_LEG_FIGURES, nt.NA)
    busy = legs[legs["limit_share"] >= SATURATED]
    off, on = legs[legs["full_page_writes"] == "off"], legs[legs["full_page_writes"] == "on"]
    below = -on["tps_error"]  # how far the model's TPS is below the measured
    return {"slow_legs": nt.count(len(legs)), "slow_busy_legs": nt.count(len(busy)),
            "slow_busy_min_share": nt.percent(busy["limit_share"].min() if len(busy) else None),
            "slow_off_error_max": nt.percent(off["tps_error"].abs().max()),
            "slow_on_below_min": nt.percent(below.min()),
            "slow_on_below_max": nt.percent(below.max()),
            "slow_on_bytes_min": nt.percent(on["device_error"].min()),
            "slow_on_bytes_max": nt.percent(on["device_error"].max())}


def slow_legs_table(results: pd.DataFrame) -> pd.DataFrame:
    """The write-limited legs for readers: what the disk took against its limit, and the
    model's TPS beside the measured."""
    legs = tables.slow_legs(results)
    if legs.empty:
        return pd.DataFrame()
    return pd.DataFrame({
        "checkpoint_timeout": legs["setting"].str.removeprefix("checkpoint_timeout "),
        "full-page writes": legs["full_page_writes"],
        "disk took (MiB/s)": legs["device_mibps"].map("{:.2f}".format),
        "share of the limit": legs["limit_share"].map(nt.percent),
        "TPS measured": legs["tps"].map("{:.0f}".format),
        "TPS model": legs["model_tps"].map("{:.0f}".format),
        "model ÷ measured": (1 + legs["tps_error"]).map("{:.2f}".format)})


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the lab page quotes, computed from the run."""
    results = run.results
    out: dict[str, str] = {}
    lab_rows = results[results["workload"] == "lab"].set_index("metric")["value"]
    out["wall_min"] = f"{lab_rows.get('wall_time', math.nan) / 60:.0f}"
    out["load_start"] = nt.number(lab_rows.get("load_average_1min_start", math.nan), 1)
    out["load_end"] = nt.number(lab_rows.get("load_average_1min_end", math.nan), 1)
    out["cpus"] = f"{run.meta['host']['cpu_count']}"
    out.update(settings_figures(run))
    out.update(burst_figures(run))
    ratios = tables.settings(results)
    ref = reference_rds().set_index("doublewrite")["duration_s"]
    out["article_ratio"] = f"{ref['on'] / ref['off']:.2f}"
    lab = ratios[ratios["setting"] != tables.FORCED]["tps_off_over_on"]
    out["lab_tps_ratio_min"] = f"{lab.min():.2f}"
    out["lab_tps_ratio_max"] = f"{lab.max():.2f}"
    torn = tables.torn_page_outcomes(results)
    out["silent_rows_visible"] = f"{int(torn.loc['fpw-off-nochecksums', 'rows_visible'])}"
    out["rows_expected"] = f"{int(torn.loc['fpw-on', 'rows_expected'])}"
    out.update(exercise_figures(run))
    return out


def exercise_figures(run: RecordedRun) -> dict[str, str]:
    """The lab page's exercise answers, computed from the run."""
    table = tables.settings(run.results)
    out: dict[str, str] = {}
    row = table.iloc[0]
    extra = row["wal_bytes_per_tx_on"] - row["wal_bytes_per_tx_off"]
    out["ex_timeout_s"] = f"{row['checkpoint_interval_s']:.0f}"
    out["ex_extra_bytes"] = f"{extra:,.0f}"
    out["ex_fpi_on"] = f"{row['fpi_per_tx_on']:.3f}"
    out["ex_bytes_per_image"] = f"{extra / row['fpi_per_tx_on']:,.0f}"
    out["ex_image_bytes_wal"] = f"{tables.image_bytes(run.results):,.0f}"
    fast = table[(table["disk"] == tables.NO_LIMIT) & (table["setting"] != tables.FORCED)]
    last = fast.iloc[-1]
    extra_last = last["wal_bytes_per_tx_on"] - last["wal_bytes_per_tx_off"]
    out["ex_hour_timeout_s"] = f"{last['checkpoint_interval_s']:.0f}"
    out["ex_hour_gib"] = f"{extra_last * last['tps_on'] * 3600 / 2**30:.1f}"
    legs = tables.legs(run.results)
    on = legs[(legs["setting"] == last["setting"]) & (legs["disk"] == tables.NO_LIMIT)
              & (legs["full_page_writes"] == "on")].iloc[0]
    interval_s = last["checkpoint_interval_s"]
    full = model.leg_images_per_tx(tables.pools(on), last["tps_on"], interval_s, interval_s)
    out["ex_hour_model_fpi"] = f"{full:.3f}"
    # The leg against its interval: shorter, it saw only the expensive start of one. Scaled
    # to the model's images per transaction over a whole interval, the hour's extra WAL.
    out["ex_hour_leg_s"] = f"{on['duration_s']:.0f}"
    out["ex_hour_interval_s"] = f"{interval_s:.0f}"
    out["ex_hour_whole_gib"] = (
        f"{extra_last * full / last['fpi_per_tx_on'] * last['tps_on'] * 3600 / 2**30:.1f}")
    return out


def server_log_lines(run: RecordedRun, variant: str) -> str:
    """The lines of a torn-page variant's server log that report the bad page."""
    log = (run.raw_dir / "torn" / variant / "server.log").read_text().splitlines()
    return "\n".join(line for line in log if "invalid page" in line or "verification" in line)


def explain_figures() -> dict[str, str]:
    """The explanation page's worked example and exercise answers, from the model alone."""
    e = EXAMPLE
    pool = model.PagePool(e["pages"], 1.0)

    def wal_ratio(images: float) -> str:
        wal = model.wal_bytes_per_tx(e["base_bytes"], e["image_bytes"], images)
        return f"{wal / e['base_bytes']:.1f}"

    out = {"ex_pages": f"{e['pages']:,}", "ex_tps": f"{e['tps']:,}",
           "ex_interval_s": f"{e['interval_s']}", "ex_base_bytes": f"{e['base_bytes']}",
           "ex_image_bytes": f"{e['image_bytes']:,}"}
    out["ex_tau_s"] = f"{e['pages'] / e['tps']:.1f}"
    out["ex_ten_percent_s"] = f"{model.burst_seconds(pool, e['tps'], 0.1):.0f}"
    mean = model.leg_images_per_tx(pool, e["tps"], e["interval_s"], e["interval_s"])
    out["ex_mean_images"] = f"{mean:.3f}"
    wal = model.wal_bytes_per_tx(e["base_bytes"], e["image_bytes"], mean)
    out["ex_wal_per_tx"] = f"{wal:,.0f}"
    out["ex_wal_ratio"] = wal_ratio(mean)
    out["ex_wal_mibps"] = f"{wal * e['tps'] / 2**20:.1f}"
    short = model.leg_images_per_tx(pool, e["tps"], 30, 30)
    out["ex_short_mean_images"] = f"{short:.3f}"
    out["ex_short_wal_ratio"] = wal_ratio(short)
    big = model.PagePool(10 * e["pages"], 1.0)
    big_mean = model.leg_images_per_tx(big, e["tps"], e["interval_s"], e["interval_s"])
    out["ex_big_pages"] = f"{10 * e['pages']:,}"
    out["ex_big_tau_s"] = f"{10 * e['pages'] / e['tps']:.0f}"
    out["ex_big_mean_images"] = f"{big_mean:.3f}"
    out["ex_big_wal_ratio"] = wal_ratio(big_mean)
    first_minute = model.images_between(pool, 0, e["tps"] * 60)
    whole = model.touched_pages(pool, e["tps"] * e["interval_s"])
    out["ex_first_minute_images"] = f"{first_minute:,.0f}"
    out["ex_first_minute_share"] = f"{first_minute / whole * 100:.0f} %"
    return out


def explorer():
    return charts.model_explorer(EXAMPLE["base_bytes"], EXAMPLE["image_bytes"])


def provenance(run: RecordedRun) -> pd.DataFrame:
    """Where the run comes from; the lab's command in full, its tools' commands counted
    (they are all in run.json), so the table fits the page."""
    table = run_summary(run)
    commands = run.meta["commands"]
    pgbench_runs = sum(1 for c in commands[1:] if c.startswith("pgbench"))
    table.loc[table[""] == "command", "recorded run"] = (
        f"{commands[0]} (then {pgbench_runs} pgbench commands, listed in run.json)")
    return table


def provenance_table(run: RecordedRun):
    """The provenance table styled so long values wrap instead of running off the page."""
    return wrapping_table(provenance(run))


def panel() -> LabPanel:
    """The live panel of the lab page (needs root and a container engine to run)."""
    return LabPanel(Parameters, fields=("host", "profile", "write_mibps", "seed"),
                    chart=lambda recorded: settings_chart(recorded.results),
                    title="Torn pages: full_page_writes on and off, then a torn page",
                    needs_root=True, defaults={"profile": "quick"})


def headline(run: RecordedRun) -> pd.DataFrame:
    """The run's headline measures for labs.book.compare: per disk, setting and
    full_page_writes, transactions per second and WAL bytes per transaction, each with the
    first-touch model's figure where the page has one (WAL with images; write-limited tps)."""
    from labs.book.compare import headline_table

    rows = []
    for leg in tables.settings(run.results).to_dict("records"):
        setting = leg["setting"].replace("checkpoint_timeout", "timeout")
        for side in ("on", "off"):
            config = f"{setting}, {leg['disk']}, full_page_writes {side}"
            model_wal = leg["model_wal_bytes_per_tx_on"] if side == "on" else None
            model_tps = leg.get(f"model_tps_{side}")
            rows.append({"measure": "transactions per second", "config": config,
                         "value": leg[f"tps_{side}"], "unit": "tps", "better": "higher",
                         "model": model_tps if pd.notna(model_tps) else None})
            rows.append({"measure": "WAL bytes per transaction", "config": config,
                         "value": leg[f"wal_bytes_per_tx_{side}"], "unit": "bytes/tx",
                         "better": "lower", "model": model_wal})
    return headline_table(rows)
