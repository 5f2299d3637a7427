"""The devices lab on --host local (ci profile): this machine's own disk, as root, through a
loop device over a file of the lab's. Nothing is emulated there.

Asserted: every fio measurement and the sysbench run were made on that loop device and on
nothing else, the steps that need a lab VM (the burst, MariaDB) did not run, the run's
headline has no model to stand beside (there is no contract to predict from), and nothing is
left: no loop device, no file, no journal entry. A killed run leaves nothing after `clean`.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import kill_at_step_then_clean, local_lab_env, loops_over, run_local_ci

from labs.devices import page
from labs.infra.journal import Journal
from labs.records import list_runs

# lab_host: a lab run as root on a loop device
pytestmark = [pytest.mark.slow, pytest.mark.lab_host]


def leftovers(base: Path) -> list[str]:
    """Live journal entries, loop devices and files of this test's folders."""
    found = [f"journal {e.kind} {e.id}" for e in
             Journal("local", base / "state" / "journal-local.jsonl").live_entries()]
    found += loops_over(base)
    work = base / "work"
    found += [f"file {p}" for p in work.rglob("*") if p.is_file()] if work.exists() else []
    return found


@pytest.fixture(scope="module")
def local_run():
    base = Path(tempfile.mkdtemp(prefix="storage-labs-test-devices-", dir="/var/tmp"))
    yield run_local_ci("devices", base, timeout=900)
    shutil.rmtree(base, ignore_errors=True)


def test_every_measurement_is_of_the_loop_device_and_nothing_else(local_run):
    run = local_run["run"]
    device = re.search(r"fio on a volume — local \((/dev/loop\d+)\)", local_run["stderr"]).group(1)
    raw = run.path / "raw" / "fio" / "local"
    jobs = sorted(raw.iterdir())
    assert len(jobs) == len(page.fio_results(run)) > 0
    for path in jobs:
        options = json.loads(path.read_text())["jobs"][0]["job options"]
        assert options["filename"] == device, path.name
    assert (page.fio_results(run)["iops"] > 0).all()
    assert sorted(p.name for p in (run.path / "raw" / "sysbench").iterdir()) == ["local.txt"]


def test_only_the_steps_a_local_disk_allows_ran(local_run):
    results = local_run["run"].results
    assert set(results["volume"].dropna()) == {"local"}
    assert not results["workload"].isin(["burst", "mariadb-inserts"]).any()
    steps = re.findall(r"step (\d+)/(\d+):", local_run["stderr"])
    assert steps[-1][0] == steps[-1][1]  # the progress knew its length


def test_the_headline_stands_alone_without_a_contract(local_run):
    table = page.headline(local_run["run"])
    assert list(table["config"].unique()) == ["local"]
    assert len(table) == 3 and table["model"].isna().all()


def test_nothing_is_left_behind(local_run):
    assert leftovers(local_run["base"]) == []


def test_a_killed_local_run_leaves_nothing_after_clean():
    base = Path(tempfile.mkdtemp(prefix="storage-labs-test-devices-kill-", dir="/var/tmp"))
    # At the sysbench run: a loop device, ext4 mounted on it, sysbench's files.
    kill_at_step_then_clean(["run", "devices", "--host", "local", "--profile", "ci"],
                            local_lab_env(base), "sysbench fileio rndrw — on local",
                            lambda: leftovers(base))
    assert list_runs("devices", base / "runs") == []
    shutil.rmtree(base, ignore_errors=True)
