"""The burst after a forced checkpoint, as the torn-pages lab page quotes it: the windows
the page averages images per transaction over (the leg's start, just before and after the
checkpoint's redo point, its end), and the figures measured and modelled in each.

Pure page code: it reads a recorded run and never touches a host.
"""

from __future__ import annotations

import math

import pandas as pd

from labs.book import number_text as nt
from labs.records import RecordedRun
from labs.torn_pages import tables


def burst_legs(run: RecordedRun) -> dict[str, object]:
    """The forced-checkpoint legs: windows at the start, before and after the checkpoint."""
    table = tables.intervals(run.results)
    marks = tables.forced_checkpoints(run.results)
    fresh = table[(table["workload"] == "forced-checkpoint")
                  & (table["full_page_writes"] == "on")]
    replay = table[table["workload"] == "forced-checkpoint-replay"]
    off = table[(table["workload"] == "forced-checkpoint")
                & (table["full_page_writes"] == "off")]
    mark = marks[(marks["workload"] == "forced-checkpoint") & (marks["full_page_writes"] == "on")]
    # Interval boundaries are kept to 0.01 s; the redo point is one of them.
    redo_at = round(float(mark["forced_checkpoint_redo_at"].iloc[0]), 2)
    end = float(fresh["time_s"].max())
    # Wide enough to hold at least one sample interval, at most 3 s.
    lengths = fresh["time_s"] - fresh["inspected_interval_start"]
    width = max(min(3.0, redo_at / 4), 1.2 * float(lengths.median()))
    return {"fresh": fresh, "replay": replay, "off": off, "redo_at": redo_at, "end": end,
            "width": width}


def burst_windows(w: dict[str, object]) -> dict[str, tuple[float, float, str]]:
    """The four windows the page averages over: the leg's first seconds, the seconds just
    before and just after the checkpoint's redo point, and the leg's last seconds. Each grows
    away from the redo point (or into the leg) if it holds no counted interval."""
    width, redo_at, end = w["width"], w["redo_at"], w["end"]
    return {"start": (0, width, "later"), "before": (redo_at - width, redo_at, "earlier"),
            "after": (redo_at, redo_at + width, "later"), "end": (end - width, end, "earlier")}


def burst_figures(run: RecordedRun) -> dict[str, str]:
    w = burst_legs(run)
    fresh, replay, redo_at, width = w["fresh"], w["replay"], w["redo_at"], w["width"]
    windows = burst_windows(w)
    out: dict[str, str] = {"burst_window_s": f"{width:.1f}", "burst_redo_at_s": f"{redo_at:.1f}"}
    lengths = pd.concat([w["fresh"], w["replay"], w["off"]])
    lengths = lengths["time_s"] - lengths["inspected_interval_start"]
    out["burst_interval_s"] = f"{lengths.median():.1f}"
    out.update(_burst_windows(fresh, windows))
    out.update(_burst_totals(fresh))
    out.update(_burst_leg_figures(run, fresh))
    out.update(_stats_lag_figures(fresh))
    start_pages = tables.window_mean(fresh, "accounts_pages_per_tx", 0, width, "later")
    out["fresh_pages_per_tx"] = nt.number(start_pages, 2)
    # Before the checkpoint: accounts pages changed per transaction (more than one means
    # another writer besides pgbench's updates, such as VACUUM, was changing pages).
    out["before_pages_per_tx"] = nt.number(
        tables.window_mean(fresh, "accounts_pages_per_tx", *windows["before"]), 2)
    legs = tables.legs(run.results)
    out["off_legs"] = str(int((legs["full_page_writes"] == "off").sum()))
    # With full_page_writes off, PostgreSQL still writes the few images it forces whatever
    # the setting (a free-space map's last page when VACUUM shortens a table, with checksums).
    out["off_images"] = nt.count(legs.loc[legs["full_page_writes"] == "off", "wal_fpi"].sum())
    out["on_images"] = nt.count(legs.loc[legs["full_page_writes"] == "on", "wal_fpi"].sum())
    table = tables.intervals(run.results)
    out["burst_few_intervals"] = str(int(table["few_commits"].sum())) if len(table) else "0"
    out["burst_intervals"] = str(len(table))
    out.update(_replay_figures(replay, width, redo_at, start_pages))
    return out


def _window(fresh: pd.DataFrame, window: tuple[float, float, str]) -> tuple[str, str, str]:
    """Images per transaction in one window, measured and modelled, and how far the model is
    from the measurement (the page says in which direction)."""
    measured = tables.window_mean(fresh, "fpi_per_tx", *window)
    modelled = tables.window_mean(fresh, "model_fpi_per_tx", *window)
    error = modelled / measured - 1 if measured else math.nan
    return nt.number(measured, 2), nt.number(modelled, 2), nt.percent(error, size_only=True)


