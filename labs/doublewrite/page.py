"""What the doublewrite page shows: figures, tables, charts, provenance and the live panel.

Pure page code (pandas, Altair, the book's plumbing): it reads recorded runs and never
touches a host or a container. `figures(run)` computes the numbers the page quotes; the
words around them are the page's own, and tests/test_doublewrite_recorded.py checks them
against the shipped run.
"""

from __future__ import annotations

import json
import math

import altair as alt
import pandas as pd

from labs import PROJECT_ROOT
from labs.book import number_text as nt
from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.doublewrite import charts, formats
from labs.doublewrite.model import PAGE_BYTES, RowWrites, full_page_image_bytes, pages_for_ratio
from labs.doublewrite.params import Parameters
from labs.doublewrite.tables import (
    leg_table,
    pair_table,
    setting_table,
    template_figures,
    torn_table,
)
from labs.errors import LabError
from labs.records import RecordedRun, RecordError, shipped_run
from labs.tools import mariadb

REFERENCE = PROJECT_ROOT / "data" / "reference" / "rds-optimized-writes.csv"


def reference_rds() -> pd.DataFrame:
    return pd.read_csv(REFERENCE)


def article_ratio() -> float:
    """The article's elapsed time with the doublewrite buffer on over off (122:42 / 58:12)."""
    seconds = reference_rds().set_index("doublewrite")["duration_s"]
    return float(seconds["on"] / seconds["off"])


def _threads(run: RecordedRun) -> int:
    return Parameters.of(run).threads


# --- charts --------------------------------------------------------------------------------

def model_chart(run: RecordedRun) -> alt.TopLevelMixin:
    return charts.model_chart(run.results, article_ratio())


def ratio_chart(run: RecordedRun) -> alt.TopLevelMixin:
    return charts.ratio_chart(run.results, article_ratio())


def legs_chart(run: RecordedRun) -> alt.TopLevelMixin:
    return charts.legs_chart(run.results, _threads(run))


def timeline_chart(run: RecordedRun) -> alt.TopLevelMixin:
    return charts.timeline_chart(run.results)


# --- tables the page prints -----------------------------------------------------------------

def settings_overview(run: RecordedRun) -> pd.DataFrame:
    """Per setting: inserts per second ON and OFF, the ratios, and the model's ratio (the
    bytes per row are in the text and the legs chart; fewer columns keep the table narrow)."""
    table = setting_table(run.results)
    shown = pd.DataFrame({
        "pool": [f"{p} MiB" for p in table["buffer_pool_mib"]],
        "limit": [f"{w} MiB/s" if w else "none" for w in table["write_limit_mibps"]],
        "inserts/s ON": table["tps_on"].map("{:,.0f}".format),
        "inserts/s OFF": table["tps_off"].map("{:,.0f}".format),
        "time ON/OFF": table["elapsed_on_over_off"].map("{:.2f}".format),
        "bytes ON/OFF": table["bytes_on_over_off"].map("{:.2f}".format),
        "model ON/OFF": table["model_ratio"].map("{:.2f}".format),
    })
    return shown.set_index(["pool", "limit"])


TORN_ROWS = {
    "torn_checksum_ok": "torn page's checksum matches (1 yes, 0 no)",
    "doublewrite_copies_of_v1": "intact copies of the new page in the doublewrite area",
    "restart_completed": "server started after the crash",
    "log_recovered_from_doublewrite": "log: page recovered from the doublewrite buffer",
    "log_unable_to_apply_log": "log: unable to apply log to corrupted page",
    "rows_visible": "rows visible (of 48)",
    "rows_new_version": "rows with the updated value",
    "check_table_ok": "CHECK TABLE says OK",
    "force1_started": "with innodb_force_recovery=1: server started",
    "force1_select_error_1877": "with innodb_force_recovery=1: SELECT fails, error 1877",
    "force1_other_rows_updated": "with innodb_force_recovery=1: other table's update kept",
    "force6_started": "with innodb_force_recovery=6: server started",
    "force6_select_error_1877": "with innodb_force_recovery=6: SELECT fails, error 1877",
    "force6_other_rows_updated": "with innodb_force_recovery=6: other table's update kept",
}


