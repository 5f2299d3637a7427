"""Recorded runs: round trip, atomic writes, and every way a run can be malformed."""

import json
import shutil

import pandas as pd
import pytest
from conftest import PROJECT_ROOT

from labs import records
from labs.book.provenance import run_summary
from labs.errors import LabError
from labs.records import RecordError, RunRecorder


def make_run(root, lab="demo", run_id="20261120T100000Z-local", value=1.5):
    with RunRecorder(lab, {"size_mib": 64}, seed=3, root=root, run_id=run_id) as run:
        run.add_command("python -m labs run demo --size-mib 64")
        run.add_tool_version("fio", "fio-3.33")
        run.add_raw("fio/job.json", '{"jobs": []}')
        run.add_result(config="fast", workload="randread", metric="p99", value=value,
                       unit="us", qd=1)
        run.add_result(config="slow", workload="randread", metric="p99", value=9.0,
                       unit="us", qd=1)
    return run.final_path


def test_round_trip(tmp_path):
    path = make_run(tmp_path)
    loaded = records.load_run(path)
    assert loaded.lab == "demo" and loaded.run_id == "20261120T100000Z-local"
    assert loaded.meta["parameters"] == {"size_mib": 64}
    assert loaded.meta["seed"] == 3
    assert loaded.meta["tool_versions"] == {"fio": "fio-3.33"}
    assert loaded.meta["commands"] == ["python -m labs run demo --size-mib 64"]
    assert loaded.meta["host"]["cpu_count"] >= 1
    assert list(loaded.results.columns[:7]) == records.RESULT_COLUMNS
    assert loaded.results["qd"].tolist() == [1, 1]
    assert loaded.results["value"].tolist() == [1.5, 9.0]
    assert (loaded.raw_dir / "fio" / "job.json").read_text() == '{"jobs": []}'


def test_a_run_records_how_busy_its_machine_was_and_its_provenance_shows_it(tmp_path):
    # Every run keeps the 1, 5 and 15-minute load averages at its start and end; the book's
    # provenance table shows the 1-minute ones, so a run recorded on a busy machine says so.
    loaded = records.load_run(make_run(tmp_path))
    load = loaded.meta["controller_load"]
    assert len(load["at_start"]) == len(load["at_end"]) == 3
    assert all(value >= 0 for value in load["at_start"] + load["at_end"])
    table = run_summary(loaded).set_index("")["recorded run"]
    shown = table["machine's load (1-minute average, start / end)"]
    assert shown.startswith(f"{load['at_start'][0]:.2f} / {load['at_end'][0]:.2f} on ")
    assert loaded.meta["host"]["cpu_model"]


def test_a_run_that_kept_no_load_shows_none_and_a_lab_vm_shows_its_emulation(tmp_path):
    loaded = records.load_run(make_run(tmp_path))
    del loaded.meta["controller_load"]
    loaded.meta["host"].update(lab_vm=True, vm={"accel": "tcg"})
    table = run_summary(loaded).set_index("")["recorded run"]
    assert "machine's load (1-minute average, start / end)" not in table.index
    assert table["host"].endswith(", lab VM (TCG)")


def test_failed_run_leaves_nothing_behind(tmp_path):
    with pytest.raises(RuntimeError):
        with RunRecorder("demo", {}, root=tmp_path) as run:
            run.add_raw("partial.txt", "half")
            raise RuntimeError("the lab crashed")
    assert records.list_runs("demo", tmp_path) == []
    assert list((tmp_path / "demo").iterdir()) == []


@pytest.mark.parametrize("value", [float("nan"), float("inf"), None, "3", True])
def test_a_result_that_is_no_finite_number_stops_the_run_when_it_is_added(tmp_path, value):
    import numpy as np

    with pytest.raises(LabError, match="pgbench primary_cpu_s .* not a finite number"):
        with RunRecorder("demo", {}, root=tmp_path) as run:
            run.add_result(config="local", workload="pgbench", metric="tps", value=np.int64(3),
                           unit="tps")  # numpy's numbers are numbers
            run.add_result(config="local", workload="pgbench", metric="primary_cpu_s",
                           value=value, unit="s")
    assert records.list_runs("demo", tmp_path) == []


