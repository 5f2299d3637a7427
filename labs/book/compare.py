"""Your run beside the book's, and a class's runs beside both: one section for every lab page.

Every lab's page module provides `headline(run) -> pandas.DataFrame`, its headline measures
in a tidy table (HEADLINE_COLUMNS):

    measure   what is measured, e.g. "write latency p50, 4 KiB at depth 1"
    config    the configuration it was measured in (the same text in every run)
    value     the measurement, in `unit` (one of labs.records.KNOWN_UNITS)
    unit
    better    "higher", "lower", or "neither" (an estimate, where only closeness matters)
    model     what the chapter's model predicts for it (NaN where the lab has no model)

and each lab page ends with one thin cell, `compare.show("<lab>", page.headline)`, which:

1. names the run the page's text was written from (data/runs/<lab>/SHIPPED);
2. if the reader has made runs of the lab, draws their newest beside the shipped one (each
   configuration a row, each run a point, the model a tick) and says, computed from the
   two, how it differs: per configuration, faster or slower and by how much;
3. if the book is built for a class (`make book CLASS=NAME`), draws every participant's run
   beside the shipped one (each run a point, the spread, the model) and lists their hosts.

The figures the page's text quotes stay the shipped run's.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import altair as alt
import pandas as pd
from IPython.display import Markdown, display

from labs import classes, records
from labs.book import number_text as nt
from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.errors import LabError
from labs.records import RecordedRun

HEADLINE_COLUMNS = ["measure", "config", "value", "unit", "better", "model"]
BETTER = ("higher", "lower", "neither")
TIME_UNITS = {"ns", "us", "ms", "s"}
RATE_UNITS = {"iops", "MiB/s", "KiB/s", "tps", "trials/s", "rows/s"}
SAME_WITHIN = 0.005  # closer than 0.5 %: "about the same"
BOOK, YOURS, MODEL, CLASS = "the book's run", "your run", "model", "participants"
COLOURS = {BOOK: "#0072B2", YOURS: "#D55E00", MODEL: "#000000", CLASS: "#009E73"}
# Errors a run that does not fit its page raises; the page then says so instead of failing.
NOT_COMPARABLE = (LabError, KeyError, IndexError, ValueError)


def headline_table(rows: list[dict]) -> pd.DataFrame:
    """A lab's headline rows as a checked table (labs call this at the end of `headline`)."""
    table = pd.DataFrame(rows, columns=HEADLINE_COLUMNS)
    table["model"] = pd.to_numeric(table["model"], errors="coerce")
    table["value"] = pd.to_numeric(table["value"], errors="coerce")
    return check_headline(table)


def check_headline(table: pd.DataFrame) -> pd.DataFrame:
    """Refuse a headline table that breaks the contract (one line, as a LabError)."""
    missing = [c for c in HEADLINE_COLUMNS if c not in table.columns]
    if missing:
        raise LabError(f"headline table: column '{missing[0]}' missing")
    bad = table[~table["better"].isin(BETTER)]
    if not bad.empty:
        raise LabError(f"headline table: better is {bad['better'].iloc[0]!r}; use "
                       f"{', '.join(BETTER)}")
    unknown = sorted(set(table["unit"]) - records.KNOWN_UNITS)
    if unknown:
        raise LabError(f"headline table: unknown unit {unknown[0]!r}")
    if not table["value"].map(lambda v: isinstance(v, int | float) and math.isfinite(v)).all():
        raise LabError("headline table: every value must be a finite number")
    if table.duplicated(["measure", "config"]).any():
        raise LabError("headline table: a (measure, config) pair appears twice")
    return table.reset_index(drop=True)


# ------------------------------------------------------------------------------------------
# Words and numbers
# ------------------------------------------------------------------------------------------

def format_value(value: float, unit: str) -> str:
    if unit == "us":
        return f"{value / 1000:.2f} ms" if value >= 1000 else f"{value:.0f} µs"
    if unit == "probability":
        return f"{value:.3e}"
    if unit in ("ratio", "percent"):
        return f"{value:.3g}" + (" %" if unit == "percent" else "")
    if abs(value) >= 100:
        return f"{value:,.0f} {unit}"
    return f"{value:.3g} {unit}"