def torn_outcomes(run: RecordedRun) -> pd.DataFrame:
    """The torn-page experiment as the page shows it (blank: the step did not apply)."""
    table = torn_table(run.results)
    rows = [(label, *(_cell(table, metric, mode) for mode in ("ON", "OFF")))
            for metric, label in TORN_ROWS.items() if metric in table.index]
    return pd.DataFrame(rows, columns=["", "doublewrite ON", "doublewrite OFF"]).set_index("")


def _cell(table: pd.DataFrame, metric: str, mode: str) -> str:
    value = table.loc[metric, mode] if mode in table.columns else float("nan")
    return "" if value != value else f"{value:.0f}"


def torn_pages(run: RecordedRun, mode: str = "ON") -> pd.DataFrame:
    """What was torn: the old page, the new page, the torn page (header, trailer, checksum)."""
    info = json.loads((run.raw_dir / "torn" / f"dblwr-{mode.lower()}" / "pages.json").read_text())
    rows = []
    for key, label in (("v0_clean_shutdown", "V0: on disk after a clean shutdown"),
                       ("v1_written_home", "V1: written home by the flush"),
                       ("torn", "torn: V1's first 4 KiB + V0's last 12 KiB")):
        page = info[key]
        rows.append({"page": label, "LSN in header": page["lsn"],
                     "LSN in trailer (low 32 bits)": page["trailer_lsn_low32"],
                     "stored CRC-32C": page["stored_checksum"],
                     "computed CRC-32C": page["computed_checksum"],
                     "checksum ok": "yes" if page["checksum_ok"] else "no"})
    return pd.DataFrame(rows).set_index("page")


def server_said(run: RecordedRun, mode: str, file: str = "restart.log") -> str:
    """The lines InnoDB (and the server, when it gives up) wrote about the torn page."""
    text = (run.raw_dir / "torn" / f"dblwr-{mode.lower()}" / file).read_text()
    keep = ("recover", "doublewrite", "corrupt", "Aborting", "force_recovery", "STORAGE ENGINE",
            "Unknown/unsupported")
    lines = [f"[{line.level}] {line.message}" for line in mariadb.parse_error_log(text)
             if any(word in line.message for word in keep)]
    return "\n".join(lines)


# --- full-page images beside the doublewrite buffer ------------------------------------------

def fpw_figures(torn_run: RecordedRun) -> dict[str, float]:
    """PostgreSQL's full-page images as the torn-pages lab measured them on this machine."""
    r = torn_run.results
    rows = r[(r["workload"] == "steady") & r["time_s"].isna()
             & r["metric"].isin(["tps", "wal_bytes_per_tx", "wal_fpi_per_tx"])]
    table = rows.pivot_table(index=["write_limit_mibps", "checkpoint_timeout_s",
                                    "full_page_writes"], columns="metric", values="value")
    fast = table.loc[(0.0, 30.0)]
    limits = sorted(x for x in table.index.get_level_values(0).unique() if x > 0)
    if not limits:
        raise LabError(f"torn-pages run {torn_run.run_id}: no write-limited legs")
    slow = table.loc[(limits[0], 30.0)]
    return {
        "image_bytes": full_page_image_bytes(
            fast.loc["on", "wal_bytes_per_tx"] - fast.loc["off", "wal_bytes_per_tx"],
            fast.loc["on", "wal_fpi_per_tx"]),
        "images_per_tx": fast.loc["on", "wal_fpi_per_tx"],
        "limit_mibps": limits[0],
        "limited_tps_off_over_on": slow.loc["off", "tps"] / slow.loc["on", "tps"],
    }


# --- figures ----------------------------------------------------------------------------------