def _burst_windows(fresh: pd.DataFrame, windows: dict[str, tuple[float, float, str]]
                   ) -> dict[str, str]:
    """The four windows of the leg (its start, before and after the forced CHECKPOINT, its
    end): measured, modelled and the model's error in each."""
    start, before = _window(fresh, windows["start"]), _window(fresh, windows["before"])
    after, end = _window(fresh, windows["after"]), _window(fresh, windows["end"])
    return {"burst_start_fpi": start[0], "burst_start_model": start[1],
            "burst_start_error": start[2],
            "burst_before_fpi": before[0], "burst_before_model": before[1],
            "burst_before_error": before[2],
            "burst_after_fpi": after[0], "burst_after_model": after[1],
            "burst_after_error": after[2],
            "burst_end_fpi": end[0], "burst_end_model": end[1], "burst_end_error": end[2]}


def _burst_totals(fresh: pd.DataFrame) -> dict[str, str]:
    """The images of the whole leg, counted in its WAL and modelled."""
    total_measured = float(fresh["inspected_fpi"].sum())
    total_model = float((fresh["model_fpi_per_tx"] * fresh["inspected_commits"]).sum())
    return {"burst_total_measured": f"{total_measured:,.0f}",
            "burst_total_model": f"{total_model:,.0f}",
            "burst_total_error": nt.percent(total_model / total_measured - 1 if total_measured else
                                      math.nan, size_only=True)}


def _burst_leg_figures(run: RecordedRun, fresh: pd.DataFrame) -> dict[str, str]:
    """The forced-checkpoint leg's table size, HOT share and pace (and the replayed leg's
    HOT share), the inputs of the model's burst."""
    out = {}
    leg = tables.legs(run.results).set_index("leg").loc[fresh["leg"].iloc[0]]
    out["burst_heap_pages"] = f"{leg['accounts_heap_pages']:,.0f}"
    out["burst_index_pages"] = f"{leg['accounts_index_pages']:,.0f}"
    out["burst_hot_share"] = nt.percent(leg["hot_update_share"])
    hot = tables.legs(run.results)
    replayed = hot[hot["workload"] == "forced-checkpoint-replay"]["hot_update_share"]
    out["replay_hot_share"] = nt.percent(replayed.iloc[0]) if len(replayed) else "n/a"
    out["burst_tps"] = f"{leg['tps']:,.0f}"
    out["burst_tau_s"] = f"{leg['accounts_heap_pages'] / leg['tps']:.0f}"
    out["burst_image_bytes"] = f"{tables.image_bytes(run.results):,.0f}"
    return out


def _stats_lag_figures(fresh: pd.DataFrame) -> dict[str, str]:
    """How far pg_stat_wal's image count lagged behind the WAL's own during the leg."""
    lag = tables.stats_lag(fresh)
    return {"stats_lag_images": f"{lag['max_behind_images']:,.0f}",
            "stats_lag_s": f"{lag['max_behind_s']:.1f}",
            "stats_total_images": f"{lag['total_stats_images']:,.0f}",
            "wal_total_images": f"{lag['total_images']:,.0f}"}


REPLAY_FIGURES = ("replay_start_fpi", "replay_before_fpi", "replay_pages_per_tx",
                  "replay_pages_ratio", "replay_start_model", "replay_start_error")


def _replay_figures(replay: pd.DataFrame, width: float, redo_at: float,
                    start_pages: float) -> dict[str, str]:
    """The replayed leg's images and pages per transaction at its start, measured and
    modelled ("n/a" for a run without a replayed leg)."""
    if replay.empty:
        return dict.fromkeys(REPLAY_FIGURES, nt.NA)
    replay_start = tables.window_mean(replay, "fpi_per_tx", 0, width, "later")
    replay_pages = tables.window_mean(replay, "accounts_pages_per_tx", 0, width, "later")
    replay_end = tables.window_mean(replay, "fpi_per_tx", redo_at - width, redo_at, "earlier")
    replay_model = tables.window_mean(replay, "model_fpi_per_tx", 0, width, "later")
    ratio = start_pages / replay_pages if replay_pages else math.nan
    return {"replay_start_fpi": nt.number(replay_start, 2),
            "replay_before_fpi": nt.number(replay_end, 2),
            "replay_pages_per_tx": nt.number(replay_pages, 2),
            "replay_pages_ratio": nt.number(ratio, 1),
            "replay_start_model": nt.number(replay_model, 2),
            "replay_start_error": nt.percent(replay_model / replay_start - 1 if replay_start else
                                       math.nan, size_only=True)}
