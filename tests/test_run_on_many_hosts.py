"""`python -m labs run <lab> --hosts a,b,...`: one lab on several hosts at once.

The VM tests reach the session's two lab VMs (`lab_vms`) the way a workshop reaches its
cloud VMs: as SSH hosts of an inventory (seat-a, seat-b), with their own port, key and
pinned host key; a third inventory host points at a port where nothing answers. The lab is
the template lab (a journaled work folder and dd on each host), small enough for CI.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, vm_inventory_entry

from labs.__main__ import main
from labs.infra.journal import Journal
from labs.infra.vm import machine
from labs.infra.vm.image import ensure_keys

SEATS = {"seat-a": "vm1", "seat-b": "vm2"}


def closed_port() -> int:
    import socket

    with socket.socket() as probe:  # bound, never listening: connections are refused
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def seats(lab_vms):
    """An inventory naming the two lab VMs as SSH hosts, plus one that does not answer."""
    entries = [vm_inventory_entry(seat, vm) for seat, vm in SEATS.items()]
    entries.append(f'[hosts.seat-gone]\naddress = "127.0.0.1"\nport = {closed_port()}\n'
                   f'user = "root"\nkey = "{ensure_keys().client_key}"\n')
    inventory = lab_vms.base / "seats.toml"
    inventory.write_text("\n".join(entries))
    return {"LABS_INVENTORY": str(inventory)}


def runs_of(lab_vms, lab: str) -> list[Path]:
    folder = Path(lab_vms.env["LABS_RUNS_DIR"]) / lab
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".")) \
        if folder.is_dir() else []


def test_hosts_records_one_run_per_host_and_reports_the_one_that_failed(lab_vms, seats,
                                                                        figures):
    before = runs_of(lab_vms, "template")
    started = time.monotonic()
    result = lab_vms.cli("run", "template", "--quick", "--hosts", "seat-a,seat-b,seat-gone",
                         env=seats, timeout_s=900)
    many_s = time.monotonic() - started
    assert result.returncode == 1, result.stderr  # one host failed, and says so
    assert "failed on seat-gone" in result.stderr.strip().splitlines()[-1]
    assert "failed (seat-gone): host seat-gone:" in result.stdout
    assert "could not reach the host" in result.stdout
    new = [p for p in runs_of(lab_vms, "template") if p not in before]
    assert sorted(p.name.rsplit("Z-", 1)[1] for p in new) == ["seat-a", "seat-b"]
    for path in new:
        meta = json.loads((path / "run.json").read_text())
        seat = path.name.rsplit("Z-", 1)[1]
        assert meta["host"]["lab_host"] == seat
        assert meta["host"]["virtualization"] in ("qemu", "kvm")  # a VM, as the guest sees it
        assert f"--host {seat}" in meta["parameters"]["command_line"]
        assert f"recorded run ({seat}): " in result.stdout
    for seat in SEATS:  # per host progress lines, each named after lab and host
        assert f"[template@{seat}" in result.stderr
    started = time.monotonic()
    alone = lab_vms.cli("run", "template", "--quick", "--host", "seat-a", env=seats)
    one_s = time.monotonic() - started
    assert alone.returncode == 0, alone.stderr
    figures(f"--hosts: template quick on seat-a,seat-b (+1 unreachable) {many_s:.0f} s "
            f"wall, on seat-a alone {one_s:.0f} s")


def test_ctrl_c_stops_every_host_and_clean_leaves_nothing(lab_vms, seats, figures):
    before = runs_of(lab_vms, "template")
    env = {**os.environ, **lab_vms.env, **seats}
    # Big enough that each host is still writing when the Ctrl-C comes.
    process = subprocess.Popen(
        [sys.executable, "-m", "labs", "run", "template", "--hosts", "seat-a,seat-b",
         "--blocks", "256,256", "--block-kib", "4096"], cwd=PROJECT_ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True)
    reader.start()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not all(
            any(f"template@{seat}" in line and "step 1/" in line for line in lines)
            for seat in SEATS):
        assert process.poll() is None, "".join(lines)
        time.sleep(0.5)
    time.sleep(2)  # both hosts are inside dd now
    process.send_signal(signal.SIGINT)
    interrupted = time.monotonic()
    process.wait(timeout=600)
    stopped_s = time.monotonic() - interrupted
    reader.join(10)
    assert process.returncode == 130, "".join(lines)
    assert any("interrupted: stopping the lab on" in line for line in lines)
    left = {seat: Journal(seat).live_entries() for seat in SEATS}
    # --keep-vms: the seats are the session's VMs; clean what the lab left inside them.
    cleaned = lab_vms.cli("clean", "--keep-vms", env=seats)
    assert cleaned.returncode == 0, cleaned.stderr
    for seat, vm in SEATS.items():
        assert Journal(seat).live_entries() == [], seat
        remote = lab_vms.cli("vm", "run", vm, "--", "sh", "-c",
                             f"ls -A {machine.GUEST_WORK_DIR}/template 2>/dev/null; "
                             "pgrep -af 'storage-labs-[0-9a-f]' | grep -v pgrep || true")
        assert remote.returncode == 0, remote.stderr
        assert remote.stdout.strip() == "", f"{vm} still has: {remote.stdout}"
    runs_dir = Path(lab_vms.env["LABS_RUNS_DIR"]) / "template"
    assert runs_of(lab_vms, "template") == before  # an interrupted run is never recorded
    assert not list(runs_dir.glob(".staging-*"))
    figures(f"--hosts Ctrl-C: all stopped {stopped_s:.0f} s after SIGINT; left for clean: "
            f"{ {seat: len(entries) for seat, entries in left.items()} }")


# --- without VMs ------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["--hosts", ""],
    ["--hosts", ",,"],
    ["--hosts", "a,a"],
    ["--hosts", "two words"],
    ["--hosts", "local", "--host", "local"],
    ["--hosts", "local,no-such-host"],
])
def test_bad_host_lists_are_refused_before_anything_runs(argv, runs_dir, capsys, tmp_path,
                                                        monkeypatch):
    monkeypatch.setenv("LABS_INVENTORY", str(tmp_path / "hosts.toml"))
    (tmp_path / "hosts.toml").write_text("")
    code = main(["run", "quorum", "--quick", *argv])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert not any(runs_dir.rglob("run.json"))


def test_hosts_local_runs_through_the_group(runs_dir):
    result = subprocess.run([sys.executable, "-m", "labs", "run", "quorum", "--quick",
                             "--hosts", "local"], cwd=PROJECT_ROOT, capture_output=True,
                            text=True, timeout=300, env={**os.environ})
    assert result.returncode == 0, result.stderr
    assert "recorded run (local): " in result.stdout
    assert "1 of 1 hosts recorded a run" in result.stdout
    assert len(list((runs_dir / "quorum").glob("*/run.json"))) == 1


def test_ctrl_c_stops_a_lab_that_runs_only_python(runs_dir):
    """A simulation has no host command to stop: it stops at its next progress report."""
    process = subprocess.Popen(
        [sys.executable, "-m", "labs", "run", "quorum", "--hosts", "local", "--trials",
         "400000000"], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ})
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any("step 1/" in line for line in lines):
        time.sleep(0.2)
    time.sleep(1)
    process.send_signal(signal.SIGINT)
    process.wait(timeout=120)
    assert process.returncode == 130, "".join(lines)
    assert not list(runs_dir.rglob("run.json"))
    assert not list(runs_dir.rglob(".staging-*"))
