"""The recorded runs the chapter shows: valid, re-derivable from their raw files, and they say
what the chapter says they say. No VM needed: this reads data/runs/write-mostly/.

Every sentence of the lab page that describes a shape (faster than, about the same as, only in
slot 0) is glued from page.figures(run); the tests here assert those shapes on the shipped
runs, so a new recording that changes them fails here before the text can go stale.
"""

import json
import re

import pytest
from conftest import PROJECT_ROOT, glued_names

from labs import rawfiles, records
from labs.errors import UsageError
from labs.write_mostly import charts, companions, model, reference, resync_text, tables
from labs.write_mostly import page as lab
from labs.write_mostly.figures import NOT_MEASURED
from labs.write_mostly.params import WRITE_BEHIND_CELLS, workload_groups


@pytest.fixture(scope="module")
def run():
    return records.shipped_run("write-mostly", PROJECT_ROOT / "data" / "runs")


@pytest.fixture(scope="module")
def newer():
    newer = lab.companion_run("trixie", PROJECT_ROOT / "data" / "runs")
    # The book ships both companions; a page without one says so (test_a_missing_companion...).
    assert newer is not None, "data/runs/write-mostly/SHIPPED-trixie names no run"
    return newer


@pytest.fixture(scope="module")
def loop():
    loop = lab.companion_run("loop", PROJECT_ROOT / "data" / "runs")
    assert loop is not None, "data/runs/write-mostly/SHIPPED-loop names no run"
    return loop


def test_recorded_by_the_project_command_on_lab_vms(run, newer, loop):
    assert run.meta["parameters"]["profile"] == "full"
    for recorded, legs in ((run, "disks"), (newer, "disks"), (loop, "loop")):
        meta = recorded.meta
        assert meta["parameters"]["command_line"].startswith(
            "python -m labs run write-mostly --host vm1")
        assert meta["parameters"]["legs_mode"] == legs
        assert meta["host"]["lab_vm"] and meta["host"]["vm"]["accel"] in ("tcg", "kvm")
        assert not meta["git_commit"].endswith("-dirty")
    assert run.meta["host"]["vm"]["release"] == "bookworm"
    assert loop.meta["host"]["vm"]["release"] == "bookworm"
    assert newer.meta["host"]["vm"]["release"] == "trixie"
    assert "Debian GNU/Linux 13" in newer.meta["host"]["os_release"]
    assert run.meta["tool_versions"]["kernel"].startswith("6.1.")
    assert newer.meta["tool_versions"]["kernel"].startswith("6.12.")


def test_results_re_derive_from_the_raw_fio_files(run):
    results = run.results
    checked = 0
    for config in tables.CONFIGS.values():
        for group in workload_groups(config.workloads):
            path = run.raw_dir / "fio" / config.name / f"{group}.json"
            for row in rawfiles.parse_fio_file(path):
                recorded = results[(results.config == config.name)
                                   & (results.workload == row["job"])
                                   & (results.metric == "clat_p99_us")].value
                assert float(recorded.iloc[0]) == pytest.approx(row["clat_p99_us"])
                checked += 1
    assert checked == sum(len(c.workloads) for c in tables.CONFIGS.values())


def test_every_figure_of_the_shipped_run_is_measured(run):
    figures = lab.figures(run)
    used = glued_names(PROJECT_ROOT / "book" / "write-mostly" / "lab.md")
    missing = sorted(k for k in used if figures.get(k) == NOT_MEASURED)
    assert missing == [], f"the full run leaves these unmeasured: {missing}"


