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

        `wal_dir` (PostgreSQL only): the WAL in a folder of its own, with page checksums on
        and one `sync` at the end instead of initdb's fsync of every file (the torn-page
        legs, whose data disk delays each write by a second)."""
        if self.name == "postgres":
            if wal_dir is None:
                return (f"install -d -m 0700 -o postgres -g postgres {shlex.quote(data)} && "
                        f"runuser -u postgres -- {PG_BIN}/initdb -D {shlex.quote(data)} "
                        "-A trust -U postgres --no-instructions >/dev/null")
            return (f"install -d -m 0700 -o postgres -g postgres {shlex.quote(data)} "
                    f"{shlex.quote(wal_dir)} && "
                    f"runuser -u postgres -- {PG_BIN}/initdb -D {shlex.quote(data)} "
                    f"--waldir={shlex.quote(wal_dir + '/pg_wal')} --data-checksums --no-sync "
                    "-A trust -U postgres --no-instructions >/dev/null && sync")
        if wal_dir is not None:
            raise ValueError("a WAL folder of its own is PostgreSQL's")
        return (f"install -d -m 0700 -o mysql -g mysql {shlex.quote(data)} && "
                f"mariadb-install-db --user=mysql --datadir={shlex.quote(data)} "
                "--skip-test-db --auth-root-authentication-method=socket >/dev/null")

    def start_command(self, data: str, setting: str, value: str,
                      extra: tuple[str, ...] = ()) -> str:
        """Start the server in the background with `setting=value` (and PostgreSQL's `extra`
        name=value settings); returns when it answers."""
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
                  f"--innodb-buffer-pool-size=32M --{setting.replace('_', '-')}={value}")
        ping = f"mariadb-admin --socket={socket} --connect-timeout=2 ping >/dev/null 2>&1"
        return (f"setsid nohup {server} >>{log} 2>&1 </dev/null & "
                f"for i in $(seq 600); do {ping} && exit 0; sleep 1; done; exit 1")

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
            return (f"runuser -u postgres -- psql -h {shlex.quote(data)} -XAtq "
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

    def insert_loop(self, data: str, socket: str | None = None) -> str:
        """Commit rows 1, 2, 3, ... in one client session; print `ack N` after each commit.

        A shell loop writes the statements into the client's input: an INSERT (a commit of
        its own) and then a line that prints `ack N`, which the client reaches only after
        the commit returned. The client's output is line-buffered (stdbuf), so no
        acknowledgement waits in a buffer when the power goes. `socket`: PostgreSQL's socket
        folder, when it is not the data folder.
        """
        if self.name == "postgres":
            lines = "'INSERT INTO acks VALUES (%d);\\n\\\\echo ack %d\\n'"
            client = f"stdbuf -oL psql -h {shlex.quote(socket or data)} -XAtq -v ON_ERROR_STOP=1"
        else:
            lines = "'INSERT INTO lab.acks VALUES (%d);\\nSELECT \"ack %d\";\\n'"
            client = (f"stdbuf -oL mariadb --socket={shlex.quote(data + '/server.sock')} "
                      "-N -B --unbuffered")
        loop = f"i=0; while i=$((i+1)); do printf {lines} $i $i; done | {client}"
        if self.name == "postgres":
            return f"runuser -u postgres -- sh -c {shlex.quote(loop)}"
        return f"sh -c {shlex.quote(loop)}"

    def pages_table_sql(self, rows: int) -> list[str]:
        """Statements, one at a time: a table of `rows` rows, one per 8 KiB page (fillfactor
        10 leaves each page 90 % empty, so every update stays on its row's page); then a
        VACUUM of the whole database, which sets the hint bits of every row, the catalog's
        included, and a checkpoint. Without them the first reads after the set-up would
        dirty catalog pages, and a torn catalog page leaves the whole database unreadable."""
        if self.name != "postgres":
            raise ValueError("the page table is PostgreSQL's")
        return ["CREATE TABLE pages (id int PRIMARY KEY, v bigint NOT NULL, "
                "pad char(1000) NOT NULL DEFAULT '') WITH (fillfactor = 10); "
                f"INSERT INTO pages (id, v) SELECT g, 0 FROM generate_series(0, {rows - 1}) g",
                "VACUUM", "CHECKPOINT"]

    def update_loop(self, data: str, rows: int) -> str:
        """Update row (N × 7919) mod `rows` to N for N = 1, 2, 3, ...; print `ack N` after
        each commit (as insert_loop does). 7919 is a prime: the updates hop over the table's
        pages in a fixed, scattered order, as a database's writes do."""
        if self.name != "postgres":
            raise ValueError("the update loop is PostgreSQL's")
        lines = "'UPDATE pages SET v = %d WHERE id = %d;\\n\\\\echo ack %d\\n'"
        client = f"stdbuf -oL psql -h {shlex.quote(data)} -XAtq -v ON_ERROR_STOP=1"
        loop = (f"i=0; while i=$((i+1)); do printf {lines} $i $(( (i * 7919) % {rows} )) $i; "
                f"done | {client}")
        return f"runuser -u postgres -- sh -c {shlex.quote(loop)}"

    def setting_in_force(self, answer: str, value: str) -> bool:
        """Whether the server's answer to setting_sql shows `value` (PostgreSQL says on/off,
        MariaDB says 0/1 for its numeric setting)."""
        return answer.strip().lower() == value.lower()


SERVERS = {"postgres": Server("postgres", "PostgreSQL"),
           "mariadb": Server("mariadb", "MariaDB (InnoDB)")}
