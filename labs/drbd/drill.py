"""The failover drill: commit numbered rows, fail the primary, promote the peer, count.

A client loop on the primary commits rows 1, 2, 3, ... into PostgreSQL on the DRBD device
and prints `ack N` after each commit returned; the controller writes down every
acknowledgement it sees (labs/infra/acks.py). Then the primary fails:

- a lab VM loses its power: its QEMU is killed, no shutdown, no last flush;
- an SSH host (a reader's machine, whose power the lab does not cut) has the lab's
  PostgreSQL frozen (SIGSTOP: no commit is acknowledged after this) and, a moment later,
  every packet it sends to the peer dropped (netem, loss 100 %, on those packets only):
  what was still on its way to the peer never arrives, as with a power cut.

The peer notices the link is gone, is promoted, mounts the file system and starts
PostgreSQL, which recovers from its log. The count: acknowledged rows that the survivor
does not hold. Then the old primary comes back (boots again; or has its frozen server
killed, its disk demoted and what it alone wrote discarded), rejoins as the secondary,
resyncs from the new primary, and the lab checks that both disks hold the same bytes.
Last, the roles switch back, so the next drill starts where this one did.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from labs.drbd.pair import (
    POSTGRES,
    Pair,
    drbd_state,
    drbdadm,
    in_sync,
    record_rtt,
    set_added_rtt,
    wait_for,
)
from labs.drbd.params import Parameters
from labs.errors import LabError
from labs.infra.acks import AckStream
from labs.infra.processes import find_server
from labs.infra.vm import machine, power
from labs.infra.workspace import LabWorkspace
from labs.progress import Progress
from labs.records import RunRecorder
from labs.tools import drbd

DRILL_STEPS = ("drill: commits, then the failure", "drill: the peer takes over",
               "drill: the primary rejoins and resyncs", "drill: roles back")
FIRST_ACK_TIMEOUT_S = 300
PEER_NOTICES_TIMEOUT_S = 60  # DRBD's ping-int (10 s) plus its timeouts, with room
ACKS_IN_FLIGHT_S = 2.0  # from the client's output to the controller, with room


def sql(ws: LabWorkspace, data: str, statement: str) -> str:
    return ws.host.sudo(POSTGRES.sql_command(data, statement), timeout_s=300).stdout.strip()


# One process reads the device with O_DIRECT (an anonymous mmap is page-aligned, as
# O_DIRECT needs) and prints the MD5 of each MiB: a shell pipeline with one md5sum per MiB
# took minutes under TCG.
DIGEST_SCRIPT = """
import hashlib, mmap, os, sys
device, size = sys.argv[1], int(sys.argv[2])
fd = os.open(device, os.O_RDONLY | os.O_DIRECT)
buffer = mmap.mmap(-1, 1 << 20)
done = 0
while done < size:
    got = os.readv(fd, [buffer])
    if got <= 0:
        sys.exit("short read at byte %d" % done)
    piece = buffer[:min(got, size - done)]
    print(hashlib.md5(piece).hexdigest())
    done += len(piece)
