"""Synchronous mirroring (DRBD): what each protocol's acknowledgement costs. Pure and fast.

A DRBD write goes to the local disk and, at the same time, over the network to the peer.
When the writer hears "done" depends on the protocol (DRBD user's guide, "Replication
modes"):

- **A**: the write is on the local disk and in the local TCP send buffer. The network is
  not waited for at all, while the send buffer has room.
- **B**: on the local disk, and the peer has *received* it: one network round trip (the
  data out, the peer's acknowledgement back), plus the time to put the bytes on the wire.
- **C**: on the local disk and on the peer's disk: a round trip plus the peer's disk write.

The two paths run in parallel, so the slower one sets the latency:

    A ≈ local write
    B ≈ max(local write, round trip + transfer)
    C ≈ max(local write, round trip + transfer + peer write)

(plus, on a slow or emulated CPU, the time to hand the write to the network at all: see
`send_ms`).

A database commit waits for one such write (its log flush). A client that spends `cpu_ms`
on a transaction's work and then waits for the commit runs 1000 / (cpu_ms + commit_ms)
transactions a second; the work part is measured on the local disk, where the commit costs
only the local write. What the model leaves out: DRBD's own overhead (the guide puts it
under 1 %), the activity log's metadata writes on a cold start, and group commit (clients
that commit at the same moment share one log flush, which hides part of the round trip).
"""

from __future__ import annotations

from labs.errors import UsageError

PROTOCOLS = ("A", "B", "C")
PROTOCOL_PROMISES = {
    "A": "on the local disk and in the local send buffer",
    "B": "on the local disk and received by the peer",
    "C": "on the local disk and on the peer's disk",
}


def _non_negative(**values: float) -> None:
    for name, value in values.items():
        if value < 0:
            raise UsageError(f"{name} {value:g}: must not be negative")


def transfer_ms(block_kib: float, link_mib_s: float) -> float:
    """Time to put one write on the wire, ms (0 for an unlimited link)."""
    _non_negative(block_kib=block_kib, link_mib_s=link_mib_s)
    if link_mib_s == 0:
        return 0.0
    return block_kib / 1024 / link_mib_s * 1000


def write_latency_ms(protocol: str, *, local_write_ms: float, peer_write_ms: float,
                     rtt_ms: float, transfer_ms: float = 0.0, send_ms: float = 0.0,
                     peer_flush_ms: float = 0.0) -> float:
    """The model's latency of one synchronous write under `protocol`, ms.

    `send_ms` is the time to hand a write to the network at all (DRBD's sender and the
    network stack on a busy or emulated CPU): 0 on a fast machine; the lab measures it as
    protocol A's latency, which waits for nothing else.

    `peer_flush_ms` is a flush of the peer's disk that the write waits for before the peer
    takes it. DRBD keeps the peer's writes in the primary's order with epochs: writes in
    flight together form one, and with its default write ordering (`disk-flushes`) the peer
    flushes its disk at the end of each epoch before its receiver takes the next write. One
    writer at queue depth 1 makes each write an epoch of its own, so under B and C each
    write waits for the flush that closed the write before it. The primary announces the
    epoch's end as soon as that write completes, so the peer's flush runs while the writer
    hands over its next write: the slower of the two counts. 0 where the flush is over
    before the write arrives (see flush_then_write_peer_flush_ms)."""
    _non_negative(local_write_ms=local_write_ms, peer_write_ms=peer_write_ms, rtt_ms=rtt_ms,
                  transfer_ms=transfer_ms, send_ms=send_ms, peer_flush_ms=peer_flush_ms)
    handed_over = max(send_ms, peer_flush_ms)
    if protocol == "A":
        return max(local_write_ms, send_ms)
    if protocol == "B":
        return max(local_write_ms, handed_over + rtt_ms + transfer_ms)
    if protocol == "C":
        return max(local_write_ms, handed_over + rtt_ms + transfer_ms + peer_write_ms)
    raise UsageError(f"protocol {protocol!r}: use A, B or C")


def flush_latency_ms(*, local_flush_ms: float) -> float:
    """An fdatasync on the DRBD device (8.4), under any protocol, ms: DRBD turns an empty
    flush into an epoch boundary in its stream to the peer and completes it once the local
    disk's flush is done. The peer flushes at that boundary on its own time, and the next
    write waits for that (write_latency_ms's peer_flush_ms)."""
    _non_negative(local_flush_ms=local_flush_ms)
    return local_flush_ms


def flush_then_write_peer_flush_ms(*, peer_flush_ms: float, local_flush_ms: float) -> float:
    """How long a write that follows an fdatasync still waits for the peer's flush, ms: the
    peer started flushing when the write before completed, while the primary flushed its own
    disk, so only what the peer's flush takes beyond the local one is left."""
    _non_negative(peer_flush_ms=peer_flush_ms, local_flush_ms=local_flush_ms)
    return max(0.0, peer_flush_ms - local_flush_ms)


