"""Database servers run inside a lab VM from its own Debian packages, as shell commands (pure).

Each server runs from Debian's own packages inside the VM, not in a container: copying a
container image into a VM under software emulation takes minutes per image, while the VM
image already carries the same packages the project's images are built from. Each server
keeps its data, its socket and its pid file in one folder on the lab's own file system, and
listens on no TCP port at all (a Unix socket in that folder only).

    server = SERVERS["postgres"]
    server.init_command(data)                       # a fresh, empty database folder
    server.start_command(data, "synchronous_commit", "off")
    server.sql_command(data, "SELECT 1")
    server.insert_loop(data)                        # prints "ack N" after each commit
    server.update_loop(data, rows=2000)             # the same, one row's update at a time
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

# Postgres's binaries live in a versioned folder (15 on Debian 12, 17 on Debian 13).
PG_BIN = "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
# The clients named by path: Debian's `psql` and `pgbench` are a Perl wrapper that picks a
# version first, 0.3 s a call in an emulated VM (the binary itself starts in 0.05 s).
PSQL, PGBENCH = f"{PG_BIN}/psql", f"{PG_BIN}/pgbench"


def flag(option: str) -> str:
    """A name=value setting as a MariaDB command-line flag: --name-with-dashes=value."""
    name, _, value = option.partition("=")
    return f"--{name.replace('_', '-')}={value}"


@dataclass(frozen=True)
class Server:
    name: str  # postgres | mariadb
    label: str  # what the book calls it

    def pid_file(self, data: str) -> str:
        return f"{data}/postmaster.pid" if self.name == "postgres" else f"{data}/server.pid"

    def log_file(self, data: str) -> str:
        return f"{data}/server.log"  # inside the folder: the server's own user may write it

    def init_command(self, data: str, wal_dir: str | None = None) -> str:
        """Make `data` and an empty database in it (as root; files owned by the server user).

        `wal_dir`: the log in a folder of its own, on another disk than the data (the
        torn-page legs, whose data disk delays each write by a second), and one `sync` at
        the end. PostgreSQL: the WAL, page checksums on. MariaDB: the system tablespace
        (ibdata1: the doublewrite area and the undo log), the redo log and the Aria log; the
        tables' own files stay in `data`.

        PostgreSQL's folder is durable when the command returns, through one `sync` rather
        than initdb's fsync of each of its thousand files (seconds in an emulated VM)."""
        folders = shlex.quote(data) + (f" {shlex.quote(wal_dir)}" if wal_dir else "")
        if self.name == "postgres":
            wal = (f"--waldir={shlex.quote(wal_dir + '/pg_wal')} --data-checksums "
                   if wal_dir else "")
            return (f"install -d -m 0700 -o postgres -g postgres {folders} && "
                    f"runuser -u postgres -- {PG_BIN}/initdb -D {shlex.quote(data)} {wal}"
                    "--no-sync -A trust -U postgres --no-instructions >/dev/null && sync")
        install = "".join(f" {flag(option)}" for option in self.log_options(wal_dir))
        return (f"install -d -m 0700 -o mysql -g mysql {folders} && "
                f"mariadb-install-db --user=mysql --datadir={shlex.quote(data)}{install} "
                "--skip-test-db --auth-root-authentication-method=socket >/dev/null"
                + (" && sync" if wal_dir else ""))

    def log_options(self, wal_dir: str | None) -> tuple[str, ...]:
        """MariaDB's name=value settings that keep its logs in `wal_dir` (see init_command);
        every start needs them again. That folder's disk holds other servers' logs too: a
        redo log of 16 MiB, not the default 96. None for PostgreSQL: its data folder links
        its WAL."""
        if self.name == "postgres" or wal_dir is None:
            return ()
        return (*(f"{name}={shlex.quote(wal_dir)}" for name in
                  ("innodb_data_home_dir", "innodb_log_group_home_dir", "aria_log_dir_path")),
                "innodb_log_file_size=16M")

    def start_command(self, data: str, setting: str, value: str,
                      extra: tuple[str, ...] = ()) -> str:
        """Start the server in the background with `setting=value` and the `extra`
        name=value settings; returns when it answers, fails at once if it exits."""
        quoted, log = shlex.quote(data), shlex.quote(self.log_file(data))
        if self.name == "postgres":
            options = (f"-c listen_addresses='' -c unix_socket_directories={data} "
                       f"-c shared_buffers=32MB -c {setting}={value}"
                       + "".join(f" -c {option}" for option in extra))
            return (f"runuser -u postgres -- {PG_BIN}/pg_ctl -D {quoted} -l {log} -w -t 600 "
                    f"-o {shlex.quote(options)} start >/dev/null")
        socket = shlex.quote(f"{data}/server.sock")
        # No TCP at all (skip-networking); the client reaches it through the socket only.
        server = (f"mariadbd --user=mysql --datadir={quoted} --socket={socket} "
                  f"--pid-file={shlex.quote(self.pid_file(data))} --skip-networking "
                  f"--innodb-buffer-pool-size=32M --{setting.replace('_', '-')}={value}"
                  + "".join(f" {flag(option)}" for option in extra))
        ping = f"mariadb-admin --socket={socket} --connect-timeout=2 ping >/dev/null 2>&1"
        # A server that stops (a recovery that gives up) fails the start at once, not after
        # ten minutes of pings.
        return (f"setsid nohup {server} >>{log} 2>&1 </dev/null & server=$!; "
                f"for i in $(seq 600); do {ping} && exit 0; kill -0 $server 2>/dev/null || "
                "exit 1; sleep 1; done; exit 1")

    def restart_command(self, data: str, setting: str, value: str,
                        extra: tuple[str, ...] = ()) -> str:
        """Start again after a power cut. The lock files the dead server left name a pid
        that, after a reboot, may belong to another process: PostgreSQL would then refuse
        to start ("lock file already exists"). They go first, unless a live process whose
        command line names this folder holds that pid."""
        pid_file = shlex.quote(self.pid_file(data))
        stale = (f"pid=$(head -n 1 {pid_file} 2>/dev/null); if [ -z \"$pid\" ] || ! tr '\\0' ' ' "
                 f"</proc/$pid/cmdline 2>/dev/null | grep -qF -- {shlex.quote(data)}; then "
                 f"rm -f -- {pid_file} {shlex.quote(data + '/server.sock')}; fi")
        return f"{stale}; {self.start_command(data, setting, value, extra)}"

    def stop_command(self, data: str) -> str:
        """Stop at once, as a crash would (used by `clean` and after each cut's count)."""
        quoted = shlex.quote(data)
        if self.name == "postgres":
            return (f"runuser -u postgres -- {PG_BIN}/pg_ctl -D {quoted} -m immediate -w "
                    "stop >/dev/null 2>&1 || true")
        return ""  # the pid-file kill that follows every stop is the whole of it

    def sql_command(self, data: str, statement: str) -> str:
        if self.name == "postgres":
            return (f"runuser -u postgres -- {PSQL} -h {shlex.quote(data)} -XAtq "
                    f"-v ON_ERROR_STOP=1 -c {shlex.quote(statement)}")
        return (f"mariadb --socket={shlex.quote(data + '/server.sock')} -N -B "
                f"-e {shlex.quote(statement)}")

    def setting_sql(self, setting: str) -> str:
        return f"SHOW {setting}" if self.name == "postgres" else f"SELECT @@{setting}"

    def create_table_sql(self) -> str:
        if self.name == "postgres":
            return "CREATE TABLE acks (id int PRIMARY KEY)"
        return "CREATE DATABASE lab; CREATE TABLE lab.acks (id INT PRIMARY KEY) ENGINE=InnoDB"

    def table(self) -> str:
        return "acks" if self.name == "postgres" else "lab.acks"

    def insert_loop(self, data: str, socket: str | None = None, first: int = 1) -> str:
        """Commit rows 1, 2, 3, ... (from `first`) in one client session; print `ack N` after
        each commit.

        A shell loop writes the statements into the client's input: an INSERT (a commit of
        its own) and then a line that prints `ack N`, which the client reaches only after
        the commit returned. The client's output is line-buffered (stdbuf), so no
        acknowledgement waits in a buffer when the power goes. `socket`: PostgreSQL's socket
        folder, when it is not the data folder.
        """
        if first < 1:
            raise ValueError(f"insert_loop: rows are numbered from 1 (first={first})")
        if self.name == "postgres":
            lines = "'INSERT INTO acks VALUES (%d);\\n\\\\echo ack %d\\n'"
        else:
            lines = "'INSERT INTO lab.acks VALUES (%d);\\nSELECT \"ack %d\";\\n'"
        return self._client_loop(f"printf {lines} $i $i", socket or data, first)

    def _client_loop(self, printf: str, socket: str, first: int = 1) -> str:
        """A shell loop over i = 1, 2, 3, ... that pipes `printf`'s statements into one
        client session (line-buffered output), as the server's own user for PostgreSQL."""
        if self.name == "postgres":
            client = f"stdbuf -oL {PSQL} -h {shlex.quote(socket)} -XAtq -v ON_ERROR_STOP=1"
        else:
            client = (f"stdbuf -oL mariadb --socket={shlex.quote(socket + '/server.sock')} "
                      "-N -B --unbuffered")
        loop = f"i={first - 1}; while i=$((i+1)); do {printf}; done | {client}"
        if self.name == "postgres":
            return f"runuser -u postgres -- sh -c {shlex.quote(loop)}"
        return f"sh -c {shlex.quote(loop)}"

    def pages_table_sql(self, rows: int) -> list[str]:
        """Statements, one at a time: a table of `rows` rows, each on a page of its own or
        nearly, and then every page of it written home.

        PostgreSQL: one row per 8 KiB page (fillfactor 10 leaves each page 90 % empty, so
        every update stays on its row's page); then a VACUUM of the whole database, which
        sets the hint bits of every row, the catalog's included, and a checkpoint. Without
        them the first reads after the set-up would dirty catalog pages, and a torn catalog
        page leaves the whole database unreadable. MariaDB: rows of 7,000 bytes, two per
        16 KiB page (InnoDB keeps at least two rows on a page); FLUSH ... FOR EXPORT writes
        the table's pages home."""
        if self.name == "mariadb":
            return ["CREATE DATABASE lab; CREATE TABLE lab.pages (id INT PRIMARY KEY, "
                    "v BIGINT NOT NULL, pad VARCHAR(7000) CHARACTER SET latin1 NOT NULL "
                    "DEFAULT '') ENGINE=InnoDB",
                    # seq_0_to_N is MariaDB's sequence engine; it needs a current database.
                    "USE lab; INSERT INTO pages (id, v, pad) SELECT seq, 0, REPEAT('x', 7000) "
                    f"FROM seq_0_to_{rows - 1}",
                    "FLUSH TABLES lab.pages FOR EXPORT; UNLOCK TABLES"]
        return ["CREATE TABLE pages (id int PRIMARY KEY, v bigint NOT NULL, "
                "pad char(1000) NOT NULL DEFAULT '') WITH (fillfactor = 10); "
                f"INSERT INTO pages (id, v) SELECT g, 0 FROM generate_series(0, {rows - 1}) g",
                "VACUUM", "CHECKPOINT"]

    def rows_one_by_one(self, data: str, rows: int) -> str:
        """MariaDB: read rows 0 .. rows-1 of the page table one primary-key lookup at a time,
        going on past errors (one `id<TAB>v` line a row found): a damaged page then costs
        its own rows only, where a full scan stops at the first damaged page."""
        if self.name != "mariadb":
            raise ValueError("the row-by-row read is MariaDB's")
        lookups = f"seq 0 {rows - 1} | sed 's/.*/SELECT id, v FROM lab.pages WHERE id = &;/'"
        return (f"{lookups} | mariadb --socket={shlex.quote(data + '/server.sock')} --force "
                "-N -B")

    def update_loop(self, data: str, rows: int) -> str:
        """Update row (N × 7919) mod `rows` to N for N = 1, 2, 3, ...; print `ack N` after
        each commit (as insert_loop does). 7919 is a prime: the updates hop over the table's
        pages in a fixed, scattered order, as a database's writes do."""
        if self.name == "postgres":
            lines = "'UPDATE pages SET v = %d WHERE id = %d;\\n\\\\echo ack %d\\n'"
        else:
            lines = "'UPDATE lab.pages SET v = %d WHERE id = %d;\\nSELECT \"ack %d\";\\n'"
        return self._client_loop(f"printf {lines} $i $(( (i * 7919) % {rows} )) $i", data)

    def setting_in_force(self, answer: str, value: str) -> bool:
        """Whether the server's answer to setting_sql shows `value` (PostgreSQL says on/off;
        MariaDB says 0/1, for a numeric setting and for a switch set ON or OFF alike)."""
        def plain(word: str) -> str:
            word = word.strip().lower()
            return {"on": "1", "off": "0"}.get(word, word) if self.name == "mariadb" else word
        return plain(answer) == plain(value)


SERVERS = {"postgres": Server("postgres", "PostgreSQL"),
           "mariadb": Server("mariadb", "MariaDB (InnoDB)")}
