"""The quorum-commit page's power cuts: the companion run it ships with
(data/runs/quorum-commit/SHIPPED-power-cut), and every sentence of that section that
describes the run's numbers or shape."""

import pytest
from conftest import PROJECT_ROOT, glued_names

from labs.quorum_commit import page, power_cut_page
from labs.quorum_commit import power_cut_findings as found
from labs.quorum_commit import power_cut_model as model
from labs.quorum_commit.params import CUT_SETTINGS
from labs.records import shipped_run

PAGE = PROJECT_ROOT / "book" / "quorum" / "quorum-commit.md"


@pytest.fixture(scope="module")
def run():
    return power_cut_page.companion_run()


@pytest.fixture(scope="module")
def figures(run):
    return power_cut_page.figures(run)


@pytest.fixture(scope="module")
def f(run):
    return found.findings(run)


def test_the_companion_is_a_full_run_of_the_power_cuts_alone(run, f, figures):
    assert f.params.profile == "full" and f.params.part == "power-cut"
    assert f.params.cut_settings == CUT_SETTINGS
    assert {n for n in glued_names(PAGE) if n.startswith("pc_")} <= set(figures)
    # A run of the cuts alone feeds the page's comparison with its own headline.
    headline = page.headline(run)
    assert list(headline["config"]) == [f"synchronous_commit={s}" for s in CUT_SETTINGS]
    assert list(headline["value"]) == [c.lost for c in f.cuts]
    # The main page's figures carry the section's, so the page glues them once.
    assert page.figures(run) == figures


def test_every_cut_committed_and_every_standby_was_counted(f):
    assert [c.setting for c in f.cuts] == list(CUT_SETTINGS)
    assert all(c.acknowledged > 0 and c.k == 3 for c in f.cuts)
    assert len(f.standbys) == 5 * len(CUT_SETTINGS)
    assert f.newest_standby_held_the_most, \
        "backs 'Every copy loses its power, and the primary its disk': the newest standby"


def test_the_windows_are_the_models_from_the_runs_own_round_trips_and_flush(f):
    """The model's windows ("no window" for on and remote_write; local: the way out and a
    flush; off: 600 ms more), from the run's own round trips and flush."""
    assert f.cut("on").model_window_ms == 0 and f.cut("remote_write").model_window_ms == 0
    assert f.kth_rtt_ms > f.to_standby_ms + f.flush_p50_ms
    assert f.cut("local").model_window_ms == pytest.approx(f.to_standby_ms + f.flush_p50_ms,
                                                           abs=0.06)
    assert f.cut("off").model_window_ms == pytest.approx(
        model.ASYNC_FLUSH_WINDOW_MS + f.cut("local").model_window_ms, abs=0.01)
    # "netem holds only what a standby sends": the way out is well under half a round trip
    assert f.to_standby_ms < f.near_rtt_ms / 4, "backs the power-cut section's model"


def test_the_exercise_solution_adds_up_as_printed(figures, f):
    """The exercise's sums, from the figures as the page prints them."""
    to_standby, flush = float(figures["pc_to_standby_ms"]), float(figures["pc_flush_p50_ms"])
    local = float(figures["pc_ex_local_window_ms"])
    assert local == pytest.approx(to_standby + flush, abs=0.005)
    # ANY 1 under remote_write: s1's flush done, less the round trip that brings its report.
    any1 = float(figures["pc_ex_any1_window_ms"])
    assert any1 == pytest.approx(local - float(figures["pc_near_rtt_ms"]), abs=0.005)
    assert any1 > 0
    busy = power_cut_page.BUSY_COMMITS_PER_S
    assert int(figures["pc_ex_local_lost"]) == round(busy * local / 1000)
    assert int(figures["pc_ex_any1_lost"]) == round(busy * any1 / 1000)
    assert int(figures["pc_ex_local_lost"]) > int(figures["pc_ex_any1_lost"]) > 0
    # "the window held less than one commit" under local, at the run's own rate
    assert f.cut("local").model_most_lost < 1, "backs the exercise's solution"


def test_the_safe_and_the_nearly_safe_settings_lost_nothing(f):
    # "with on ... held all; with remote_write all; with local, it held all"
    for setting in ("on", "remote_write", "local"):
        assert f.lost_nothing(setting), \
            f"{setting}: backs 'Every copy loses its power, and the primary its disk'"


def test_off_lost_commits_the_primary_lacked_too_within_one_wal_writer_pause(f):
    off = f.cut("off")
    assert off.lost > 0, "the section needs a loss under off"
    # "the primary's own disk lacked [as many] too"
    assert off.primary_lost == off.lost, "backs 'Every copy loses its power, ...'"
    # "they are the last X ms of commits; the first ... acknowledged Y ms before the cut"
    assert off.lost_span_ms <= off.lost_window_ms + 50
    # "acknowledged X ms before the cut, less than one wal_writer_delay (200 ms)"
    assert 0 < off.lost_window_ms < found.WAL_WRITER_DELAY_MS, \
        "backs 'Every copy loses its power, ...': within one wal_writer_delay"
    # "the cut stayed under" the model's most
    assert off.share_of_model is not None and off.share_of_model < 1, \
        "backs 'Every copy loses its power, ...': under the model's ceiling"


def test_each_setting_that_waits_longer_committed_more_slowly(f):
    assert f.slower_as_settings_wait_longer, "backs 'Every copy loses its power, ...'"


def test_the_standbys_agreed_except_under_local_where_one_lacked_the_last_commit(f):
    # "After the cuts under off, remote_write and on, all five ... held the same rows"
    assert [s for s in CUT_SETTINGS if f.standbys_agreed(s)] == ["off", "remote_write", "on"]
    # "Under local ... s4, in zone 3, held 519 of the 520": the last one lacking, no more
    fewest = f.fewest("local")
    assert fewest is not None and fewest.held == fewest.acknowledged - 1
    assert fewest.zone == 3, "backs 'Every copy loses its power, ...': the zone it names"
    # "taking the newest standby ... lost nothing"
    assert f.cut("local").newest_found == f.cut("local").acknowledged


def test_the_table_calls_each_model_figure_a_ceiling_or_an_estimate(run):
    # "For off that is a ceiling, built on the manual's worst case. For local and
    # remote_write it is an estimate, built on the median flush, and not a bound."
    shown = power_cut_page.table(run).set_index("setting")
    assert "at most" not in " ".join(shown.columns), "the model column claims no bound"
    for setting in ("local", "remote_write"):
        assert shown.loc[setting, "model is"] == "estimate", (
            f"The window times the commit rate: {setting} is an estimate")
    assert shown.loc["off", "model is"] == "ceiling", (
        "The window times the commit rate: off is a ceiling")
    # "a slower flush widens the window": the model's window grows with the flush.
    for setting in ("local", "remote_write"):
        assert model.window_ms(setting, 0.1, 1.0, 5.0) > model.window_ms(setting, 0.1, 1.0, 1.0)


def test_the_companion_and_the_sweep_run_share_one_clean_commit(run):
    sweep_run = shipped_run("quorum-commit")
    assert run.meta["git_commit"] == sweep_run.meta["git_commit"], \
        "quorum-commit.md, your run beside the book's: 'Both runs ... the same project commit'"
    assert not run.meta["git_commit"].endswith("-dirty"), \
        "quorum-commit.md, your run beside the book's: '... with nothing changed beside it'"
