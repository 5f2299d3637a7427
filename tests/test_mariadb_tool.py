"""labs/tools/mariadb.py: builders, and parsers on real MariaDB 10.11.19 output."""

import hashlib
from pathlib import Path

import pytest

from labs.errors import UsageError
from labs.tools import mariadb

FIXTURES = Path(__file__).parent / "fixtures" / "mariadb"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


# ---- builders ---------------------------------------------------------------------------

def test_server_arguments_spell_options_and_booleans():
    assert mariadb.server_arguments({"innodb_doublewrite": False,
                                     "innodb_flush_log_at_trx_commit": 2,
                                     "innodb_buffer_pool_size": "256M",
                                     "tmpdir": "/lab-tmp"}) == [
        "--innodb-doublewrite=OFF", "--innodb-flush-log-at-trx-commit=2",
        "--innodb-buffer-pool-size=256M", "--tmpdir=/lab-tmp"]


def test_server_environment_matches_the_entrypoint_convention():
    assert mariadb.server_environment({"innodb_doublewrite": True,
                                       "innodb-log-file-size": "64M"}) == {
        "MARIADBD_INNODB_DOUBLEWRITE": "ON", "MARIADBD_INNODB_LOG_FILE_SIZE": "64M"}


@pytest.mark.parametrize("settings", [{"innodb_doublewrite": "OFF; rm -rf /"},
                                      {"Bad Name": "1"}, {"tmpdir": "/a b"}])
def test_settings_refuse_what_could_break_the_command_line(settings):
    with pytest.raises(UsageError):
        mariadb.server_arguments(settings)
    with pytest.raises(UsageError):
        mariadb.server_environment(settings)


def test_client_command_uses_the_socket_and_batch_mode():
    assert mariadb.client_command("SELECT 1", database="sbtest") == [
        "mariadb", "--protocol=socket", "--socket=/run/mysqld/mysqld.sock", "-N", "-B",
        "--database=sbtest", "-e", "SELECT 1"]
    with pytest.raises(UsageError):
        mariadb.client_command("  ")
    with pytest.raises(UsageError):
        mariadb.client_command("SELECT 1", database="x; DROP DATABASE y")


def test_status_and_variable_queries():
    assert mariadb.show_status_sql() == "SHOW GLOBAL STATUS"
    assert mariadb.show_status_sql(["Innodb_dblwr_writes", "Innodb_data_written"]) == (
        "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_dblwr_writes', "
        "'Innodb_data_written')")
    assert mariadb.show_variables_sql(["innodb_doublewrite"]) == (
        "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('innodb_doublewrite')")
    with pytest.raises(UsageError):
        mariadb.show_status_sql(["x' OR 1=1 --"])


def test_native_password_hash_is_sha1_of_sha1():
    password = "a-generated-password-of-some-length"
    expected = hashlib.sha1(hashlib.sha1(password.encode()).digest()).hexdigest().upper()
    assert mariadb.native_password_hash(password) == "*" + expected
    with pytest.raises(UsageError):
        mariadb.native_password_hash("short")


def test_create_user_takes_only_a_hash():
    digest = mariadb.native_password_hash("x" * 24)
    statement = mariadb.create_user_sql("lab", digest)
    assert f"IDENTIFIED BY PASSWORD '{digest}'" in statement
    assert "x" * 24 not in statement
    with pytest.raises(UsageError, match="native_password_hash"):
        mariadb.create_user_sql("lab", "x" * 24)


def test_temp_table_procedure_uses_myisam_two_indexes_and_single_row_inserts():
    create_results, drop, procedure = mariadb.temp_table_procedure_sql()
    assert create_results.startswith("CREATE TABLE IF NOT EXISTS tmp_insert_results")
    assert drop == "DROP PROCEDURE IF EXISTS tmp_insert_rows"
    assert "CREATE TEMPORARY TABLE" in procedure and "ENGINE=MyISAM" in procedure
    assert procedure.count("KEY by_") == 2
    assert "SYSDATE(6)" in procedure and "NOW()" not in procedure
    assert mariadb.call_procedure_sql(1000) == "CALL tmp_insert_rows(1000)"
    with pytest.raises(UsageError):
        mariadb.call_procedure_sql(0)
    with pytest.raises(UsageError):
        mariadb.temp_table_procedure_sql(name="p; DROP TABLE t")


# ---- SHOW GLOBAL STATUS / VARIABLES -----------------------------------------------------

def test_parse_status_of_an_idle_server():
    status = mariadb.parse_name_values(fixture("show-global-status.tsv"))
    assert len(status) == 562
    writes = mariadb.innodb_writes(status)
    assert writes.os_log_written_bytes == 9274964
    # This server had not flushed a page yet: nothing written to data files or doublewrite.
    assert (writes.pages_written, writes.dblwr_pages_written, writes.data_written_bytes) == \
        (0, 0, 0)
    assert writes.buffer_pool_pages_dirty == 857