def direction(book: float, yours: float, unit: str) -> str:
    """'slower', 'faster', 'higher', 'lower' or 'same': which way `yours` lies from `book`."""
    if book == yours or (book and abs(yours / book - 1) < SAME_WITHIN):
        return "same"
    up = yours > book
    if unit in TIME_UNITS:
        return "slower" if up else "faster"
    if unit in RATE_UNITS:
        return "faster" if up else "slower"
    return "higher" if up else "lower"


def difference(book: float, yours: float, unit: str, better: str) -> str:
    """How `yours` differs from `book`, in words: "38 % slower", "2.1x faster", ..."""
    way = direction(book, yours, unit)
    if way == "same":
        return "about the same"
    if book == 0 or yours == 0:
        return way
    ratio = yours / book
    amount = (nt.percent(abs(ratio - 1)) if 0.5 <= ratio <= 2 else
              f"{max(ratio, 1 / ratio):.1f}x")
    if way in ("higher", "lower") and better != "neither":
        good = (ratio > 1) == (better == "higher")
        return f"{amount} {way} ({'better' if good else 'worse'})"
    return f"{amount} {way}"


def comparison_table(book: pd.DataFrame, yours: pd.DataFrame) -> pd.DataFrame:
    """Per measure and configuration in both runs: the two values and how they differ."""
    both = book.merge(yours, on=["measure", "config"], suffixes=("_book", "_yours"))
    rows = []
    for row in both.itertuples():
        rows.append({
            "measure": row.measure, "configuration": row.config,
            "the book's run": format_value(row.value_book, row.unit_book),
            "your run": format_value(row.value_yours, row.unit_yours),
            "difference": difference(row.value_book, row.value_yours, row.unit_book,
                                     row.better_book),
            "direction": direction(row.value_book, row.value_yours, row.unit_book),
            "ratio": row.value_yours / row.value_book if row.value_book else math.nan})
    return pd.DataFrame(rows, columns=["measure", "configuration", "the book's run",
                                       "your run", "difference", "direction", "ratio"])


def summary(book: pd.DataFrame, yours: pd.DataFrame) -> list[str]:
    """Sentences on how your run differs, per measure (computed from the two tables)."""
    table = comparison_table(book, yours).rename(
        columns={"the book's run": "book", "your run": "yours"})
    if table.empty:
        return ["Your run measured none of the configurations of the book's run, so the "
                "two cannot be compared one to one; the chart shows both."]
    lines = []
    for measure, rows in table.groupby("measure", sort=False):
        counts = rows["direction"].value_counts()
        parts = [f"{count} {way}" for way, count in counts.items() if way != "same"]
        if "same" in counts:
            parts.append(f"{counts['same']} about the same")
        spread = rows["ratio"].map(lambda r: abs(math.log(r)) if r and r > 0 else 0.0)
        extreme = rows.loc[spread.idxmax()]
        plural = "s" if len(rows) > 1 else ""
        lines.append(f"**{measure}**: of {len(rows)} configuration{plural} measured by both "
                     f"runs, yours was {', '.join(parts)}; the largest difference: "
                     f"{extreme['configuration']}, {extreme['yours']} against "
                     f"{extreme['book']}: {extreme['difference']}.")
    keys = ["measure", "config"]
    only_yours = len(yours.merge(book[keys], on=keys, how="left", indicator=True)
                     .query("_merge == 'left_only'"))
    if only_yours:
        lines.append(f"{only_yours} of your measurements have no counterpart in the book's "
                     "run (another configuration or profile).")
    return lines


def model_error(table: pd.DataFrame) -> float | None:
    """Median of |measured / model - 1| over the rows that have a model."""
    rows = table.dropna(subset=["model"])
    rows = rows[rows["model"] != 0]
    if rows.empty:
        return None
    return float((rows["value"] / rows["model"] - 1).abs().median())


def describe_run(run: RecordedRun) -> str:
    host = classes.host_description(run)
    profile = run.profile
    # "no", "unknown", "no (a docker container)", "yes (kvm)" or "lab VM (QEMU)"
    vm = host["virtual machine"]
    where = ""
    if vm.startswith("lab VM"):
        where = f", in a {vm} with {host['accelerator']}"
    elif vm.startswith("no ("):
        where = ", inside " + vm.removeprefix("no (").removesuffix(")")
    elif vm.startswith("yes ("):
        where = ", in a virtual machine (" + vm.removeprefix("yes (")
    return (f"`{run.lab}/{run.run_id}` ({f'{profile} profile; ' if profile else ''}kernel "
            f"{host['kernel']}, {host['CPUs']} CPUs{where})")


