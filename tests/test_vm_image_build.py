"""A `vm build` killed while debootstrap runs, then `clean`: it needs root and the network
to Debian's mirror, not the session's lab VMs, so it runs beside them (the host group)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT as ROOT
from conftest import report

KILL_SEED = 20261120  # where in the first seconds after the mount the kill lands


@pytest.mark.lab_host  # runs debootstrap as root
def test_a_killed_image_build_is_cleaned_up(tmp_path, request):
    """Kill `vm build` while debootstrap runs, once it has mounted /proc in the new tree;
    clean must stop what it left running, unmount, and delete the half-built tree."""
    env = {**os.environ, "LABS_STATE_DIR": str(tmp_path / "state"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    build = subprocess.Popen([sys.executable, "-m", "labs", "vm", "build"], cwd=ROOT, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    # Wait for debootstrap's first mount inside the build's tree (below the tree's own
    # tmpfs, when the tree is built in memory), then kill a moment later: the kill always
    # finds mounts to undo, and the test does not sit through the download first.
    while not [line for line in Path("/proc/mounts").read_text().splitlines()
               if str(tmp_path) in line and "/root/" in line.split()[1]]:
        assert build.poll() is None, "the build ended before it mounted anything"
        assert time.monotonic() - started < 600, "no mount in the build's tree after 600 s"
        time.sleep(0.5)
    mounted_s = time.monotonic() - started
    time.sleep(random.Random(KILL_SEED).uniform(0, 3))
    kill_after_s = time.monotonic() - started
    assert build.poll() is None, "the build ended before the kill: nothing was tested"
    build.kill()
    build.wait()
    scratch = list((tmp_path / "cache" / "storage-labs" / "vm").glob(".build-*"))
    assert len(scratch) == 1
    cleaned = subprocess.run([sys.executable, "-m", "labs", "clean"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=600)
    assert cleaned.returncode == 0, cleaned.stderr
    from labs.infra.scratch import processes_inside

    mounts = [line for line in Path("/proc/mounts").read_text().splitlines()
              if str(tmp_path) in line]
    left = {"processes": len(processes_inside(str(scratch[0]))), "mounts": len(mounts),
            "scratch dirs": len(list(scratch[0].parent.glob(".build-*")))}
    report(request.config, f"killed image build at {kill_after_s:.0f} s (its first mount at "
           f"{mounted_s:.0f} s); left after clean: {left}")
    assert left == {"processes": 0, "mounts": 0, "scratch dirs": 0}
