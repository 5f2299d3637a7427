"""The recorded power-loss run's doublewrite section (InnoDB's torn-page legs): every claim
its page makes holds in the run's findings (labs/power_loss/findings.py), each assertion
naming the part of the page it backs; the findings are counted again from the raw files
where the run has them.

Fast (pandas and text files under data/runs/power-loss/).
"""

import pytest

from labs import records
from labs.power_loss import doublewrite_page, page, torn
from labs.power_loss import findings as found
from labs.power_loss.params import TORN_ROWS
from labs.tools import innochecksum, mariadb


@pytest.fixture(scope="module")
def run():
    return records.shipped_run("power-loss")


@pytest.fixture(scope="module")
def table(run):
    return doublewrite_page.doublewrite_outcomes(run)


@pytest.fixture(scope="module")
def dw(run):
    legs = found.findings(run).doublewrite
    assert legs is not None, "the page's doublewrite section needs InnoDB's torn-page servers"
    return legs


@pytest.fixture(scope="module")
def f(run):
    return found.findings(run)


def raw_text(run, cut: float, leg: str, suffix: str) -> str:
    name = f"mariadb-dblwr-{leg}-cut{cut:.0f}{suffix}"
    return (run.path / "raw" / f"cut{cut:.0f}" / name).read_text(errors="replace")


def test_every_cut_has_both_doublewrite_legs(run, table):
    assert len(table) == 2 * run.meta["parameters"]["cuts"]
    assert sorted(set(table["setting"])) == ["innodb_doublewrite=OFF", "innodb_doublewrite=ON"]


def test_the_torn_and_damaged_pages_are_what_innochecksum_said(run, table):
    """Before recovery and after it, counted again from innochecksum's own reports."""
    for row in table.itertuples():
        leg = row.setting.split("=")[1].lower()
        before = innochecksum.invalid_pages(raw_text(run, row.cut, leg, "-checksums-before.txt"))
        after = innochecksum.invalid_pages(raw_text(run, row.cut, leg, "-checksums-after.txt"))
        assert sum(before.values()) == row.torn_pages and sum(after.values()) == row.damaged_pages
        table_file = next(name for name in before if name.endswith("/lab/pages.ibd"))
        assert before[table_file] == row.torn_table_pages
    assert (table["torn_pages"] > 0).any()  # the section's point needs a tear


def test_only_the_table_tore(dw):
    assert dw.only_the_table_tore, "no other file tore: 'InnoDB's doublewrite buffer under " \
                                   "the same cut' says so"


def test_with_doublewrite_every_torn_page_came_back_from_its_copy(run, dw):
    for cut in dw.of("safe"):
        log = raw_text(run, cut.cut, "on", ".log")
        assert len(mariadb.pages_from_doublewrite(log)) == cut.doublewrite_pages
    # "With ON, recovery wrote all 30 torn pages back from the doublewrite area, and no page
    # stayed damaged." and "the server recovered by itself after every cut"
    assert dw.every_torn_page_came_back_with_the_buffer, \
        "backs the verdict of 'InnoDB's doublewrite buffer under the same cut' and the " \
        "Summary bullet on full-page writes and the doublewrite buffer"
    # "The log names each page recovery wrote back, for example: `Recovered page [page id:
    # space=5, page number=1016] to './lab/pages.ibd' from the doublewrite buffer.`"
    quoted = ("Recovered page [page id: space=5, page number=1016] to './lab/pages.ibd' from "
              "the doublewrite buffer.")
    assert any(quoted in raw_text(run, cut.cut, "on", ".log") for cut in dw.of("safe"))


def rows_read(run, cut: float, leg: str) -> dict[int, int]:
    """The rows the row-by-row read found (id -> value), from its raw output."""
    text = raw_text(run, cut, leg, "-rows.txt")
    return dict(tuple(map(int, line.split("\t"))) for line in text.splitlines() if "\t" in line)


def test_with_doublewrite_every_row_was_read_back_with_its_newest_update(run, table):
    for row in table[table["safety"] == "safe"].itertuples():
        found = rows_read(run, row.cut, "on")
        assert len(found) == TORN_ROWS and row.rows_unreadable == 0
        acks = [(int(n), float(t)) for n, t in (line.split() for line in
                raw_text(run, row.cut, "on", "-acks.txt").splitlines())]
        assert torn.lost_updates(torn.expected_values(acks, TORN_ROWS), found) == 0