# ------------------------------------------------------------------------------------------
# Charts
# ------------------------------------------------------------------------------------------

def _is_log(values: pd.Series) -> bool:
    """A log axis when the values are positive and span more than a factor of 20."""
    positive = values[values > 0]
    return bool(len(values)) and len(positive) == len(values) and \
        positive.max() / positive.min() > 20


def _x(field: str, title: str, log: bool) -> alt.X:
    if log:
        return alt.X(f"{field}:Q", title=title, scale=alt.Scale(type="log"),
                     axis=alt.Axis(format="~s"))
    return alt.X(f"{field}:Q", title=title, scale=alt.Scale(zero=False, nice=True))


def _colour(series: list[str]) -> alt.Color:
    return alt.Color("series:N", title=None, scale=alt.Scale(
        domain=series, range=[COLOURS[name] for name in series]))


def _panel(measure: str, points: pd.DataFrame, models: pd.DataFrame, order: list[str],
           offset: str | None, series: list[str]) -> alt.LayerChart:
    unit = points["unit"].iloc[0]
    log = _is_log(pd.concat([points["value"], models["value"]]))
    title = f"{measure} ({unit}{', log scale' if log else ''})"
    x = _x("value", title, log)
    y = alt.Y("config:N", sort=order, title=None, axis=alt.Axis(labelLimit=340))
    tooltip = ["series:N", "label:N", "config:N", alt.Tooltip("value:Q", format=".4~g")]
    layers = []
    spread = points[points["series"] == CLASS]
    if not spread.empty:
        ranges = spread.groupby("config")["value"].agg(["min", "max"]).reset_index()
        layers.append(alt.Chart(ranges).mark_rule(strokeWidth=7, opacity=0.25,
                                                  color=COLOURS[CLASS]).encode(
            x=_x("min", title, log), x2="max:Q", y=y))
    if not models.empty:
        layers.append(alt.Chart(models).mark_tick(thickness=2, size=18).encode(
            x=x, y=y, color=_colour(series), tooltip=tooltip))
    encoding = {"x": x, "y": y, "color": _colour(series), "tooltip": tooltip,
                "shape": alt.Shape("series:N", legend=None,
                                   scale=alt.Scale(domain=[BOOK, YOURS, CLASS],
                                                   range=["diamond", "circle", "circle"]))}
    if offset:
        encoding["yOffset"] = alt.YOffset(f"{offset}:N")
    layers.append(alt.Chart(points).mark_point(filled=True, size=90, opacity=0.9).encode(
        **encoding))
    return alt.layer(*layers).properties(width=430, height=max(60, 26 * len(order)),
                                         title=measure)


def _points(table: pd.DataFrame, series: str, label: str) -> pd.DataFrame:
    return table.assign(series=series, label=label)[
        ["measure", "config", "value", "unit", "series", "label"]]


def _models(*tables: pd.DataFrame) -> pd.DataFrame:
    rows = pd.concat(tables).dropna(subset=["model"])
    models = rows.groupby(["measure", "config"], sort=False)["model"].median().reset_index()
    return models.rename(columns={"model": "value"}).assign(series=MODEL, label="model")


def _panels(points: pd.DataFrame, models: pd.DataFrame, offset: str) -> list[alt.LayerChart]:
    """One panel per measure, in the headline's order; one colour legend for all of them."""
    series = [name for name in COLOURS if name in set(points["series"]) | set(models["series"])]
    order = list(dict.fromkeys(points["config"]))
    panels = []
    for measure in dict.fromkeys(points["measure"]):
        mine = points[points["measure"] == measure]
        panels.append(_panel(measure, mine, models[models["measure"] == measure],
                             [c for c in order if c in set(mine["config"])], offset, series))
    return panels


def beside_chart(book: pd.DataFrame, yours: pd.DataFrame, book_id: str, your_id: str
                 ) -> alt.VConcatChart:
    """Each measure a panel: configurations as rows, each run a point, the model a tick."""
    points = pd.concat([_points(book, BOOK, book_id), _points(yours, YOURS, your_id)])
    models = _models(book, yours)
    panels = _panels(points, models, "series")
    return alt.vconcat(*panels).properties(
        title="Your run beside the book's (points: measured; ticks: the model)")


