"""The QMP client of labs/infra/vm/throttle.py against a stand-in monitor on a Unix socket
that, like QEMU's, serves one client at a time: a call interrupted mid-read must let go of
the monitor at once, or the next call (a teardown's) waits for a greeting that never comes.
"""

from __future__ import annotations

import json
import socket
import threading

import pytest

from labs.infra.vm import throttle


def one_client_at_a_time_monitor(path: str, stop: threading.Event,
                                  listening: threading.Event) -> None:
    """The first client gets no greeting (it is interrupted while it waits); every later one
    gets a greeting and an answer to each command."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    listening.set()  # the socket file exists from bind(); connecting works from here
    server.settimeout(0.2)
    first = True
    while not stop.is_set():
        try:
            client, _ = server.accept()
        except TimeoutError:
            continue
        with client, client.makefile("rw") as stream:
            if first:
                first = False
                client.recv(1)  # returns when the client has closed its end
                continue
            stream.write(json.dumps({"QMP": {}}) + "\n")
            stream.flush()
            for line in stream:
                json.loads(line)
                stream.write(json.dumps({"return": {}}) + "\n")
                stream.flush()
    server.close()


def test_an_interrupted_call_lets_go_of_the_monitor(tmp_path, monkeypatch):
    path = str(tmp_path / "qmp.sock")
    stop, listening = threading.Event(), threading.Event()
    monitor = threading.Thread(target=one_client_at_a_time_monitor,
                               args=(path, stop, listening), daemon=True)
    monitor.start()
    assert listening.wait(timeout=5), "the stand-in monitor never listened"
    monkeypatch.setattr(throttle, "_socket_path", lambda name: path)
    monkeypatch.setattr(throttle, "TIMEOUT_S", 1)
    try:
        with pytest.raises(TimeoutError) as interrupted:  # as a Ctrl-C mid-read would
            throttle._qmp("vm1", "query-block")
        # The traceback (kept alive here, as during a teardown in an `except`) must not
        # hold the first connection open.
        assert interrupted.value.__traceback__ is not None
        assert throttle._qmp("vm1", "block_set_io_throttle", {"device": "fast"}) == {}
    finally:
        stop.set()
        monitor.join(timeout=5)
