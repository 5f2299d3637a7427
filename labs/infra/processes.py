"""Server processes a lab starts on a host (PostgreSQL, MariaDB from a lab VM's packages):
journaled as "server" by LabWorkspace.start_server, torn down here.

The teardown stops the server with its own command, then kills what is left of it: the
process its pid file names and that process's children, but only while the process's
command line names the server's data folder (a pid reused since is left alone). A server a
lab froze (SIGSTOP, the DRBD drill's) is continued first, or it could not stop.
"""

from __future__ import annotations

import shlex

from labs.infra.hosts import Host
from labs.infra.journal import JournalEntry, JournalError, register_teardown


def find_server(pid_file: str, folder: str, missing_exit: int = 0) -> str:
    """Shell that sets $pid to the server's and $children to its children's pids, or exits
    with `missing_exit` when the pid file names no live process whose command line names
    `folder` (no server, or a pid reused since by another process)."""
    return (f"pid=$(head -n 1 {shlex.quote(pid_file)} 2>/dev/null); [ -n \"$pid\" ] || "
            f"exit {missing_exit}; tr '\\0' ' ' </proc/$pid/cmdline 2>/dev/null | grep -qF -- "
            f"{shlex.quote(folder)} || exit {missing_exit}; children=$(pgrep -P \"$pid\")")


@register_teardown("server")
def _teardown_server(host: Host, entry: JournalEntry) -> None:
    server = find_server(entry.details.get("pid_file", ""), entry.id)
    # A frozen server (SIGSTOP, the DRBD drill's) could not stop: it continues first.
    host.sudo(f"{server}; kill -CONT \"$pid\" $children; exit 0", timeout_s=60, check=False)
    stop = entry.details.get("stop")
    if stop:
        host.sudo(stop, timeout_s=300, check=False)
    # Safe: kills only that server and its children, and waits until the server is gone.
    script = (f"{server}; kill -KILL \"$pid\" $children; "
              "for i in $(seq 120); do [ -d /proc/$pid ] || exit 0; sleep 0.5; done; exit 1")
    if not host.sudo(script, timeout_s=120, check=False).ok:
        raise JournalError(f"server of {entry.id} would not stop")
