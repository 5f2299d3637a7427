"""The template lab, end to end on this machine: the contract a new lab copies, working.

It runs through the same command as every lab, records a run, and its page draws the run
beside the model. A killed run is cleaned from the journal, like any lab's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from conftest import PROJECT_ROOT, command_trace, commands_not_recorded

from labs import records
from labs.infra.journal import Journal
from labs.template import findings, page


def cli(env, *args, timeout=300):
    return subprocess.run([sys.executable, "-m", "labs", *args], cwd=PROJECT_ROOT,
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=timeout)


def test_template_runs_records_and_matches_its_model(tmp_path):
    env = {"LABS_STATE_DIR": str(tmp_path / "state"), "LABS_WORK_DIR": str(tmp_path / "work"),
           "LABS_RUNS_DIR": str(tmp_path / "runs"),
           **command_trace(tmp_path / "ran.jsonl")}
    result = cli(env, "run", "template", "--quick", "--block-kib", "16")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        "python -m labs run template --host local --profile quick --seed 1 --block-kib 16 "
        "--blocks 1,4")
    assert "step 1/3" in result.stderr
    (path,) = records.list_runs("template", tmp_path / "runs")
    run = records.load_run(path)
    sizes = page.sizes(run)
    assert list(sizes["blocks"]) == [1, 4]
    assert (sizes["file_bytes"] == sizes["model_bytes"]).all()
    assert page.figures(run) == {"files": "2", "largest_error_bytes": "0"}
    # The claim a page would make ("every file is as large as the model says"), as the
    # finding behind it, with the run's parameters read back as the lab's dataclass.
    found = findings.findings(run)
    assert found.every_size_as_modelled and found.files == 2, "backs: every size as modelled"
    assert found.params.blocks == (1, 4) and found.params.block_kib == 16
    headline = page.headline(run)
    assert list(headline["value"]) == list(headline["model"]) == [16 * 1024, 4 * 16 * 1024]
    assert page.chart(run).to_dict()["layer"]
    # run.json lists every command the lab ran (two dd, two stat, the folder made and
    # removed, the host's facts), not only those that made something.
    ran, missing = commands_not_recorded(tmp_path / "ran.jsonl", run)
    assert ran >= 6 and missing == [], missing
    assert Journal("local", tmp_path / "state" / "journal-local.jsonl").live_entries() == []
    assert not list((tmp_path / "work").glob("template/*"))


def test_a_killed_template_run_is_cleaned_from_the_journal(tmp_path):
    env = {**os.environ, "LABS_STATE_DIR": str(tmp_path / "state"),
           "LABS_WORK_DIR": str(tmp_path / "work"), "LABS_RUNS_DIR": str(tmp_path / "runs")}
    lab = subprocess.Popen([sys.executable, "-m", "labs", "run", "template", "--blocks",
                            "1,1024", "--block-kib", "4096"], cwd=PROJECT_ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in lab.stderr:
        if "step 2/" in line:  # the second file is being written
            break
    time.sleep(0.2)
    lab.send_signal(signal.SIGKILL)
    lab.wait(timeout=60)
    journal = Journal("local", tmp_path / "state" / "journal-local.jsonl")
    assert journal.live_entries(), "the kill landed after the run ended: nothing was tested"
    cleaned = cli(env, "clean")
    assert cleaned.returncode == 0, cleaned.stderr
    assert journal.live_entries() == []
    assert not list((tmp_path / "work").glob("template/*"))
    assert records.list_runs("template", tmp_path / "runs") == []
    assert not list((tmp_path / "runs").glob("template/.staging-*"))


def test_a_file_off_the_model_is_a_finding_the_claim_test_would_catch(tmp_path):
    # The finding can be false: a run whose second file came out a block short.
    import pandas as pd

    rows = [{"blocks": b, "metric": m, "value": v} for b, m, v in (
        (1, "file_bytes", 65536), (1, "model_bytes", 65536),
        (4, "file_bytes", 196608), (4, "model_bytes", 262144))]
    meta = {"parameters": {"profile": "full", "blocks": [1, 4], "block_kib": 64}}
    found = findings.findings(records.RecordedRun(tmp_path, meta, pd.DataFrame(rows)))
    assert not found.every_size_as_modelled
    assert found.largest_error_bytes == 65536 and found.params.blocks == (1, 4)
