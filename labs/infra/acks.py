"""Acknowledgements a client prints, read by the controller as they come.

A client loop on a lab host commits (or writes) record 1, 2, 3, ... and prints `ack N`
after each one returned. The controller reads those lines over a connection of its own and
writes each one down with its time. What the controller saw is what was acknowledged: an
acknowledgement still in flight when the host died is not counted, which can only make a
count of lost records smaller, never larger.

    stream = AckStream(command)
    stream.start(host, started=time.monotonic())
    why = stream.wait_for_first(timeout_s=120)   # None once the first acknowledgement came
    ... stream.acked, stream.rate(), stream.ended
"""

from __future__ import annotations

import shlex
import threading
import time
from dataclasses import dataclass, field

from labs.infra.hosts import Host


@dataclass
class AckStream:
    """One client loop on a host; the controller keeps every acknowledgement it sees."""

    command: str
    acks: list[tuple[int, float]] = field(default_factory=list)  # (record, s since start)
    thread: threading.Thread | None = None
    ended: str = ""
    # The lab host's own clock at each acknowledgement, for a loop that stamps its lines
    # there (`ack N T`): the controller's times lag when the stream falls behind.
    host_times_s: list[float] = field(default_factory=list)

    def start(self, host: Host, started: float) -> None:
        # Its own SSH connection: the loop's output is read line by line while it runs. The
        # loops run as root (they switch to the database's user with runuser): through sudo
        # on a host where the login user is not root.
        connection = host.twin()
        command = self.command if host.is_root() else "sudo -n sh -c " + shlex.quote(self.command)

        connection.tell(command)  # the run's record lists the loop like any other command

        def read() -> None:
            try:
                client = connection.ssh_client()
                _, stdout, _ = client.exec_command(command)
                for line in stdout:
                    if line.startswith("ack "):
                        self._note(line.split(), time.monotonic() - started)
                self.ended = f"loop ended (exit {stdout.channel.recv_exit_status()})"
            except Exception as error:  # a power cut breaks the stream: that is the point
                self.ended = f"stream broke: {type(error).__name__}"
            finally:
                connection.close()

        self.thread = threading.Thread(target=read, daemon=True)
        self.thread.start()

    def _note(self, words: list[str], at_s: float) -> None:
        """One `ack N` line, or `ack N T` with the lab host's own clock T (seconds)."""
        self.acks.append((int(words[1]), at_s))
        if len(words) > 2:
            self.host_times_s.append(float(words[2]))

    def wait_for_first(self, timeout_s: float) -> str | None:
        """Wait for the first acknowledgement: None once it came, else why it did not (the
        loop ended, or nothing within timeout_s)."""
        deadline = time.monotonic() + timeout_s
        while not self.acks:
            if (self.thread and not self.thread.is_alive()) or time.monotonic() > deadline:
                return self.ended or f"no answer within {timeout_s:g} s"
            time.sleep(0.1)
        return None

    @property
    def acked(self) -> int:
        return self.acks[-1][0] if self.acks else 0

    def csv(self) -> str:
        """Every acknowledgement as a CSV file: the record, the seconds since the start."""
        return "id,seconds\n" + "".join(f"{n},{t:.4f}\n" for n, t in self.acks)

    def rate(self) -> float:
        """Acknowledgements per second over the last ten seconds seen."""
        if len(self.acks) < 2:
            return 0.0
        last = self.acks[-1][1]
        recent = [a for a in self.acks if a[1] >= last - 10]
        span = recent[-1][1] - recent[0][1]
        return (len(recent) - 1) / span if span > 0 else 0.0


def lost_window_ms(acks: list[tuple[int, float]], newest_found: int, cut_at_s: float) -> float:
    """Milliseconds from the acknowledgement of the first lost row to the power cut.

    Rows are committed in order, so every acknowledged row after the newest one found is
    lost; 0 when nothing acknowledged was lost."""
    lost = [at for row, at in acks if row > newest_found]
    return round(1000 * (cut_at_s - lost[0]), 1) if lost else 0.0