def test_data_written_counts_home_and_doublewrite_pages():
    writes = mariadb.innodb_writes(mariadb.parse_name_values(
        fixture("show-global-status-after-dblwr-on.tsv")))
    assert writes.dblwr_pages_written > 0 and writes.dblwr_writes > 0
    # Innodb_pages_written counts home writes only (it equals pages flushed); the doublewrite
    # copies are extra, and Innodb_data_written is exactly both, in 16 KiB pages.
    assert writes.pages_written == writes.buffer_pool_pages_flushed
    assert writes.data_written_bytes == \
        (writes.pages_written + writes.dblwr_pages_written) * mariadb.PAGE_SIZE_BYTES
    # Freshly initialised pages skip the doublewrite buffer: fewer copies than pages.
    assert writes.dblwr_pages_written < writes.pages_written


def test_doublewrite_off_has_no_copies():
    writes = mariadb.innodb_writes(mariadb.parse_name_values(
        fixture("show-global-status-after-dblwr-off.tsv")))
    assert writes.dblwr_pages_written == writes.dblwr_writes == 0
    assert writes.data_written_bytes == writes.pages_written * mariadb.PAGE_SIZE_BYTES


def test_write_counter_deltas():
    on = mariadb.innodb_writes(mariadb.parse_name_values(
        fixture("show-global-status-after-dblwr-on.tsv")))
    idle = mariadb.innodb_writes(mariadb.parse_name_values(fixture("show-global-status.tsv")))
    delta = on - idle
    assert delta.dblwr_pages_written == on.dblwr_pages_written
    assert delta.os_log_written_bytes == on.os_log_written_bytes - 9274964


def test_server_settings_from_variables():
    settings = mariadb.server_settings(mariadb.parse_name_values(
        fixture("show-global-variables.tsv")))
    assert settings.version == "10.11.19-MariaDB-0+deb12u1"
    assert settings.doublewrite == "ON" and settings.doublewrite_on
    assert settings.use_atomic_writes is True
    assert settings.flush_method == "O_DIRECT"
    assert settings.flush_log_at_trx_commit == 1
    assert settings.page_size_bytes == 16384
    assert settings.buffer_pool_size_bytes == 256 * 2**20
    assert settings.log_file_size_bytes == 96 * 2**20
    assert settings.tmpdir == "/tmp"


def test_parse_refuses_non_tab_output():
    with pytest.raises(mariadb.MariadbParseError, match="line 1"):
        mariadb.parse_name_values("+---------------+-------+\n")
    with pytest.raises(mariadb.MariadbParseError, match="empty"):
        mariadb.parse_name_values("\n")


def test_missing_counters_are_named():
    with pytest.raises(mariadb.MariadbParseError, match="Innodb_dblwr_pages_written"):
        mariadb.innodb_writes({"Uptime": "5"})
    with pytest.raises(mariadb.MariadbParseError, match="innodb_doublewrite"):
        mariadb.server_settings({"version": "10.11"})


# ---- the error log (torn-page runs) -----------------------------------------------------

def test_error_log_doublewrite_restores_the_torn_page():
    lines = mariadb.parse_error_log(fixture("errorlog-torn-page-doublewrite-on.log"))
    messages = [line.message for line in mariadb.innodb_messages(lines)]
    assert "InnoDB: Starting crash recovery from checkpoint LSN=65538" in messages
    assert ("InnoDB: Recovered page [page id: space=5, page number=3] to './lab/torn_t.ibd' "
            "from the doublewrite buffer.") in messages
    assert mariadb.innodb_messages(lines, "ERROR") == []
    assert lines[-1].message == "mariadbd: ready for connections."
    assert all(line.thread == 0 for line in lines)


def test_error_log_without_doublewrite_the_server_refuses_to_start():
    lines = mariadb.parse_error_log(fixture("errorlog-torn-page-doublewrite-off.log"))
    errors = [line.message for line in lines if line.level == "ERROR"]
    assert errors == [
        "InnoDB: Unable to apply log to corrupted page 3 in file ./lab/torn_t.ibd",
        "InnoDB: Plugin initialization aborted with error Data structure corruption",
        "Plugin 'InnoDB' registration as a STORAGE ENGINE failed.",
        "Unknown/unsupported storage engine: InnoDB",
        "Aborting"]
    assert not any("ready for connections" in line.message for line in lines)


def test_error_log_clean_start_does_not_use_the_doublewrite_copy():
    text = fixture("errorlog-torn-page-clean-start.log")
    lines = mariadb.parse_error_log(text)
    assert not any("doublewrite" in line.message for line in lines)
    errors = [line.message for line in lines if line.level == "ERROR"]
    assert errors[0] == ("InnoDB: Failed to read page 3 from file './lab/torn_t.ibd': "
                         "Page read from tablespace is corrupted.")
    assert "InnoDB: File './lab/torn_t.ibd' is corrupted" in errors
    assert errors[-1] == ("mariadbd: Table `lab`.`torn_t` is corrupted. Please drop the table "
                          "and recreate.")
    assert {line.thread for line in lines if line.level == "ERROR"} >= {0, 4, 5, 6}
    # The page dump is 1024 lines of 32 hex bytes; the "Version:" line is not a log line.
    assert len(lines) == len(text.splitlines()) - 1


def test_error_log_timestamps_keep_the_padded_hour():
    line = mariadb.parse_error_log(fixture("errorlog-torn-page-doublewrite-on.log"))[0]
    assert line.timestamp == "2026-11-22  3:06:26"
    assert line.level == "Warning"