def test_staging_folders_are_never_listed(tmp_path):
    make_run(tmp_path)
    (tmp_path / "demo" / ".staging-20261120T110000Z-local-abcd").mkdir()
    assert [p.name for p in records.list_runs("demo", tmp_path)] == ["20261120T100000Z-local"]


def test_newest_run_is_the_latest_id(tmp_path):
    make_run(tmp_path, run_id="20261120T100000Z-local")
    make_run(tmp_path, run_id="20261121T090000Z-vm1", value=2.0)
    assert records.newest_run("demo", tmp_path).run_id == "20261121T090000Z-vm1"


def test_a_readers_run_is_never_one_the_book_shows(tmp_path):
    # The book's own runs (SHIPPED and its companions, such as SHIPPED-loop) are not the
    # reader's: "your newest run" is the newest of the others, or none.
    for run_id in ("20261120T100000Z-local", "20261121T090000Z-vm1", "20261122T090000Z-vm1"):
        make_run(tmp_path, run_id=run_id)
    (tmp_path / "demo" / "SHIPPED").write_text("20261120T100000Z-local\n")
    (tmp_path / "demo" / "SHIPPED-loop").write_text("20261122T090000Z-vm1\n")
    assert records.readers_newest_run("demo", tmp_path).run_id == "20261121T090000Z-vm1"
    (tmp_path / "demo" / "SHIPPED-other").write_text("20261121T090000Z-vm1\n")
    assert records.readers_newest_run("demo", tmp_path) is None


def test_the_book_ships_no_run_it_does_not_show():
    # On the published site, "your run beside the book's" must find no reader's run: every
    # run in data/runs is named by a SHIPPED file of its lab.
    shipped = PROJECT_ROOT / "data" / "runs"
    for lab_dir in sorted(shipped.iterdir()):
        shown = records.book_run_ids(lab_dir.name, shipped)
        assert {p.name for p in records.list_runs(lab_dir.name, shipped)} <= shown, lab_dir.name


def test_no_runs_is_a_clear_error(tmp_path):
    with pytest.raises(RecordError, match="no recorded runs of lab 'nothing'"):
        records.newest_run("nothing", tmp_path)


def test_runs_started_in_the_same_second_never_overwrite_each_other(tmp_path):
    first = make_run(tmp_path, value=1.5)
    second = make_run(tmp_path, value=2.5)
    third = make_run(tmp_path, value=3.5)
    assert [first.name, second.name, third.name] == [
        "20261120T100000Z-local", "20261120T100001Z-local", "20261120T100002Z-local"]
    loaded = [records.load_run(p) for p in (first, second, third)]
    assert [r.results["value"].iloc[0] for r in loaded] == [1.5, 2.5, 3.5]
    # The id inside the run is the folder's, in run.json and in every result row.
    assert all(r.meta["run_id"] == r.path.name == r.results["run_id"].unique()[0]
               for r in loaded)


def test_empty_results_are_refused_and_leave_nothing(tmp_path):
    with pytest.raises(RecordError, match="produced no results"):
        with RunRecorder("demo", {}, root=tmp_path):
            pass
    assert records.list_runs("demo", tmp_path) == []


def test_raw_names_cannot_escape(tmp_path):
    with pytest.raises(RecordError, match="leaves the run's raw/ folder"):
        with RunRecorder("demo", {}, root=tmp_path) as run:
            run.add_raw("../../outside.txt", "x")


def test_run_ids_are_sortable_and_name_the_host():
    import datetime as dt

    when = dt.datetime(2026, 11, 20, 22, 15, 0, tzinfo=dt.UTC)
    assert records.new_run_id("VM 1", when) == "20261120T221500Z-vm-1"


# --- every malformed run is refused with one line naming file and field ----------------


def edit_meta(path, change):
    meta = json.loads((path / "run.json").read_text())
    change(meta)
    (path / "run.json").write_text(json.dumps(meta))


