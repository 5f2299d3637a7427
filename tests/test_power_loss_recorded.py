"""The recorded power-loss run the book shows: every claim its page makes holds in it.

Fast (pandas on data/runs/power-loss/): the page's numbers are glued from page.figures(run);
these tests check what its wording says about them (none lost, within, better than).
"""

import re

import pytest

from labs import PROJECT_ROOT, records
from labs.power_loss import page


@pytest.fixture(scope="module")
def run():
    return records.shipped_run("power-loss")


@pytest.fixture(scope="module")
def table(run):
    return page.outcomes(run)


def test_the_recorded_run_is_the_full_profile_from_a_clean_commit(run, table):
    assert run.meta["parameters"]["profile"] == "full"
    assert not run.meta["git_commit"].endswith("-dirty")
    assert table["cut"].nunique() == run.meta["parameters"]["cuts"] >= 3
    assert len(table) == 4 * table["cut"].nunique()  # both engines, both settings, every cut


def test_every_glued_number_on_the_page_exists(run):
    text = (PROJECT_ROOT / "book" / "power-loss" / "lab.md").read_text()
    used = set(re.findall(r"\{glue:text\}`([a-z0-9_]+)`", text))
    assert used and used <= set(page.figures(run)), used - set(page.figures(run))


def test_the_safe_settings_lost_nothing(table):
    safe = table[table["safety"] == "safe"]
    assert (safe["acknowledged"] > 0).all() and (safe["acknowledged_lost"] == 0).all()


def test_the_unsafe_losses_are_what_the_page_says(run, table):
    unsafe = table[table["safety"] == "unsafe"]
    figures = page.figures(run)
    within = (unsafe["acknowledged_lost"] <= unsafe["model_max_lost"]).all()
    assert figures["unsafe_within_model"] == ("within" if within else "not always within")
    # "an unsafe database lost commits in N of its M power cuts": the page's own counts
    assert int(figures["unsafe_cuts_with_loss"]) == (unsafe["acknowledged_lost"] > 0).sum()
    assert int(figures["unsafe_cuts_with_loss"]) >= 1  # the lesson needs at least one loss


def test_most_postgres_cuts_landed_well_short_of_the_bound(table):
    # "most cuts landed well short of the bound": more than half under half of it
    postgres = table[(table["engine"] == "postgres") & (table["safety"] == "unsafe")]
    short = (postgres["lost_ms"] < postgres["bound_ms"] / 2).sum()
    assert short > len(postgres) / 2, postgres[["cut", "lost_ms", "bound_ms"]]


def test_every_database_recovered_and_answered(table):
    assert (table["recovery_s"] > 0).all()
    assert (table["acknowledged_found"] + table["acknowledged_lost"] == table["acknowledged"]).all()
    assert (table["unacknowledged_found"] >= 0).all()
