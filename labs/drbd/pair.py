"""The two hosts of the DRBD lab and the small steps both the run and the drill take.

The pair is two lab VMs (`vm up --pair`: a data disk each, a private link) or two SSH hosts
of the reader's inventory (a loop device over a file in each one's work dir, the link
between their `link_address`es).

    pair.primary, pair.peer       # a LabWorkspace per VM
    drbd_state(ws)                # /proc/drbd's minor 0, parsed
    wait_for(ws, in_sync, "UpToDate on both sides")
    set_added_rtt(pair, 10)       # netem: 5 ms on each side's outgoing packets
    record_rtt(pair, rec, "added-10", 10)   # ping over the link; the median, ms
    record_link_bandwidth(pair, rec, "added-10", 10)  # MiB/s one TCP stream carries
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from labs.drbd.params import LINK_PROBE_PORT, PING_COUNT
from labs.errors import LabError
from labs.infra.vm import machine
from labs.infra.vm.servers import SERVERS
from labs.infra.workspace import LabWorkspace
from labs.records import RunRecorder
from labs.tools import drbd, netem
from labs.tools.drbd_state import DrbdMinor, parse_proc_drbd

RESOURCE = "storagelab"
VM_INTERFACE = "eth1"  # a lab VM pair's private link (labs/infra/vm/machine.py)
POSTGRES = SERVERS["postgres"]


@dataclass
class Pair:
    """The two hosts, their workspaces and what DRBD calls them: `resource.hosts` are the
    primary's section, then the peer's (each named as its host's `uname -n`)."""

    primary: LabWorkspace
    peer: LabWorkspace
    resource: drbd.DrbdResource
    device: str
    interfaces: tuple[str, str] = (VM_INTERFACE, VM_INTERFACE)  # the link's, on each side
    vms: bool = True  # a lab VM pair: the drill can cut a VM's power
    jitter_ms: float = 0.0  # netem, on each side, with every added round trip
    loss_pct: float = 0.0
    link_probe_mib: int = 128  # sent to measure the link's bandwidth
    # The device-mapper name under DRBD on both sides that slows each flush, if any: a
    # primary whose power was cut boots without it, and the drill makes it again.
    flush_delay_dm: str | None = None

    @property
    def both(self) -> tuple[LabWorkspace, LabWorkspace]:
        return self.primary, self.peer

    def _side(self, ws: LabWorkspace) -> int:
        return 0 if ws is self.primary else 1

    def node(self, ws: LabWorkspace) -> drbd.DrbdHost:
        """This side's section of the resource file."""
        return self.resource.hosts[self._side(ws)]

    def address(self, ws: LabWorkspace) -> str:
        return self.node(ws).address

    def disk(self, ws: LabWorkspace) -> str:
        return self.node(ws).disk

    def interface(self, ws: LabWorkspace) -> str:
        return self.interfaces[self._side(ws)]

    def other(self, ws: LabWorkspace) -> LabWorkspace:
        return self.peer if ws is self.primary else self.primary

    def netem_only_to(self, ws: LabWorkspace) -> str | None:
        """A lab VM's link is the lab's alone: netem takes all it sends. An SSH host's
        interface may carry its other traffic too: netem takes only the packets for the
        other host's link address."""
        return None if self.vms else self.address(self.other(ws))

    def set_netem(self, ws: LabWorkspace, delay_ms: float, jitter_ms: float | None = None,
                  loss_percent: float | None = None) -> None:
        ws.set_netem(self.interface(ws), delay_ms, jitter_ms, loss_percent,
                     only_to=self.netem_only_to(ws))


def cpu_s(pair: Pair, ws: LabWorkspace) -> float:
    """CPU seconds spent so far for this side: on a lab VM, its QEMU process's (user and
    system time: both VMs share this machine's processors, so what one uses the other
    cannot); on an SSH host, the host's own busy time, all its processors together."""
    if not pair.vms:
        return host_busy_cpu_s(ws)
    state = machine.read_state(ws.host.name)
    if state is None:
        return float("nan")
    try:
        fields = Path(f"/proc/{state.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    # utime and stime are fields 14 and 15 of /proc/PID/stat (11 and 12 after the name).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def host_busy_cpu_s(ws: LabWorkspace) -> float:
    """The host's processors' busy time since boot, s: /proc/stat's first line, all but
    idle and iowait (user, nice, system, irq, softirq, steal), in the host's clock ticks."""
    text = ws.host.run("head -n 1 /proc/stat; getconf CLK_TCK", timeout_s=60).stdout.split()
    ticks = [int(word) for word in text[1:9]]
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / int(text[-1])


def drbd_state(ws: LabWorkspace) -> DrbdMinor:
    text = ws.host.run(["cat", "/proc/drbd"], timeout_s=60).stdout
    return parse_proc_drbd(text).minor(0)


def wait_for(ws: LabWorkspace, ready: Callable[[DrbdMinor], bool], what: str,
             timeout_s: float = 300, refused: bool = False) -> tuple[DrbdMinor, float]:
    """Poll /proc/drbd until `ready`; returns the state and the seconds it took. With
    `refused`, right after a connect: StandAlone means the peer refused the connection
    (DRBD goes back to waiting otherwise), which no amount of waiting mends."""
    started = time.monotonic()
    state = drbd_state(ws)
    while not ready(state):
        # (After a grace second: the connect command may return before the state moves.)
        if refused and state.connection == "StandAlone" and time.monotonic() - started > 2:
            raise LabError(f"{ws.host.name}: DRBD's connection was refused (StandAlone) while "
                           f"waiting for {what}: the kernel log (dmesg) of both VMs says why")
        if time.monotonic() - started > timeout_s:
            raise LabError(f"{ws.host.name}: DRBD did not reach {what} within {timeout_s:.0f} s "
                           f"(cs:{state.connection} ro:{state.role}/{state.peer_role} "
                           f"ds:{state.disk}/{state.peer_disk})")
        time.sleep(0.5)
        state = drbd_state(ws)
    return state, time.monotonic() - started


def in_sync(state: DrbdMinor) -> bool:
    return state.connection == "Connected" and state.up_to_date


def drbdadm(ws: LabWorkspace, pair: Pair, argv: list[str]) -> None:
    # Safe: drbdadm acts on the lab's own resource, whose device the journal names.
    ws.run_guarded(argv, [pair.device], timeout_s=300)


def set_added_rtt(pair: Pair, added_rtt_ms: float) -> None:
    """Half the added round trip on each side's outgoing packets (netem delays egress), with
    the pair's jitter and loss; none of them at +0 ms (the link as it is)."""
    for ws in pair.both:
        if added_rtt_ms == 0:
            ws.remove("netem", pair.interface(ws))
        else:
            pair.set_netem(ws, added_rtt_ms / 2, pair.jitter_ms or None, pair.loss_pct or None)


def record_netem(pair: Pair, rec: RunRecorder, config: str) -> None:
    """What each side's link really has, as tc prints it back (kept with the run)."""
    for ws in pair.both:
        # Through sudo: tc lives in /sbin, which a user's PATH on Debian does not hold.
        text = ws.host.sudo(netem.show_command(pair.interface(ws)), timeout_s=60).stdout
        rec.add_raw(f"netem/{config}-{ws.host.name}.txt", text)


def record_rtt(pair: Pair, rec: RunRecorder, config: str, added_rtt_ms: float) -> float:
    """Ping the peer over the link; record the round trips; return the median, ms."""
    command = netem.ping_command(pair.address(pair.peer), count=PING_COUNT, interval_s=0.2)
    text = pair.primary.host.sudo(command, timeout_s=120).stdout
    rec.add_raw(f"ping/{config}.txt", text)
    summary = netem.rtt_summary(netem.parse_ping(text, source=f"ping {config}"))
    for metric, value in (("rtt_p50_ms", summary.p50_ms), ("rtt_mean_ms", summary.mean_ms),
                          ("rtt_p99_ms", summary.p99_ms), ("rtt_min_ms", summary.min_ms)):
        rec.add_result(config=config, workload="ping", metric=metric, value=value, unit="ms",
                       added_rtt_ms=added_rtt_ms)
    return summary.p50_ms




# The link's bandwidth: one TCP stream, as DRBD's data connection is, from the primary to the
# peer. The receiver counts from its first byte to the end; both give up on their own after
# a minute of silence, so a killed run leaves no listener behind.
RECEIVER = """
import socket, sys, time
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.settimeout(60)
server.bind((sys.argv[1], int(sys.argv[2])))
server.listen(1)
connection, _ = server.accept()
connection.settimeout(60)
received, first = 0, None
while True:
    data = connection.recv(1 << 20)
    if not data:
        break
    if first is None:
        first = time.monotonic()
    received += len(data)
print(received, time.monotonic() - first)
"""
SENDER = """
import socket, sys, time
deadline = time.monotonic() + 60
while True:
    try:
        stream = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=60)
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.2)
block = bytes(1 << 20)
for _ in range(int(sys.argv[3])):
    stream.sendall(block)
stream.close()
"""


def record_link_bandwidth(pair: Pair, rec: RunRecorder, config: str,
                          added_rtt_ms: float) -> float:
    """Send pair.link_probe_mib MiB from the primary to the peer over one TCP connection; record
    and return the MiB/s the peer received: what one stream, as DRBD's is, carries over the
    link at this round trip (a large write must cross it before the peer can acknowledge)."""
    address = pair.address(pair.peer)
    with ThreadPoolExecutor(max_workers=1) as pool:
        receiving = pool.submit(pair.peer.host.run, ["python3", "-c", RECEIVER, address,
                                                     str(LINK_PROBE_PORT)], timeout_s=180)
        pair.primary.host.run(["python3", "-c", SENDER, address, str(LINK_PROBE_PORT),
                               str(pair.link_probe_mib)], timeout_s=180)
        text = receiving.result().stdout
    rec.add_raw(f"link/{config}.txt", text)
    try:
        received_bytes, seconds = (float(word) for word in text.split()[-2:])
    except ValueError:
        raise LabError(f"link bandwidth: the receiver printed {text.strip()!r}") from None
    if received_bytes != pair.link_probe_mib * 2**20 or seconds <= 0:
        raise LabError(f"link bandwidth: {received_bytes:.0f} bytes in {seconds:.2f} s, "
                       f"expected {pair.link_probe_mib} MiB")
    mib_s = received_bytes / 2**20 / seconds
    for metric, value, unit in (("link_mib_s", mib_s, "MiB/s"),
                                ("link_bytes", received_bytes, "bytes"),
                                ("link_s", seconds, "s")):
        rec.add_result(config=config, workload="link-bandwidth", metric=metric, value=value,
                       unit=unit, added_rtt_ms=added_rtt_ms)
    return mib_s


def reconnect_and_resync(pair: Pair, rec: RunRecorder, config: str) -> None:
    """Connect the disconnected primary again; record what the resync moved and how long it
    took (the bitmap's out-of-sync count read just before connecting)."""
    out_of_sync_kib = drbd_state(pair.primary).out_of_sync_kib
    started = time.monotonic()
    drbdadm(pair.primary, pair, drbd.connect_command(pair.resource.name))
    wait_for(pair.primary, in_sync, "UpToDate on both sides", timeout_s=900, refused=True)
    seconds = time.monotonic() - started
    rec.add_result(config=config, workload="resync", metric="resync_bytes",
                   value=out_of_sync_kib * 1024, unit="bytes")
    rec.add_result(config=config, workload="resync", metric="resync_s", value=seconds, unit="s")
