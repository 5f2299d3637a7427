"""The recorded runs the chapter shows: valid, re-derivable from their raw files, and they say
what the chapter says they say. No VM needed: this reads data/runs/write-mostly/.

Every sentence of the lab page that describes a shape (faster than, about the same as, only in
slot 0) is glued from page.figures(run); the tests here assert those shapes on the shipped
runs, so a new recording that changes them fails here before the text can go stale.
"""

import json
import re

import pytest
from conftest import PROJECT_ROOT

from labs import rawfiles, records
from labs.errors import UsageError
from labs.write_mostly import charts, model, reference, tables
from labs.write_mostly import page as lab
from labs.write_mostly.figures import NOT_MEASURED
from labs.write_mostly.params import WRITE_BEHIND_CELLS, workload_groups


@pytest.fixture(scope="module")
def run():
    return records.shipped_run("write-mostly", PROJECT_ROOT / "data" / "runs")


@pytest.fixture(scope="module")
def newer():
    newer = lab.companion_run("trixie", PROJECT_ROOT / "data" / "runs")
    assert newer is not None, "data/runs/write-mostly/SHIPPED-trixie names no run"
    return newer


@pytest.fixture(scope="module")
def loop():
    loop = lab.companion_run("loop", PROJECT_ROOT / "data" / "runs")
    assert loop is not None, "data/runs/write-mostly/SHIPPED-loop names no run"
    return loop


def test_recorded_by_the_project_command_on_lab_vms(run, newer, loop):
    for recorded, legs in ((run, "disks"), (newer, "disks"), (loop, "loop")):
        meta = recorded.meta
        assert meta["parameters"]["command_line"].startswith(
            "python -m labs run write-mostly --host vm1")
        assert meta["parameters"]["profile"] == "full"
        assert meta["parameters"]["legs_mode"] == legs
        assert meta["host"]["lab_vm"] and meta["host"]["vm"]["accel"] in ("tcg", "kvm")
        assert not meta["git_commit"].endswith("-dirty")
    assert run.meta["host"]["vm"]["release"] == "bookworm"
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
    page = (PROJECT_ROOT / "book" / "write-mostly" / "lab.md").read_text()
    used = set(re.findall(r"\{glue:text\}`([A-Za-z0-9_\-]+)`", page))
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
        assert (behind["longest_wait_s"] > 0.5 * behind["stall_model_s"]).all()


def test_every_number_on_the_pages_is_computed(run):
    lab_page = (PROJECT_ROOT / "book" / "write-mostly" / "lab.md").read_text()
    explain = (PROJECT_ROOT / "book" / "write-mostly" / "explain.md").read_text()
    figures = lab.figures(run)
    used = set(re.findall(r"\{glue:text\}`([A-Za-z0-9_\-]+)`", lab_page))
    assert used and used <= set(figures), used - set(figures)
    used = set(re.findall(r"\{glue:text\}`([A-Za-z0-9_\-]+)`", explain))
    assert used and used <= set(lab.explain_figures()), used - set(lab.explain_figures())


def test_charts_build_from_every_shipped_run_and_stay_small(run, newer, loop):
    for recorded in (run, newer, loop):
        results, meta = recorded.results, recorded.meta
        for chart in (charts.slow_leg_chart(results, meta), charts.latency_chart(results, meta),
                      charts.write_behind_chart(results, meta),
                      charts.resync_model_chart(results, meta), charts.legs_chart(results),
                      charts.drills_chart(results, meta), charts.resync_chart(results)):
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
    # The mirrored cluster was lower from p50 to p98 and higher at p99 and the maximum.
    latte = reference.latte_table()
    band = latte[latte.percentile.isin(["50", "90", "95", "98"])]
    assert (band["RAID"] < band["no RAID"]).all() and f["hc_lower_p50_p98"] == "lower"
    tail = latte[latte.percentile.isin(["99", "max"])]
    assert (tail["RAID"] > tail["no RAID"]).all() and f["hc_tail_higher"] == "higher"
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
