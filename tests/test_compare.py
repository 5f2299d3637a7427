"""Your run beside the book's: the words and numbers the comparison computes, on real runs.

The reader's runs here are the shipped runs themselves, or copies of them narrowed to what a
quick profile measures (fewer configurations): real measurements, so every difference the
summary states can be checked against the two tables.
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from labs import records
from labs.book import compare
from labs.errors import LabError
from labs.quorum import page as quorum_page
from labs.write_mostly import page as write_mostly_page
from labs.write_mostly.params import CONFIGURATIONS


@pytest.mark.parametrize(("book", "yours", "unit", "better", "words"), [
    (100, 150, "us", "lower", "50 % slower"),
    (100, 60, "us", "lower", "40 % faster"),
    (100, 30, "ms", "lower", "3.3x faster"),
    (1000, 1200, "tps", "higher", "20 % faster"),
    (1000, 400, "iops", "higher", "2.5x slower"),
    (4000, 5000, "bytes/tx", "lower", "25 % higher (worse)"),
    (4000, 3000, "bytes/tx", "lower", "25 % lower (better)"),
    (0.0079, 0.0081, "probability", "neither", "3 % higher"),
    (100, 100.2, "us", "lower", "about the same"),
])
def test_difference_in_words(book, yours, unit, better, words):
    assert compare.difference(book, yours, unit, better) == words


def quick_like(run: records.RecordedRun, configs: set[str]) -> records.RecordedRun:
    """The same run narrowed to some configurations, as a quick profile would measure."""
    results = run.results[run.results["config"].isin(configs)].reset_index(drop=True)
    return dataclasses.replace(run, results=results)


def test_a_narrower_write_mostly_run_compares_on_what_it_measured():
    shipped = records.shipped_run("write-mostly")
    # A run that measured fewer configurations (here: none of the write-behind cells).
    quick = {c.name for c in CONFIGURATIONS if c.write_behind is None}
    yours = quick_like(shipped, quick)
    book = write_mostly_page.headline(shipped)
    mine = write_mostly_page.headline(yours)
    assert set(mine["config"]) < set(book["config"])
    table = compare.comparison_table(book, mine)
    assert len(table) == len(mine)
    assert set(table["difference"]) == {"about the same"}  # the same measurements
    lines = compare.summary(book, mine)
    assert lines[0].startswith("**read latency p50, 4 KiB at depth 1**: of "
                               f"{len(quick)} configurations measured by both runs, yours was "
                               f"{len(quick)} about the same")


def test_the_model_rows_follow_the_chapter():
    table = write_mostly_page.headline(records.shipped_run("write-mostly")).set_index(
        ["measure", "config"])
    read, write = compare_measures()
    label = {config.name: config.label for config in CONFIGURATIONS}
    fast_read = table.loc[(read, label["fast-only"]), "value"]
    slow_write = table.loc[(write, label["slow-only"]), "value"]
    fast_write = table.loc[(write, label["fast-only"]), "value"]
    for config in CONFIGURATIONS:
        if config.write_mostly:
            assert table.loc[(read, config.label), "model"] == fast_read
        if config.raid:
            expected = fast_write if config.write_behind else slow_write
            assert table.loc[(write, config.label), "model"] == expected
        else:
            assert math.isnan(table.loc[(write, config.label), "model"])


def compare_measures() -> tuple[str, str]:
    names = list(write_mostly_page.HEADLINE_WORKLOADS.values())
    return names[0], names[1]


def test_the_summary_states_the_largest_difference_from_the_two_tables():
    shipped = records.shipped_run("quorum")
    book = quorum_page.headline(shipped)
    mine = book.assign(value=book["value"] * [1.10, 0.95, 0.4])  # another run's numbers
    lines = compare.summary(book, mine)
    speed = next(line for line in lines if line.startswith("**simulation speed**"))
    assert "yours was 1 slower" in speed and "2.5x slower" in speed
    writes = next(line for line in lines if "writes are unavailable" in line)
    assert "10 % higher" in writes and "better" not in writes  # an estimate: no judgement
    assert compare.model_error(book) == pytest.approx(
        float((book["value"] / book["model"] - 1).abs().dropna().median()))


def test_headline_tables_that_break_the_contract_are_refused():
    good = quorum_page.headline(records.shipped_run("quorum"))
    with pytest.raises(LabError, match="better"):
        compare.check_headline(good.assign(better="faster"))
    with pytest.raises(LabError, match="unit"):
        compare.check_headline(good.assign(unit="furlongs"))
    with pytest.raises(LabError, match="finite"):
        compare.check_headline(good.assign(value=float("nan")))
    with pytest.raises(LabError, match="twice"):
        compare.check_headline(pd.concat([good, good]))
    with pytest.raises(LabError, match="column 'model'"):
        compare.check_headline(good.drop(columns="model"))


def test_show_names_the_shipped_run_and_draws_yours_and_the_class(monkeypatch, tmp_path):
    shown: list = []
    monkeypatch.setattr(compare, "display", shown.append)
    monkeypatch.setattr(compare, "_say", lambda text: shown.append(text))
    shipped = records.shipped_run("quorum")
    mine = dataclasses.replace(shipped, meta={**shipped.meta, "run_id": "20990101T000000Z-x"})
    monkeypatch.setattr(records, "readers_newest_run", lambda lab, root=None: mine)
    monkeypatch.delenv("LABS_CLASS", raising=False)
    compare.show("quorum", quorum_page.headline)
    texts = [item for item in shown if isinstance(item, str)]
    assert any(f"`quorum/{shipped.run_id}`" in text and "SHIPPED" in text for text in texts)
    charts = [item for item in shown if hasattr(item, "to_dict")]
    assert len(charts) == 1 and "Your run beside" in charts[0].to_dict()["title"]
    assert any("about the same" in text for text in texts)
    shown.clear()
    monkeypatch.setattr(records, "readers_newest_run", lambda lab, root=None: None)
    compare.show("quorum", quorum_page.headline)
    assert not [item for item in shown if hasattr(item, "to_dict")]
    assert any("appears here once you have made one" in str(item) for item in shown)


def test_a_run_is_described_by_where_it_ran():
    in_container = compare.describe_run(records.shipped_run("caches"))
    assert in_container.endswith(", inside a docker container)"), in_container
    in_vm = compare.describe_run(records.shipped_run("write-mostly"))
    assert ", in a lab VM (QEMU) with " in in_vm, in_vm
    assert "yes (" not in in_vm and "no (" not in in_container
