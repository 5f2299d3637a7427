"""The recorded power-loss run's doublewrite section (InnoDB's torn-page legs): every claim
its page makes holds in the run, counted again from the raw files where the run has them.

Fast (pandas and text files under data/runs/power-loss/).
"""

import pytest

from labs import records
from labs.power_loss import doublewrite_page, page, torn
from labs.power_loss.params import TORN_ROWS
from labs.tools import innochecksum, mariadb


@pytest.fixture(scope="module")
def run():
    return records.shipped_run("power-loss")


@pytest.fixture(scope="module")
def table(run):
    return doublewrite_page.doublewrite_outcomes(run)


@pytest.fixture(scope="module")
def figures(run):
    return page.figures(run)


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
        assert row.torn_pages == row.torn_table_pages  # no other file tore: the page says so
    assert (table["torn_pages"] > 0).any()  # the section's point needs a tear


def test_with_doublewrite_every_torn_page_came_back_from_its_copy(run, table, figures):
    safe = table[table["safety"] == "safe"]
    for row in safe.itertuples():
        log = raw_text(run, row.cut, "on", ".log")
        assert len(mariadb.pages_from_doublewrite(log)) == row.doublewrite_pages
    assert (safe["doublewrite_pages"] == safe["torn_pages"]).all()
    assert figures["dw_safe_copies"] == "every one of them"
    assert (safe["recovered_alone"] == 1).all() and (safe["table_read"] == 1).all()
    assert (safe["damaged_pages"] == 0).all() and (safe["acknowledged_lost"] == 0).all()
    assert figures["dw_safe_damaged"] == figures["dw_safe_lost"] == "0"
    assert figures["dw_safe_alone"] == "recovered by itself after every cut"
    assert figures["dw_safe_quote"].startswith("Recovered page [page id:")
    assert figures["dw_safe_quote"] in raw_text(run, safe["cut"].iloc[0], "on", ".log")


def test_without_doublewrite_recovery_failed_and_the_table_was_lost(run, table, figures):
    unsafe = table[table["safety"] == "unsafe"]
    assert (unsafe["torn_pages"] > 0).all()  # "the cuts tore N to M pages each"
    assert figures["dw_unsafe_failed"] == "after every cut"
    assert (unsafe["recovered_alone"] == 0).all()
    assert figures["dw_unsafe_named"] == "naming every torn page"
    for row in unsafe.itertuples():
        log = raw_text(run, row.cut, "off", ".log")
        assert len(mariadb.unusable_pages(log)) == row.torn_table_pages
        assert "Plugin initialization aborted" in log  # "before InnoDB gives up"
        acks = [(int(n), float(t)) for n, t in (line.split() for line in
                raw_text(run, row.cut, "off", "-acks.txt").splitlines())]
        assert len(torn.expected_values(acks, TORN_ROWS)) == row.rows_updated
    assert figures["dw_unsafe_quote"].startswith("Unable to apply log to corrupted page")
    assert figures["dw_unsafe_read"] == "the table could not be read after any cut"
    assert (unsafe["table_read"] == 0).all()
    assert figures["dw_unsafe_read_error"] in raw_text(run, unsafe["cut"].iloc[0], "off",
                                                       "-read.txt")
    # the table unread, every updated row's newest update is out of reach; nothing mended
    assert (unsafe["acknowledged_lost"] == unsafe["rows_updated"]).all()
    assert (unsafe["damaged_pages"] == unsafe["torn_pages"]).all()
    assert figures["dw_unsafe_lost"] == f"{unsafe['acknowledged_lost'].sum():,.0f}"
    assert figures["dw_unsafe_damaged"] == f"{unsafe['damaged_pages'].sum():.0f}"


def test_the_model_figures_match_their_numbers(run, table, figures):
    hold_s = run.meta["parameters"]["tear_delay_ms"] / 1000
    assert ((table["model_torn_pages"] - table["acks_per_second"] * hold_s).abs() < 1e-9).all()
    assert (table.loc[table["safety"] == "safe", "model_damaged_pages"] == 0).all()
    expected, found = table["model_torn_pages"].sum(), table["torn_pages"].sum()
    assert figures["dw_model_total"] == f"{expected:.0f}"
    assert figures["dw_torn_total"] == f"{found:.0f}"
    assert figures["dw_model_error"] == f"{(found - expected) / expected * 100:+.0f} %"
    # "never more than N pages apart": every cut within N of its model, and N the least such
    apart = (table["torn_pages"] - table["model_torn_pages"]).abs()
    assert (apart <= int(figures["dw_torn_apart"])).all()
    assert int(figures["dw_torn_apart"]) - 1 < apart.max()


def test_the_rate_verdict_claims_a_difference_only_if_every_cut_shows_it(table, figures):
    rates = table.pivot_table(index="cut", columns="safety", values="acks_per_second")
    verdict = figures["dw_rate_verdict"]
    assert verdict.startswith("ON was the slower") == (rates["safe"] < rates["unsafe"]).all()
    assert verdict.startswith("ON was the faster") == (rates["safe"] > rates["unsafe"]).all()


def test_the_headline_has_both_doublewrite_settings(run):
    configs = set(page.headline(run)["config"])
    assert {"MariaDB (InnoDB), innodb_doublewrite = ON",
            "MariaDB (InnoDB), innodb_doublewrite = OFF"} <= configs
