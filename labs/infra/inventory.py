"""Which lab hosts exist: `local`, the reader's inventory of SSH hosts, and running lab VMs.

    from labs.infra.inventory import get_host, host_names
    host = get_host("vm1")     # -> labs.infra.hosts.Host
    host_names()               # ["local", "cloud1", "vm1", ...]

Inventory: a TOML file at $LABS_INVENTORY, else $XDG_CONFIG_HOME/storage-labs/hosts.toml
(~/.config/storage-labs/hosts.toml). Each table under [hosts] is one SSH host:

    [hosts.cloud1]
    address = "203.0.113.10"       # required: name or IP
    user = "root"                  # default: your user name
    port = 22                      # default 22
    key = "~/.ssh/id_ed25519"      # default: your SSH agent and default keys
    known_hosts = "~/.ssh/known_hosts"   # host keys are checked against this, never added
    work_dir = "/var/tmp/storage-labs"   # where labs put their loop-device files
    link_address = "10.0.1.10"     # where the other host of a pair reaches this one
                                   # (the DRBD lab's link); default: address

`local` always exists and cannot be redefined. A lab VM started with `python -m labs vm up`
appears as `vm1` (and `vm2` for a pair) while it runs, without any inventory entry.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from labs.errors import UsageError
from labs.infra.hosts import Host, LocalHost, SSHHost, UnknownHost
from labs.infra.paths import config_dir
from labs.infra.vm import machine

INVENTORY_FIELDS = {"address", "user", "port", "key", "known_hosts", "work_dir",
                    "link_address"}


def inventory_path() -> Path:
    return Path(os.environ.get("LABS_INVENTORY") or config_dir() / "hosts.toml")


def load_inventory(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The inventory's hosts, by name.

    No file at the default place is an empty inventory; a file named by $LABS_INVENTORY
    that does not exist is a mistake worth one line, not silence.
    """
    named = path is not None or bool(os.environ.get("LABS_INVENTORY"))
    path = path or inventory_path()
    if not path.exists():
        if named:
            raise UsageError(f"inventory {path} does not exist (LABS_INVENTORY names it)")
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: not valid TOML ({error})") from None
    hosts = data.get("hosts", {})
    if not isinstance(hosts, dict):
        raise UsageError(f"{path}: 'hosts' must be a table of hosts")
    for name, entry in hosts.items():
        if name == "local" or machine.is_vm_name(name):
            raise UsageError(f"{path}: host name '{name}' is reserved")
        if not isinstance(entry, dict) or not isinstance(entry.get("address"), str):
            raise UsageError(f"{path}: hosts.{name}: 'address' (a string) is required")
        unknown = set(entry) - INVENTORY_FIELDS
        if unknown:
            raise UsageError(f"{path}: hosts.{name}: unknown field '{sorted(unknown)[0]}'")
        port = entry.get("port", 22)
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise UsageError(f"{path}: hosts.{name}: 'port' must be a whole number 1..65535")
        for text_field in ("user", "key", "known_hosts", "work_dir", "link_address"):
            if text_field in entry and not isinstance(entry[text_field], str):
                raise UsageError(f"{path}: hosts.{name}: '{text_field}' must be a string")
    return hosts


def link_address(name: str) -> str:
    """Where the other host of a pair reaches inventory host `name`: its `link_address`, else
    its `address`."""
    entry = load_inventory().get(name)
    if entry is None:
        raise UsageError(f"host {name} is not in the inventory ({inventory_path()})")
    return entry.get("link_address", entry["address"])


def host_names() -> list[str]:
    """Every host a lab can name right now: local, the inventory, running VMs."""
    return ["local", *load_inventory(), *machine.running_vm_names()]


def is_known_name(name: str) -> bool:
    """A name that is or was a lab host here (used to tell a typo from "nothing to do")."""
    return name == "local" or machine.is_vm_name(name) or name in load_inventory()


def get_host(name: str = "local") -> Host:
    """The host called `name` ("local", an inventory name, or a running lab VM)."""
    if name == "local":
        return LocalHost()
    if machine.is_vm_name(name):
        return machine.vm_host(name)
    hosts = load_inventory()
    if name not in hosts:
        known = ", ".join(["local", *hosts]) or "local"
        raise UnknownHost(f"unknown host '{name}' (known: {known}; VMs appear as vm1, vm2 "
                          f"after `python -m labs vm up`; inventory: {inventory_path()})")
    entry = hosts[name]
    return SSHHost(name, entry["address"], user=entry.get("user"), port=entry.get("port", 22),
                   key=entry.get("key"), known_hosts=entry.get("known_hosts"),
                   work_dir=entry.get("work_dir", "/var/tmp/storage-labs"))
