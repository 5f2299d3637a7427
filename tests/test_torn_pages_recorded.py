"""The torn-pages run the chapter shows: valid, re-derivable from its raw files, and it says
what the chapter's text says it says. Fast: no root, no container; reads data/runs/.

The page's words about the run's shape are written in book/torn-pages/lab.md for the run it
ships, and page.figures(run) computes only the numbers between them; these tests assert the
shape itself, so a new recording that disagrees with the prose fails here.
"""

import json
import math
import re

import pytest
from conftest import PROJECT_ROOT, glued_names

from labs import records
from labs.tools import pgbench
from labs.torn_pages import burst, charts, model, tables, walscan
from labs.torn_pages import page as lab


@pytest.fixture(scope="module")
def run():
    return records.shipped_run("torn-pages", PROJECT_ROOT / "data" / "runs")


@pytest.fixture(scope="module")
def figures(run):
    return lab.figures(run)


def test_recorded_by_the_project_command_from_a_clean_commit(run):
    # "The run shown here (full profile) took about ..."
    assert run.meta["parameters"]["profile"] == "full"
    assert run.meta["parameters"]["command_line"].startswith(
        "python -m labs run torn-pages --host local --profile full")
    assert not run.meta["git_commit"].endswith("-dirty")
    loads = run.results[run.results["workload"] == "lab"].set_index("metric")["value"]
    assert {"load_average_1min_start", "load_average_1min_end"} <= set(loads.index)


def test_results_re_derive_from_the_raw_files(run):
    legs = tables.legs(run.results)
    assert len(legs) >= 5
    for leg in legs.itertuples():
        folder = run.raw_dir / "bench" / leg.leg
        summary = pgbench.parse_summary((folder / "summary.txt").read_text())
        assert summary.tps == pytest.approx(leg.tps)
        assert summary.transactions == leg.transactions
    for leg in legs[legs["workload"].str.startswith("forced")].itertuples():
        text = (run.raw_dir / "bench" / leg.leg / "wal-intervals.txt").read_text()
        bounds, output = text.split("\n\n", 1)
        rows = walscan.parse_intervals(output, len(bounds.splitlines()))
        recorded = run.results[(run.results["leg"] == leg.leg)
                               & (run.results["metric"] == "inspected_fpi")]["value"]
        assert sum(r.full_page_images for r in rows) == recorded.sum()


def test_every_glued_number_is_computed(run, figures):
    for name, keys in (("lab", figures), ("explain", lab.explain_figures())):
        used = glued_names(PROJECT_ROOT / "book" / "torn-pages" / f"{name}.md")
        assert used and used <= set(keys), sorted(used - set(keys))
        assert all(isinstance(v, str) and "nan" not in v for v in keys.values())


def test_the_burst_after_a_checkpoint_has_the_shape_the_text_states(run):
    """Backs the verdict of 'The burst after a checkpoint' and its Summary bullet: images
    per transaction jump after the forced CHECKPOINT begins, then fall, as the model does."""
    # "the leg carried A images per transaction in its first W s. That fell to B in the last
    # W s before the forced CHECKPOINT. It jumped to C in the W s after the CHECKPOINT began,
    # and fell to D by the end of the leg" -- and the model says the same.
    w = burst.burst_legs(run)
    fresh, windows = w["fresh"], burst.burst_windows(w)
    for column in ("fpi_per_tx", "model_fpi_per_tx"):
        start, before, after, end = (tables.window_mean(fresh, column, *windows[name])
                                     for name in ("start", "before", "after", "end"))
        verdict = "backs the verdict of 'The burst after a checkpoint'"
        assert start > before, (verdict, column, start, before)
        assert after > before, (verdict, column, after, before)
        assert end < after, (verdict, column, end, after)
    # "Over the whole leg it expected M images where the WAL holds N (E below)."
    expected = float((fresh["model_fpi_per_tx"] * fresh["inspected_commits"]).sum())
    assert expected < fresh["inspected_fpi"].sum()