"""


def disk_digests(ws: LabWorkspace, device: str, size_bytes: int) -> list[str]:
    """MD5 of each MiB of the first size_bytes of a device (the last piece may be shorter),
    read with O_DIRECT: no cached copy of a block can stand in for what is on the disk."""
    command = ["python3", "-c", DIGEST_SCRIPT, device, str(size_bytes)]
    out = ws.host.sudo(command, timeout_s=1800).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def failover(params: Parameters, pair: Pair, rec: RunRecorder, progress: Progress, mount_point: str,
             protocol: str, added_rtt_ms: float) -> None:
    primary, peer = pair.primary, pair.peer
    config = f"drill-{protocol}"
    data = f"{mount_point}/pg"
    failure = "power is cut" if pair.vms else "server is frozen and its link cut"
    progress.step("drill: commits, then the failure", f"under {protocol}, round trip "
                  f"+{added_rtt_ms:g} ms: then {primary.host.name}'s {failure}")
    rtt, stream = _start_commits(params, pair, rec, data, config, protocol, added_rtt_ms)
    try:
        cut_at = fail(pair, data, added_rtt_ms)
        if not pair.vms:
            # The frozen server acknowledges nothing more; acknowledgements already printed
            # reach the controller within moments (the client itself ends only once its
            # server is killed, below).
            time.sleep(ACKS_IN_FLIGHT_S)
        elif stream.thread:
            stream.thread.join(timeout=60)
        acked, rate = stream.acked, stream.rate()
        rec.add_raw(f"drill/{config}-acks.txt",
                    "".join(f"{row} {at:.3f}\n" for row, at in stream.acks))
        progress.step("drill: the peer takes over", f"under {protocol}: {peer.host.name}")
        found, newest, notice_s = take_over(pair, data, config, rec, acked, cut_at)
    finally:
        if pair.vms:
            # Whatever happened, the VM gets its power back: its teardown runs inside it.
            if not machine.is_running(primary.host.name):
                power.power_on(primary.host.name, log=progress.detail)
            primary.reconnect()
        else:
            # The frozen server dies as in a crash (a stopped process cannot stop itself).
            primary.host.sudo(signal_server_command(data, "KILL"), timeout_s=60, check=False)
    progress.step("drill: the primary rejoins and resyncs", f"under {protocol}: "
                                                                f"{primary.host.name}")
    if pair.vms:
        resync_s, resync_kib = rejoin(pair)
    else:
        resync_s, resync_kib = rejoin_after_link_cut(pair, mount_point, added_rtt_ms)
    differing_mib = _differing_mib(pair, rec, config)
    progress.step("drill: roles back", f"under {protocol}: {primary.host.name} primary")
    switch_back(pair, mount_point, data)
    dims = {"protocol": protocol, "added_rtt_ms": added_rtt_ms, "rtt_ms": rtt}
    _record_drill(rec, progress, config, dims, acked=acked, found=found, newest=newest,
                  rate=rate, notice_s=notice_s, resync_s=resync_s, resync_kib=resync_kib,
                  differing_mib=differing_mib)


def _start_commits(params: Parameters, pair: Pair, rec: RunRecorder, data: str, config: str,
                   protocol: str, added_rtt_ms: float) -> tuple[float, AckStream]:
    """Set the round trip and the protocol, then start the client's numbered commits and
    let them run for the drill's time; (the round trip measured, the client's stream)."""
    primary, name = pair.primary, pair.resource.name
    set_added_rtt(pair, added_rtt_ms)
    rtt = record_rtt(pair, rec, f"{config}-added-{added_rtt_ms:g}", added_rtt_ms)
    drbdadm(primary, pair, drbd.net_options_command(name, protocol=protocol))
    sql(primary, data, "DROP TABLE IF EXISTS acks; CREATE TABLE acks (id int PRIMARY KEY)")
    primary.host.sudo("sync", timeout_s=300)
    stream = AckStream(POSTGRES.insert_loop(data))
    started = time.monotonic()
    stream.start(primary.host, started)
    why = stream.wait_for_first(FIRST_ACK_TIMEOUT_S)
    if why:
        raise LabError(f"{config}: the client committed nothing ({why})")
    time.sleep(params.drill_s)
    return rtt, stream


def _differing_mib(pair: Pair, rec: RunRecorder, config: str) -> int:
    """The MiB in which the two disks differ, from digests of both read whole."""
    primary, peer, device = pair.primary, pair.peer, pair.device
    size = int(peer.host.sudo(["blockdev", "--getsize64", device], timeout_s=60).stdout)
    # Both disks at once, each VM reading its own: the digests take as long as one.
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {ws.host.name: pool.submit(disk_digests, ws, dev, size)
                   for ws, dev in ((peer, device), (primary, pair.disk(primary)))}
        digests = {name: future.result() for name, future in futures.items()}
    rec.add_raw(f"drill/{config}-digests.txt",
                "".join(f"{host} {' '.join(d)}\n" for host, d in digests.items()))
    ours, theirs = digests[peer.host.name], digests[primary.host.name]
    if len(ours) != len(theirs) or not ours:
        raise LabError(f"{config}: the disks' digests have {len(ours)} and {len(theirs)} parts")
    return sum(a != b for a, b in zip(ours, theirs, strict=True))


def _record_drill(rec: RunRecorder, progress: Progress, config: str, dims: dict, *, acked: int,
                  found: int, newest: int, rate: float, notice_s: float, resync_s: float,
                  resync_kib: int, differing_mib: int) -> None:
    for metric, value, unit in (
            ("acknowledged", acked, "count"), ("found", found, "count"),
            ("lost", acked - found, "count"), ("newest_found", newest, "count"),
            ("commits_per_s", rate, "tps"), ("peer_noticed_s", notice_s, "s"),
            ("resync_s", resync_s, "s"), ("resync_bytes", resync_kib * 1024, "bytes"),
            ("differing_mib", differing_mib, "count"),
            ("disks_match", float(differing_mib == 0), "count")):
        rec.add_result(config=config, workload="drill", metric=metric, value=value, unit=unit,
                       **dims)
    progress.detail(f"{config}: acknowledged {acked}, found {found}, lost {acked - found}; "
                    f"resync {resync_kib} KiB in {resync_s:.1f} s; disks "
                    f"{'match' if differing_mib == 0 else f'differ in {differing_mib} MiB'}")


def signal_server_command(data: str, signal: str) -> str:
    """Send `signal` to the lab's PostgreSQL: the postmaster its pid file names (only while
    that process's command line names the data folder: a reused pid is left alone), and its
    children. The postmaster is stopped first, so that it starts no new child meanwhile, and
    its children are found while it lives (once it is dead they are init's). Fails (exit 1)
    when there is no such server. With KILL, returns once all of them are gone."""
    # $children is found after the postmaster stopped: it can start none after that.
    command = (f"{find_server(POSTGRES.pid_file(data), data, missing_exit=1)}; "
               f"kill -STOP \"$pid\"; children=$(pgrep -P \"$pid\"); "
               f"kill -{signal} \"$pid\" $children")
    if signal == "KILL":
        command += ("; for i in $(seq 100); do alive=0; for p in $pid $children; do "
                    "[ -d /proc/$p ] && alive=1; done; [ $alive = 0 ] && break; sleep 0.1; done")
    return command


def fail(pair: Pair, data: str, added_rtt_ms: float) -> float:
    """The primary fails; returns when (time.monotonic()) it did."""
    primary = pair.primary
    if pair.vms:
        # The power cut: QEMU dies at once; the guest's memory is gone, its disks stay.
        return power.power_cut(primary.host.name)
    # Safe: stops only the lab's own server (its pid file's, checked), so that it
    # acknowledges nothing more. What DRBD had already queued may still leave in the
    # moment before the cut below, which a power cut would not allow.
    primary.host.sudo(signal_server_command(data, "STOP"), timeout_s=60)
    # Then every packet for the peer is dropped (journaled netem, on those packets only).
    pair.set_netem(primary, added_rtt_ms / 2, None, 100)
    return time.monotonic()


def take_over(pair: Pair, data: str, config: str, rec: RunRecorder, acked: int,
              cut_at: float) -> tuple[int, int, float]:
    """The peer notices, is promoted, recovers the database; (acknowledged rows found,
    newest row found, seconds from the power cut until it noticed). A row committed after
    the last acknowledgement the controller saw may be there too: it is not counted."""
    peer, name = pair.peer, pair.resource.name
    try:
        wait_for(peer, lambda s: not s.connected, "losing its peer",
                 timeout_s=PEER_NOTICES_TIMEOUT_S)
        notice_s = time.monotonic() - cut_at
    except LabError:
        # What a cluster manager does once it has fenced the dead node: stop waiting for it.
        drbdadm(peer, pair, drbd.disconnect_command(name))
        notice_s = time.monotonic() - cut_at
    drbdadm(peer, pair, drbd.primary_command(name))
    mount_point = peer.mount(pair.device, "takeover")
    peer_data = f"{mount_point}/{data.rsplit('/', 1)[-1]}"
    start = POSTGRES.restart_command(peer_data, "synchronous_commit", "on")
    peer.start_server(peer_data, start, stop=POSTGRES.stop_command(peer_data),
                      pid_file=POSTGRES.pid_file(peer_data))
    acked_rows = sql(peer, peer_data, f"SELECT count(*) FILTER (WHERE id <= {acked}), "
                                      "coalesce(max(id), 0) FROM acks")
    found, newest = (int(x) for x in acked_rows.split("|"))
    rec.add_raw(f"drill/{config}-peer-server.log",
                peer.host.sudo(["cat", "--", POSTGRES.log_file(peer_data)],
                               timeout_s=60).stdout)
    peer.remove("server", peer_data)
    peer.remove("mount", mount_point)
    return found, newest, notice_s


def rejoin(pair: Pair) -> tuple[float, int]:
    """Bring the resource up on the rebooted old primary; it resyncs from the new one.
    Returns the seconds until both are UpToDate and the largest resync total seen, KiB."""
    primary, name = pair.primary, pair.resource.name
    # The rebooted node starts from the resource file (protocol C): the survivor goes back
    # to the file's first.
    back_to_the_files_protocol(pair, pair.peer)
    primary.host.sudo("modprobe drbd", timeout_s=120)
    if pair.flush_delay_dm:
        primary.restore_dm(pair.flush_delay_dm)
    started = time.monotonic()
    # Safe: brings up the lab's resource again over the lab disk the guard allows.
    primary.run_guarded(drbd.up_command(name), [pair.disk(primary)], timeout_s=300)
    return wait_for_resync(pair, started, drbd_state(pair.peer).out_of_sync_kib)


def wait_for_resync(pair: Pair, started: float, largest_kib: int) -> tuple[float, int]:
    """Poll the old primary until both sides are UpToDate; (seconds since `started`, the
    largest resync total seen, KiB)."""
    primary = pair.primary
    while True:
        state = drbd_state(primary)
        if state.sync:
            largest_kib = max(largest_kib, state.sync.total_kib)
        if in_sync(state):
            return time.monotonic() - started, largest_kib
        if time.monotonic() - started > 900:
            raise LabError(f"{primary.host.name}: no resync to UpToDate within 900 s "
                           f"(cs:{state.connection} ds:{state.disk}/{state.peer_disk})")
        time.sleep(0.5)


def rejoin_after_link_cut(pair: Pair, mount_point: str, added_rtt_ms: float) -> tuple[float, int]:
    """The old primary (its server killed) steps down and throws away what only it wrote;
    then its link comes back and it resyncs from the new primary. Returns as rejoin does."""
    primary, peer, name = pair.primary, pair.peer, pair.resource.name
    # Safe: the lab's own mount of the lab's DRBD device; the journal keeps the entry, and
    # switch_back mounts it here again.
    primary.run_guarded(["umount", mount_point], [pair.device], timeout_s=300)
    drbdadm(primary, pair, drbd.secondary_command(name))
    back_to_the_files_protocol(pair, peer)
    # The old primary forgets its runtime options (disconnect: StandAlone), then connects
    # again from the resource file, as the split brain's loser.
    primary.run_guarded(drbd.disconnect_command(name), [pair.device], check=False)
    state = drbd_state(primary)
    if state.connection != "StandAlone":
        raise LabError(f"{primary.host.name}: DRBD is {state.connection} after disconnect, "
                       "not StandAlone")
    # Safe: discards only what this side wrote that the new primary never got.
    drbdadm(primary, pair, drbd.connect_command(name, discard_my_data=True))
    started = time.monotonic()
    set_added_rtt(pair, added_rtt_ms)  # the link again, as it was before the cut
    if drbd_state(peer).connection == "StandAlone":
        drbdadm(peer, pair, drbd.connect_command(name))
    return wait_for_resync(pair, started, drbd_state(peer).out_of_sync_kib)


def back_to_the_files_protocol(pair: Pair, ws: LabWorkspace) -> None:
    """The two sides refuse to connect with different protocols, so a side still waiting
    for its peer goes back to the resource file's protocol. A StandAlone side has no
    connection settings left to change: its next `connect` reads them from the file."""
    if drbd_state(ws).connection != "StandAlone":
        drbdadm(ws, pair, drbd.net_options_command(pair.resource.name,
                                                   protocol=pair.resource.protocol))


def switch_back(pair: Pair, mount_point: str, data: str) -> None:
    primary, peer, name = pair.primary, pair.peer, pair.resource.name
    drbdadm(peer, pair, drbd.secondary_command(name))
    drbdadm(primary, pair, drbd.primary_command(name))
    # The same file system, mounted again where it was (the journal's entry still holds).
    primary.run_guarded(["mount", pair.device, mount_point], [pair.device], timeout_s=300)
    primary.restart_server(data, POSTGRES.restart_command(data, "synchronous_commit", "on"))

