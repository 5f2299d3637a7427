"""The write-path lab on the session's shared vm2 (ci profile): a real ext4 on a real
dm-log-writes device, a writer in each of six ways, and three faults: a process crash, a
kernel crash and a power cut that loses the device's cache, the last two rebuilt from the log.

Asserted: every way was cut and counted under all three faults; the ways that flush before
they answer lose nothing, a process crash takes only the program's own buffer, and a kernel
crash only what was in memory; the power cut takes what no flush covered (all of write()'s
records, all of fsync()'s with barrier=0, the newest of O_DIRECT's), never more than the
model's most; each replay stopped at its mark; nothing is left in the VM. A run killed while
its writer writes leaves nothing after `clean`. Bad input stops with one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from itertools import pairwise

import pytest
from conftest import (
    PROJECT_ROOT,
    assert_no_leftovers,
    assert_one_line_usage_error,
    kill_once_it_prints,
    report,
)

from labs.write_path import findings, model

pytestmark = pytest.mark.slow

VM = "vm2"  # its ci run goes beside the commit-settings tests, which use vm1


@pytest.fixture(scope="module")
def ci_run(background_ci, request):
    # Started beside the commit-settings tests (conftest.BackgroundCiRuns), or here if alone.
    run, seconds = background_ci.finish("write-path", "--host", VM)
    table = findings.tally_table(run)
    report(request.config, f"write-path ci run on {VM}: {seconds:.0f} s; "
           + "; ".join(f"{row.way} {row.fault}: lost {row.lost} of {row.acked} (model's most "
                       f"{row.model_most_lost})" for row in table.itertuples()))
    return run


@pytest.fixture(scope="module")
def found(ci_run):
    return findings.findings(ci_run)


def test_every_way_was_cut_and_counted_under_every_fault(ci_run, found):
    table = findings.tally_table(ci_run)
    assert sorted(zip(table["way"], table["fault"], strict=True)) == sorted(
        (way, fault) for way in model.WAYS for fault in model.FAULTS)
    assert (table["acked"] > 0).all() and (table["lost"] <= table["acked"]).all()


def test_each_writer_kept_its_rate_until_the_cut(ci_run, found):
    """Once started, each writer acknowledged records at about its rate, and it was still
    writing when the cut came. Its start in the VM (a new Python under emulation) takes a
    second or more of a short trial, and more on a busy machine, so the count over the
    whole trial says little."""
    for cut in findings.cut_files(ci_run):
        ages_s = cut["trial"]["ack_age_s"]
        name = f"{cut['way']} cut {cut['cut']}"
        assert min(ages_s) < 1.0, f"{name}: its newest record was {min(ages_s):.2f} s old"
        span_s = max(ages_s) - min(ages_s)
        # Less its one longest pause: a flush under emulation on a busy machine can hold one
        # record for a third of a second, which in a short trial (a late start leaves some
        # writers under a second) would halve the count by itself.
        ordered = sorted(ages_s)
        pause_s = max((b - a for a, b in pairwise(ordered)), default=0.0)
        assert len(ages_s) - 1 >= 0.5 * found.params.rate * (span_s - pause_s), \
            f"{name}: {len(ages_s)} records in {span_s:.1f} s, longest pause {pause_s:.2f} s"


def test_the_flushing_ways_lose_nothing_and_a_crash_takes_only_the_own_buffer(found):
    assert found.safe_ways_lose_nothing
    assert found.crash_takes_only_the_own_buffer


def test_a_kernel_crash_takes_what_was_only_in_memory(found):
    assert found.loses_everything("write", "kernel crash")
    assert found.loses_everything("app-buffer", "kernel crash")
    for way in ("write+fsync", "direct", "direct+dsync", "fsync-nobarrier"):
        assert found.tally(way, "kernel crash").lost == 0, way


def test_the_power_cut_takes_what_no_flush_covered_within_the_model(found):
    assert found.loses_everything("write", "power cut")
    assert found.loses_everything("fsync-nobarrier", "power cut")
    assert found.loses_everything("app-buffer", "power cut")
    assert found.tally("direct", "power cut").lost > 0
    assert found.direct_newest_lost_only
    assert found.every_loss_within_the_model


def test_each_replay_stopped_at_its_mark_and_only_flushed_ways_logged_their_records(ci_run):
    for cut in findings.cut_files(ci_run):
        to_cut, to_crash = cut["replay to cut"], cut["replay to crash"]
        assert to_cut["mark_found"] and to_crash["mark_found"], cut["way"]
        # The crash's mark comes after the cut's: its replay holds at least as much.
        assert to_crash["replayed"] >= to_cut["replayed"] > 0, cut["way"]
        records_bytes = cut["trial"]["acked"] * 4096
        if cut["way"] == "write+fsync":  # a FLUSH per record, each covering its record
            assert to_cut["flushes"] >= cut["trial"]["acked"]
            assert to_cut["bytes"] >= records_bytes
        if cut["way"] == "direct+dsync":  # each record its own FUA write
            assert to_cut["fua"] >= cut["trial"]["acked"]
        if cut["way"] == "direct":  # completed, not flushed: logged only by the bare FLUSH
            assert to_crash["bytes"] - to_cut["bytes"] >= cut["power cut"]["lost"] * 4096


def test_nothing_is_left_in_the_vm(ci_run, lab_vms):
    assert_no_leftovers(lab_vms, VM)
    devices = lab_vms.cli("vm", "run", VM, "--", "dmsetup ls; pgrep -fc '[p]robe[.]py' || true",
                          timeout_s=120)
    assert "wp-" not in devices.stdout and devices.stdout.strip().endswith("0"), devices.stdout


def test_a_run_killed_while_its_writer_writes_leaves_nothing_after_clean(ci_run, lab_vms,
                                                                         figures):
    kill_once_it_prints(["run", "write-path", "--host", VM, "--profile", "ci", "--ways",
                         "write+fsync"], {**os.environ, **lab_vms.env}, "of writing",
                        settle_s=8)  # the set-up's commands done, the writer writing
    cleaned = lab_vms.cli("clean", "--host", VM, "--keep-vms", timeout_s=600)
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    left = assert_no_leftovers(lab_vms, VM)
    busy = lab_vms.cli("vm", "run", VM, "--", "dmsetup ls; pgrep -fc '[p]robe[.]py' || true",
                       timeout_s=120)
    assert "wp-" not in busy.stdout and busy.stdout.strip().endswith("0"), busy.stdout
    figures(f"write-path killed while writing: clean left {left}")


@pytest.mark.parametrize("args, words", [
    (["--host", "local"], "takes over a lab VM's two lab disks"),
    (["--ways", "write,write"], "each way of writing once"),
    (["--ways", "mmap"], "mmap"),
    (["--cuts", "0"], "--cuts"),
    (["--rate", "500", "--write-s", "120"], "more than 8192 records"),
])
def test_bad_input_is_one_line_and_makes_nothing(args, words):
    ran = subprocess.run([sys.executable, "-m", "labs", "run", "write-path", *args],
                         cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert_one_line_usage_error(ran, words)