def test_the_burst_chart_draws_the_intervals_the_text_averages(run, figures):
    # The chart leaves out the intervals with too few commits, as the text's windows do, so
    # "carried A images per transaction in its first W s" lies among the points drawn there.
    table = tables.intervals(run.results)
    few = table[table["few_commits"]]
    assert len(few) < 0.1 * len(table)
    # "That leaves out F of the N intervals of this run."
    assert (figures["burst_few_intervals"], figures["burst_intervals"]) == (
        str(len(few)), str(len(table)))
    drawn = charts.burst_long(run.results)
    fresh = drawn[(drawn["leg_name"] == "on, new transactions") & (drawn["source"] == "measured")
                  & (drawn["series"].str.startswith("images per transaction, in the WAL"))]
    assert len(fresh) == len(table[(table["workload"] == "forced-checkpoint")
                                   & (table["full_page_writes"] == "on") & ~table["few_commits"]])
    w = burst.burst_legs(run)
    kept = w["fresh"][~w["fresh"]["few_commits"]]
    first = kept[kept["inspected_interval_start"] < w["width"]]["time_s"]
    start = fresh[fresh["time_s"].isin(first)]["value"]
    assert not start.empty
    assert start.min() - 0.005 <= float(figures["burst_start_fpi"]) <= start.max() + 0.005


def test_the_replayed_leg_shows_what_the_text_says(run):
    # "The replayed leg carried about as many images in its first W s as new transactions
    # (A against B per transaction). Its rows were still spread over the table: P distinct
    # accounts pages of the interval changed per transaction, against Q. So this run does not
    # show that effect. With S of the updates HOT ..."
    w = burst.burst_legs(run)
    fresh, replay, width = w["fresh"], w["replay"], w["width"]
    start_fresh = tables.window_mean(fresh, "fpi_per_tx", 0, width)
    start_replay = tables.window_mean(replay, "fpi_per_tx", 0, width)
    assert abs(start_replay / start_fresh - 1) < 0.1  # about as many: no replay effect
    pages = tables.window_mean(replay, "accounts_pages_per_tx", 0, width)
    assert pages > 0.9 * tables.window_mean(fresh, "accounts_pages_per_tx", 0, width)
    # "S of their updates were HOT, so nearly every new row version stayed in the page of
    # the old one"
    legs = tables.legs(run.results)
    hot = legs[legs["workload"] == "forced-checkpoint-replay"]["hot_update_share"].iloc[0]
    assert 0.99 < hot < 1
    # "The model, with the whole table as its pool of pages, expected M images per
    # transaction over the same seconds (E below the measured). So its pool needs no change
    # to fit this leg."
    model_start = tables.window_mean(replay, "model_fpi_per_tx", 0, width)
    assert model_start < start_replay
    assert abs(model_start / start_replay - 1) < 0.15


def test_pg_stat_wal_trails_the_wal(run):
    lag = tables.stats_lag(burst.burst_legs(run)["fresh"])
    assert lag["max_behind_images"] > 0
    assert lag["total_stats_images"] <= lag["total_images"]