def depth1_write_ms(protocol: str, *, block_kib: float, local_write_ms: float,
                    peer_write_ms: float, rtt_ms: float, link_mib_s: float,
                    send_ms: float = 0.0, peer_flush_ms: float = 0.0) -> float:
    """One write's time in a stream of writes at queue depth 1 (a job like `fio --iodepth=1
    --bs=1m`), ms. Like write_latency_ms, with the write's transfer over the link. Under A
    the send buffer, once full, drains only as fast as the link carries the writes and the
    peer takes them: A then waits for the transfer too, or for the peer's flush and write
    (each write an epoch of its own, as in write_latency_ms), though not for the round trip.
    """
    transfer = transfer_ms(block_kib, link_mib_s)
    if protocol == "A":
        return max(local_write_ms, send_ms + transfer, peer_flush_ms + peer_write_ms)
    return write_latency_ms(protocol, local_write_ms=local_write_ms,
                            peer_write_ms=peer_write_ms, rtt_ms=rtt_ms, transfer_ms=transfer,
                            send_ms=send_ms, peer_flush_ms=peer_flush_ms)


def depth1_mib_s(block_kib: float, write_ms: float) -> float:
    """Throughput of writes of `block_kib` issued one at a time, each taking `write_ms`."""
    _non_negative(block_kib=block_kib)
    if write_ms <= 0:
        raise UsageError(f"write time {write_ms:g} ms: must be positive")
    return block_kib / 1024 / (write_ms / 1000)


def cpu_ms_per_transaction(*, local_tps: float, clients: int, local_commit_ms: float) -> float:
    """One client's work per transaction, ms, from a run on the local disk: each client's
    time per transaction is clients / TPS, of which the commit took `local_commit_ms`."""
    if local_tps <= 0 or clients < 1:
        raise UsageError("local TPS must be positive and clients at least 1")
    _non_negative(local_commit_ms=local_commit_ms)
    return max(0.0, clients * 1000 / local_tps - local_commit_ms)


def pgbench_tps(*, clients: int, cpu_ms: float, commit_ms: float) -> float:
    """Transactions a second of `clients` clients that each work `cpu_ms`, then commit."""
    _non_negative(cpu_ms=cpu_ms, commit_ms=commit_ms)
    if clients < 1 or cpu_ms + commit_ms <= 0:
        raise UsageError("clients must be at least 1 and a transaction must take some time")
    return clients * 1000 / (cpu_ms + commit_ms)


def tps_ratio(*, cpu_ms: float, local_commit_ms: float, mirrored_commit_ms: float) -> float:
    """Mirrored TPS as a fraction of the local disk's, for the same clients."""
    _non_negative(cpu_ms=cpu_ms, local_commit_ms=local_commit_ms,
                  mirrored_commit_ms=mirrored_commit_ms)
    return (cpu_ms + local_commit_ms) / (cpu_ms + mirrored_commit_ms)


def added_commit_ms_for_ratio(ratio: float, *, local_ms_per_transaction: float) -> float:
    """How much longer each transaction must take to run at `ratio` of the local TPS: the
    inverse of tps_ratio, used to read a published ratio as milliseconds."""
    if not 0 < ratio <= 1:
        raise UsageError(f"ratio {ratio:g}: use a fraction in (0, 1]")
    _non_negative(local_ms_per_transaction=local_ms_per_transaction)
    return local_ms_per_transaction * (1 / ratio - 1)


def writes_in_flight(writes_per_s: float, *, window_ms: float) -> float:
    """Writes acknowledged but not yet at the peer, on average (Little's law): a primary that
    acknowledges `writes_per_s` before the peer holds them, each taking `window_ms` to get
    there, has rate x time of them on the way. What protocol A can lose when it dies."""
    _non_negative(writes_per_s=writes_per_s, window_ms=window_ms)
    return writes_per_s * window_ms / 1000


def time_scale(*, lab_ms_per_transaction: float, article_ms_per_transaction: float) -> float:
    """k: how many times longer a transaction takes in the lab than in the article. With
    every wait k times longer too, a commit's wait is the same fraction of a transaction in
    both, and so is the TPS a mirror keeps; the absolute TPS is k times lower."""
    if lab_ms_per_transaction <= 0 or article_ms_per_transaction <= 0:
        raise UsageError("a transaction must take some time, in the lab and in the article")
    return lab_ms_per_transaction / article_ms_per_transaction


def zone_round_trip_ms(*, target_added_ms: float, measured_added_ms: float,
                       measured_rtt_ms: float) -> float:
    """The round trip at which a mirror adds `target_added_ms` to each transaction, when it
    added `measured_added_ms` at `measured_rtt_ms` and each commit waits one round trip (the
    added time grows one for one with the round trip). Never below the measured one."""
    _non_negative(target_added_ms=target_added_ms, measured_rtt_ms=measured_rtt_ms)
    return measured_rtt_ms + max(0.0, target_added_ms - measured_added_ms)


def serial_commit_ratio(*, local_tps: float, anchor_tps: float, anchor_rtt_ms: float,
                        rtt_ms: float) -> float:
    """TPS on a mirror as a fraction of the local disk's, for commits that go one at a time
    (pgbench at scale 1: every client updates one row). Each transaction takes 1000 / TPS ms
    in all; the mirror added 1000 / anchor_tps - 1000 / local_tps at the round trip
    `anchor_rtt_ms`, and each commit waits one round trip, so every ms of round trip beyond
    that adds one ms to every transaction."""
    if min(local_tps, anchor_tps) <= 0:
        raise UsageError("TPS must be positive")
    _non_negative(anchor_rtt_ms=anchor_rtt_ms, rtt_ms=rtt_ms)
    local_ms = 1000 / local_tps
    added_ms = 1000 / anchor_tps - local_ms + max(0.0, rtt_ms - anchor_rtt_ms)
    return tps_ratio(cpu_ms=local_ms, local_commit_ms=0, mirrored_commit_ms=max(0.0, added_ms))
