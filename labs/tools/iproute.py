"""`ip route get`: which interface (and source address) a host uses to reach an address.

    route_get_command("10.0.1.11")      # ["ip", "-o", "-4", "route", "get", "10.0.1.11"]
    parse_route_get(text)               # Route(dev="eth1", src="10.0.1.10")
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from labs.errors import LabError, UsageError


class RouteError(LabError):
    """`ip route get` printed something this module cannot read."""


@dataclass(frozen=True)
class Route:
    dev: str  # the interface packets to that address leave by ("lo": the host itself)
    src: str | None  # the source address the host would use


def route_get_command(address: str) -> list[str]:
    try:
        ipaddress.IPv4Address(address)
    except ValueError:
        raise UsageError(f"{address!r} is not an IPv4 address") from None
    return ["ip", "-o", "-4", "route", "get", address]


def parse_route_get(text: str, source: str = "ip route get") -> Route:
    """`10.0.1.11 dev eth1 src 10.0.1.10 uid 0 \\    cache` -> Route("eth1", "10.0.1.10")."""
    for line in text.splitlines():
        words = line.split()
        if "dev" in words and words.index("dev") + 1 < len(words):
            dev = words[words.index("dev") + 1]
            src = words[words.index("src") + 1] if "src" in words[:-1] else None
            return Route(dev, src)
    raise RouteError(f"{source}: no 'dev' in {text.strip()[:200]!r}")