def test_the_shapes_the_text_states(run):
    f = lab.figures(run)
    results = run.results
    # Reads avoid the write-mostly leg; the plain mirror sends it some.
    for config in ("raid1-wm", "raid1-wm-bitmap", *WRITE_BEHIND_CELLS):
        assert tables.read_share(results, config) < 0.01, config
    assert tables.read_share(results, "raid1") > 0
    # "every random write at depth 1 took ..., about the same as the slow leg's"
    assert f["wm_write_vs_slow"] == "about the same as the slow leg's"
    # "So the slow leg's latency is not the cap's alone: the delay is the larger part."
    for op in ("read", "write"):
        cap = tables.measured(results, "slow-cap-only", f"rand{op}-qd1", "clat_p50_us")
        delay = tables.measured(results, "slow-delay-only", f"rand{op}-qd1", "clat_p50_us")
        both = tables.measured(results, "slow-only", f"rand{op}-qd1", "clat_p50_us")
        assert delay > cap and both > cap, op
    # "Together they were even faster than the delay alone for writes" (not for reads)
    both_beat_delay = {op: tables.measured(results, "slow-only", f"rand{op}-qd1", "clat_p50_us")
                         < tables.measured(results, "slow-delay-only", f"rand{op}-qd1",
                                           "clat_p50_us") for op in ("read", "write")}
    assert both_beat_delay == {"read": False, "write": True}
    assert f["parts_combine"].startswith("Together they were even faster than the delay alone "
                                         "for writes,")
    # "Every random write at depth 1 took ..., about the same as the slow leg's"
    # and the model (cap + delay asked for) is below the mirror's measured write.
    assert f["wm_write_error"].endswith("below")
    # The write-behind backlog model: fill time and the wait of the write that finds it full.
    wb = tables.write_behind_table(results, run.meta)
    filled = wb[wb["fill_s"].notna()]
    assert len(filled) >= 1
    assert (abs(filled["fill_model_s"] - filled["fill_s"]) < 0.5 * filled["fill_s"]).all()
    assert (abs(filled["stall_s"] - filled["stall_model_s"]) < 0.2 * filled["stall_model_s"]).all()
    # The plain mirror sends some reads to the slow leg; the page says so.
    assert f["plain_share"] != "0.0%"
    # "The delay alone came out N times what was asked": longer than asked, under emulation.
    assert f["delay_vs_asked"].endswith("times what was asked")
    checks = results[results.metric == "data_check_ok"]
    control = checks.workload == "data-check-one-block-moved"
    assert (checks[~control].value == 1).all() and (checks[control].value == 0).all()
    assert f["control_outcome"] == "failed, as it must"


def test_write_behind_by_slot_and_how_it_was_set_on_both_kernels(run, newer):
    old = tables.write_behind_table(run.results, run.meta).set_index("config")
    new = tables.write_behind_table(newer.results, newer.meta).set_index("config")
    for table in (old, new):
        assert set(table.index) == set(WRITE_BEHIND_CELLS)
        for slot in (0, 1):
            # "How write-mostly was set did not matter on either"
            create, sysfs = (table.loc[f"wb-slot{slot}-{how}", "max_backlog"] > 0
                             for how in ("create", "sysfs"))
            assert create == sysfs, slot
    # What the page's verdicts say, computed from the same tables.
    figures = lab.release_figures({"old": run, "new": newer})
    assert figures["old_wb_verdict"] == lab.run_figures(run)["wb_verdict"]
    assert figures["new_wb_verdict"] == lab.run_figures(newer)["wb_verdict"]
    assert (old["max_backlog"] > 0).any() and (new["max_backlog"] > 0).any()
    # Where writes went behind, the flat-out writer's median is the fast leg's regime and its
    # rate the slow leg's: the median hides the stalls.
    for table in (old, new):
        behind = table[table["max_backlog"] > 0]
        cap = behind["slow_iops"].iloc[0]
        assert (behind["write_p50_us"] < 0.5 * 1e6 / cap).all()
        assert (behind["write_iops"] < 1.3 * cap).all()
        # The mean, counted from submission, is far above the median and goes with the rate.
        assert (behind["write_lat_mean_us"] > 5 * behind["write_p50_us"]).all()
        assert (abs(1e6 / behind["write_lat_mean_us"] - behind["write_iops"])
                < 0.1 * behind["write_iops"]).all()


def test_every_number_on_the_pages_is_computed(run):
    figures = lab.figures(run)
    used = glued_names(PROJECT_ROOT / "book" / "write-mostly" / "lab.md")
    assert used and used <= set(figures), used - set(figures)
    used = glued_names(PROJECT_ROOT / "book" / "write-mostly" / "explain.md")
    assert used and used <= set(lab.explain_figures()), used - set(lab.explain_figures())


