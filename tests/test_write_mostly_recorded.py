"""The recorded run the chapter shows: valid, re-derivable from its raw files, and it says
what the chapter says it says. No VM needed: this reads data/runs/write-mostly/."""

import re

import pytest
from conftest import PROJECT_ROOT

from labs import rawfiles, records
from labs.errors import UsageError
from labs.write_mostly import charts, model, tables
from labs.write_mostly import page as lab
from labs.write_mostly.params import WORKLOADS


@pytest.fixture(scope="module")
def run():
    return records.newest_run("write-mostly", PROJECT_ROOT / "data" / "runs")


def test_recorded_by_the_project_command_on_a_lab_vm(run):
    assert run.meta["parameters"]["command_line"].startswith(
        "python -m labs run write-mostly --host vm1")
    assert run.meta["parameters"]["profile"] == "full"
    assert run.meta["host"]["lab_vm"] and run.meta["host"]["vm"]["accel"] in ("tcg", "kvm")
    assert not run.meta["git_commit"].endswith("-dirty")


def test_results_re_derive_from_the_raw_fio_files(run):
    results = run.results
    checked = 0
    for config in tables.CONFIG_ORDER:
        for workload in WORKLOADS:
            path = run.raw_dir / "fio" / config / f"{workload}.json"
            (row,) = rawfiles.parse_fio_file(path)
            recorded = results[(results.config == config) & (results.workload == workload)
                               & (results.metric == "clat_p99_us")].value
            assert float(recorded.iloc[0]) == pytest.approx(row["clat_p99_us"])
            checked += 1
    assert checked == len(tables.CONFIG_ORDER) * len(WORKLOADS)


def test_the_chapter_claims_hold_in_the_recorded_run(run):
    summary = tables.summary_table(run.results).set_index("config")
    for config in ("raid1-wm", "raid1-wm-bitmap", "raid1-wm-wb", "raid1-wm-wb-slot1"):
        assert summary.loc[config, "slow_read_share"] < 0.01
    slow_write = summary.loc["slow-only", "write_p50_us"]
    for config in ("raid1", "raid1-wm", "raid1-wm-bitmap", "raid1-wm-wb-slot1"):
        assert summary.loc[config, "write_p50_us"] >= 0.9 * slow_write
    assert summary.loc["raid1-wm-wb", "write_p50_us"] < 0.5 * slow_write
    backlog = run.results[run.results.metric == "write_behind_max_backlog"].set_index(
        "config")["value"]
    assert backlog["raid1-wm-wb"] > 0 and backlog["raid1-wm-wb-slot1"] == 0
    checks = run.results[run.results.metric == "data_check_ok"]
    control = checks.workload == "data-check-one-block-moved"
    assert (checks[~control].value == 1).all() and (checks[control].value == 0).all()


def test_every_number_on_the_lab_page_is_computed(run):
    page = (PROJECT_ROOT / "book" / "write-mostly" / "lab.md").read_text()
    used = set(re.findall(r"\{glue:text\}`([A-Za-z0-9_\-]+)`", page))
    figures = lab.figures(run)
    assert used and used <= set(figures), used - set(figures)


def test_charts_build_from_the_run_and_stay_small(run):
    import json

    for build in (charts.latency_chart, charts.legs_chart, charts.drills_chart,
                  charts.resync_chart):
        spec = build(run.results).to_dict()
        assert len(json.dumps(spec)) < 100_000, build.__name__
    params = charts.latency_chart(run.results).to_dict()["params"]
    assert {p["name"] for p in params} == {"WORKLOAD", "PCT"}
    assert all("bind" in p for p in params)  # controls that work on the static page


def test_transfer_model():
    assert model.transfer_hours(3600 * 1024 * 1024, 1) == pytest.approx(1.0)
    assert model.implied_rate_mib_s(3600 * 1024 * 1024, 1) == pytest.approx(1.0)
    with pytest.raises(UsageError):
        model.transfer_hours(1, 0)
