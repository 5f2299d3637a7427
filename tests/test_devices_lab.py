"""The devices lab on the session's shared vm1 (ci profile): real QEMU throttles, real fio.

Asserted: the emulated gp3 and sc1 keep their contracts where the model says they must
(deep queues, sequential reads, the burst then the baseline), sc1 charges a 16 KiB read
like a 1 MiB one, sysbench and the MariaDB inserts ran on all three volumes, and afterwards
both data disks are throttled exactly as the VM was booted and nothing is left in the VM (no
server either). A run interrupted while a volume is throttled puts the disks back. Bad input
stops with one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import (
    PROJECT_ROOT,
    assert_one_line_usage_error,
    interrupt_lab_at,
    kill_once_it_prints,
    report,
    run_labs,
    run_vm_ci,
)
from session_report import machine_to_itself

from labs.devices import page

pytestmark = pytest.mark.slow

VM = "vm1"


def throttles(lab_vms) -> dict[str, dict]:
    code = ("from labs.infra.vm import throttle as t; import json; "
            f"print(json.dumps({{d: t.current_throttle('{VM}', d) for d in ('fast', 'slow')}}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True,
                         text=True, timeout=60, env={**os.environ, **lab_vms.env})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def leftovers(lab_vms) -> str:
    out = lab_vms.cli("leftovers", "--host", VM, timeout_s=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()[0]


@pytest.fixture(scope="module")
def ci_run(lab_vms, request):
    booted = throttles(lab_vms)
    # The machine to itself, as for the DRBD run: under emulation gp3's 3,000 IOPS take CPU,
    # and beside the host group's book build a rehearsal of 05d355a got 2,299 (-23 %).
    with machine_to_itself():
        ran = run_vm_ci(lab_vms, "devices", "--host", VM, timeout_s=1800)
    run, wall_s = ran.run, ran.wall_s
    f = page.figures(run)
    report(request.config, f"devices ci run on {VM}: {wall_s:.0f} s; gp3 "
           f"{f['gp3_deep_iops']} IOPS at depth {f['deep']} ({f['gp3_deep_error']} %), sc1 "
           f"{f['sc1_deep_iops']} ({f['sc1_deep_error']} %), sc1 at depth 1 {f['sc1_qd1_iops']}; "
           f"burst {f['burst_measured_mib_s']} then {f['base_measured_mib_s']} MiB/s; sysbench "
           f"gp3/sc1 {f['sb_ratio']}x (model {f['sb_model_ratio']}x); MariaDB inserts sc1/gp3 "
           f"{f['mdb_ratio_min']} to {f['mdb_ratio_max']}x (model {f['mdb_model_ratio_max']}x), "
           f"{f['mdb_written_most_mib']} of {f['mdb_tables_most_mib']} MiB reached sc1")
    return {"run": run, "booted": booted}


def test_gp3_keeps_its_contract_with_requests_in_flight(ci_run):
    table = page.fio_results(ci_run["run"])
    gp3 = table[(table["volume"] == "gp3") & (table["depth"] > 1)]
    assert len(gp3) >= 4
    assert (gp3["error_pct"].abs() < 10).all(), gp3[["workload", "block_kib", "iops",
                                                     "model_iops"]].to_dict("records")


def test_sc1_charges_a_16k_read_like_a_1m_read_and_stays_under_its_budget(ci_run):
    table = page.fio_results(ci_run["run"])
    sc1 = table[table["volume"] == "sc1"]
    small = sc1[(sc1["workload"] == "block-sweep") & (sc1["block_kib"] == 16)]["iops"].iloc[0]
    large = sc1[(sc1["workload"] == "block-sweep") & (sc1["block_kib"] == 1024)]["iops"].iloc[0]
    assert small == pytest.approx(large, rel=0.15)
    throttle = page.throttle_of(ci_run["run"], "sc1")
    budget = throttle.iops_total
    # Never more than the contract, but for QEMU's own slack: with no burst set, its bucket
    # lets 100 ms of I/O at the rate through unthrottled (QEMU commit 0770a7a, "throttle:
    # Update the throttle_fix_bucket() documentation"), so a fio job of T s can reach
    # budget x (1 + 0.1 / T); CI once measured 23.69 against 23 in a 3 s job. fio counts whole
    # I/Os, so one more in the job adds 1 / T: CI once measured 24.02 (72 reads in 3 s, where
    # the bucket lets 71.3 through).
    assert throttle.iops_total_max == 0
    fio_s = ci_run["run"].meta["parameters"]["fio_s"]
    assert (sc1["iops"] <= budget * (1 + 0.1 / fio_s) + 1 / fio_s).all(), \
        sc1[["workload", "depth", "iops"]].to_dict("records")
    # Writes and sequential reads run below the model (the page names both misses: the
    # shipped run's sequential reads were 11 % below, a busy CI machine's 15 %); random
    # reads keep the budget.
    reads = sc1[(sc1["op"] == "read") & (sc1["workload"] != "sequential")]
    assert (reads["iops"] >= reads["model_iops"] * 0.85).all(), reads[["workload", "iops"]]
    sequential = sc1[(sc1["op"] == "read") & (sc1["workload"] == "sequential")]
    assert (sequential["iops"] >= sequential["model_iops"] * 0.7).all(), sequential["iops"]


def test_the_unthrottled_disk_is_far_above_sc1_and_above_gp3_with_requests_in_flight(ci_run):
    # At depth 1 a busy machine's emulated disk can fall below gp3's 3,000 (CI once saw
    # 2,796): the model then takes the disk's own figure, and the run stays valid. With
    # requests in flight it is above both contracts; the recorded run's test holds it above
    # both at every depth, as its page says.
    table = page.fio_results(ci_run["run"])
    reference = table[(table["volume"] == "unthrottled") & (table["workload"] == "depth-sweep")]
    budget = page.throttle_of(ci_run["run"], "sc1").iops_total
    assert (reference["iops"] > 10 * budget).all()
    assert reference.loc[reference["depth"].idxmax(), "iops"] > 3000


def test_the_scaled_sc1_bursts_then_falls_to_its_baseline(ci_run):
    burst = page.burst_results(ci_run["run"])
    f = page.figures(ci_run["run"])
    # On a busy host the volume may deliver less than either rate (CI once saw 71.8 of
    # 80 MiB/s in the burst and 11.0 of 12 after it): never more than the contract, the
    # burst well above the baseline, and the bucket then fills as much later as the model
    # says for the rate delivered. The recorded run's test holds the baseline to 5 %.
    assert float(f["burst_measured_mib_s"]) <= float(f["burst_mib_s"]) * 1.02
    assert float(f["burst_measured_mib_s"]) > 3 * float(f["base_mib_s"])
    assert float(f["base_measured_mib_s"]) <= float(f["base_mib_s"]) * 1.05
    assert float(f["base_measured_mib_s"]) >= float(f["base_mib_s"]) * 0.8
    assert abs(float(f["burst_ended_s"]) - float(f["burst_at_measured_s"])) <= 2
    assert len(burst) >= 2 * float(f["burst_model_s"])


def test_sysbench_ran_on_every_volume_and_sc1_is_held_to_its_budget(ci_run):
    table = page.sysbench_results(ci_run["run"]).set_index("volume")
    assert (table["ops_per_s"] > 0).all()
    assert table.loc["sc1", "ops_per_s"] <= table.loc["sc1", "model_ops_per_s"] * 1.05
    assert table.loc["gp3", "ops_per_s"] > 10 * table.loc["sc1", "ops_per_s"]
    raw = ci_run["run"].path / "raw" / "sysbench"
    assert sorted(p.name for p in raw.iterdir()) == ["gp3.txt", "sc1.txt", "unthrottled-again.txt",
                                                     "unthrottled.txt"]


def test_mariadb_ran_every_session_count_on_every_volume_with_its_tmpdir_there(ci_run):
    run = ci_run["run"]
    params = run.meta["parameters"]
    table = page.mariadb_results(run)
    assert sorted(table["volume"].unique()) == ["gp3", "sc1", "unthrottled"]
    for volume in ("unthrottled", "gp3", "sc1"):
        assert table[table["volume"] == volume]["sessions"].tolist() == params["sessions"]
    sessions = run.results[(run.results["workload"] == "mariadb-inserts")
                           & (run.results["metric"] == "session_s")]
    counts = sessions.groupby(["volume", "sessions"]).size()
    assert (counts.index.get_level_values("sessions") == counts.values).all()  # each answered
    # The tables were made in the volume's folder, and each session waited for its rows.
    assert (table["tables_max_mib"] > 0).all()
    assert (sessions["value"] <= sessions.merge(table, on=["volume", "sessions"])["wall_s"]
            .values + 0.5).all()
    raw = run.path / "raw" / "mariadb"
    assert len(list(raw.iterdir())) == 3 * len(params["sessions"])


def test_the_disks_are_throttled_as_booted_and_nothing_is_left(ci_run, lab_vms):
    assert throttles(lab_vms) == ci_run["booted"]
    assert ci_run["booted"]["slow"] == {"throttling.iops-total": 200}  # VM_PAIR_ARGS
    left = leftovers(lab_vms)
    assert all(word.endswith("=0") for word in left.split()), left


def test_ctrl_c_while_a_volume_is_throttled_puts_the_disks_back(ci_run, lab_vms, figures):
    code, rest = interrupt_lab_at(["run", "devices", "--host", VM, "--profile", "ci"],
                                  {**os.environ, **lab_vms.env}, "fio on a volume — gp3")
    assert code == 130, rest
    assert throttles(lab_vms) == ci_run["booted"]
    left = leftovers(lab_vms)
    assert all(word.endswith("=0") for word in left.split()), left
    figures(f"devices Ctrl-C during fio on gp3: exit {code}, throttles as booted, {left}")


def test_a_killed_run_is_put_back_by_clean(ci_run, lab_vms):
    kill_once_it_prints(["run", "devices", "--host", VM, "--profile", "ci"],
                        {**os.environ, **lab_vms.env}, "fio on a volume — gp3", settle_s=2)
    assert throttles(lab_vms)["fast"] != ci_run["booted"]["fast"]  # still gp3's limits
    cleaned = lab_vms.cli("clean", "--keep-vms", timeout_s=900)
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    assert throttles(lab_vms) == ci_run["booted"]
    left = leftovers(lab_vms)
    assert all(word.endswith("=0") for word in left.split()), left


@pytest.mark.parametrize("args, words", [
    (["--host", "db1"], "or measures this machine's own disk (local)"),
    (["--depths", "0"], "--depths"),
    (["--depths", "4,4"], "each value once"),
    (["--blocks-kib", "3"], "--blocks-kib"),
    (["--blocks-kib", "48"], "not a power of two"),
    (["--sysbench-mib", "2000"], "--sysbench-mib"),
    (["--burst-s", "1"], "--burst-s"),
    (["--sessions", "0"], "--sessions"),
    (["--sessions", "2,2"], "each value once"),
    (["--rows", "1000000", "--sessions", "1,16"], "would take about"),
])
def test_bad_input_is_one_line_and_makes_nothing(args, words):
    assert_one_line_usage_error(run_labs("run", "devices", *args), words)