def test_charts_build_from_every_shipped_run_and_stay_small(run, newer, loop):
    for recorded in (run, newer, loop):
        results, meta = recorded.results, recorded.meta
        for chart in (charts.slow_leg_chart(results, meta), charts.latency_chart(results, meta),
                      charts.write_behind_chart(results, meta),
                      charts.resync_model_chart(results, meta), charts.legs_chart(results),
                      charts.drills_chart(results, meta), charts.resync_chart(results, meta)):
            assert len(json.dumps(chart.to_dict())) < 600_000
    params = charts.latency_chart(run.results, run.meta).to_dict()["params"]
    assert {p["name"] for p in params} == {"WORKLOAD", "PCT"}
    assert all("bind" in p for p in params)  # controls that work on the static page


def test_the_hyperconnect_figures_read_closely():
    f = reference.article_figures()
    # 3,659,399,168 KiB is 3.75 TB (3.41 TiB), not 3.66 TB.
    assert f["hc_array_tb"] == "3.75 TB" and f["hc_array_tib"] == "3.41 TiB"
    # md's own estimate: the array at the speed it showed.
    assert f["hc_estimate_h"] == "5.1" and f["hc_finish_min"] == "304.4"
    # The mirrored cluster was lower from p50 to p98, higher at p99, p99.99 and the maximum,
    # and a little lower at p99.9.
    latte = reference.latte_table()
    band = latte[latte.percentile.isin(["50", "90", "95", "98"])]
    assert (band["RAID"] < band["no RAID"]).all() and f["hc_lower_p50_p98"] == "lower"
    tail = latte[latte.percentile.isin(["99", "99.99", "max"])]
    assert (tail["RAID"] > tail["no RAID"]).all() and f["hc_tail_higher"] == "higher"
    p999 = latte[latte.percentile == "99.9"]
    assert len(p999) == 4 and (p999["RAID"] < p999["no RAID"]).all()
    # "both near half a second"
    assert p999[["RAID", "no RAID"]].stack().between(450, 550).all()
    assert f["hc_p999_lower"] == "lower" and f["hc_p999_change_max"] == "0.4%"
    assert set(reference.latte_display()["percentile"]) >= {"p99.9", "p99.99"}
    select = latte[latte.operation == "standard1_select_cache"].set_index("percentile")
    assert select.loc["95", "no RAID"] == 2.599 and select.loc["95", "RAID"] == 1.794
    assert select.loc["90", "no RAID"] == 1.719 and select.loc["90", "RAID"] == 1.574
    shown = reference.latte_display()
    assert not shown.isna().any().any() and all(" " in c or c.isalpha() for c in shown.columns)


def test_models():
    assert model.slow_leg_latency_ms(200, 1) == pytest.approx(6.0)
    assert model.slow_leg_latency_ms(None, 1) == pytest.approx(1.0)
    assert model.backlog_fill_s(256, 4600, 200) == pytest.approx(256 / 4400)
    assert model.backlog_fill_s(256, 100, 200) == float("inf")
    assert model.backlog_stall_s(256, 200) == pytest.approx(1.28)
    assert model.resync_rate_mib_s(200, 64) == pytest.approx(12.5)
    assert model.resync_rate_mib_s(None, 64) == pytest.approx(200000 / 1024)
    assert model.transfer_hours(3600 * 1024 * 1024, 1) == pytest.approx(1.0)
    assert model.implied_rate_mib_s(3600 * 1024 * 1024, 1) == pytest.approx(1.0)
    assert model.relative_error(1.1, 1.0) == pytest.approx(0.1)
    for bad in (lambda: model.transfer_hours(1, 0), lambda: model.backlog_fill_s(0, 1, 1),
                lambda: model.backlog_stall_s(1, 0), lambda: model.slow_leg_latency_ms(1, -1)):
        with pytest.raises(UsageError):
            bad()


def test_a_run_that_measured_less_still_feeds_the_page(run):
    """Any valid run must build the page: drop configurations and check every figure and chart
    still comes out, saying what was not measured instead of failing."""
    kept = run.results[~run.results.config.isin(["slow-cap-only", "wb-slot0-create",
                                                 "drill-resync-size"])]
    partial = records.RecordedRun(run.path, run.meta, kept.reset_index(drop=True))
    figures = lab.figures(partial)
    assert figures["backlog_slot0_create"] == NOT_MEASURED
    assert figures["part_cap_write"] == NOT_MEASURED
    for chart in (charts.slow_leg_chart(kept, run.meta), charts.write_behind_chart(kept, run.meta),
                  charts.resync_model_chart(kept, run.meta), charts.latency_chart(kept, run.meta)):
        chart.to_dict()
    shown = lab.write_behind_display({"this run": partial})
    assert not shown.isna().any().any()