def test_settings_claims(run, figures):
    """Backs the verdict of 'The price of full-page writes' and its Summary bullet, first
    half: with full-page writes on each transaction wrote several times the WAL on the
    unlimited disk, close to the model."""
    verdict = "backs the verdict of 'The price of full-page writes'"
    table = tables.settings(run.results)
    fast = table[table["disk"] == tables.NO_LIMIT]
    assert (fast["wal_on_over_off"] > 1).all(), verdict
    # "the model's ratio of WAL per transaction with full-page writes on to off was within
    # E of the measured one"
    assert (fast["wal_ratio_error"].abs() <= lab.CLOSE).all(), verdict
    steady = fast[fast["setting"].str.startswith("checkpoint_timeout")]
    assert len(steady) >= 2
    # "The shorter interval carried more, as the model expected"
    assert steady["fpi_per_tx_on"].iloc[0] > steady["fpi_per_tx_on"].iloc[-1]
    assert steady["model_fpi_per_tx_on"].iloc[0] > steady["model_fpi_per_tx_on"].iloc[-1]
    # "On the write-limited disk the bytes weigh far more": off beats on, and the model
    # agrees on the direction.
    slow = table[table["disk"] != tables.NO_LIMIT]
    assert not slow.empty
    assert (slow["tps_off_over_on"] > 1).all()
    assert (slow["model_tps_off_over_on"] > 1).all()
    # "for such a server the model puts the ratio at ..., smaller than in this lab"; also
    # backs the verdict of 'Beside the article's figure' ("The lab's write-limited ratios are
    # larger than a usual server's would be").
    assert (slow["model_tps_off_over_on_recycled"] < slow["model_tps_off_over_on"]).all()
    # "With full-page writes off, the WAL held almost no page images: A over its N legs,
    # against B over the legs with them on." (Details of 'The burst after a checkpoint')
    legs = tables.legs(run.results)
    off, on = legs[legs["full_page_writes"] == "off"], legs[legs["full_page_writes"] == "on"]
    assert len(off) == int(figures["off_legs"]) > 0
    assert off["wal_fpi"].sum() <= 0.001 * on["wal_fpi"].sum(), "almost no page images"
    assert figures["off_images"] == f"{off['wal_fpi'].sum():,.0f}"
    intervals = tables.intervals(run.results)
    off_intervals = intervals[intervals["full_page_writes"] == "off"]
    assert off_intervals["inspected_fpi"].sum() <= 0.001 * intervals["inspected_fpi"].sum()


def test_write_limited_legs_as_the_text_states_them(run):
    """Backs the verdict of 'The price of full-page writes' and its Summary bullet, second
    half: on the write-limited disk the model's TPS held with full-page writes off and fell
    short with them on."""
    # Leg by leg, from the raw counters: the disk's MiB/s against the limit (the table the
    # page prints), and what the text says of each leg.
    legs = tables.legs(run.results)
    slow = tables.slow_legs(run.results)
    assert len(slow) == 4 and len(lab.slow_legs_table(run.results)) == len(slow)
    for row in slow.itertuples():
        leg = legs[(legs["setting"] == row.setting) & (legs["write_limit_mibps"] > 0)
                   & (legs["full_page_writes"] == row.full_page_writes)].iloc[0]
        mibps = leg["device_write_bytes"] / (leg["transactions"] / leg["tps"]) / 2**20
        assert mibps == pytest.approx(row.device_mibps)
    # "Every leg on that disk took X of its limit or more. So the disk's writes were the
    # bottleneck, as the model assumes."
    assert (slow["limit_share"] >= lab.SATURATED).all()
    verdict = "backs the verdict of 'The price of full-page writes'"
    off, on = slow[slow["full_page_writes"] == "off"], slow[slow["full_page_writes"] == "on"]
    # "With full-page writes off, the model's TPS is within X of the measured, for both
    # checkpoint settings. With them on, it is A and B below the measured."
    assert len(off) == len(on) == 2
    assert (off["tps_error"].abs() <= lab.CLOSE).all(), verdict
    assert (on["tps_error"] < -lab.CLOSE).all(), verdict
    # "There the model counts C and D more bytes per transaction than the disk took"
    assert (on["device_error"] > lab.CLOSE).all()


def test_the_models_wal_is_close_where_its_bytes_are_not(run):
    # "The WAL itself is counted well: in those legs the model's WAL per transaction is within
    # E of the measured." and "it puts the gain from switching them off too high"
    table = tables.settings(run.results)
    slow = table[(table["disk"] != tables.NO_LIMIT) & (table["setting"] != tables.FORCED)]
    wal_error = (slow["model_wal_bytes_per_tx_on"] / slow["wal_bytes_per_tx_on"] - 1).abs()
    legs = tables.slow_legs(run.results)
    bytes_error = legs[legs["full_page_writes"] == "on"]["device_error"]
    assert wal_error.max() < lab.CLOSE and wal_error.max() < bytes_error.min()
    assert (slow["model_tps_off_over_on"] > slow["tps_off_over_on"]).all()


