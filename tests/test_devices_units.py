"""The devices lab's pure parts: fio jobs, QMP arguments, the throttles it refuses, fio logs,
the MariaDB sessions' script and its output."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from labs.devices.params import Parameters
from labs.devices.run import burst_throttle, fio_jobs, parse_sessions, sessions_script, volumes
from labs.errors import LabError, UsageError
from labs.infra.vm.throttle import qmp_arguments
from labs.models import cloud_volume
from labs.tools.fio import FioError, parse_log


def test_every_fio_job_of_every_profile_has_its_own_name():
    for profile in Parameters.PROFILES:
        jobs = fio_jobs(Parameters.for_profile(profile), "/dev/vdb")
        assert len({job.name for job, _ in jobs}) == len(jobs)
        assert all(job.filename == "/dev/vdb" and job.size == "256M" for job, _ in jobs)


def test_the_volumes_are_the_articles_and_sc1_charges_a_mib_per_io():
    by_name = {name: (disk, limit) for name, disk, limit in volumes(Parameters())}
    assert by_name["unthrottled"] == ("fast", None)
    gp3 = by_name["gp3"][1]
    assert (gp3.iops_total, gp3.iops_size) == (3000, 256 * 1024)
    sc1 = by_name["sc1"][1]
    assert by_name["sc1"][0] == "slow" and sc1.iops_size == 1024 * 1024
    assert sc1.predicted_iops(16 * 1024) == sc1.predicted_iops(1024 * 1024) == 23
    assert burst_throttle(Parameters()).burst_seconds == pytest.approx(30, rel=0.1)


def test_sc1_baseline_of_300_gib_is_refused_as_too_small_for_qemu():
    with pytest.raises(UsageError, match="below the floor"):
        cloud_volume.sc1_phase_throttle(cloud_volume.Sc1(300), "baseline")


def test_qmp_arguments_fill_every_required_limit_and_refuse_nonsense():
    args = qmp_arguments("slow", {"throttling.iops-total": 23, "throttling.iops-size": 1 << 20})
    assert args == {"device": "slow", "bps": 0, "bps_rd": 0, "bps_wr": 0, "iops": 23,
                    "iops_rd": 0, "iops_wr": 0, "iops_size": 1 << 20}
    assert qmp_arguments("fast", {})["iops"] == 0  # no limits at all
    with pytest.raises(UsageError, match="data disks are fast, slow"):
        qmp_arguments("root", {})
    with pytest.raises(UsageError, match="not a throttling option"):
        qmp_arguments("fast", {"throttling.bogus": 1})
    with pytest.raises(UsageError, match="whole number"):
        qmp_arguments("fast", {"throttling.iops-total": -1})


def test_fio_bandwidth_log_parses_and_refuses_garbage():
    rows = parse_log("1001, 90021, 0, 0, 0\n2001, 12288, 1, 4096, 0, 0\n")
    assert rows == [{"time_ms": 1001, "value": 90021, "op": "read"},
                    {"time_ms": 2001, "value": 12288, "op": "write"}]
    with pytest.raises(FioError, match="not a fio log line"):
        parse_log("time, bw\n")
    with pytest.raises(FioError, match="empty log"):
        parse_log("\n")
    with pytest.raises(FioError, match="unknown direction"):
        parse_log("1000, 5, 7, 0, 0\n")


def test_the_sessions_script_is_valid_shell_and_its_output_parses(tmp_path):
    script = sessions_script("/x/server.sock", "/mnt/x/tmp", "/dev/vdc", 3, 500, "/tmp/s")
    assert subprocess.run(["sh", "-n", "-c", script], check=False).returncode == 0
    assert "CALL lab.insert_rows(500)" in script and "/sys/block/vdc/stat" in script
    out = ("disk-before 10 2048\ndisk-after 14 4096\nwall 2.5\nsession 1 2.41\n"
           "session 2 2.38\nsession 3 2.47\ntables-max-bytes 123456\n")
    assert parse_sessions(out, "test") == {
        "session_s": [2.41, 2.38, 2.47], "wall_s": 2.5, "write_requests": 4,
        "written_bytes": 2048 * 512, "tables_max_bytes": 123456}


def test_the_sessions_script_runs_its_clients_at_once_and_reports_each(tmp_path):
    # A stand-in for the client (the real one runs in the live tests): one second, then the
    # time the procedure would print.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "mariadb").write_text("#!/bin/sh\nsleep 1; echo 0.9\n")
    (fake / "mariadb").chmod(0o755)
    (tmp_path / "tables").mkdir()
    device = next(d for d in sorted(Path("/sys/block").iterdir()))
    script = sessions_script("/x.sock", str(tmp_path / "tables"), f"/dev/{device.name}", 3, 10,
                             str(tmp_path / "scratch"))
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    result = parse_sessions(done.stdout, "test")
    assert result["session_s"] == [0.9, 0.9, 0.9]
    assert 1.0 <= result["wall_s"] < 2.5  # at once, not one after the other
    assert list(tmp_path.glob("scratch*")) == []  # its own files removed


@pytest.mark.parametrize("out", [
    "", "disk-before 1 2\ndisk-after 1 2\nwall 1\ntables-max-bytes 9\n",  # no session
    "disk-before 1 2\nwall 1\nsession 1 1\ntables-max-bytes 9\n",  # no disk-after
    "disk-before 1 2\ndisk-after x 2\nwall 1\nsession 1 1\ntables-max-bytes 9\n",
    "ERROR 1305 (42000): PROCEDURE lab.insert_rows does not exist\n"])
def test_unexpected_sessions_output_is_one_clear_error(out):
    with pytest.raises(LabError, match="^inserts: "):
        parse_sessions(out, "inserts")


def test_rows_that_would_not_fit_the_data_disk_are_refused():
    with pytest.raises(UsageError, match="more than the 768 MiB"):
        Parameters(sessions=(1, 16), rows=1_000_000).check()
    Parameters(sessions=(1, 10), rows=300_000).check()  # about 229 MiB: fits
