"""The torn-pages lab page's sentences about a run's shape, worded from computed values.

Pure text: each function takes numbers already computed from a run (by page.py and
tables.py) and says what they show, with a branch for every shape a run can have, so the
page never states a shape the run does not.
"""

from __future__ import annotations

import math

import pandas as pd

from labs.torn_pages import tables

# A model within this share of the measurement is called close.
CLOSE = 0.15
# A disk that wrote less than this share of its limit was not held back by the limit.
SATURATED = 0.8


def num(value: float, digits: int = 2) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:,.{digits}f}"


def pct(error: float) -> str:
    """A model error as text: '12 % above' (the model over the measurement) or 'below'."""
    if math.isnan(error):
        return "n/a"
    return f"{abs(error) * 100:.0f} % {'above' if error > 0 else 'below'}"


def replayed_effect(fresh_start: float, replay_start: float) -> bool:
    """Whether the replayed leg shows the replay effect: far fewer images at its start."""
    return replay_start < 0.5 * fresh_start


def replay_texts(out: dict[str, str], width: float, effect: bool) -> dict[str, str]:
    """What the page says about the replayed leg, in the body and in the exercise's
    solution, for either outcome."""
    start = (f"over its first {width:.1f} s the replayed leg carried {out['replay_start_fpi']} "
             f"images per transaction against {out['burst_start_fpi']} with new transactions, "
             f"and each of its transactions changed {out['replay_pages_per_tx']} distinct "
             f"accounts pages of the interval against {out['fresh_pages_per_tx']}")
    model = (f"The model, with the whole table as its pool of pages, expected "
             f"{out['replay_start_model']} images per transaction over the same seconds "
             f"({out['replay_start_error']} the measured)")
    if effect:
        verdict = ("So this run shows the replay effect: the replayed transactions found "
                   "their rows in fewer pages than new transactions did.")
        solution = (
            f"Yes: {start}. An image is owed per page first changed after the checkpoint, not "
            f"per transaction, and the replayed rows sat in fewer pages. {model}, so it does "
            f"not fit this leg: it would need a much smaller pool of pages at the start, "
            f"the pages the replayed stretch of transactions reaches, growing as the "
            f"clients drift apart.")
    else:
        verdict = (
            f"So this run does not show the replay effect. With {out['replay_hot_share']} of "
            f"the updates HOT (the new row version stays in the page of the old one), no rows "
            f"were moved together for the replay to find. Whether moved rows explain the "
            f"earlier run's shape, this run cannot tell: it replays one leg, where the earlier "
            f"run replayed one sequence through the warm-up and eight legs.")
        share = out["replay_hot_share"]
        every = ("every" if share == "100 %" else
                 "nearly every" if share.startswith("99.") else "most")
        solution = (
            f"Not in this run: {start}. An image is owed per page first changed after the "
            f"checkpoint, not per transaction, and the replayed transactions found their "
            f"pages as spread over the table as new ones. {out['replay_hot_share']} of their "
            f"updates were HOT, so {every} new row version stayed in the page of the old one "
            f"and replaying the sequence found no rows gathered together. {model}: its "
            f"pool needs no change to fit this leg. Had the replay found its rows gathered "
            f"into a few pages, the model would need those pages as its pool, far fewer than "
            f"the table's.")
    return {"replay_verdict": verdict, "replay_solution": solution,
            "replay_sentence": _replay_sentence(out, width, effect)}


def _replay_sentence(out: dict[str, str], width: float, effect: bool) -> str:
    if effect:
        return (f"replaying the previous leg's transactions, the first {width:.1f} s carried "
                f"{out['replay_start_fpi']} images per transaction instead of "
                f"{out['burst_start_fpi']}. Each transaction changed "
                f"{out['replay_pages_per_tx']} distinct accounts pages of the interval, "
                f"against {out['fresh_pages_per_tx']} with new transactions")
    return (f"in this run the replayed leg carried about as many images in its first "
            f"{width:.1f} s as new transactions ({out['replay_start_fpi']} against "
            f"{out['burst_start_fpi']} per transaction). Its rows were still spread over the "
            f"table ({out['replay_pages_per_tx']} distinct accounts pages of the interval "
            f"changed per transaction, against {out['fresh_pages_per_tx']})")


def off_images_sentence(results: pd.DataFrame) -> str:
    """What the WAL holds with full_page_writes off: no images, or at most a few."""
    legs = tables.legs(results)
    off = legs[legs["full_page_writes"] == "off"]
    if off.empty:
        return "This run has no leg with full-page writes off."
    most = float(off["wal_fpi_per_tx"].max())
    if most == 0:
        return (f"With full-page writes off, the WAL of every leg ({len(off)} legs) held no "
                f"page image at all")
    return (f"With full-page writes off, at most {most:.4f} images per transaction remain "
            f"(in the leg with the most), from operations that always log a whole page")


