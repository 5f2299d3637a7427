"""A container's memory as its cgroup counts it (the docker engine's stats, v1 or v2 cgroups).

    memory_accounting(container.stats(stream=False))
      -> {"usage_bytes", "limit_bytes", "page_cache_bytes", "anon_bytes", "mapped_file_bytes"}

cgroup v1 (`memory.stat`): `cache` (page cache, mapped files included), `rss` (anonymous
memory), `mapped_file`; cgroup v2: `file`, `anon`, `file_mapped`. The page cache a
container's reads fill is charged to the container, so it counts against its limit.
"""

from __future__ import annotations

from typing import Any

from labs.errors import LabError

V1 = {"page_cache_bytes": "cache", "anon_bytes": "rss", "mapped_file_bytes": "mapped_file"}
V2 = {"page_cache_bytes": "file", "anon_bytes": "anon", "mapped_file_bytes": "file_mapped"}


class MemoryStatsError(LabError):
    """Docker stats without the memory counters this module reads."""


def memory_accounting(stats: dict[str, Any], source: str = "docker stats") -> dict[str, int]:
    memory = stats.get("memory_stats") or {}
    counters = memory.get("stats") or {}
    names = V1 if "cache" in counters else V2
    try:
        found = {key: int(counters[name]) for key, name in names.items()}
        found["usage_bytes"] = int(memory["usage"])
        found["limit_bytes"] = int(memory["limit"])
    except (KeyError, TypeError, ValueError):
        raise MemoryStatsError(f"{source}: no memory counters (is the container running?)"
                               ) from None
    return found
