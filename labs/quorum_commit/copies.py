"""The six copies in a lab VM: a PostgreSQL primary in the VM's own network and five standbys,
each in a network namespace of its own (labs/infra/netns.py), so that netem can put a
different delay between the primary and each standby.

The servers run from the VM's Debian packages (labs/infra/vm/servers.py says why not in
containers). Each keeps its data on the lab's file system and its Unix socket in a folder
beside it; the controller reaches every copy through `psql` on that socket, over SSH. Only
replication travels over TCP: each standby streams from the primary's end of its own link.

    copies = Copies(ws, mount_point, token)
    copies.create()                      # initdb, five pg_basebackups, six servers
    copies.set_layout(params, "even")    # netem inside each standby's namespace
    copies.set_sync("ANY 3 (s1, s2, s3, s4, s5)")
    copies.kill(4); copies.restart(4)    # every process of s4, at once (a lost copy)
    copies.kill_with_primary([1])        # the primary's zone lost: the primary and s1
    copies.promote(3, "ANY 2 (s2, s4)")  # s3 the primary, waiting for two of them
    copies.follow()                      # the other survivors stream from s3
    copies.after_reboot(params)          # after a power cut: namespaces and netem again
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass

from labs.errors import LabError
from labs.infra import netns
from labs.infra.acks import AckStream
from labs.infra.processes import find_server
from labs.infra.vm.servers import PG_BIN, PSQL, SERVERS
from labs.infra.workspace import LabWorkspace
from labs.quorum_commit.params import COPIES, Parameters

# Small servers: six of them share the VM's memory. wal_keep_size: five base backups at
# once each force a checkpoint, which would otherwise recycle WAL another one still reads.
SETTINGS = {"shared_buffers": "16MB", "max_connections": "40", "max_wal_size": "256MB",
            "wal_keep_size": "128MB", "fsync": "on", "synchronous_commit": "on"}


@dataclass
class Copy:
    number: int  # 0: the primary; 1..5: standbys s1..s5
    data: str
    socket: str  # the folder of its Unix socket (outside the data, which is copied)
    namespace: str  # "" for the primary (the VM's own network)

    @property
    def name(self) -> str:
        return "primary" if self.number == 0 else f"s{self.number}"

    def inside(self, command: str) -> str:
        return netns.run_inside(self.namespace, command) if self.namespace else command


class Copies:
    def __init__(self, ws: LabWorkspace, mount_point: str, token: str, timeout_s: float = 600):
        self.ws, self.mount_point, self.timeout_s = ws, mount_point, timeout_s
        self.copies = [Copy(n, f"{mount_point}/{'p0' if n == 0 else f's{n}'}",
                            f"{mount_point}/sockets/{'p0' if n == 0 else f's{n}'}",
                            "" if n == 0 else f"qc{token}s{n}")
                       for n in range(COPIES)]
        self.primary_number = 0  # another after a failover (`promote`)
        self.gone: set[int] = set()  # copies lost for good (`kill_with_primary`)

    @property
    def primary(self) -> Copy:
        return self.copies[self.primary_number]

    @property
    def standbys(self) -> list[Copy]:
        """The standbys that are part of the set: all five until a failover."""
        return [c for c in self.copies if c.number != self.primary_number
                and c.number not in self.gone]

    # --- commands -----------------------------------------------------------------------

    def _start(self, copy: Copy) -> str:
        listen = ",".join(netns.host_address(s.number) for s in self.standbys)
        settings = {**SETTINGS, "listen_addresses": f"'{listen}'" if copy.number == 0 else "''",
                    "unix_socket_directories": copy.socket}
        options = " ".join(f"-c {key}={value}" for key, value in settings.items())
        log = shlex.quote(f"{copy.socket}/server.log")  # a folder the server may write
        return copy.inside(f"runuser -u postgres -- {PG_BIN}/pg_ctl -D "
                           f"{shlex.quote(copy.data)} -l {log} -w -t 300 "
                           f"-o {shlex.quote(options)} start >/dev/null")

    def _stop(self, copy: Copy) -> str:
        return SERVERS["postgres"].stop_command(copy.data)

    def psql(self, copy: Copy, statement: str, timeout_s: float = 120) -> str:
        command = (f"cd / && runuser -u postgres -- {PSQL} -h {shlex.quote(copy.socket)} -XAtq "
                   f"-v ON_ERROR_STOP=1 -c {shlex.quote(statement)}")
        return self.ws.host.sudo(command, timeout_s=timeout_s).stdout.strip()

    # --- making them ----------------------------------------------------------------------

    def create(self) -> dict[str, float]:
        """The namespaces, the primary, then the five standbys copied from it at once;
        returns the seconds each part took."""
        seconds: dict[str, float] = {}
        began = time.monotonic()
        sockets = " ".join(shlex.quote(c.socket) for c in self.copies)
        self.ws.host.sudo(f"install -d -o postgres -g postgres -m 0755 {sockets}",
                          timeout_s=60)
        for standby in self.standbys:
            self.ws.journaled("netns", standby.namespace,
                              netns.create_command(standby.namespace, standby.number),
                              timeout_s=120)
        seconds["namespaces"] = time.monotonic() - began
        began = time.monotonic()
        primary = self.primary
        self.ws.host.sudo(SERVERS["postgres"].init_command(primary.data), timeout_s=900)
        # Replication connections from the standbys' links (trust: nothing else reaches
        # them; each link is a point-to-point network inside this VM).
        hba = f"host replication all {netns.PREFIX}.0.0/16 trust"
        self.ws.host.sudo(f"echo {shlex.quote(hba)} >> {shlex.quote(primary.data)}"
                          "/pg_hba.conf", timeout_s=60)
        self.ws.start_server(primary.data, self._start(primary), stop=self._stop(primary),
                             pid_file=f"{primary.data}/postmaster.pid",
                             timeout_s=self.timeout_s)
        seconds["primary"] = time.monotonic() - began
        began = time.monotonic()
        copies = []
        for standby in self.standbys:
            data = shlex.quote(standby.data)
            conninfo = (f"primary_conninfo = 'host={netns.host_address(standby.number)} "
                        f"user=postgres application_name={standby.name}'")
            copies.append(
                f"( install -d -m 0700 -o postgres -g postgres {data} && "
                + standby.inside(f"runuser -u postgres -- {PG_BIN}/pg_basebackup -h "
                                 f"{netns.host_address(standby.number)} -U postgres -D "
                                 f"{data} -X stream -c fast")
                + f" && echo {shlex.quote(conninfo)} >> {data}/postgresql.auto.conf"
                f" && runuser -u postgres -- touch {data}/standby.signal ) &")
        # Five copies at once, then wait for all; a failed one fails the command.
        script = " ".join(copies) + " for job in $(jobs -p); do wait $job || exit 1; done"
        self.ws.host.sudo(f"cd / && {script}", timeout_s=self.timeout_s)
        seconds["base_backups"] = time.monotonic() - began
        began = time.monotonic()
        for standby in self.standbys:
            self.ws.start_server(standby.data, self._start(standby), stop=self._stop(standby),
                                 pid_file=f"{standby.data}/postmaster.pid",
                                 timeout_s=self.timeout_s)
        self.wait_streaming([s.name for s in self.standbys])
        seconds["standbys"] = time.monotonic() - began
        return seconds

    # --- the network ------------------------------------------------------------------------

    def set_layout(self, params: Parameters, layout: str) -> dict[int, float]:
        """netem on each standby's link for `layout`; returns the added round trip of each."""
        added = {s.number: params.added_rtt_ms(s.number, layout) for s in self.standbys}
        script = "; ".join(netns.delay_command(s.namespace, added[s.number]) + " || exit 1"
                           for s in self.standbys)
        # Safe: netem inside the lab's own namespaces only (they go, with it, at the end).
        self.ws.host.sudo(script, timeout_s=120)
        return added

    def after_reboot(self, params: Parameters) -> None:
        """After the VM's power came back: the standbys' namespaces (journaled by `create`,
        gone with the VM's memory) and the even layout's delays, made again."""
        for standby in self.standbys:
            self.ws.host.sudo(netns.create_command(standby.namespace, standby.number),
                              timeout_s=120)
        self.set_layout(params, "even")

    def netem_shown(self) -> str:
        return self.ws.host.sudo("; ".join(
            f"echo {s.name}: $({s.inside('tc qdisc show dev ' + netns.inside_link(s.namespace))})"
            for s in self.standbys), timeout_s=60).stdout

    # --- synchronous replication --------------------------------------------------------------

    def set_sync(self, names: str) -> None:
        """synchronous_standby_names on the primary, then wait (in the VM, one command) until
        every standby's sync_state shows it was taken. New sessions use it."""
        standbys = [s.name for s in self.standbys]
        if not names:
            wanted = ["async"] * len(standbys)
        elif names.startswith("ANY"):
            wanted = ["quorum"] * len(standbys)
        else:  # FIRST k: the first k listed are "sync", the others "potential"
            k = int(names.split()[1])
            wanted = ["sync"] * k + ["potential"] * (len(standbys) - k)
        quoted = names.replace("'", "''")
        psql = (f"runuser -u postgres -- {PSQL} -h {shlex.quote(self.primary.socket)} -XAtq "
                "-v ON_ERROR_STOP=1")
        states = ("SELECT string_agg(sync_state, ',' ORDER BY application_name) "
                  "FROM pg_stat_replication")
        alter = f"ALTER SYSTEM SET synchronous_standby_names = '{quoted}'"
        script = (f"cd / && {psql} -c {shlex.quote(alter)} "
                  f"-c 'SELECT pg_reload_conf()' >/dev/null && for i in $(seq 300); do "
                  f"[ \"$({psql} -c {shlex.quote(states)})\" = {','.join(wanted)} ] && exit 0; "
                  "sleep 0.1; done; exit 1")
        if not self.ws.host.sudo(script, timeout_s=120, check=False).ok:
            raise LabError(f"the primary did not take synchronous_standby_names = {names!r} "
                           f"within 30 s (standbys: {self.replication()})")

    def replication(self) -> dict[str, dict[str, str]]:
        """pg_stat_replication by standby name: state, sync_state, replay_lsn."""
        text = self.psql(self.primary, "SELECT application_name, state, sync_state, "
                                       "replay_lsn FROM pg_stat_replication")
        rows = {}
        for line in text.splitlines():
            name, state, sync_state, replay = line.split("|")
            rows[name] = {"state": state, "sync_state": sync_state, "replay_lsn": replay}
        return rows

    def wait_streaming(self, names: list[str], timeout_s: float | None = None) -> float:
        """Wait until each standby in `names` streams from the primary; the seconds waited."""
        began = time.monotonic()
        timeout_s = timeout_s or self.timeout_s
        rows: dict = {}
        while time.monotonic() - began < timeout_s:
            rows = self.replication()
            if all(rows.get(name, {}).get("state") == "streaming" for name in names):
                return time.monotonic() - began
            time.sleep(0.3)
        raise LabError(f"standbys {', '.join(names)} were not all streaming after "
                       f"{timeout_s:.0f} s: {rows}")

    def wait_replayed(self, timeout_s: float = 600) -> None:
        """Wait until every standby has replayed all the WAL the primary has written (a
        standby replays only WAL it has flushed: then all of it is on every standby's disk)."""
        target = lsn(self.psql(self.primary, "SELECT pg_current_wal_lsn()"))
        deadline = time.monotonic() + timeout_s
        while True:
            rows = self.replication()
            if (len(rows) == len(self.standbys)
                    and all(row["replay_lsn"] and lsn(row["replay_lsn"]) >= target
                            for row in rows.values())):
                return
            if time.monotonic() > deadline:
                raise LabError(f"the standbys did not replay the primary's WAL within "
                               f"{timeout_s:.0f} s: {rows}")
            time.sleep(0.2)

    def replay_settled(self, copies: list[Copy], timeout_s: float = 300) -> dict[int, str]:
        """Standbys started without their primary: wait until each has replayed all the WAL
        on its own disk (its replay position still for 2 s); returns each one's position."""
        query = " && ".join(
            f"runuser -u postgres -- {PSQL} -h {shlex.quote(c.socket)} -XAtq "
            "-c 'SELECT pg_last_wal_replay_lsn()'" for c in copies)
        deadline = time.monotonic() + timeout_s
        seen: list[str] = []
        still_since = time.monotonic()
        while time.monotonic() < deadline:
            now = self.ws.host.sudo(f"cd / && {query}", timeout_s=60).stdout.split()
            if now != seen:
                seen, still_since = now, time.monotonic()
            elif len(now) == len(copies) and time.monotonic() - still_since >= 2:
                return {c.number: position for c, position in zip(copies, now, strict=True)}
            time.sleep(0.25)
        raise LabError(f"standbys {', '.join(c.name for c in copies)}: their replay kept "
                       f"moving for {timeout_s:.0f} s")

    # --- losing copies and getting them back ----------------------------------------------

    def kill(self, numbers: list[int]) -> None:
        """Every process of these standbys at once, with SIGKILL (as a lost machine)."""
        # Safe: only the processes inside the lab's own namespaces.
        self.ws.host.sudo(netns.kill_all_command([self.copies[n].namespace for n in numbers],
                                                 wait_s=20), timeout_s=60)

    def stop_client(self, writer: AckStream) -> None:
        """Stop a client loop that commits on the primary, and wait for its stream to end."""
        # Safe: only this run's client (its psql, on this run's socket; not any other psql).
        # (psql is Debian's wrapper, which runs the real one: the pattern matches both.)
        self.ws.host.sudo(f"pkill -KILL -f -- '[p]sql -h {self.primary.socket} -XAtq -v "
                          "ON_ERROR_STOP=1$'", timeout_s=60, check=False)
        writer.thread.join(timeout=60)

    def kill_with_primary(self, numbers: list[int]) -> None:
        """The primary and these standbys lost at once, for good (their zone is gone): every
        process of the primary, then of the standbys, with SIGKILL, in one command."""
        primary = self.primary
        find = find_server(f"{primary.data}/postmaster.pid", primary.data, missing_exit=1)
        # Safe: only this run's primary (the process its pid file names, while its command
        # line names its data folder, and that process's children), then only the processes
        # inside the lab's own namespaces; then wait until the primary is gone.
        self.ws.host.sudo(
            f"{find}; kill -KILL \"$pid\" $children; "
            + netns.kill_all_command([self.copies[n].namespace for n in numbers], wait_s=20)
            + " && for i in $(seq 100); do [ -d /proc/$pid ] || exit 0; sleep 0.2; done; "
            "exit 1", timeout_s=60)
        self.gone |= {primary.number, *numbers}

    def promote(self, number: int, names: str, timeout_s: int = 300) -> None:
        """Standby `number` ends its recovery and takes writes, the new primary, waiting for
        the standbys `names` (synchronous_standby_names, set first: no commit it takes is on
        it alone). One psql, three statements."""
        copy = self.copies[number]
        quoted = names.replace("'", "''")
        statements = [f"ALTER SYSTEM SET synchronous_standby_names = '{quoted}'",
                      f"SELECT pg_promote(true, {timeout_s})", "SELECT pg_reload_conf()"]
        command = (f"cd / && runuser -u postgres -- {PSQL} -h {shlex.quote(copy.socket)} -XAtq "
                   "-v ON_ERROR_STOP=1 " + " ".join(f"-c {shlex.quote(s)}" for s in statements))
        answers = self.ws.host.sudo(command, timeout_s=timeout_s + 60).stdout.split()
        if answers[:1] != ["t"]:
            raise LabError(f"{copy.name} was not promoted within {timeout_s} s ({answers})")
        self.primary_number = number

    def follow(self) -> None:
        """Every standby left streams from the (new) primary, over the primary's Unix socket
        (the copies share the VM's file system, and a standby listens on no network address).
        One command for all of them."""
        commands = []
        for standby in self.standbys:
            conninfo = (f"host={self.primary.socket} user=postgres "
                        f"application_name={standby.name}")
            alter = f"ALTER SYSTEM SET primary_conninfo = '{conninfo}'"
            commands.append(f"runuser -u postgres -- {PSQL} -h {shlex.quote(standby.socket)} "
                            f"-XAtq -v ON_ERROR_STOP=1 -c {shlex.quote(alter)} "
                            "-c 'SELECT pg_reload_conf()' >/dev/null")
        self.ws.host.sudo("cd / && " + " && ".join(commands), timeout_s=120)

    def restart(self, numbers: list[int]) -> None:
        """Start killed standbys again (each recovers from its WAL, then streams)."""
        for number in numbers:
            copy = self.copies[number]
            # Safe: nothing runs in its namespace (kill waited for that), so its lock files
            # name a dead server.
            stale = " ".join(shlex.quote(p) for p in (
                f"{copy.data}/postmaster.pid", f"{copy.socket}/.s.PGSQL.5432",
                f"{copy.socket}/.s.PGSQL.5432.lock"))
            self.ws.host.sudo(f"rm -f -- {stale}", timeout_s=60)
            self.ws.restart_server(copy.data, self._start(copy), timeout_s=self.timeout_s)


def lsn(text: str) -> int:
    """A WAL position 'X/Y' as a byte number."""
    high, _, low = text.partition("/")
    try:
        return (int(high, 16) << 32) + int(low, 16)
    except ValueError:
        raise LabError(f"not a WAL position: {text!r}") from None
