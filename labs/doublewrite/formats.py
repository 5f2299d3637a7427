"""The doublewrite page's figures per repetition, formatted as the numbers it quotes.

Pure page code: it reads a recorded run (results and raw logs) and never touches a host.
Each function returns numbers as text for `{glue:text}` (a list of repetitions as "A and
B"); the words around them are the page's, and tests on the shipped run check them.
"""

from __future__ import annotations

import json
from datetime import datetime

import pandas as pd

from labs.book import number_text as nt
from labs.doublewrite.model import MIB
from labs.doublewrite.params import Parameters
from labs.doublewrite.tables import leg_table, pair_table, tps_series
from labs.records import RecordedRun
from labs.tools import mariadb


def _pct(values) -> str:
    return nt.listed([nt.percent(v) for v in values])


def _first_and_second(values, form) -> tuple[str, str]:
    """The first and second repetitions' values as `form` writes them ("n/a" for a run with
    one repetition): the page quotes both, one number each."""
    first, second = ([form(v) for v in list(values)[:2]] + [nt.NA, nt.NA])[:2]
    return first, second


def limit_use(legs: pd.DataFrame, limit_mibps: float) -> pd.Series:
    """Each leg's device write rate during the inserts over the write limit (measured bytes)."""
    return legs["tps"] * legs["device_bytes_per_row"] / (limit_mibps * MIB)


def _pairs(run: RecordedRun, pool: int, limit: int) -> pd.DataFrame:
    pairs = pair_table(run.results)
    return pairs[(pairs["buffer_pool_mib"] == pool) & (pairs["write_limit_mibps"] == limit)
                 ].sort_values("repetition")


def limited_figures(run: RecordedRun, small: int, limit: int) -> dict[str, str]:
    """The small pool on the write-limited device: how fully each leg used the limit (by the
    bytes it really wrote), and how far the ON legs' bytes went past the byte model's."""
    legs = leg_table(run.results)
    legs = legs[(legs["buffer_pool_mib"] == small) & (legs["write_limit_mibps"] == limit)]
    use = {side: limit_use(legs[legs["doublewrite"] == side].sort_values("repetition"), limit)
           for side in ("ON", "OFF")}
    pairs = _pairs(run, small, limit)
    beyond = pairs["bytes_per_row_on"] / pairs["model_bytes_per_row_on"] - 1
    f = {"limited_model_bytes_on": f"{pairs['model_bytes_per_row_on'].mean():,.0f}",
         "limited_model_short": _pct([beyond.mean()])}  # measured over the model, less 1
    f["limited_use_on_rep1"], f["limited_use_on_rep2"] = _first_and_second(use["ON"], nt.percent)
    f["limited_use_off_rep1"], f["limited_use_off_rep2"] = _first_and_second(use["OFF"],
                                                                           nt.percent)
    f["limited_time_ratio_rep1"], f["limited_time_ratio_rep2"] = _first_and_second(
        pairs["elapsed_on_over_off"], lambda r: nt.number(r, 2))
    return f


def latency_figures(run: RecordedRun, small: int, limit: int) -> dict[str, str]:
    """Median, p95, p99 and mean latency per repetition, ON and OFF."""
    pairs = _pairs(run, small, limit)
    f: dict[str, str] = {}
    def ms(digits: int):
        return lambda value: nt.number(value, digits)

    f["limited_p50_on_rep1"], f["limited_p50_on_rep2"] = _first_and_second(
        pairs["latency_p50_on"], ms(2))
    f["limited_p50_off_rep1"], f["limited_p50_off_rep2"] = _first_and_second(
        pairs["latency_p50_off"], ms(2))
    f["limited_p99_on_rep1"], f["limited_p99_on_rep2"] = _first_and_second(
        pairs["latency_p99_on"], ms(0))
    f["limited_p99_off_rep1"], f["limited_p99_off_rep2"] = _first_and_second(
        pairs["latency_p99_off"], ms(0))
    # The mean and the 95th percentile, where most of the time goes: sysbench's own mean
    # (which Little's law ties to the inserts per second: threads / rate).
    legs = leg_table(run.results)
    legs = legs[(legs["buffer_pool_mib"] == small) & (legs["write_limit_mibps"] == limit)]
    on = legs[legs["doublewrite"] == "ON"].sort_values("repetition")
    off = legs[legs["doublewrite"] == "OFF"].sort_values("repetition")
    f["limited_mean_on_rep1"], f["limited_mean_on_rep2"] = _first_and_second(
        on["latency_avg"], ms(1))
    f["limited_mean_off_rep1"], f["limited_mean_off_rep2"] = _first_and_second(
        off["latency_avg"], ms(1))
    f["limited_p95_on_rep1"], f["limited_p95_on_rep2"] = _first_and_second(
        on["latency_p95"], ms(0))
    f["limited_p95_off_rep1"], f["limited_p95_off_rep2"] = _first_and_second(
        off["latency_p95"], ms(0))
    return f