def glued(page: str) -> set[str]:
    return set(re.findall(r"\{glue:(?:text|md)\}`([A-Za-z0-9_\-]+)`", page)) | set(
        re.findall(r"```\{glue:md\} ([A-Za-z0-9_\-]+)", page))


def test_the_companion_paragraphs_read_right_with_and_without_their_runs(run):
    page = (PROJECT_ROOT / "book" / "write-mostly" / "lab.md").read_text()
    assert {"wb_kernels_md", "loop_md", "resync_timing_md"} <= glued(page)
    assert "new_release" not in page and "loop_release" not in page
    # Missing: one sentence each, with the command that records the run, no placeholder.
    kernels, loop_legs = companions.kernels_text(run, None), companions.loop_text(run, None)
    assert "not recorded for this page" in kernels and "--release trixie" in kernels
    assert "No run with loop legs is recorded" in loop_legs and "--legs loop" in loop_legs
    shown = lab.markdown_paragraphs(run)
    figures = lab.figures(run)
    for text in (kernels, loop_legs, figures["wb_table_runs"],
                 *(m.data for m in shown.values())):
        assert NOT_MEASURED not in text and "nan" not in text.lower().split()
        assert "None" not in text


def test_a_shorter_companion_is_described_as_such(run, newer, loop):
    text = companions.kernels_text(run, newer)
    for companion, said in ((newer, text), (loop, companions.loop_text(run, loop))):
        profile = companion.meta["parameters"]["profile"]
        assert (f"the {profile} profile" in said) == (profile != "full")
    figures = lab.figures(run)
    assert f"{newer.meta['parameters']['profile']} profile" in figures["wb_table_runs"]


def test_what_section_4_says_about_debian_13(run, newer):
    text = companions.kernels_text(run, newer)
    table = tables.write_behind_table(newer.results, newer.meta)
    # "writes went behind in every cell"
    assert (table["max_backlog"] > 0).all() and "in every cell" in text
    # "made no difference on either kernel"
    assert "made no difference on either kernel" in text
    # The sustained rate stays near the slow leg's: every cell within 25 % of the model.
    rates, sustained = companions.sustained_rates(newer)
    assert rates and all(abs(sustained - r) < 0.25 * r for r in rates)


def test_what_section_7_says_about_the_loop_legs(run, loop):
    text = companions.loop_text(run, loop)
    results = loop.results
    # "the model of cap plus delay ... is N% below that": the slow loop leg is slower.
    slow = tables.measured(results, "slow-only", "randwrite-qd1", "clat_p50_us")
    assert slow / 1000 > model.slow_leg_latency_ms(200, 1) and "below that" in text
    # "half its writes took under <median> and its mean was <mean>, because a few waited long"
    p50 = tables.measured(results, "slow-cap-only", "randwrite-qd1", "clat_p50_us")
    mean = tables.measured(results, "slow-cap-only", "randwrite-qd1", "lat_mean_us")
    assert p50 < 0.6 * mean and "a few waited much longer" in text
    # "the resync ran above what the cap would allow": the cap does not reach md's resync.
    allowed = 200 * tables.resync_request_kib(results) / 1024
    assert tables.model_resync_rate(results, loop.meta) > allowed and ", above the" in text
    # "the same cells as on the lab VM's disks with the same kernel"
    assert lab.run_figures(loop)["wb_verdict"] == lab.run_figures(run)["wb_verdict"]
    assert "the same cells as on the lab VM's disks" in text


