"""Network namespaces on a lab host: one per copy of a replicated database, so that each copy
has its own network interface and its own netem delay (shell commands, pure).

A namespace is joined to the host's own namespace by a veth pair, a point-to-point link of
its own /30 subnet: the host side is 10.231.N.1, the namespace side 10.231.N.2. A server
started with `ip netns exec NAME` sends its packets through that link only; a delay put on
the namespace's side of the link delays every packet the copy sends.

    create_command(name, 3)     # namespace NAME, host side 10.231.3.1, inside 10.231.3.2
    run_inside(name, "ping ...")
    delay_command(name, 20)     # netem inside the namespace: 20 ms on what the copy sends

Teardown ("netns"): every process inside is killed, then the namespace is deleted; its veth
pair and its netem go with it.
"""

from __future__ import annotations

import re
import shlex

from labs.errors import UsageError
from labs.infra.hosts import Host
from labs.infra.journal import JournalEntry, JournalError, register_teardown
from labs.tools import netem

PREFIX = "10.231"  # a private range no lab VM's own network uses
NAME = re.compile(r"^[a-z][a-z0-9]{1,10}$")  # leaves room for the veth names' suffixes


def _check(name: str, index: int) -> None:
    if not NAME.match(name):
        raise UsageError(f"network namespace {name!r}: 2-11 lowercase letters and digits")
    if not 1 <= index <= 250:
        raise UsageError(f"network namespace index {index}: 1 to 250")


def host_address(index: int) -> str:
    return f"{PREFIX}.{index}.1"


def inside_address(index: int) -> str:
    return f"{PREFIX}.{index}.2"


def outside_link(name: str) -> str:
    return f"{name}h"


def inside_link(name: str) -> str:
    return f"{name}n"


def create_command(name: str, index: int) -> str:
    """Make namespace `name` and its link (fails, without half-made parts surviving a
    teardown, if anything of the name exists)."""
    _check(name, index)
    ns, out, inside = shlex.quote(name), outside_link(name), inside_link(name)
    return " && ".join([
        f"ip netns add {ns}",
        f"ip link add {out} type veth peer name {inside}",
        f"ip link set {inside} netns {ns}",
        f"ip addr add {host_address(index)}/30 dev {out}",
        f"ip link set {out} up",
        f"ip netns exec {ns} ip addr add {inside_address(index)}/30 dev {inside}",
        f"ip netns exec {ns} ip link set {inside} up",
        f"ip netns exec {ns} ip link set lo up",
    ])


def run_inside(name: str, command: str) -> str:
    return f"ip netns exec {shlex.quote(name)} {command}"


def delay_command(name: str, added_rtt_ms: float) -> str:
    """netem on the namespace's side of its link: every packet the copy sends waits
    `added_rtt_ms` (none at 0), so the round trip to it grows by that much."""
    if added_rtt_ms == 0:
        delete = shlex.join(netem.delete_command(inside_link(name)))
        return run_inside(name, f"{delete} 2>/dev/null || true")
    return run_inside(name, shlex.join(netem.netem_command(inside_link(name), added_rtt_ms)))


def kill_all_command(names: list[str], wait_s: float = 30) -> str:
    """SIGKILL every process inside these namespaces at once, then wait until none is left
    (exit 1 if some outlived `wait_s`): a lost machine, or a namespace's teardown."""
    quoted = " ".join(shlex.quote(name) for name in names)
    tries = max(1, round(wait_s / 0.2))
    return (f"for ns in {quoted}; do ip netns pids $ns | xargs -r kill -KILL; done; "
            f"for i in $(seq {tries}); do left=0; for ns in {quoted}; do "
            "[ -n \"$(ip netns pids $ns)\" ] && left=1; done; [ $left = 0 ] && break; "
            "sleep 0.2; done; [ $left = 0 ]")


def exists_command(name: str) -> str:
    return f"ip netns list | cut -d' ' -f1 | grep -qx -- {shlex.quote(name)}"


@register_teardown("netns")
def _teardown_netns(host: Host, entry: JournalEntry) -> None:
    ns = shlex.quote(entry.id)
    # Safe: kills only the processes inside this lab's own namespace, then deletes it (its
    # veth pair and netem go with it); the host side of the link goes too if it outlived it.
    script = (f"if {exists_command(entry.id)}; then {kill_all_command([entry.id])}; "
              f"ip netns delete {ns}; fi; "
              f"ip link delete {shlex.quote(outside_link(entry.id))} 2>/dev/null; "
              f"! {exists_command(entry.id)}")
    if not host.sudo(script, timeout_s=120, check=False).ok:
        raise JournalError(f"network namespace {entry.id} would not go")
