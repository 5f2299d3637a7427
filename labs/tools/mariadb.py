"""MariaDB 10.11: build server arguments, client commands and lab SQL; read the server back.

Builders (nothing is run here):

- `server_arguments` / `server_environment`: the settings a lab varies (innodb_doublewrite,
  innodb_flush_method, innodb_flush_log_at_trx_commit, innodb_buffer_pool_size,
  innodb_log_file_size, tmpdir, ...) as `--name=value` arguments for mariadbd, or as the
  `MARIADBD_<NAME>` variables the storage-labs image's entrypoint turns into the same;
- `client_command`: `mariadb -N -B -e SQL` over the unix socket (root by unix_socket
  authentication inside the container, so no password exists to pass);
- `show_status_sql` / `show_variables_sql`; `create_user_sql` with a password *hash*
  (`native_password_hash`), for the rare lab that must connect over TCP;
- the devices chapter's procedure (`temp_table_procedure_sql`): single-row inserts into a
  MyISAM temporary table with two secondary indexes, whose files live in `tmpdir`.

Readers:

- `parse_name_values`: the tab-separated `Variable_name<TAB>Value` lines of
  `SHOW GLOBAL STATUS` / `SHOW GLOBAL VARIABLES` under `mariadb -N -B`;
- `innodb_writes`: the InnoDB write counters (doublewrite pages and batches, data and log
  bytes, pages written and flushed) with `InnodbWrites.__sub__` for before/after deltas;
- `server_settings`: the variables that decide what a page flush writes;
- `parse_error_log`: the server's error log lines (`YYYY-MM-DD HH:MM:SS <thread> [Level] ...`);
- `unusable_pages` / `pages_from_doublewrite`: the pages crash recovery named, as corrupted
  and past help, or as looked for in the doublewrite area.

Names are those MariaDB 10.11.19 (Debian bookworm) reports; see tests/fixtures/mariadb/.
In 10.11 `innodb_doublewrite` is a Boolean read only at start-up: changing it needs a
restart (`SET GLOBAL` fails with error 1238). MariaDB 11.x made it ON/OFF/fast (MDEV-33545).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

from labs.errors import LabError, UsageError

SOCKET = "/run/mysqld/mysqld.sock"
ENV_PREFIX = "MARIADBD_"  # the image's entrypoint: MARIADBD_INNODB_DOUBLEWRITE=OFF
PAGE_SIZE_BYTES = 16384  # InnoDB's default page size (innodb_page_size)

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
_VALUE = re.compile(r"^[A-Za-z0-9_./:+-]+$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class MariadbParseError(LabError):
    """MariaDB output that cannot be read."""


# ---- server and client commands ---------------------------------------------------------

def _setting_value(name: str, value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    text = str(value)
    if not _VALUE.match(text):
        raise UsageError(f"mariadbd setting {name}={text!r}: only letters, digits and "
                         f"_ . / : + - are accepted")
    return text


def server_arguments(settings: Mapping[str, str | int | bool]) -> list[str]:
    """{"innodb_doublewrite": False, "innodb_buffer_pool_size": "256M"} ->
    ["--innodb-doublewrite=OFF", "--innodb-buffer-pool-size=256M"]."""
    argv = []
    for name, value in settings.items():
        if not _NAME.match(name):
            raise UsageError(f"not a mariadbd option name: {name!r}")
        argv.append(f"--{name.replace('_', '-')}={_setting_value(name, value)}")
    return argv


def server_environment(settings: Mapping[str, str | int | bool]) -> dict[str, str]:
    """The same settings as MARIADBD_<NAME> variables for the storage-labs image."""
    environment = {}
    for name, value in settings.items():
        if not _NAME.match(name):
            raise UsageError(f"not a mariadbd option name: {name!r}")
        environment[ENV_PREFIX + name.replace("-", "_").upper()] = _setting_value(name, value)
    return environment


def client_command(sql: str, database: str | None = None) -> list[str]:
    """`mariadb` in batch mode over the unix socket: tab-separated rows, no column names."""
    if not sql.strip():
        raise UsageError("client_command: empty SQL")
    argv = ["mariadb", "--protocol=socket", f"--socket={SOCKET}", "-N", "-B"]
    if database is not None:
        argv.append(f"--database={identifier(database)}")
    return [*argv, "-e", sql]


def identifier(name: str) -> str:
    """A schema, table or routine name the lab SQL may use (checked, never quoted in)."""
    if not _IDENTIFIER.match(name):
        raise UsageError(f"not a plain SQL identifier: {name!r}")
    return name


def _in_list(names: Iterable[str]) -> str:
    names = list(names)
    for name in names:
        if not re.match(r"^[A-Za-z0-9_]+$", name):
            raise UsageError(f"not a variable name: {name!r}")
    return ", ".join(f"'{name}'" for name in names)


def show_status_sql(names: Iterable[str] | None = None) -> str:
    names = list(names or [])
    return "SHOW GLOBAL STATUS" + (f" WHERE Variable_name IN ({_in_list(names)})"
                                   if names else "")


def show_variables_sql(names: Iterable[str] | None = None) -> str:
    names = list(names or [])
    return "SHOW GLOBAL VARIABLES" + (f" WHERE Variable_name IN ({_in_list(names)})"
                                      if names else "")


def native_password_hash(password: str) -> str:
    """mysql_native_password's stored form, '*' + SHA1(SHA1(password)) in hex.

    A lab that needs a TCP account generates a password per container, keeps it in memory
    and sends only this hash into the container (`create_user_sql`), so the password itself
    never appears in a command line, a log or a file.
    """
    if len(password) < 16:
        raise UsageError("a generated lab password should be at least 16 characters")
    inner = hashlib.sha1(password.encode()).digest()
    return "*" + hashlib.sha1(inner).hexdigest().upper()


def create_user_sql(user: str, password_hash: str, host: str = "%",
                    database: str = "sbtest") -> str:
    if not re.fullmatch(r"\*[0-9A-F]{40}", password_hash):
        raise UsageError("create_user_sql takes a native_password_hash(), not a password")
    if not re.fullmatch(r"[A-Za-z0-9_.%-]+", host):
        raise UsageError(f"not a host pattern: {host!r}")
    user, database = identifier(user), identifier(database)
    return (f"CREATE USER '{user}'@'{host}' IDENTIFIED BY PASSWORD '{password_hash}'; "
            f"GRANT ALL ON {database}.* TO '{user}'@'{host}'")


# ---- the devices chapter: single-row inserts into a MyISAM temporary table --------------

def temp_table_procedure_sql(name: str = "tmp_insert_rows",
                             results_table: str = "tmp_insert_results") -> list[str]:
    """Statements that create a results table and a procedure `name(rows)`.

    Each call creates a TEMPORARY table with ENGINE=MyISAM (its .MYD/.MYI files go to the
    server's `tmpdir`; an InnoDB temporary table would live in ibtmp1 in the data directory
    instead), with an AUTO_INCREMENT key and two secondary indexes, inserts `rows` rows one
    statement at a time, records the elapsed time measured with SYSDATE(6) (NOW() would be
    frozen at the CALL's start) and drops the table.
    """
    name, results_table = identifier(name), identifier(results_table)
    return [
        f"CREATE TABLE IF NOT EXISTS {results_table} ("
        "connection_id BIGINT NOT NULL, row_count INT NOT NULL, "
        "started DATETIME(6) NOT NULL, finished DATETIME(6) NOT NULL, "
        "elapsed_us BIGINT NOT NULL) ENGINE=InnoDB",
        f"DROP PROCEDURE IF EXISTS {name}",
        f"CREATE PROCEDURE {name}(IN row_total INT)\n"
        "BEGIN\n"
        "  DECLARE done INT DEFAULT 0;\n"
        "  DECLARE t_start DATETIME(6);\n"
        "  DECLARE t_end DATETIME(6);\n"
        "  DROP TEMPORARY TABLE IF EXISTS lab_tmp_rows;\n"
        "  CREATE TEMPORARY TABLE lab_tmp_rows (\n"
        "    id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,\n"
        "    day DATE, value_a INT, value_b INT,\n"
        "    KEY by_day (day), KEY by_value_a (value_a)\n"
        "  ) ENGINE=MyISAM;\n"
        "  SET t_start = SYSDATE(6);\n"
        "  WHILE done < row_total DO\n"
        "    INSERT INTO lab_tmp_rows (day, value_a, value_b)\n"
        "      VALUES (CURRENT_DATE - INTERVAL FLOOR(RAND() * 14) DAY,\n"
        "              FLOOR(RAND() * 100), FLOOR(RAND() * 100));\n"
        "    SET done = done + 1;\n"
        "  END WHILE;\n"
        "  SET t_end = SYSDATE(6);\n"
        f"  INSERT INTO {results_table} VALUES (CONNECTION_ID(), row_total, t_start, t_end,\n"
        "    TIMESTAMPDIFF(MICROSECOND, t_start, t_end));\n"
        "  DROP TEMPORARY TABLE lab_tmp_rows;\n"
        "END",
    ]


def call_procedure_sql(rows: int, name: str = "tmp_insert_rows") -> str:
    if rows < 1:
        raise UsageError("the procedure needs at least 1 row")
    return f"CALL {identifier(name)}({int(rows)})"


# ---- SHOW GLOBAL STATUS / VARIABLES -----------------------------------------------------

def parse_name_values(text: str, source: str = "mariadb -N -B output") -> dict[str, str]:
    """`Variable_name<TAB>Value` lines -> {name: value} (names as the server spells them)."""
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, tab, value = line.partition("\t")
        if not tab or not re.match(r"^[A-Za-z0-9_]+$", name):
            raise MariadbParseError(f"{source}: line {number} is not 'name<TAB>value': "
                                    f"{line[:60]!r}")
        values[name] = value
    if not values:
        raise MariadbParseError(f"{source}: no variables (empty output)")
    return values


@dataclass(frozen=True)
class InnodbWrites:
    """InnoDB's cumulative write counters (SHOW GLOBAL STATUS), bytes where it says bytes."""

    dblwr_pages_written: int  # pages copied into the doublewrite area
    dblwr_writes: int  # doublewrite batches
    data_written_bytes: int  # Innodb_data_written
    data_writes: int  # Innodb_data_writes (write requests)
    data_fsyncs: int
    os_log_written_bytes: int  # Innodb_os_log_written: redo log bytes
    log_writes: int
    pages_written: int  # Innodb_pages_written: pages written to their home in data files
    buffer_pool_pages_flushed: int
    buffer_pool_pages_dirty: int  # a level, not a counter: its delta is the change

    def __sub__(self, earlier: InnodbWrites) -> InnodbWrites:
        return InnodbWrites(**{f.name: getattr(self, f.name) - getattr(earlier, f.name)
                               for f in fields(self)})


INNODB_WRITE_STATUS = {
    "dblwr_pages_written": "Innodb_dblwr_pages_written",
    "dblwr_writes": "Innodb_dblwr_writes",
    "data_written_bytes": "Innodb_data_written",
    "data_writes": "Innodb_data_writes",
    "data_fsyncs": "Innodb_data_fsyncs",
    "os_log_written_bytes": "Innodb_os_log_written",
    "log_writes": "Innodb_log_writes",
    "pages_written": "Innodb_pages_written",
    "buffer_pool_pages_flushed": "Innodb_buffer_pool_pages_flushed",
    "buffer_pool_pages_dirty": "Innodb_buffer_pool_pages_dirty",
}


def _integer(values: Mapping[str, str], name: str, source: str) -> int:
    if name not in values:
        raise MariadbParseError(f"{source}: no {name} (is this MariaDB with InnoDB?)")
    try:
        return int(values[name])
    except ValueError:
        raise MariadbParseError(f"{source}: {name} is {values[name]!r}, not an integer") \
            from None


def innodb_writes(status: Mapping[str, str], source: str = "SHOW GLOBAL STATUS"
                  ) -> InnodbWrites:
    return InnodbWrites(**{field_name: _integer(status, name, source)
                           for field_name, name in INNODB_WRITE_STATUS.items()})


@dataclass(frozen=True)
class ServerSettings:
    """What decides what a page flush writes, as the running server reports it."""

    version: str
    doublewrite: str  # "ON" or "OFF" in 10.11 (11.x adds "fast")
    use_atomic_writes: bool  # skip doublewrite on devices with atomic writes (few exist)
    flush_method: str
    flush_log_at_trx_commit: int
    page_size_bytes: int
    buffer_pool_size_bytes: int
    log_file_size_bytes: int
    tmpdir: str

    @property
    def doublewrite_on(self) -> bool:
        return self.doublewrite != "OFF"


SETTING_VARIABLES = ("version", "innodb_doublewrite", "innodb_use_atomic_writes",
                     "innodb_flush_method", "innodb_flush_log_at_trx_commit",
                     "innodb_page_size", "innodb_buffer_pool_size", "innodb_log_file_size",
                     "tmpdir")


def server_settings(variables: Mapping[str, str], source: str = "SHOW GLOBAL VARIABLES"
                    ) -> ServerSettings:
    missing = [name for name in SETTING_VARIABLES if name not in variables]
    if missing:
        raise MariadbParseError(f"{source}: missing {', '.join(missing)}")
    return ServerSettings(
        version=variables["version"], doublewrite=variables["innodb_doublewrite"],
        use_atomic_writes=variables["innodb_use_atomic_writes"] == "ON",
        flush_method=variables["innodb_flush_method"],
        flush_log_at_trx_commit=_integer(variables, "innodb_flush_log_at_trx_commit", source),
        page_size_bytes=_integer(variables, "innodb_page_size", source),
        buffer_pool_size_bytes=_integer(variables, "innodb_buffer_pool_size", source),
        log_file_size_bytes=_integer(variables, "innodb_log_file_size", source),
        tmpdir=variables["tmpdir"])


# ---- the error log ----------------------------------------------------------------------

@dataclass(frozen=True)
class LogLine:
    timestamp: str  # as printed, e.g. "2026-11-22  2:47:06"
    thread: int
    level: str  # Note, Warning, ERROR
    message: str


_LOG_LINE = re.compile(
    r"^(?P<ts>\d{4}-\d{2}-\d{2} [ \d]\d:\d{2}:\d{2}) (?P<thread>\d+) \[(?P<level>[A-Za-z]+)\] "
    r"(?P<message>.*)$")


def parse_error_log(text: str) -> list[LogLine]:
    """The server's own log lines; other lines (install banner, stack traces) are skipped."""
    return [LogLine(m["ts"], int(m["thread"]), m["level"], m["message"])
            for line in text.splitlines() if (m := _LOG_LINE.match(line))]


def innodb_messages(lines: Iterable[LogLine], level: str | None = None) -> list[LogLine]:
    """The lines InnoDB wrote ("InnoDB: ..."), optionally of one level (e.g. "ERROR")."""
    return [line for line in lines if line.message.startswith("InnoDB:")
            and (level is None or line.level == level)]


# Recovery's words when it finds a page it cannot use ("Unable to apply log to corrupted page
# 12 in file ./lab/pages.ibd") and when it has written a page's copy from the doublewrite
# area over its home ("Recovered page [page id: space=5, page number=12] to './lab/pages.ibd'
# from the doublewrite buffer.").
UNUSABLE = re.compile(r"corrupted page (\d+) in file (\S+)")
FROM_DOUBLEWRITE = re.compile(r"Recovered page \[page id: space=(\d+), page number=(\d+)\] "
                              r"to \S+ from the doublewrite buffer")


def unusable_pages(log: str) -> set[tuple[str, int]]:
    """Every (file, page) InnoDB's recovery found corrupted and could not use."""
    return {(name, int(page)) for page, name in UNUSABLE.findall(log)}


def pages_from_doublewrite(log: str) -> set[tuple[int, int]]:
    """Every (space, page) recovery wrote back from its copy in the doublewrite area (a page
    whose checksum failed on the disk)."""
    return {(int(space), int(page)) for space, page in FROM_DOUBLEWRITE.findall(log)}
