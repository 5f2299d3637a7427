"""The torn-page legs of the power-loss lab, their pure parts: the update loop, the damage
PostgreSQL reports, the rows that lost an acknowledged update, the model. (The legs on a real
lab VM: tests/test_power_loss_lab.py.)"""

import shlex
import subprocess

from labs.infra.vm.servers import SERVERS
from labs.power_loss import model, torn, torn_page

POSTGRES = SERVERS["postgres"]


def test_the_update_loop_sends_one_update_and_one_ack_per_row_in_a_scattered_order():
    # The loop's own shell, with `head` in place of psql: what psql would read.
    command = POSTGRES.update_loop("/data/x", rows=10)
    script = shlex.split(command.split(" sh -c ", 1)[1])[0]
    head = script.replace("| stdbuf -oL psql", "| head -n 6 #")
    lines = subprocess.run(["sh", "-c", head], capture_output=True, text=True,
                           timeout=30).stdout.splitlines()
    assert lines == ["UPDATE pages SET v = 1 WHERE id = 9;", "\\echo ack 1",
                     "UPDATE pages SET v = 2 WHERE id = 8;", "\\echo ack 2",
                     "UPDATE pages SET v = 3 WHERE id = 7;", "\\echo ack 3"]


def test_the_page_table_has_one_row_per_page_and_is_vacuumed_and_checkpointed():
    create, vacuum, checkpoint = POSTGRES.pages_table_sql(2000)
    assert "fillfactor = 10" in create and "generate_series(0, 1999)" in create
    # each its own statement: VACUUM refuses to run inside a multi-statement string
    assert (vacuum, checkpoint) == ("VACUUM", "CHECKPOINT")


def test_torn_legs_get_checksums_their_own_wal_folder_and_one_sync():
    command = POSTGRES.init_command("/torn/a", wal_dir="/plain/a-wal")
    assert "--data-checksums" in command and "--waldir=/plain/a-wal/pg_wal" in command
    assert "--no-sync" in command and command.endswith("&& sync")
    assert "--data-checksums" not in POSTGRES.init_command("/plain/b")


def test_the_damaged_pages_are_read_from_the_log_and_the_answers_without_repeats():
    log = ("LOG:  redo starts at 0/1BB2F20\n"
           "WARNING:  page verification failed, calculated checksum 34328 but expected 13636\n"
           "FATAL:  invalid page in block 0 of relation base/5/16384\n"
           "WARNING:  invalid page in block 0 of relation base/5/16384; zeroing out page\n"
           "WARNING:  invalid page in block 12 of relation base/5/16384; zeroing out page\n")
    answers = "WARNING:  invalid page in block 7 of relation base/5/1259; zeroing out page"
    assert torn.damaged_pages(log, answers) == {("base/5/16384", 0), ("base/5/16384", 12),
                                                ("base/5/1259", 7)}
    assert torn.damaged_pages("LOG:  database system is ready to accept connections") == set()


def test_a_row_lost_its_update_when_the_newest_acknowledged_value_is_not_there():
    acks = [(n, 0.01 * n) for n in range(1, 13)]  # rows 7919n mod 10: 9, 8, ..., then again
    expected = torn.expected_values(acks, rows=10)
    assert expected == {9: 11, 8: 12, 7: 3, 6: 4, 5: 5, 4: 6, 3: 7, 2: 8, 1: 9, 0: 10}
    found = dict(expected)
    assert torn.lost_updates(expected, found) == 0
    found[9] = 1  # an older update of row 9: its newest acknowledged one is gone
    del found[0]  # a zeroed page: the row is gone
    found[5] = 99  # newer than acknowledged (committed, not yet acknowledged): not a loss
    assert torn.lost_updates(expected, found) == 2


def test_the_model_expects_no_torn_page_with_full_page_writes_and_rate_times_hold_without():
    assert model.torn_pages("on", 150.0, 1.0) == 0
    assert model.torn_pages("off", 150.0, 1.0) == 150.0
    assert model.torn_pages("off", 150.0, 0.5) == 75.0


def test_the_torn_page_exercise_is_the_model_at_a_real_disks_window():
    figures = torn_page.exercise_figures(30.0)
    assert figures["ex_torn_per_cut"] == "0.5"  # 5,000 pages/s × 100 µs
    assert figures["ex_torn_lab_per_cut"] == "0.0030"  # 30 pages/s × 100 µs
    assert figures["ex_torn_lab_cuts"] == "330"  # 1 / 0.003, to the nearest ten
    assert "ex_torn_lab_rate" not in torn_page.exercise_figures()
