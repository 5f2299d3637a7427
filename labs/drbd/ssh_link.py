"""An SSH pair's link: the interface each host reaches the other by, checked before the
DRBD lab puts netem on it (labs/drbd/run.py checks the rest of an SSH pair)."""

from __future__ import annotations

from labs.errors import UsageError
from labs.infra.hosts import Host
from labs.tools import iproute, netem

DEFAULT_ROOT_QDISCS = {"noqueue", "fq_codel", "pfifo_fast", "mq", "fq", "pfifo"}  # the kernel's


def link_interface(side: Host, own: str, other: str) -> str:
    """The interface `side` reaches `other` by; refused unless `own` is one of its own
    addresses, `other` is not, and the interface has the kernel's default queueing."""
    routes = [iproute.parse_route_get(side.run(iproute.route_get_command(address),
                                               timeout_s=60).stdout,
                                      source=f"{side.name}: ip route get")
              for address in (own, other)]
    if routes[0].dev != "lo":
        raise UsageError(f"host {side.name}: its link_address {own} is not one of its own "
                         "addresses (DRBD listens there): set link_address in the inventory")
    if routes[1].dev == "lo":
        raise UsageError(f"host {side.name} holds {other} itself: --host and --peer must "
                         "be two machines (set each one's link_address in the inventory)")
    # netem replaces the interface's root queueing discipline, and `clean` gives it the
    # kernel's default back: one the reader set up would be lost.
    # Through sudo, though reading needs no root: a user's PATH on Debian has no /sbin.
    qdiscs = netem.parse_qdisc_show(side.sudo(netem.show_command(routes[1].dev),
                                              timeout_s=60).stdout,
                                    source=f"{side.name}: tc qdisc show")
    root = next((q.kind for q in qdiscs if q.root), "")
    if root not in DEFAULT_ROOT_QDISCS:
        raise UsageError(f"host {side.name}: {routes[1].dev} has a {root} queueing "
                         "discipline, which the lab's netem would replace (if a killed run "
                         f"left it: `python -m labs clean --host {side.name}`)")
    return routes[1].dev