def test_section_2_reads_and_writes_as_the_text_states(run):
    f, results = lab.figures(run), run.results
    fast = tables.measured(results, "fast-only", "randread-qd1", "clat_p50_us")
    wm = tables.measured(results, "raid1-wm", "randread-qd1", "clat_p50_us")
    others = [tables.measured(results, c, "randread-qd1", "clat_p50_us")
              for c in ("raid1-wm-bitmap", *WRITE_BEHIND_CELLS)]
    # The model (the fast leg's read) is below the write-mostly mirror's median ...
    assert fast < wm and f["wm_read_error"].endswith("below")
    # ... but the other write-mostly arrays spread around the fast leg: some are faster.
    assert min(others) < fast < max(others) and f["wm_read_others_count"] == "five"
    assert f["wm_read_others_vs_fast"] == "some of them faster than the fast leg alone"
    # "Random writes at depth 1 took <p50> at the median (<p99> at p99)"
    p99 = tables.measured(results, "raid1-wm", "randwrite-qd1", "clat_p99_us")
    assert p99 > 2 * tables.measured(results, "raid1-wm", "randwrite-qd1", "clat_p50_us")


def test_the_flat_out_writer_behind_a_full_backlog(run):
    """Section 4: the rate goes with the mean counted from submission, not with clat's."""
    f, wb = lab.figures(run), tables.write_behind_table(run.results, run.meta)
    first = wb[wb["max_backlog"] > 0].iloc[0]
    assert f["wb_write_iops"] == f"{first['write_iops']:,.0f}"
    # One write at a time: the rate is about one per mean latency (lat, not clat).
    assert abs(1e6 / first["write_lat_mean_us"] - first["write_iops"]) < 0.1 * first["write_iops"]
    assert 1e6 / first["write_mean_us"] > 2 * first["write_iops"]
    # The model's cycles give the slow leg's pace; the measurement is within 25 % of it.
    sustained = model.backlog_sustained_iops(256, first["fast_iops"], first["slow_iops"])
    assert sustained == pytest.approx(first["slow_iops"], rel=0.02)
    assert abs(sustained - first["write_iops"]) < 0.25 * first["write_iops"]
    # Where the log caught the backlog filling, it shows the cycle: at least a backlog's worth
    # of fast writes before each long wait.
    timeline = tables.write_timeline(run.results)
    for config in wb[wb["fill_s"].notna()]["config"]:
        writes = timeline[timeline["config"] == config].sort_values("t_s").reset_index()
        long = writes.index[writes["latency_ms"] > 500 * first["stall_model_s"]].tolist()
        gaps = [b - a for a, b in zip([-1, *long], long, strict=False)]
        assert long and all(gap > 256 for gap in gaps), config
    # "The first cell's log does not show it that way": the first cell's longest wait is well
    # under a whole backlog's, while the cell named for the cycle has one close to it.
    assert first["longest_wait_s"] < 0.5 * first["stall_model_s"]
    assert f["wb_first_waits"].startswith("The first cell's log does not show it that way")
    cycle = wb[wb["fill_s"].notna()].iloc[0]
    assert abs(cycle["longest_wait_s"] - cycle["stall_model_s"]) < 0.1 * cycle["stall_model_s"]
    # "in the cell whose log shows the cycle (...) it measured 213 (the model is 6% below
    # that), and in the first cell 175 (the model is 15% above that)"
    rates = f["wb_cycle_rates"]
    assert f"({tables.CONFIG_LABELS[cycle['config']]}) it measured {cycle['write_iops']:,.0f}" \
        in rates and f"in the first cell {first['write_iops']:,.0f}" in rates
    for row in (cycle, first):
        error = (sustained - row["write_iops"]) / row["write_iops"]
        assert f"{abs(error):.0%} {'above' if error > 0 else 'below'} that" in rates
    # The paced writer from submission: write-behind still faster, by far less than the
    # medians of completion latency say.
    paced_wb = tables.measured(run.results, first["config"], "randwrite-qd1-paced",
                               "lat_mean_us")
    paced_wm = tables.measured(run.results, "raid1-wm", "randwrite-qd1-paced", "lat_mean_us")
    assert f["wb_paced_lat_ratio"] == f"{paced_wm / paced_wb:.1f}"
    median_ratio = tables.measured(run.results, "raid1-wm", "randwrite-qd1-paced",
                                   "clat_p50_us") / first["paced_p50_us"]
    assert 1 < paced_wm / paced_wb < median_ratio / 10
    # "Predicted instead from the fast leg's own rate ..., the model is 74% above the
    # measurement"
    from_fast = model.backlog_fill_s(256, first["fast_iops"], first["slow_iops"])
    fill_error = (from_fast - cycle["fill_s"]) / cycle["fill_s"]
    assert f["fill_from_fast_error"] == (
        f"{abs(fill_error):.0%} {'above' if fill_error > 0 else 'below'}")


