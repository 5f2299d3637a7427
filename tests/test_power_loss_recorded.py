"""The recorded power-loss run the book shows: every claim its page makes holds in it.

Fast (pandas on data/runs/power-loss/): the page's numbers are glued from page.figures(run);
these tests check what its wording says about them (none lost, within, better than).
"""


import pytest
from conftest import glued_names

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
    used = glued_names(PROJECT_ROOT / "book" / "power-loss" / "lab.md")
    assert used and used <= set(page.figures(run)), used - set(page.figures(run))


def test_every_database_recovered_within_the_time_the_page_gives(run, table):
    # "Every database recovered by itself, from its log, in at most N s, and answered the
    # count": N is the longest recovery rounded up to a tenth.
    said = float(page.figures(run)["recovery_max_s"])
    assert table["recovery_s"].notna().all()
    assert said - 0.1 < table["recovery_s"].max() <= said
    assert table["acknowledged_found"].notna().all()


def test_the_safe_settings_lost_nothing(table):
    safe = table[table["safety"] == "safe"]
    assert (safe["acknowledged"] > 0).all() and (safe["acknowledged_lost"] == 0).all()


def test_the_unsafe_losses_are_what_the_page_says(run, table):
    unsafe = table[table["safety"] == "unsafe"]
    figures = page.figures(run)
    within_time = (unsafe["lost_ms"] <= unsafe["bound_ms"]).all()
    assert figures["unsafe_time_sentence"].startswith("Every" if within_time else "Some")
    within_count = (unsafe["acknowledged_lost"] <= unsafe["model_max_lost"]).all()
    assert figures["unsafe_within_count"] == ("within" if within_count else "not always within")
    every = (unsafe["acknowledged_lost"] > 0).all()
    assert figures["unsafe_loss_pattern"].startswith("both of them" if every else "a loss in")
    assert (unsafe["acknowledged_lost"] > 0).any()  # the lesson needs at least one loss


def test_the_lost_windows_are_measured_and_the_quoted_range_is_theirs(run, table):
    figures = page.figures(run)
    for engine in ("postgres", "mariadb"):
        rows = table[(table["engine"] == engine) & (table["safety"] == "unsafe")]
        assert figures[f"{engine}_lost_ms_min"] == f"{rows['lost_ms'].min():,.0f}"
        assert figures[f"{engine}_lost_ms_max"] == f"{rows['lost_ms'].max():,.0f}"
        lost = rows[rows["acknowledged_lost"] > 0]
        assert (lost["lost_ms"] > 0).all() and (lost["newest_found"] < lost["acknowledged"]).all()
    safe = table[table["safety"] == "safe"]
    assert (safe["lost_ms"] == 0).all()


def test_the_unsafe_settings_committed_faster(run):
    # "the unsafe settings committed N times as fast as the safe ones"
    figures = page.figures(run)
    for engine in ("postgres", "mariadb"):
        assert float(figures[f"{engine}_speedup"]) > 1.0, figures[f"{engine}_speedup"]


def test_the_wakeups_solution_says_what_its_numbers_say(run):
    figures = page.figures(run)
    wakeups = float(figures["ex_wakeups"])
    verdict = figures["ex_wakeups_verdict"]
    assert verdict.startswith("more than one") == (1 < wakeups <= 3)
    assert (verdict == "no more than one wake-up") == (wakeups <= 1)


def test_every_database_recovered_and_answered(table):
    assert (table["recovery_s"] > 0).all()
    assert (table["acknowledged_found"] + table["acknowledged_lost"] == table["acknowledged"]).all()
    assert (table["unacknowledged_found"] >= 0).all()
