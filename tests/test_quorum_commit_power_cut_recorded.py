"""The quorum-commit page's power cuts: the companion run it ships with
(data/runs/quorum-commit/SHIPPED-power-cut), and every sentence of that section that
describes the run's numbers or shape."""

import pytest
from conftest import PROJECT_ROOT, glued_names

from labs.quorum_commit import page, power_cut_page
from labs.quorum_commit import power_cut_model as model
from labs.quorum_commit.params import CUT_SETTINGS

PAGE = PROJECT_ROOT / "book" / "quorum" / "quorum-commit.md"


@pytest.fixture(scope="module")
def run():
    return power_cut_page.companion_run()


@pytest.fixture(scope="module")
def figures(run):
    return power_cut_page.figures(run)


@pytest.fixture(scope="module")
def cuts(run):
    return power_cut_page.cuts(run).set_index("synchronous_commit")


def test_the_companion_is_a_full_run_of_the_power_cuts_alone(run, figures):
    parameters = run.meta["parameters"]
    assert parameters["profile"] == "full" and parameters["part"] == "power-cut"
    assert tuple(parameters["cut_settings"]) == CUT_SETTINGS
    assert {n for n in glued_names(PAGE) if n.startswith("pc_")} <= set(figures)
    # A run of the cuts alone feeds the page's comparison with its own headline.
    headline = page.headline(run)
    assert list(headline["config"]) == [f"synchronous_commit={s}" for s in CUT_SETTINGS]
    assert list(headline["value"]) == list(power_cut_page.cuts(run)["acknowledged_lost"])
    # The main page's figures carry the section's, so the page glues them once.
    assert page.figures(run) == figures


def test_every_cut_committed_and_every_standby_was_counted(run, cuts):
    assert list(cuts.index) == list(CUT_SETTINGS)
    assert (cuts["acknowledged"] > 0).all() and (cuts["k"] == 3).all()
    held = power_cut_page.standbys(run)
    assert len(held) == 5 * len(CUT_SETTINGS)
    # The standby the lab chose holds the most; none holds more than the primary.
    most = held.groupby("synchronous_commit")["acknowledged rows it held"].max()
    assert (most.reindex(cuts.index) == cuts["acknowledged_found"]).all()
    assert (cuts["acknowledged_found"] <= cuts["primary_acknowledged_found"]).all()


def test_the_windows_are_the_models_from_the_runs_own_round_trips_and_flush(cuts, figures):
    # "no window" for on and remote_write; local: the way out and a flush; off: 600 ms more.
    to_standby, flush = float(figures["pc_to_standby_ms"]), float(figures["pc_flush_p50_ms"])
    assert cuts.loc["on", "model_window_ms"] == 0
    assert cuts.loc["remote_write", "model_window_ms"] == 0
    assert float(figures["pc_kth_rtt_ms"]) > to_standby + flush
    assert cuts.loc["local", "model_window_ms"] == pytest.approx(to_standby + flush, abs=0.06)
    assert cuts.loc["off", "model_window_ms"] == pytest.approx(
        model.ASYNC_FLUSH_WINDOW_MS + cuts.loc["local", "model_window_ms"], abs=0.01)
    # "netem holds only what a standby sends": the way out is well under half a round trip
    assert to_standby < float(figures["pc_near_rtt_ms"]) / 4


def test_the_exercise_solution_adds_up_as_printed(figures):
    to_standby, flush = float(figures["pc_to_standby_ms"]), float(figures["pc_flush_p50_ms"])
    local = float(figures["pc_ex_local_window_ms"])
    assert f"{to_standby + flush:.2f}" == figures["pc_ex_local_window_ms"]
    # ANY 1 under remote_write: s1's flush done, less the round trip that brings its report.
    any1 = float(figures["pc_ex_any1_window_ms"])
    assert f"{local - float(figures['pc_near_rtt_ms']):.2f}" == figures["pc_ex_any1_window_ms"]
    assert any1 > 0
    busy = int(figures["pc_ex_busy_rate"].replace(",", ""))
    assert figures["pc_ex_local_lost"] == f"{busy * local / 1000:.0f}"
    assert figures["pc_ex_any1_lost"] == f"{busy * any1 / 1000:.0f}"
    assert int(figures["pc_ex_local_lost"]) > int(figures["pc_ex_any1_lost"]) > 0
    # "the window held less than one commit" under local, at the run's own rate
    assert float(figures["pc_local_model_max"]) < 1


def test_the_safe_and_the_nearly_safe_settings_lost_nothing(cuts):
    # "with on ... held all; with remote_write all; with local, it held all"
    for setting in ("on", "remote_write", "local"):
        assert cuts.loc[setting, "acknowledged_lost"] == 0, setting
        assert cuts.loc[setting, "primary_acknowledged_found"] == cuts.loc[setting,
                                                                           "acknowledged"]


def test_off_lost_commits_the_primary_lacked_too_within_one_wal_writer_pause(cuts, figures):
    off = cuts.loc["off"]
    assert off["acknowledged_lost"] > 0
    # "the primary's own disk lacked [as many] too"
    assert off["acknowledged"] - off["primary_acknowledged_found"] == off["acknowledged_lost"]
    # "they are the last X ms of commits; the first ... acknowledged Y ms before the cut"
    span_ms = 1000 * off["acknowledged_lost"] / off["acks_per_second"]
    assert figures["pc_off_lost_span_ms"] == f"{span_ms:.0f}"
    assert span_ms <= off["lost_window_ms"] + 50
    # "acknowledged X ms before the cut, less than one wal_writer_delay (200 ms)"
    assert 0 < off["lost_window_ms"] < 200
    # "the cut stayed under" the model's most
    assert off["acknowledged_lost"] <= off["model_max_lost"]
    share_pct = 100 * off["acknowledged_lost"] / off["model_max_lost"]
    assert figures["pc_off_share_pct"] == f"{share_pct:.0f}" and share_pct < 100


def test_each_setting_that_waits_longer_committed_more_slowly(cuts):
    rates = list(cuts.loc[list(CUT_SETTINGS), "acks_per_second"])
    assert rates == sorted(rates, reverse=True) and len(set(rates)) == len(rates)


def test_the_standbys_agreed_except_under_local_where_one_lacked_the_last_commit(run,
                                                                                figures):
    held = power_cut_page.standbys(run)
    differing = held.groupby("synchronous_commit")[["replay position",
                                                    "acknowledged rows it held"]].nunique()
    agreed = [s for s in CUT_SETTINGS if (differing.loc[s] == 1).all()]
    # "After the cuts under off, remote_write and on, all five ... held the same rows"
    assert agreed == ["off", "remote_write", "on"]
    # "Under local ... s4, in zone 3, held 519 of the 520": the last one lacking, no more
    local = held[held["synchronous_commit"] == "local"]
    fewest = local.loc[local["acknowledged rows it held"].idxmin()]
    assert figures["pc_local_fewest_standby"] == fewest["standby"]
    assert int(figures["pc_local_fewest_held"]) == int(fewest["acknowledged"]) - 1
    assert figures["pc_local_fewest_zone"] == "3"
    # "taking the newest standby ... lost nothing"
    assert local["acknowledged rows it held"].max() == int(figures["pc_local_acked"])


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


def test_the_companion_was_made_from_a_working_copy_with_changes(run):
    # "Its project commit ends in `-dirty`": the page says so; a clean re-record
    # makes this fail, and the sentence goes.
    assert run.meta["git_commit"].endswith("-dirty"), \
        "quorum-commit.md, your run beside the book's: 'Its project commit ends in -dirty'"