def test_the_model_counts_too_many_bytes_only_with_full_page_writes_on(run, figures):
    # "The model's bytes were within X of the measured in N of the M legs. In the other K,
    # all with full-page writes on, the model counts A to B more bytes than the disk took."
    table = tables.settings(run.results)
    errors = lab.device_errors(table)
    far = errors[errors["error"].abs() > lab.CLOSE]
    assert len(errors) == 10 and not far.empty
    assert (far["full_page_writes"] == "on").all() and (far["error"] > 0).all()
    assert figures["device_far_legs"] == str(len(far))
    assert figures["device_close_legs"] == str(len(errors) - len(far))


def test_switching_full_page_writes_off_pays_most_where_writes_are_the_bottleneck(run):
    """Backs the verdict of 'Beside the article's figure' and its Summary bullet: of the
    ratios the comparison chart draws for this run (TPS off over on, every leg but the
    forced-checkpoint ones), the large ones are on the write-limited disk, where the model
    also puts off above on; the article's run without the doublewrite buffer was faster too."""
    verdict = "backs the verdict of 'Beside the article's figure'"
    table = tables.settings(run.results)
    drawn = table[table["setting"] != tables.FORCED]
    slow = drawn[drawn["disk"] != tables.NO_LIMIT]
    fast = drawn[drawn["disk"] == tables.NO_LIMIT]
    assert not slow.empty and not fast.empty, verdict
    assert slow["tps_off_over_on"].min() > fast["tps_off_over_on"].max(), verdict
    assert (slow["model_tps_off_over_on"] > 1).all(), verdict
    ref = lab.reference_rds().set_index("doublewrite")["duration_s"]
    assert ref["on"] > ref["off"], verdict


def test_a_timed_checkpoint_ran_in_the_short_interval_legs(run):
    text = (run.raw_dir / "bench" / "server.log").read_text()
    assert "checkpoint starting: time" in text


def test_torn_page_claims(run, figures):
    """Backs the verdict of 'A torn page, four ways' and its Summary bullet: full-page
    writes repaired the torn page, with checksums alone the server refused to start, and with
    neither it started normally and the table showed more rows than it holds."""
    verdict = "backs the verdict of 'A torn page, four ways'"
    torn = tables.torn_page_outcomes(run.results)
    assert torn.loc["tear-stopped", "checksum_check_failed_torn"] == 1
    assert torn.loc["fpw-on", "recovery_completed"] == 1, verdict
    assert torn.loc["fpw-on", "rows_visible"] == torn.loc["fpw-on", "rows_expected"] == 40
    assert torn.loc["fpw-off", "recovery_completed"] == 0, verdict
    silent = torn.loc["fpw-off-nochecksums"]
    assert silent["recovery_completed"] == 1, verdict  # "the server started normally"
    assert silent["rows_visible"] > silent["rows_expected"], verdict
    assert torn.loc["fpw-off-nochecksums", "rows_visible"] == 50  # rows 1-10 twice
    table = tables.torn_page_table(run.results)
    cells = set(table.to_numpy().ravel())
    assert cells & {"yes", "no"} and not cells & {"nan", "1.0", "0.0"}
    assert "" in cells  # steps that do not apply are blank
    assert "invalid page" in lab.server_log_lines(run, "fpw-off")


def test_charts_build_from_the_run_with_bound_controls_and_stay_small(run):
    built = {"settings": lab.settings_chart(run.results), "burst": lab.burst_chart(run.results),
             "comparison": lab.comparison_chart(run.results), "explorer": lab.explorer()}
    for name, chart in built.items():
        spec = chart.to_dict()
        assert len(json.dumps(spec)) < 600_000, name
        text = json.dumps(spec)
        assert "value of the chosen" not in text
    for name in ("settings", "burst", "explorer"):
        params = built[name].to_dict()["params"]
        assert params and all("bind" in p for p in params if "select" not in p), name
    # The model's diamonds keep their own colour: no colour encoding on that layer, a legend
    # of their own; the setting labels break over two lines.
    layers = built["settings"].to_dict()["layer"]
    model_layer = next(layer for layer in layers if layer["mark"].get("shape") is None
                       and layer["mark"].get("type") == "point")
    assert "color" not in model_layer.get("encoding", {})
    assert model_layer["mark"]["color"] == charts.MODEL_COLOR
    assert model_layer["encoding"]["shape"]["scale"]["range"] == ["diamond"]
    assert "split(" in json.dumps(model_layer["encoding"]["x"]["axis"]["labelExpr"])
    units = set(charts.MEASURES) | set(charts.BURST_SERIES)
    assert all(re.search(r"\([^)]+\)$", label) for label in units)  # every measure's unit


