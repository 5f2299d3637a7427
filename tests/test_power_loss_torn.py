"""The torn-page legs of the power-loss lab, their pure parts: the update loop, the damage
PostgreSQL reports, the rows that lost an acknowledged update, the model. (The legs on a real
lab VM: tests/test_power_loss_lab.py.)"""

import shlex
import subprocess

from labs.infra.vm.servers import PSQL, SERVERS
from labs.power_loss import model, torn, torn_page
from labs.tools import innochecksum, mariadb

POSTGRES, MARIADB = SERVERS["postgres"], SERVERS["mariadb"]


def loop_lines(command: str, client: str, count: int) -> list[str]:
    """What the client of a loop would read first: its own shell, `head` in its place."""
    script = shlex.split(command.split("sh -c ", 1)[1])[0]
    head = script.replace(f"| stdbuf -oL {client}", f"| head -n {count} #")
    return subprocess.run(["sh", "-c", head], capture_output=True, text=True,
                          timeout=30).stdout.splitlines()


def test_the_update_loop_sends_one_update_and_one_ack_per_row_in_a_scattered_order():
    lines = loop_lines(POSTGRES.update_loop("/data/x", rows=10), PSQL, 6)
    assert lines == ["UPDATE pages SET v = 1 WHERE id = 9;", "\\echo ack 1",
                     "UPDATE pages SET v = 2 WHERE id = 8;", "\\echo ack 2",
                     "UPDATE pages SET v = 3 WHERE id = 7;", "\\echo ack 3"]
    lines = loop_lines(MARIADB.update_loop("/data/y", rows=10), "mariadb", 4)
    assert lines == ["UPDATE lab.pages SET v = 1 WHERE id = 9;", 'SELECT "ack 1";',
                     "UPDATE lab.pages SET v = 2 WHERE id = 8;", 'SELECT "ack 2";']


def test_the_page_table_has_one_row_per_page_and_is_vacuumed_and_checkpointed():
    create, vacuum, checkpoint = POSTGRES.pages_table_sql(2000)
    assert "fillfactor = 10" in create and "generate_series(0, 1999)" in create
    # each its own statement: VACUUM refuses to run inside a multi-statement string
    assert (vacuum, checkpoint) == ("VACUUM", "CHECKPOINT")


def test_the_innodb_page_table_has_two_rows_a_page_and_is_written_home():
    create, insert, flush = MARIADB.pages_table_sql(2000)
    assert "VARCHAR(7000) CHARACTER SET latin1" in create and "ENGINE=InnoDB" in create
    assert insert.startswith("USE lab; ") and "seq_0_to_1999" in insert
    assert flush == "FLUSH TABLES lab.pages FOR EXPORT; UNLOCK TABLES"


def test_innodb_torn_legs_keep_their_logs_and_doublewrite_area_on_the_other_disk():
    command = MARIADB.init_command("/torn/m", wal_dir="/plain/m_wal")
    for option in ("--innodb-data-home-dir=/plain/m_wal", "--innodb-log-group-home-dir=/plain/"
                   "m_wal", "--aria-log-dir-path=/plain/m_wal", "--innodb-log-file-size=16M"):
        assert option in command  # the folder's own underscores kept
    assert "/torn/m /plain/m_wal" in command and command.endswith("&& sync")
    plain = MARIADB.init_command("/plain/b")
    assert "--innodb-data-home-dir" not in plain and "sync" not in plain
    # every start names the folders again, and the torn legs' own settings come last
    start = MARIADB.start_command("/torn/m", "innodb_doublewrite", "OFF",
                                  MARIADB.log_options("/plain/m-wal")
                                  + ("innodb_buffer_pool_size=6M",))
    assert "--innodb-doublewrite=OFF" in start and "--innodb-data-home-dir=/plain/m-wal" in start
    assert start.index("--innodb-buffer-pool-size=32M") < start.index(
        "--innodb-buffer-pool-size=6M")  # the last one counts
    assert POSTGRES.log_options("/plain/p-wal") == ()


