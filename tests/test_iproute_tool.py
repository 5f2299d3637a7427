"""labs/tools/iproute.py: `ip route get` built and read (the DRBD lab finds its link's
interface with it). The outputs are `ip -o -4 route get` as iproute2 6.1 prints them."""

from __future__ import annotations

import pytest

from labs.errors import UsageError
from labs.tools import iproute

OVER_THE_LINK = "10.77.0.2 dev eth1 src 10.77.0.1 uid 0 \\    cache "
THE_HOST_ITSELF = "local 10.77.0.1 dev lo table local src 10.77.0.1 uid 0 \\    cache <local> "
THROUGH_A_GATEWAY = "10.0.2.2 via 10.0.2.2 dev eth0 src 10.0.2.15 uid 0 \\    cache "


def test_the_command_takes_one_ipv4_address():
    assert iproute.route_get_command("10.77.0.2") == ["ip", "-o", "-4", "route", "get",
                                                      "10.77.0.2"]
    for bad in ("vm2", "10.77.0", "10.77.0.2; reboot", ""):
        with pytest.raises(UsageError, match="not an IPv4 address"):
            iproute.route_get_command(bad)


@pytest.mark.parametrize(("text", "dev", "src"), [
    (OVER_THE_LINK, "eth1", "10.77.0.1"),
    (THE_HOST_ITSELF, "lo", "10.77.0.1"),
    (THROUGH_A_GATEWAY, "eth0", "10.0.2.15"),
    ("192.0.2.1 dev wg0 uid 0", "wg0", None),
])
def test_the_interface_and_source_are_read(text, dev, src):
    assert iproute.parse_route_get(text) == iproute.Route(dev, src)


@pytest.mark.parametrize("text", ["", "RTNETLINK answers: Network is unreachable", "dev"])
def test_output_without_an_interface_is_one_clear_error(text):
    with pytest.raises(iproute.RouteError, match="no 'dev'"):
        iproute.parse_route_get(text, source="ip route get on vm1")
