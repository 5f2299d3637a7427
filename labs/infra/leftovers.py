"""What the labs left on a host, counted from the system's own view (not from the journal).

    counts = leftovers(host)   # {"loop": 0, "mount": 0, "md": 0, ...}; all 0 after `clean`

`python -m labs clean` trusts the journal; this looks at the host itself, so a resource
the journal lost track of would still be found: loop devices over files in the host's lab
work dir, mounts below it, containers carrying this state dir's owner label, processes
carrying its command marker, and run folders left in the work dir. On a lab VM (a
throw-away machine where everything of the kind is the labs') it also counts every md
array, device-mapper device, configured DRBD resource, netem queueing discipline, network
namespace and PostgreSQL or MariaDB server process.
"""

from __future__ import annotations

import shlex

from labs.infra.hosts import Host
from labs.infra.paths import command_marker

SECTIONS = ("loop", "mount", "work_dir", "container", "network", "process", "md", "dm", "drbd",
            "netem", "netns", "server")


# Asking a stopped engine starts it (docker.socket): about 12 s in an emulated lab VM, which
# then keeps it running beside the labs. A stopped engine runs nothing, and it keeps each
# container's and network's labels as plain text in its state folder; while it is stopped
# and nothing there names this install's owner, the count is 0 without asking. A removed
# network's name can stay in the network store's free pages: then the engine is asked.
ENGINE_STATE = "/var/lib/docker"


def _owned_by_this_install(listing: str, marker: str) -> str:
    """Count the engine objects `listing` prints that carry this install's owner label."""
    # The marker is spelled in two pieces so that this script's own command line does not
    # carry it (the process count below would find the script itself).
    state = ENGINE_STATE
    nothing_stored = (
        "! systemctl is-active --quiet docker.service 2>/dev/null && "
        # Its state elsewhere (daemon.json, or dockerd's own command line): ask the engine.
        "! grep -qs data-root /etc/docker/daemon.json && "
        "! pgrep -a -x dockerd 2>/dev/null | grep -q -e --data-root -e ' -g ' && "
        f"{{ [ ! -e {state} ] || {{ grep -rqsaF --include=config.v2.json --include=local-kv.db "
        f'-- "$o" {state}/containers {state}/network; [ $? -eq 1 ]; }}; }}')
    return (f"p={marker[:8]}; o=${{p}}{marker[8:]}; command -v docker >/dev/null || "
            f"{{ echo 0; exit 0; }}; if {nothing_stored}; then echo 0; else {listing} "
            "--filter label=storage-labs.owner=$o 2>/dev/null | wc -l; fi")


def _script(host: Host, on_lab_vm: bool) -> str:
    work = shlex.quote(host.work_dir.rstrip("/") + "/")
    marker = command_marker()
    parts = {
        "loop": f"losetup -a 2>/dev/null | grep -F -c -- {work} || true",
        "mount": f"grep -F -c -- {work} /proc/mounts || true",
        # Run folders (<work_dir>/<lab>/<run id>) that outlived their lab.
        "work_dir": f"find {work} -mindepth 2 -maxdepth 2 2>/dev/null | wc -l",
        "container": _owned_by_this_install("docker ps -aq", marker),
        "network": _owned_by_this_install("docker network ls -q", marker),
        # The [s] keeps pgrep from matching this very shell.
        "process": f"pgrep -f -- '[s]{marker[1:]}' | wc -l",
    }
    if on_lab_vm:
        parts.update({
            "md": "grep -c '^md' /proc/mdstat 2>/dev/null || true",
            "dm": "dmsetup ls 2>/dev/null | grep -v -c 'No devices found' || true",
            "drbd": "grep -c -E '^ *[0-9]+: cs:' /proc/drbd 2>/dev/null || true",
            "netem": "tc qdisc show 2>/dev/null | grep -c netem || true",
            # Network namespaces (the quorum-commit lab's copies; each holds its own netem).
            "netns": "ip netns list 2>/dev/null | wc -l",
            # Database servers a lab started in the VM itself (the power-loss lab's).
            "server": "pgrep -c -x 'postgres|mariadbd' || true",
        })
    return "; ".join(f"echo {name}=$({command})" for name, command in parts.items())


def leftovers(host: Host, on_lab_vm: bool | None = None) -> dict[str, int]:
    """How many lab resources of each kind are on `host` now (unmarked commands only)."""
    if on_lab_vm is None:
        on_lab_vm = host.name.startswith("vm") and not host.is_local
    out = host.sudo(_script(host, on_lab_vm), timeout_s=120, marked=False).stdout
    counts = {}
    for line in out.splitlines():
        name, _, value = line.partition("=")
        if name in SECTIONS:
            counts[name] = int(value.strip() or 0)
    return counts