def test_model_first_touch_basics():
    pool = model.PagePool(1000, 1.0)
    assert model.images_per_tx_at(pool, 0) == pytest.approx(1.0)
    assert model.images_per_tx_at(pool, 1000) == pytest.approx(math.exp(-1))
    # the average over an interval is the integral of the curve
    n = 5000
    steps = [model.images_per_tx_at(pool, i + 0.5) for i in range(n)]
    assert model.images_per_tx_between(pool, 0, n) == pytest.approx(sum(steps) / n, rel=1e-3)
    assert model.touched_pages(pool, 1e9) == pytest.approx(1000)
    assert model.leg_images_per_tx(pool, 100, 10, 20) == pytest.approx(
        model.leg_images_per_tx(pool, 100, 10, 10))
    assert model.burst_seconds(pool, 100, 0.1) == pytest.approx(10 * math.log(10), rel=1e-6)


def test_zero_filled_segments_double_the_wal_on_the_disk():
    pools = [model.PagePool(20000, 1.0)]
    kwargs = dict(fpw_on=True, checkpoint_interval_s=300, duration_s=60,
                  bytes_without_images=400, image_bytes=8000, wal_flushes_per_tx=0)
    once = model.device_bytes_per_tx(pools, 1000, **kwargs)
    twice = model.device_bytes_per_tx(pools, 1000, wal_copies=2.0, **kwargs)
    assert twice == pytest.approx(2 * once)  # no checkpoint in the leg: nothing written back


def test_write_limited_tps_solves_its_equation():
    pools = [model.PagePool(20000, 1.0)]
    kwargs = dict(checkpoint_interval_s=30, duration_s=90, bytes_without_images=420,
                  image_bytes=8000, wal_flushes_per_tx=0.5)
    limit = 4 * 2**20
    on = model.write_limited_tps(limit, pools, fpw_on=True, **kwargs)
    off = model.write_limited_tps(limit, pools, fpw_on=False, **kwargs)
    assert off > on > 0
    written = on * model.device_bytes_per_tx(pools, on, fpw_on=True, **kwargs)
    assert written == pytest.approx(limit, rel=1e-6)


def test_walscan_refuses_bad_input():
    with pytest.raises(Exception, match="not a WAL position"):
        walscan.interval_query([("0/1", "x; DROP")], 1)
    with pytest.raises(Exception, match="expected 7"):
        walscan.parse_intervals("1|2|3", 1)
    assert walscan.lsn_bytes("1/10") == 2**32 + 16


def test_the_hour_exercise_answers_from_the_legs_length_and_the_model(run):
    # "Lower: the leg lasted 150 s, shorter than the 300 s interval ... the model puts the
    # average over one full interval at 0.308 images per transaction, which scales the hour's
    # extra WAL down to about 2.3 GiB."
    table = tables.settings(run.results)
    last = table[(table["disk"] == tables.NO_LIMIT) & (table["setting"] != tables.FORCED)
                 ].iloc[-1]
    legs = tables.legs(run.results)
    on = legs[(legs["setting"] == last["setting"]) & (legs["disk"] == tables.NO_LIMIT)
              & (legs["full_page_writes"] == "on")].iloc[0]
    interval_s = last["checkpoint_interval_s"]
    assert on["duration_s"] < interval_s  # "shorter than the interval"
    whole = model.leg_images_per_tx(tables.pools(on), last["tps_on"], interval_s, interval_s)
    assert whole < last["fpi_per_tx_on"]  # "Lower"
    f = lab.figures(run)
    assert float(f["ex_hour_whole_gib"]) < float(f["ex_hour_gib"])