MALFORMED_META = [
    ("field 'lab' missing", lambda m: m.pop("lab")),
    ("field 'seed' must be an integer or null", lambda m: m.update(seed="three")),
    ("field 'parameters' must be an object", lambda m: m.update(parameters=[1])),
    ("field 'commands' must be a list", lambda m: m.update(commands="fio")),
    ("field 'commands' must be a list of strings", lambda m: m.update(commands=[1])),
    ("field 'started_at' is not an ISO 8601 time", lambda m: m.update(started_at="yesterday")),
    ("field 'format_version' is 99", lambda m: m.update(format_version=99)),
    ("field 'format_version' must be an integer", lambda m: m.update(format_version=True)),
    ("field 'run_id' 'bad id' is not a run id", lambda m: m.update(run_id="bad id")),
    ("field 'run_id' is '20261120T100001Z-local' but the folder is",
     lambda m: m.update(run_id="20261120T100001Z-local")),
    ("field 'lab' is 'other' but the run is filed under 'demo'",
     lambda m: m.update(lab="other")),
    ("field 'host' must be an object", lambda m: m.update(host=None)),
]


@pytest.mark.parametrize(("message", "change"), MALFORMED_META, ids=[m for m, _ in MALFORMED_META])
def test_malformed_run_json_is_refused(tmp_path, message, change):
    path = make_run(tmp_path)
    edit_meta(path, change)
    with pytest.raises(RecordError) as error:
        records.load_run(path)
    assert "run.json" in str(error.value) and message in str(error.value)
    assert len(str(error.value).splitlines()) == 1


def test_missing_run_json(tmp_path):
    path = make_run(tmp_path)
    (path / "run.json").unlink()
    with pytest.raises(RecordError, match=r"run.json: missing \(half-written run\?\)"):
        records.load_run(path)


def test_run_json_not_json(tmp_path):
    path = make_run(tmp_path)
    (path / "run.json").write_text('{"lab": "demo",')
    with pytest.raises(RecordError, match="run.json: not valid JSON"):
        records.load_run(path)


def test_run_json_not_an_object(tmp_path):
    path = make_run(tmp_path)
    (path / "run.json").write_text("[1, 2]")
    with pytest.raises(RecordError, match="run.json: must hold a JSON object"):
        records.load_run(path)


def test_missing_results(tmp_path):
    path = make_run(tmp_path)
    (path / "results.csv").unlink()
    with pytest.raises(RecordError, match=r"results.csv: missing"):
        records.load_run(path)


def test_missing_raw(tmp_path):
    path = make_run(tmp_path)
    shutil.rmtree(path / "raw")
    with pytest.raises(RecordError, match=r"raw: missing"):
        records.load_run(path)


def test_missing_folder(tmp_path):
    with pytest.raises(RecordError, match="no such run folder"):
        records.load_run(tmp_path / "demo" / "20261120T100000Z-local")


def edit_results(path, change):
    frame = pd.read_csv(path / "results.csv")
    frame = change(frame)
    frame.to_csv(path / "results.csv", index=False)


MALFORMED_RESULTS = [
    ("column 'metric' missing", lambda f: f.drop(columns=["metric"])),
    ("column 'value' is 'fast' on row 2, not a finite number",
     lambda f: f.assign(value=["fast", "9.0"])),
    ("column 'value' is 'inf' on row 3", lambda f: f.assign(value=["1.0", "inf"])),
    ("column 'run_id' is 'other' on row 2", lambda f: f.assign(run_id="other")),
    ("column 'lab' is 'x' on row 2", lambda f: f.assign(lab="x")),
    ("column 'unit' has unknown unit 'furlongs'", lambda f: f.assign(unit="furlongs")),
    ("column 'config' has an empty cell", lambda f: f.assign(config=["fast", None])),
    ("no rows", lambda f: f.iloc[0:0]),
]


@pytest.mark.parametrize(("message", "change"), MALFORMED_RESULTS,
                         ids=[m for m, _ in MALFORMED_RESULTS])
def test_malformed_results_are_refused(tmp_path, message, change):
    path = make_run(tmp_path)
    edit_results(path, change)
    with pytest.raises(RecordError) as error:
        records.load_run(path)
    assert "results.csv" in str(error.value) and message in str(error.value)


def test_unreadable_csv(tmp_path):
    path = make_run(tmp_path)
    (path / "results.csv").write_bytes(b"")
    with pytest.raises(RecordError, match="results.csv: not a readable CSV"):
        records.load_run(path)


def test_every_committed_run_loads():
    """The runs the book shows must all pass the loader."""
    for lab in records.labs_with_runs():
        for path in records.list_runs(lab):
            records.load_run(path)