def leg_starts(run: RecordedRun) -> dict[str, datetime]:
    """When each leg's server started (its log's first line)."""
    starts = {}
    for leg in leg_table(run.results)["leg"]:
        lines = mariadb.parse_error_log((run.raw_dir / "bench" / leg / "server.log").read_text())
        starts[leg] = datetime.strptime(" ".join(lines[0].timestamp.split()),
                                        "%Y-%m-%d %H:%M:%S")
    return starts


def large_pool_figures(run: RecordedRun, large: int, limit: int) -> dict[str, str]:
    """The large pool flushed no page during the inserts: what its ON/OFF differences are
    made of (short legs, swings within a leg, order), and how far it stayed from the limit."""
    legs = leg_table(run.results)
    big = legs[legs["buffer_pool_mib"] == large]
    starts = leg_starts(run)
    pairs = pair_table(run.results)
    pairs = pairs[pairs["buffer_pool_mib"] == large]
    first_faster = 0
    for pair in pairs.itertuples():
        both = big[(big["write_limit_mibps"] == pair.write_limit_mibps)
                   & (big["repetition"] == pair.repetition)].set_index("doublewrite")
        first = min(("ON", "OFF"), key=lambda side: starts[both.loc[side, "leg"]])
        second = "OFF" if first == "ON" else "ON"
        first_faster += both.loc[first, "tps"] > both.loc[second, "tps"]
    series = tps_series(run.results)
    series = series[series["setting"].str.startswith(f"buffer pool {large} MiB")]
    limited = big[big["write_limit_mibps"] == limit]
    return {
        "large_legs": str(len(big)),
        "large_pages_written": f"{big['innodb_pages_written'].sum():,.0f}",
        "large_dblwr_pages": f"{big['innodb_dblwr_pages_written'].sum():,.0f}",
        "large_pairs": str(len(pairs)),
        "large_on_faster": str(int((pairs["elapsed_on_over_off"] < 1).sum())),
        "large_first_faster": str(first_faster),
        "large_time_ratio_min": f"{pairs['elapsed_on_over_off'].min():.2f}",
        "large_time_ratio_max": f"{pairs['elapsed_on_over_off'].max():.2f}",
        "large_elapsed_min": f"{big['elapsed_s'].min():.0f}",
        "large_elapsed_max": f"{big['elapsed_s'].max():.0f}",
        "large_tps_second_min": f"{series['tps'].min():,.0f}",
        "large_tps_second_max": f"{series['tps'].max():,.0f}",
        "large_limited_max_mibps": f"{limit_use(limited, limit).max() * limit:.1f}",
    }


def torn_off_figures(run: RecordedRun) -> dict[str, str]:
    """The OFF tear's header and trailer log positions (the exercise and its solution)."""
    info = json.loads((run.raw_dir / "torn" / "dblwr-off" / "pages.json").read_text())
    torn = info["torn"]
    return {"torn_off_header_lsn": str(torn["lsn"]),
            "torn_off_trailer_lsn": str(torn["trailer_lsn_low32"])}


def figures(run: RecordedRun) -> dict[str, str]:
    params = Parameters.of(run)
    small, large = min(params.buffer_pools_mib), max(params.buffer_pools_mib)
    limit = params.write_mibps
    f = limited_figures(run, small, limit)
    f.update(latency_figures(run, small, limit))
    f.update(large_pool_figures(run, large, limit))
    f.update(torn_off_figures(run))
    return f