def test_the_exercises_legs_are_steady_legs_on_the_unlimited_disk(run):
    # "In the leg with `checkpoint_timeout` x s on the unlimited disk, how many bytes of WAL
    # does one full-page image add" and "... in the leg with `checkpoint_timeout` y s on the
    # unlimited disk, how many GiB of WAL per hour": the rows the answers are computed from.
    table = tables.settings(run.results)
    first = table.iloc[0]
    assert first["disk"] == tables.NO_LIMIT and first["setting"] != tables.FORCED
    f = lab.figures(run)
    assert f["ex_timeout_s"] == f"{first['checkpoint_interval_s']:.0f}"
    steady = table[(table["disk"] == tables.NO_LIMIT) & (table["setting"] != tables.FORCED)]
    assert f["ex_hour_timeout_s"] == f"{steady.iloc[-1]['checkpoint_interval_s']:.0f}"


def test_a_window_without_a_counted_interval_reaches_the_nearest_on_its_own_side():
    # On a loaded machine the interval just before a checkpoint can stall; the "before"
    # window must then take the last counted interval before it, never one after the redo
    # point, and a window with no `widen` stays empty (NaN) rather than guessing.
    import pandas as pd

    table = pd.DataFrame({"inspected_interval_start": [0.0, 1.0, 2.0, 2.9, 3.0, 4.0],
                          "inspected_commits": [100, 100, 100, 2, 100, 100],
                          "fpi_per_tx": [0.5, 0.2, 0.1, 9.0, 0.8, 0.4]})
    table["few_commits"] = table["inspected_commits"] < 10
    assert math.isnan(tables.window_mean(table, "fpi_per_tx", 2.5, 3.0))
    assert tables.window_mean(table, "fpi_per_tx", 2.5, 3.0, "earlier") == 0.1
    assert tables.window_mean(table, "fpi_per_tx", 2.5, 2.95, "later") == 0.8
    assert tables.window_mean(table, "fpi_per_tx", 0.0, 2.0, "earlier") == pytest.approx(0.35)
    assert math.isnan(tables.window_mean(table, "fpi_per_tx", 5.0, 6.0, "later"))
    with pytest.raises(ValueError):
        tables.window_mean(table, "fpi_per_tx", 0.0, 1.0, "sideways")


def test_images_rose_before_the_checkpoint_while_another_writer_changed_pages(run, figures):
    # Details of 'The burst after a checkpoint': "Before the checkpoint the run is well above
    # the model, and the checkpoint is not the cause: the chart shows the rise starting a
    # second or two before it. In those seconds P accounts pages changed per transaction,
    # against Q at the start of the leg."
    w = burst.burst_legs(run)
    fresh, windows = w["fresh"], burst.burst_windows(w)
    before = tables.window_mean(fresh, "fpi_per_tx", *windows["before"])
    model_before = tables.window_mean(fresh, "model_fpi_per_tx", *windows["before"])
    assert before > 2 * model_before
    last = fresh[fresh["time_s"] <= w["redo_at"] + 0.005].iloc[-1]  # ends at the redo point
    assert last["fpi_per_tx"] > 3 * model_before and last["time_s"] - 3 < w["redo_at"]
    assert float(figures["before_pages_per_tx"]) > 1.1 * float(figures["fresh_pages_per_tx"])
    # "The replayed leg shows the same rise, higher: R images per transaction in its last
    # W s before its checkpoint."
    replay = w["replay"]
    replay_before = tables.window_mean(replay, "fpi_per_tx", *windows["before"])
    assert replay_before > before and replay_before > 2 * tables.window_mean(
        replay, "model_fpi_per_tx", *windows["before"])
    assert figures["replay_before_fpi"] == f"{replay_before:.2f}"