def test_the_resync_times_as_the_text_states(run):
    f = lab.figures(run)
    resync = tables.resync_table(run.results, run.meta)
    series = resync[resync.config == "drill-resync-size"]
    drill = resync[resync.config == "drill-fast-leg-lost"].iloc[0]
    # The sizes list holds the size series only; the drill's resync is named apart.
    assert f["resync_sizes"].count(" MiB in ") == len(series)
    assert f["replace_resync"] == f"{drill.size_mib:.0f} MiB in {drill.resync_s:.1f} s"
    # Per size: the model is well below the smaller arrays' times ...
    others = series.iloc[1:]
    assert ((others.model_s - others.resync_s) / others.resync_s < -0.2).all()
    assert f["resync_errors"].count("below the") == len(others)
    # ... and the drill's resync of the same size, timed from its add, was seen done as late
    # as the series' (both well above the model, within 10 % of each other); polls timed
    # them, so the page does not call the agreement "not by chance".
    same = series[series.size_mib == drill.size_mib].iloc[0]
    added = tables.event_s(run.results, "drill-fast-leg-lost", "new fast leg added")
    synced = tables.event_s(run.results, "drill-fast-leg-lost", "in sync")
    assert drill.resync_s == pytest.approx(synced - added)
    assert abs(same.resync_s - drill.resync_s) < 0.1 * same.resync_s
    assert drill.model_s < 0.8 * drill.resync_s
    by_kernel = (resync["timed_by"] == "kernel").all()
    assert ("not by chance" in f["resync_shape"]) == by_kernel
    assert ("were seen done" in f["resync_shape"]) == (not by_kernel)
    # "each is an upper bound": every resync was still running at an earlier poll, and the
    # recorded time is the poll that saw it done; the waits for a poll were seconds long.
    polls = resync_text.resync_polls(run)
    assert len(polls) == len(resync)
    timed = polls.merge(resync, on=["config", "size_mib"])
    assert (timed.last_running_s < timed.resync_s).all()
    assert (abs(timed.done_s - timed.resync_s) < 0.01).all()
    assert f["resync_poll_wait"] == f"{polls.longest_wait_s.max():.1f} s"
    assert polls.longest_wait_s.max() > 2
    small = polls[polls.config == "drill-resync-size"].sort_values("size_mib").iloc[0]
    assert small.last_percent > 90 and small.done_s - small.last_running_s > 2
    # "did not keep one rate either": md's own figures differ by more than a fifth.
    assert polls.md_speed_mib_s.max() > 1.2 * polls.md_speed_mib_s.min()
    # The run was timed by polls only (it predates the kernel-log times): the paragraph says
    # so, with the figures above.
    assert set(resync.timed_by) == {"polls"}
    said = lab.markdown_paragraphs(run)["resync_timing_md"].data
    assert "so each is an upper bound" in said and f["resync_poll_wait"] in said
    assert f["resync_small_bracket"] in said and f["resync_md_speeds"] in said
    # One rate everywhere: the text's, the refill chart's, the resync chart's title.
    rate = tables.model_resync_rate(run.results, run.meta)
    assert f["model_resync_rate"] == f"{rate:.0f} MiB/s"
    refill = json.dumps(charts.resync_chart(run.results, run.meta).to_dict())
    assert f"model rate ({rate:.0f} MiB/s" in refill
    title = charts.resync_model_chart(run.results, run.meta).to_dict()["title"]
    assert f"{series.size_mib.max():.0f} MiB array's rate" in title
    assert f["node_resync_h"] == f"{model.transfer_hours(3.5e12, rate):.0f}"


def test_the_explain_page_says_what_the_lab_measures():
    f = lab.explain_figures()
    assert f["hc_needed_mib_s"].endswith(" MiB/s")
    newer = lab.companion_run("trixie", PROJECT_ROOT / "data" / "runs")
    assert ("Debian 13" in f["wb_kernels_measured"]) == (newer is not None)
    explain = (PROJECT_ROOT / "book" / "write-mostly" / "explain.md").read_text()
    assert "each waits" not in explain and "the cycle repeats" in explain