def class_chart(book: pd.DataFrame, runs: list[tuple[str, str, pd.DataFrame]],
                name: str) -> alt.VConcatChart:
    """Each measure a panel: every participant's run a point, their spread, the book's run
    and the model."""
    class_points = [_points(table, CLASS, f"{who}: {run_id}").assign(participant=who)
                    for who, run_id, table in runs]
    points = pd.concat([_points(book, BOOK, "shipped").assign(participant=" the book"),
                        *class_points])
    models = _models(book, *(table for _, _, table in runs))
    panels = _panels(points, models, "participant")
    return alt.vconcat(*panels).properties(
        title=f"Class {name}: every participant's run beside the book's (band: the spread)")


def hosts_table(shipped: RecordedRun, runs: list[classes.ClassRun]) -> pd.DataFrame:
    rows = [{"participant": "(the book's run)", "run": shipped.run_id,
             **classes.host_description(shipped)}]
    rows += [{"participant": one.participant, "run": one.run.run_id,
              **classes.host_description(one.run)} for one in runs]
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------
# The page section
# ------------------------------------------------------------------------------------------

def _say(text: str) -> None:
    display(Markdown(text))


def show(lab: str, headline: Callable[[RecordedRun], pd.DataFrame]) -> None:
    """The section at the end of a lab page: shipped run, your newest run, the class."""
    shipped = records.shipped_run(lab)
    book = check_headline(headline(shipped))
    _say("## Your run beside the book's")  # a rubric: shown as a heading, not in the contents
    _say(f"**The run this page describes** is the one the book ships with, "
         f"{describe_run(shipped)}, named in `data/runs/{lab}/SHIPPED`; every number in "
         "the text is that run's.")
    show_yours(lab, headline, shipped, book)
    name = classes.selected_class()
    if name:
        show_class(lab, name, headline, shipped, book)


def show_yours(lab: str, headline: Callable, shipped: RecordedRun, book: pd.DataFrame) -> None:
    yours = records.readers_newest_run(lab)
    if yours is None:
        _say("**Your own run** appears here once you have made one: run this lab with the "
             "commands this page gives, then rebuild the book (`make book`); the "
             "page draws your newest run beside the book's and says how it differs.")
        return
    try:
        mine = check_headline(headline(yours))
    except NOT_COMPARABLE as error:
        _say(f"**Your newest run**, {describe_run(yours)}, could not be compared with the "
             f"book's: {str(error).splitlines()[0]}.")
        return
    _say(f"**Your newest run**, {describe_run(yours)}, beside the book's:")
    display(beside_chart(book, mine, shipped.run_id, yours.run_id))
    lines = summary(book, mine)
    errors = (model_error(book), model_error(mine))
    if None not in errors:
        lines.append(f"Against the model, the median error was {nt.percent(errors[1])} for "
                     f"your run and {nt.percent(errors[0])} for the book's.")
    profiles = {run.profile for run in (yours, shipped)}
    if len(profiles) > 1 and None not in profiles:
        lines.append("The two runs used different profiles: a quick run measures for less "
                     "time, so expect more noise in it.")
    _say("\n".join(f"- {line}" for line in lines))
    table = comparison_table(book, mine).drop(columns=["ratio", "direction"])
    if not table.empty:
        display(table.style.hide(axis="index"))


def show_class(lab: str, name: str, headline: Callable, shipped: RecordedRun,
               book: pd.DataFrame) -> None:
    runs, refused = classes.class_runs(name, lab)
    usable, notes = [], []
    for one in runs:
        try:
            usable.append((one, check_headline(headline(one.run))))
        except NOT_COMPARABLE as error:
            notes.append(f"{one.participant}'s run {one.run.run_id} could not be compared: "
                         f"{str(error).splitlines()[0]}")
    notes += [f"refused: {records.display_path(path)}: {why}" for path, why in refused]
    participants = sorted({one.participant for one, _ in usable})
    _say(f"## Class {name}")
    if not usable:
        _say(f"**Class {name}** has no run of this lab yet.")
    else:
        _say(f"**Class {name}**: {len(usable)} run{'s' if len(usable) > 1 else ''} of this lab "
             f"from {len(participants)} participant{'s' if len(participants) > 1 else ''}, "
             "beside the book's:")
        display(class_chart(book, [(one.participant, one.run.run_id, table)
                                   for one, table in usable], name))
        _say("Their hosts (as each run recorded them; no names or addresses):")
        display(hosts_table(shipped, [one for one, _ in usable]).style.hide(axis="index"))
    if notes:
        _say("\n".join(f"- {note}" for note in notes))