def test_without_doublewrite_recovery_failed_and_the_damaged_pages_rows_were_lost(
        run, table, dw):
    unsafe = table[table["safety"] == "unsafe"]
    # "With OFF, recovery failed after every cut." and "a full scan of the table failed
    # after every cut"
    assert dw.recovery_and_scan_failed_in_every_cut_without, \
        "backs the verdict of 'InnoDB's doublewrite buffer under the same cut'"
    # the cuts tore pages, and nothing mended them
    assert dw.nothing_mended_without, "backs 'InnoDB's doublewrite buffer under the same cut'"
    for row in unsafe.itertuples():
        log = raw_text(run, row.cut, "off", ".log")
        # "The log names the pages recovery could not use, exactly the pages innochecksum
        # had found torn": the same page numbers, not only as many
        named = {(path.removeprefix("./"), page)
                 for path, page in mariadb.unusable_pages(log)}
        before = innochecksum.invalid_page_numbers(
            raw_text(run, row.cut, "off", "-checksums-before.txt"))
        torn_before = {("/".join(path.split("/")[-2:]), page)
                       for path, pages in before.items() for page in pages}
        assert named == torn_before and len(named) == row.torn_table_pages
        assert "Plugin initialization aborted" in log  # "before InnoDB gives up"
        acks = [(int(n), float(t)) for n, t in (line.split() for line in
                raw_text(run, row.cut, "off", "-acks.txt").splitlines())]
        expected = torn.expected_values(acks, TORN_ROWS)
        assert len(expected) == row.rows_updated
        found = rows_read(run, row.cut, "off")
        assert TORN_ROWS - len(found) == row.rows_unreadable > 0
        assert torn.lost_updates(expected, found) == row.acknowledged_lost
        # "every other row was there": each row read has its newest acknowledged value, or
        # a newer one (committed, its acknowledgement cut off)
        assert all(found[key] >= expected.get(key, 0) for key in found)
    # "In cut 1, the first of these lines was `Unable to apply log to corrupted page 106 in
    # file ./lab/pages.ibd`."
    cut = dw.first_failed_cut
    unable = [line for line in raw_text(run, cut, "off", ".log").splitlines()
              if "Unable to apply log" in line]
    assert unable[0].endswith("Unable to apply log to corrupted page 106 in file "
                              "./lab/pages.ibd")
    # "a full scan of the table failed after every cut" and "The full scan failed at the
    # first damaged page it met, with `Index for table 'pages' is corrupt; try to repair
    # it`"
    for row in unsafe.itertuples():
        assert ": Index for table 'pages' is corrupt; try to repair it" in raw_text(
            run, row.cut, "off", "-read.txt")
    # "more than the two rows a page holds"
    assert dw.rows_per_damaged_page > doublewrite_page.ROWS_PER_PAGE == 2, \
        "backs 'InnoDB's doublewrite buffer under the same cut'"
    # "in runs of 4 consecutive keys, one run for each damaged page": counted again
    assert dw.one_run_of_that_length_per_damaged_page, \
        "backs 'InnoDB's doublewrite buffer under the same cut'"
    length = dw.unreadable_run_length
    for row in unsafe.itertuples():
        found = rows_read(run, row.cut, "off")
        missing = [key for key in range(TORN_ROWS) if key not in found]
        starts = [key for key in missing if key - 1 not in missing]
        assert len(starts) == row.damaged_pages
        assert all(set(range(start, start + length)) <= set(missing)
                   and start + length not in missing for start in starts)


def test_the_torn_pages_came_close_to_both_counts(run, table, dw, f):
    """Backs the verdict of 'How many InnoDB pages a cut tears' ("Over all cuts, the torn
    pages came close to the model (-8 %). Cut by cut, they strayed further from the updates
    of the last second than PostgreSQL's did.") and the Summary bullet on pages torn."""
    hold_s = f.params.tear_delay_ms / 1000
    # The model: each cut's client rate over its last ten seconds, times the hold.
    assert all(abs(c.model_torn_pages - c.acks_per_s * hold_s) < 1e-9 for c in dw.cuts)
    assert (table.loc[table["safety"] == "safe", "model_damaged_pages"] == 0).all()
    # The updates of the last second, counted again from the acknowledgement files.
    for cut in dw.cuts:
        leg = cut.setting.split("=")[1].lower()
        times_s = [float(line.split()[1]) for line in
                   raw_text(run, cut.cut, leg, "-acks.txt").splitlines()]
        cut_after_s = table[(table["setting"] == cut.setting)
                            & (table["cut"] == cut.cut)]["cut_after_s"].iloc[0]
        assert cut.updates_in_hold == sum(1 for at in times_s if at >= cut_after_s - hold_s)
    # "up to N apart, where PostgreSQL's were at most M": N is larger
    assert dw.hold_apart > f.torn.hold_apart, \
        "backs the verdict of 'How many InnoDB pages a cut tears'"
    # "the torn pages were 5 % fewer than that count"
    assert dw.torn_total < dw.hold_total, "backs 'How many InnoDB pages a cut tears'"
    # "both counts are close, and neither rate fits clearly better": the torn pages are
    # within 10 % of each count
    assert abs(dw.model_error) <= 0.1 and abs(dw.hold_error) <= 0.1, \
        "backs the verdict of 'How many InnoDB pages a cut tears'"
    # "The total is the exact sum, rounded once, so it can differ by one from the sum of the
    # rounded cells": each cell one cut's estimate, rounded
    cells = sum(round(c.model_torn_pages) for c in dw.cuts)
    assert abs(cells - dw.model_total) <= len(dw.cuts) / 2


def test_on_was_the_slower_in_every_cut(dw):
    # "ON was the slower in every cut, by 26 % at the median."
    assert dw.buffer_slower_in_every_cut and dw.rate_gap > 0, \
        "backs 'InnoDB's doublewrite buffer under the same cut'"


def test_the_table_gives_the_torn_pages_and_the_models_cut_by_cut(run, table):
    # "The table above gives each cut's torn pages and, in brackets, the model's."
    shown = doublewrite_page.doublewrite_table(run)
    assert list(shown["torn (model)"]) == [
        f"{row.torn_pages:.0f} ({row.model_torn_pages:.0f})" for row in table.itertuples()]


def test_the_headline_has_both_doublewrite_settings(run):
    configs = set(page.headline(run)["config"])
    assert {"MariaDB (InnoDB), innodb_doublewrite = ON",
            "MariaDB (InnoDB), innodb_doublewrite = OFF"} <= configs