def test_a_mariadb_start_fails_at_once_when_the_server_stops(tmp_path):
    # The start command's own wait, with a "server" that exits at once and a ping that never
    # answers: it must give up when the server exits, not after ten minutes of pings.
    start = MARIADB.start_command(str(tmp_path), "innodb_doublewrite", "ON")
    server = start.split("setsid nohup ", 1)[1].split(" >>", 1)[0]
    start = start.replace(server, "true").replace("mariadb-admin", "false")
    ran = subprocess.run(["sh", "-c", start], capture_output=True, text=True, timeout=30)
    assert ran.returncode == 1


def test_mariadb_answers_one_and_zero_for_on_and_off():
    assert MARIADB.setting_in_force("1", "ON") and MARIADB.setting_in_force("0", "OFF")
    assert not MARIADB.setting_in_force("1", "OFF")
    assert MARIADB.setting_in_force("0", "0") and not MARIADB.setting_in_force("2", "1")
    assert POSTGRES.setting_in_force("on", "on") and not POSTGRES.setting_in_force("1", "on")


def test_innochecksum_failures_are_counted_per_file():
    report = ("== /torn/m/lab/pages.ibd\nFail: page::12 invalid\nFail: page::400 invalid\n"
              "== /torn/m/mysql/innodb_index_stats.ibd\n"
              "== /torn/m/mysql/gtid_slave_pos.ibd\nFail: page::3 invalid\n")
    assert innochecksum.invalid_pages(report) == {"/torn/m/lab/pages.ibd": 2,
                                          "/torn/m/mysql/innodb_index_stats.ibd": 0,
                                          "/torn/m/mysql/gtid_slave_pos.ibd": 1}
    assert innochecksum.invalid_page_numbers(report) == {
        "/torn/m/lab/pages.ibd": {12, 400}, "/torn/m/mysql/innodb_index_stats.ibd": set(),
        "/torn/m/mysql/gtid_slave_pos.ibd": {3}}
    command = innochecksum.checksum_command("/torn/m")
    assert "find /torn/m -name '*.ibd'" in command and "ibdata1" not in command


def test_innodb_recovery_words_are_read_from_its_log():
    log = ("[Note] InnoDB: Trying to recover page [page id: space=5, page number=12] from the "
           "doublewrite buffer.\n"
           "[Note] InnoDB: Recovered page [page id: space=5, page number=12] to './lab/pages.ibd'"
           " from the doublewrite buffer.\n"
           "[Note] InnoDB: Trying to recover page [page id: space=5, page number=13] from the "
           "doublewrite buffer.\n"
           "[ERROR] InnoDB: Unable to apply log to corrupted page 40 in file ./lab/pages.ibd\n"
           "[Warning] InnoDB: Unable to apply log to corrupted page 40 in file ./lab/pages.ibd\n")
    assert mariadb.pages_from_doublewrite(log) == {(5, 12)}  # written back, not only sought
    assert mariadb.unusable_pages(log) == {("./lab/pages.ibd", 40)}


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
    assert model.pages_in_hold(150.0, 1.0) == 150.0  # torn on the disk, whatever the setting
    assert model.torn_pages("safe", 150.0, 1.0) == 0
    assert model.torn_pages("unsafe", 150.0, 1.0) == 150.0
    assert model.torn_pages("unsafe", 150.0, 0.5) == 75.0


def test_the_torn_page_exercise_is_the_model_at_a_real_disks_window():
    figures = torn_page.exercise_figures(30.0)
    assert figures["ex_torn_per_cut"] == "0.5"  # 5,000 pages/s × 100 µs
    assert figures["ex_torn_lab_per_cut"] == "0.0030"  # 30 pages/s × 100 µs
    assert figures["ex_torn_lab_cuts"] == "330"  # 1 / 0.003, to the nearest ten
    assert "ex_torn_lab_rate" not in torn_page.exercise_figures()


def test_the_row_by_row_read_looks_up_every_row_and_goes_on_past_errors():
    command = MARIADB.rows_one_by_one("/torn/m", rows=3)
    lookups = subprocess.run(["sh", "-c", command.split(" | mariadb ", 1)[0]],
                             capture_output=True, text=True, timeout=30).stdout.splitlines()
    assert lookups == [f"SELECT id, v FROM lab.pages WHERE id = {n};" for n in range(3)]
    assert "--force" in command and "/torn/m/server.sock" in command
