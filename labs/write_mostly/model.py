"""What the write-mostly chapter predicts, as functions (pure: no host, no run)."""

from __future__ import annotations

from labs.errors import UsageError


def transfer_hours(size_bytes: float, rate_mib_s: float) -> float:
    """Hours to move size_bytes at a steady rate_mib_s (resync or streaming from peers)."""
    if rate_mib_s <= 0:
        raise UsageError(f"transfer rate must be positive, not {rate_mib_s}")
    return size_bytes / (rate_mib_s * 1024 * 1024) / 3600


def implied_rate_mib_s(size_bytes: float, hours: float) -> float:
    """The steady rate that moves size_bytes in `hours` (e.g. a reported recovery time)."""
    return size_bytes / (hours * 3600) / (1024 * 1024)


# Figures reported by Hyperconnect's engineering blog (2025) on the super disk: a node of
# about 1.8 TB took 12 to 24 hours to rebuild by streaming from its peers; the RAID resync
# of a 3.66 TB array took about an hour, and md showed speed=200256K/sec at its start.
ARTICLE = {
    "stream_node_bytes": 1.8e12,
    "stream_hours": (12.0, 24.0),
    "resync_array_kib": 3659399168,
    "resync_reported_hours": 1.0,
    "resync_md_speed_kib_s": 200256,
}
