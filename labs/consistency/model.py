"""Tunable consistency (Cassandra's consistency levels) in the quorum model's terms.

A keyspace with replication factor N keeps N copies of each row. A consistency level says
how many of them an operation waits for: ONE waits for 1, QUORUM for N // 2 + 1, ALL for N.
So a write at level W and a read at level R are the chapter's W and R, and the rule is the
same: R + W > N makes every read meet the latest acknowledged write.

Two things the rule does not say, which the consistency lab measures:

- Availability. An operation is refused (`Unavailable`) when fewer replicas are up than its
  level needs; it does not matter which ones are down.
- How often R + W <= N goes wrong. It only *may* go wrong. A write is sent to every replica
  that is up, and waits for W of them; the replicas that were down miss it. A read sees the
  old value only if every replica it consults missed the write. If the coordinator picked
  its R replicas uniformly at random, that would happen with probability
  C(missed, R) / C(N, R). Real coordinators do not pick uniformly (the lab shows how).

Pure functions, no I/O.
"""

from __future__ import annotations

from math import comb

from labs.errors import UsageError

LEVELS = ("ONE", "QUORUM", "ALL")


def replicas_needed(level: str, replication_factor: int) -> int:
    """How many replicas an operation at `level` waits for."""
    if replication_factor < 1:
        raise UsageError(f"replication factor must be at least 1, got {replication_factor}")
    needed = {"ONE": 1, "QUORUM": replication_factor // 2 + 1, "ALL": replication_factor}
    if level not in needed:
        raise UsageError(f"consistency level {level!r}: use one of {', '.join(LEVELS)}")
    return needed[level]


def succeeds(level: str, replicas_up: int, replication_factor: int) -> bool:
    """Whether an operation at `level` can be served with `replicas_up` replicas up."""
    return replicas_up >= replicas_needed(level, replication_factor)


def overlap_guaranteed(write_level: str, read_level: str, replication_factor: int) -> bool:
    """R + W > N: every read at `read_level` meets every write acknowledged at `write_level`."""
    return (replicas_needed(read_level, replication_factor)
            + replicas_needed(write_level, replication_factor)) > replication_factor


def fresh_guaranteed(read_level: str, replicas_missed: int, replication_factor: int) -> bool:
    """Whether every read at `read_level` meets a replica that holds the write, knowing how
    many replicas missed it (the replicas that were down while it was written)."""
    return replicas_needed(read_level, replication_factor) > replicas_missed


def stale_probability_uniform(read_level: str, replicas_missed: int,
                              replication_factor: int) -> float:
    """P(a read sees only replicas that missed the write) if its replicas were drawn
    uniformly at random: C(missed, R) / C(N, R)."""
    if not 0 <= replicas_missed <= replication_factor:
        raise UsageError(f"replicas missed must be between 0 and {replication_factor}, "
                         f"got {replicas_missed}")
    read = replicas_needed(read_level, replication_factor)
    return comb(replicas_missed, read) / comb(replication_factor, read)