def device_sentence(table: pd.DataFrame, close: float = 0.15) -> str:
    """How close the model's bytes per transaction came to the loop device's count."""
    legs = []
    for row in table.to_dict("records"):
        for side in ("on", "off"):
            legs.append((row["disk"], row["setting"], side, row[f"device_error_{side}"]))
    near = [abs(e) for *_, e in legs if abs(e) <= close]
    text = (f"The model's bytes were within {max(near) * 100:.0f} % of the measured in "
            f"{len(near)} of the {len(legs)} legs" if near else
            f"the model's bytes were more than {close * 100:.0f} % off in every leg")
    far = [(d, s, side, e) for d, s, side, e in legs if abs(e) > close]
    for disk, setting, side, error in far:
        text += (f". In the leg with {setting}, {disk}, full-page writes {side}, the disk took "
                 f"{abs(1 / (1 + error) - 1) * 100:.0f} % {'less' if error > 0 else 'more'} "
                 f"than the model counts")
    return text




def _leg_name(row) -> str:
    return f"{row['setting']} and full-page writes {row['full_page_writes']}"


def slow_legs_sentence(legs: pd.DataFrame) -> str:
    """Each write-limited leg: the disk's rate against its limit, the model's TPS against the
    measured."""
    return ". ".join(
        f"In the leg with {_leg_name(row)}, the disk took {row['device_mibps']:.2f} MiB/s "
        f"({row['limit_share'] * 100:.0f} % of the limit). There the model's "
        f"{row['model_tps']:.0f} TPS is {pct(row['tps_error'])} the measured {row['tps']:.0f}"
        for row in legs.to_dict("records"))


def slow_errors_sentence(legs: pd.DataFrame, clients: int) -> str:
    """Where the model's TPS is close, and why it is not where it is not (or that the run
    cannot tell)."""
    rows = legs.to_dict("records")
    close = [_leg_name(r) for r in rows if abs(r["tps_error"]) <= CLOSE]
    parts = []
    if close:
        parts.append(f"The model's TPS is within {CLOSE * 100:.0f} % of the measured in the "
                     f"leg{'s' if len(close) > 1 else ''} with {', and with '.join(close)}")
    for r in rows:
        if abs(r["tps_error"]) <= CLOSE:
            continue
        share = f"{r['limit_share'] * 100:.0f} %"
        if r["limit_share"] < SATURATED:
            parts.append(
                f"In the leg with {_leg_name(r)}, the disk was not at its limit (it took "
                f"{share} of it). The model assumes it writes at its limit all the time. "
                f"Something other than the bytes held the transactions back. With {clients} "
                f"clients, the TPS is the clients divided by the time each transaction takes, "
                f"{r['latency_avg_ms']:.1f} ms on average in that leg. The run does not "
                f"record what that time was spent waiting for")
        elif abs(r["device_error"]) > CLOSE:
            more = abs(1 / (1 + r["device_error"]) - 1) * 100
            parts.append(
                f"In the leg with {_leg_name(r)}, the disk was near its limit ({share}), but it "
                f"took {more:.0f} % {'more' if r['device_error'] < 0 else 'less'} bytes per "
                f"transaction than the model counts. Dividing the limit by too "
                f"{'few' if r['device_error'] < 0 else 'many'} bytes, the model puts the TPS "
                f"{pct(r['tps_error'])} the measured. The run does not record what those "
                f"bytes were")
        else:
            parts.append(
                f"In the leg with {_leg_name(r)}, the disk was near its limit ({share}) and "
                f"took about the bytes the model counts. Yet the model's TPS is "
                f"{pct(r['tps_error'])} the measured, and the run does not show why")
    return ". ".join(parts)


def slow_ratio_sentence(legs: pd.DataFrame) -> str:
    """Whether the ratio of TPS off to on agrees because the model fits, or because its
    errors in the two legs cancel."""
    parts = []
    for setting, pair in legs.groupby("setting", sort=False):
        errors = pair.set_index("full_page_writes")["tps_error"]
        if len(errors) < 2 or not (errors.abs() > CLOSE).all():
            continue
        ratio_error = (1 + errors["off"]) / (1 + errors["on"]) - 1
        if abs(ratio_error) <= CLOSE and errors["on"] * errors["off"] > 0:
            parts.append(
                f"With {setting}, the model's ratio of TPS off to on is within "
                f"{abs(ratio_error) * 100:.0f} % of the measured. But its TPS is "
                f"{1 + errors['on']:.1f} times the measured with full-page writes on and "
                f"{1 + errors['off']:.1f} times with them off, and the ratio agrees only because "
                f"the two errors cancel. So that ratio says nothing about how well the model "
                f"fits")
    if not parts:
        return ("Where the model's ratio of TPS off to on agrees with the measured, its TPS "
                "agrees in both legs as well")
    return ". ".join(parts)
