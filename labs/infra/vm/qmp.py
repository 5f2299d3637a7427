"""One command to a running QEMU through its monitor socket (QMP), and its answer.

    call(Path("/…/vm1/qmp.sock"), "vm1", "query-block")   # -> QMP's "return" value

A lab VM booted by `labs vm up` listens for QMP on <vm folder>/qmp.sock (root only). Each
call opens a connection, does the capabilities handshake, sends one command and closes.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

from labs.errors import LabError


class QMPError(LabError):
    """QEMU's monitor did not answer, or refused a command."""


def call(socket_path: Path, label: str, command: str, arguments: dict | None = None,
         timeout_s: float = 10) -> object:
    """One QMP command on a fresh connection; returns its "return" value. `label` names the
    VM in errors."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        try:
            sock.connect(str(socket_path))
        except OSError as error:
            raise QMPError(f"{label}: QEMU monitor did not answer: {error}") from None
        # The file is closed with the socket: a socket stays open while a file made from it
        # lives, and an exception's traceback keeps this one alive. QEMU's monitor serves
        # one client at a time, so the next connection (the teardown's, after a Ctrl-C
        # here) would wait for a greeting that never comes.
        with sock.makefile("rw") as stream:
            return _session(label, stream, command, arguments)


def _session(label: str, stream, command: str, arguments: dict | None) -> object:
    """The greeting, the capabilities handshake, then `command`, on an open QMP stream."""

    def send(execute: str, args: dict | None = None) -> object:
        message = {"execute": execute, **({"arguments": args} if args else {})}
        stream.write(json.dumps(message) + "\n")
        stream.flush()
        while True:
            reply = json.loads(stream.readline() or "{}")
            if "event" in reply:
                continue  # asynchronous events can arrive between a command and its reply
            if "error" in reply:
                raise QMPError(f"{label}: QEMU refused {execute}: "
                               f"{reply['error'].get('desc')}")
            if "return" not in reply:
                raise QMPError(f"{label}: QEMU monitor closed during {execute}")
            return reply["return"]

    json.loads(stream.readline() or "{}")  # the greeting
    send("qmp_capabilities")
    return send(command, arguments)