# The server variables figures() reports (the page quotes the numeric ones; the lab's live
# test reads innodb_flush_method and innodb_checksum_algorithm from the same figures).
QUOTED_SERVER_VARIABLES = ("innodb_checksum_algorithm", "innodb_flush_method",
                           "innodb_flush_log_at_trx_commit", "innodb_io_capacity",
                           "innodb_flush_neighbors")


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the page quotes, computed from the run (and the article's two times)."""
    params = Parameters.of(run)
    settings = setting_table(run.results)
    pairs = pair_table(run.results)
    small, large = min(params.buffer_pools_mib), max(params.buffer_pools_mib)
    limit = params.write_mibps
    f: dict[str, str] = {
        "rows": nt.number(params.rows, 0), "initial_rows": nt.number(params.initial_rows, 0),
        "threads": str(params.threads), "limit": str(limit), "small_pool": str(small),
        "large_pool": str(large), "repetitions": str(params.repetitions),
        "log_file_mib": str(params.log_file_mib),
        "article_ratio": f"{article_ratio():.2f}",
    }
    template = template_figures(run.results)
    f["table_mib"] = nt.number(template["table_bytes"] / 2**20, 0)
    f["pool_over_table"] = nt.number(template["table_bytes"] / 2**20 / small, 1)
    by = settings.set_index(["buffer_pool_mib", "write_limit_mibps"])
    if (small, limit) in by.index:
        f.update(_small_limited_figures(by.loc[(small, limit)]))
    if (small, 0) in by.index:
        f.update(_small_nolimit_figures(by.loc[(small, 0)]))
    if (large, 0) in by.index:
        f.update(_large_nolimit_figures(by.loc[(large, 0)]))
    f.update(_large_bytes_figures(settings, large))
    f.update(_torn_figures(run))
    f.update(_comparison_figures(run, small, limit))
    f.update(_exercise_figures(run, pairs, small, limit))
    f.update(formats.figures(run))
    # The largest throughput ratio (OFF over ON) of any pair: the page sets it beside the
    # article's figure, which the run cannot explain when it stays below 2.
    f["max_tps_ratio"] = nt.number(pairs["tps_off_over_on"].max(), 2)
    f.update(_server_and_host_figures(run))
    return f


def _small_limited_figures(row: pd.Series) -> dict[str, str]:
    """The small buffer pool on the write-limited disk, doublewrite ON beside OFF."""
    batches = row["dblwr_batches_on"]
    f = {"small_limited_tps_on": nt.number(row["tps_on"], 0),
         "small_limited_tps_off": nt.number(row["tps_off"], 0),
         "small_limited_time_ratio": nt.number(row["elapsed_on_over_off"], 2),
         "small_limited_bytes_on": nt.number(row["bytes_per_row_on"], 0),
         "small_limited_bytes_off": nt.number(row["bytes_per_row_off"], 0),
         "small_limited_bytes_ratio": nt.number(row["bytes_on_over_off"], 2),
         "small_limited_model_ratio": nt.number(row["model_ratio"], 2),
         "small_limited_pages_on": nt.number(row["pages_per_row_on"], 2),
         "small_limited_pages_off": nt.number(row["pages_per_row_off"], 2),
         "small_limited_share": nt.percent(row["dblwr_share_on"]),
         "small_limited_writes_on": nt.number(row["writes_on"], 0),
         "small_limited_writes_off": nt.number(row["writes_off"], 0)}
    if batches:  # pages per doublewrite batch (none: nothing went through the buffer)
        f["small_limited_batch_pages"] = nt.number(row["dblwr_pages_on"] / batches, 0)
    if pd.notna(row.get("model_tps_on")):
        f["small_limited_model_tps_on"] = nt.number(row["model_tps_on"], 0)
        f["small_limited_model_tps_off"] = nt.number(row["model_tps_off"], 0)
    return f


def _small_nolimit_figures(row: pd.Series) -> dict[str, str]:
    """The small buffer pool on the unlimited disk, doublewrite ON beside OFF."""
    return {"small_nolimit_time_ratio": nt.number(row["elapsed_on_over_off"], 2),
            "small_nolimit_bytes_ratio": nt.number(row["bytes_on_over_off"], 2),
            "small_nolimit_model_ratio": nt.number(row["model_ratio"], 2),
            "small_nolimit_pages_on": nt.number(row["pages_per_row_on"], 2),
            "small_nolimit_pages_off": nt.number(row["pages_per_row_off"], 2)}


def _large_nolimit_figures(row: pd.Series) -> dict[str, str]:
    """The large buffer pool on the unlimited disk: bytes and redo per row."""
    return {"large_nolimit_bytes_on": nt.number(row["bytes_per_row_on"], 0),
            "large_nolimit_bytes_off": nt.number(row["bytes_per_row_off"], 0),
            "large_nolimit_redo": nt.number(row["redo_bytes_per_row"], 0)}


def _server_and_host_figures(run: RecordedRun) -> dict[str, str]:
    """The server settings the page names, the run's wall time and the host's load."""
    f = {name: server_variable(run, name) for name in QUOTED_SERVER_VARIABLES}
    wall = run.results[run.results["metric"] == "wall_time"]["value"]
    f["wall_min"] = nt.number(float(wall.iloc[0]) / 60, 0) if not wall.empty else "?"
    host = run.meta["host"]
    f["load_before"] = nt.number(host.get("load_average_before", [float("nan")])[0], 1)
    f["load_after"] = nt.number(host.get("load_average_after", [float("nan")])[0], 1)
    f["cpus"] = str(host.get("cpu_count", "?"))
    return f


def _large_bytes_figures(settings: pd.DataFrame, large: int) -> dict[str, str]:
    """How far apart the large pool's bytes per row were ON and OFF without a limit, in whole
    per cent rounded up (at least 1)."""
    by = settings.set_index(["buffer_pool_mib", "write_limit_mibps"])
    if (large, 0) not in by.index:
        return {}
    apart_pct = abs(by.loc[(large, 0), "bytes_on_over_off"] - 1) * 100
    return {"large_bytes_apart": f"{max(1, math.ceil(apart_pct))} %"}


def _torn_figures(run: RecordedRun) -> dict[str, str]:
    table = torn_table(run.results)
    info = json.loads((run.raw_dir / "torn" / "dblwr-on" / "pages.json").read_text())
    on = table["ON"]
    f = {
        "torn_first_changed": nt.number(on["changed_bytes_first_part"], 0),
        "torn_rest_changed": nt.number(on["changed_bytes_rest"], 0),
        "torn_v0_lsn": str(info["v0_clean_shutdown"]["lsn"]),
        "torn_v1_lsn": str(info["v1_written_home"]["lsn"]),
        "torn_copy_page": ", ".join(str(c["ibdata1_page"]) for c in info["doublewrite_copies"]
                                    ) or "none",
        "torn_on_rows": nt.number(on.get("rows_visible", float("nan")), 0),
        "torn_on_new_rows": nt.number(on.get("rows_new_version", float("nan")), 0),
        "torn_on_restart_s": nt.number(on.get("restart_s", float("nan")), 1),
        "torn_off_exit": nt.number(table["OFF"]["restart_exit_code"], 0),
    }
    return f


def _comparison_figures(run: RecordedRun, small: int, limit: int) -> dict[str, str]:
    by = setting_table(run.results).set_index(["buffer_pool_mib", "write_limit_mibps"])
    limited = by.loc[(small, limit)]
    f = {"dw_copy_bytes": nt.number(PAGE_BYTES, 0),
         "dw_copies_per_row": nt.number(limited["pages_per_row_on"] * limited["dblwr_share_on"], 2),
         "dw_limited_ratio": nt.number(limited["tps_off"] / limited["tps_on"], 2)}
    try:
        fpw = fpw_figures(shipped_run("torn-pages"))
    except (RecordError, KeyError, LabError):
        fpw = None
    f["fpw_image_bytes"] = nt.number(fpw["image_bytes"], 0) if fpw else "?"
    f["fpw_images_per_tx"] = nt.number(fpw["images_per_tx"], 2) if fpw else "?"
    f["fpw_limit"] = nt.number(fpw["limit_mibps"], 0) if fpw else "?"
    f["fpw_limited_ratio"] = nt.number(fpw["limited_tps_off_over_on"], 2) if fpw else "?"
    return f


def _exercise_figures(run: RecordedRun, pairs: pd.DataFrame, small: int, limit: int
                      ) -> dict[str, str]:
    first = pairs[(pairs["buffer_pool_mib"] == small) & (pairs["write_limit_mibps"] == limit)
                  ].iloc[0]
    every = RowWrites(first["pages_per_row_off"], 1.0, first["redo_bytes_per_row"])
    predicted_on = first["tps_off"] / first["model_ratio"]
    f = {"ex_pages_off": nt.number(first["pages_per_row_off"], 3),
         "ex_redo": nt.number(first["redo_bytes_per_row"], 0),
         "ex_share": f"{first['dblwr_share_on']:.2f}",
         "ex_tps_off": nt.number(first["tps_off"], 0), "ex_tps_on": nt.number(first["tps_on"], 0),
         "ex_ratio_every": nt.number(every.bytes_ratio(), 3),
         "ex_ratio_share": nt.number(first["model_ratio"], 3),
         "ex_pred_tps_on": nt.number(predicted_on, 0),
         "ex_pred_error": nt.percent((first["tps_on"] - predicted_on) / first["tps_on"],
                                     signed=True),
         "ex_pages_for_10pct": nt.number(pages_for_ratio(1.1, 1.0, first["redo_bytes_per_row"]), 4),
         "ex_rows_per_page_10pct": nt.number(1 / pages_for_ratio(1.1, 1.0,
                                                          first["redo_bytes_per_row"]), 0)}
    return f


def server_variable(run: RecordedRun, name: str) -> str:
    """A server variable as the first leg's server reported it (SHOW GLOBAL VARIABLES)."""
    path = run.raw_dir / "bench" / "server-variables.json"
    return str(json.loads(path.read_text()).get(name, "?"))


def _first_limited_pair(run: RecordedRun) -> pd.Series:
    params = Parameters.of(run)
    pairs = pair_table(run.results)
    return pairs[(pairs["buffer_pool_mib"] == min(params.buffer_pools_mib))
                 & (pairs["write_limit_mibps"] == params.write_mibps)].iloc[0]


def exercise_predict(run: RecordedRun) -> str:
    """Exercise: the ON leg's inserts per second predicted from the OFF leg, two ways."""
    pair = _first_limited_pair(run)
    lines = []
    for label, share in (("every page", 1.0), ("measured share", pair["dblwr_share_on"])):
        model = RowWrites(pair["pages_per_row_off"], share, pair["redo_bytes_per_row"])
        predicted = pair["tps_off"] / model.bytes_ratio()
        lines.append(f"{label} (s = {share:.2f}): ratio {model.bytes_ratio():.3f}, ON predicted "
                     f"{predicted:,.0f} inserts/s, measured {pair['tps_on']:,.0f} "
                     f"({nt.percent((pair['tps_on'] - predicted) / predicted, signed=True)})")
    return "\n".join(lines)


def exercise_operations(run: RecordedRun) -> str:
    """Exercise: write operations and bytes on the device, ON against OFF."""
    params = Parameters.of(run)
    legs = leg_table(run.results)
    chosen = legs[(legs["buffer_pool_mib"] == min(params.buffer_pools_mib))
                  & (legs["write_limit_mibps"] == params.write_mibps)
                  & (legs["repetition"] == 1)].set_index("doublewrite")
    lines = ["repetition 1 (the text above gives the mean of both repetitions)"]
    for side in ("ON", "OFF"):
        leg = chosen.loc[side]
        lines.append(f"{side}: {leg['device_writes']:,.0f} write operations, "
                     f"{leg['device_write_bytes'] / 2**20:,.0f} MiB written")
    on, off = chosen.loc["ON"], chosen.loc["OFF"]
    lines.append(f"ON/OFF: operations x{on['device_writes'] / off['device_writes']:.2f}, "
                 f"bytes x{on['device_write_bytes'] / off['device_write_bytes']:.2f}")
    lines.append(f"doublewrite batches: {on['innodb_dblwr_writes']:,.0f}, "
                 f"{on['innodb_dblwr_pages_written'] / on['innodb_dblwr_writes']:.0f} pages each")
    return "\n".join(lines)


def exercise_ten_percent(run: RecordedRun) -> str:
    """Exercise: page writes per row at which doublewrite costs 10 %."""
    redo = _first_limited_pair(run)["redo_bytes_per_row"]
    pages = pages_for_ratio(1.1, 1.0, redo)
    return (f"r = {redo:,.0f} bytes: p = {pages:.4f} page writes per row, "
            f"one page flush per {1 / pages:,.0f} rows")


def force_recovery_select(run: RecordedRun, level: int = 1) -> str:
    """What a SELECT on the torn table and on the other table returned under forced recovery."""
    path = run.raw_dir / "torn" / "dblwr-off" / f"force-recovery-{level}-rows.json"
    rows = json.loads(path.read_text())

    def answer(query: str) -> str:
        result = rows[query]
        lines = result["output"].splitlines()
        if result["exit"] != 0:  # the client echoes the statement; keep its error line
            return next((line for line in lines if line.startswith("ERROR")), lines[-1])
        return lines[-1].replace("\t", "  ")

    return (f"SELECT COUNT(*) FROM lab.torn_t\n  {answer('count')}\n"
            f"CHECK TABLE lab.torn_t\n  {answer('check')}\n"
            f"SELECT COUNT(*), MIN(LEFT(v, 1)) FROM lab.other_t\n  {answer('other')}")


# --- provenance and the panel -------------------------------------------------------------------

def provenance(run: RecordedRun) -> pd.DataFrame:
    """Where a recorded run came from (labs.book.provenance), with the load the lab read on
    its own host at the start and end when that host is not the machine that ran it."""
    table = run_summary(run)
    host = run.meta["host"]
    before, after = host.get("load_average_before"), host.get("load_average_after")
    if before and after and Parameters.of(run).host != "local":
        table.loc[len(table)] = ["lab host's load (1-minute average, start / end)",
                                 f"{before[0]:.2f} / {after[0]:.2f}"]
    return table


def panel() -> LabPanel:
    """The live panel of the page (needs root and a container engine to run)."""
    return LabPanel(Parameters, fields=("host", "profile", "write_mibps", "seed"),
                    chart=lambda recorded: charts.ratio_chart(recorded.results, article_ratio()),
                    title="InnoDB doublewrite ON and OFF, then a torn page",
                    needs_root=True, defaults={"profile": "quick"})


def headline(run: RecordedRun) -> pd.DataFrame:
    """The run's headline measures for labs.book.compare: per setting and doublewrite ON/OFF,
    inserts per second and device bytes per row, with the byte model's figure for ON and,
    on a write-limited device, the model's inserts per second (limit / bytes per row)."""
    from labs.book.compare import headline_table

    rows = []
    for setting in setting_table(run.results).to_dict("records"):
        for side in ("on", "off"):
            config = f"{setting['setting']}, doublewrite {side.upper()}"
            model_tps = setting.get(f"model_tps_{side}")
            rows.append({"measure": "inserts per second", "config": config,
                         "value": setting[f"tps_{side}"], "unit": "tps", "better": "higher",
                         "model": model_tps if pd.notna(model_tps) else None})
            rows.append({"measure": "device bytes per row", "config": config,
                         "value": setting[f"bytes_per_row_{side}"], "unit": "bytes/row",
                         "better": "lower",
                         "model": setting["model_bytes_per_row_on"] if side == "on" else None})
    return headline_table(rows)
