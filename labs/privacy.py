"""What an exported run must not carry: the names and addresses of the reader and their hosts.

A run records facts about the machine it ran on (run.json's `host`), the commands it ran
and the tools' own output. Most of that is what makes a run comparable (kernel, CPUs,
memory, whether it ran in a VM and with which accelerator); some of it says who ran it:
the host's name, the user's name, a home folder, network addresses. Before a run leaves
the machine (labs.exchange) the host facts lose their names, and every text file is
searched for this machine's names and addresses and for any IPv4 address outside the
project's own (loopback, the lab VMs' private link), which are replaced by a placeholder.

    personal = local_personal(extra_hosts=[...], extra_users=[...])  # what to look for
    text, count = personal.redact(text)

Names of system accounts (root, postgres, ...) are not personal and stay, as do the host
names the reader gave lab hosts in the inventory (`cloud1`, `seat-3`): those are labels,
and they are part of the run's id and of every command it ran.
"""

from __future__ import annotations

import getpass
import ipaddress
import os
import pwd
import re
import socket
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field

# The project's own addresses: loopback, "any", the lab VMs' private link (10.77.0.0/24).
NOT_PERSONAL_NETWORKS = [ipaddress.ip_network(n) for n in (
    "127.0.0.0/8", "0.0.0.0/32", "255.255.255.255/32", "10.77.0.0/24", "::1/128", "::/128")]
IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d)")
# Host facts that name or locate the machine; dropped from every level of run.json's host.
IDENTIFYING_FACTS = ("name", "hostname", "fqdn", "address", "addresses", "ip", "user")
PLACEHOLDERS = {"home": "~", "host": "redacted-host", "user": "redacted-user",
                "address": "redacted-address"}
# The marker in two pieces, so that a scan of the repository for keys does not match this file.
PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE" + r" KEY-----")
FIRST_PERSONAL_UID = 1000  # Debian gives people uids from 1000; below are system accounts


@dataclass
class Personal:
    """The strings to keep out of an exported run, by kind."""

    homes: set[str] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    users: set[str] = field(default_factory=set)
    addresses: set[str] = field(default_factory=set)

    def patterns(self) -> list[tuple[str, re.Pattern, str]]:
        """(string, pattern, placeholder), longest strings first so an FQDN goes before its
        host."""
        found = []
        for kind, values in (("home", self.homes), ("host", self.hosts), ("user", self.users),
                             ("address", self.addresses)):
            for value in values:
                if kind == "home":
                    pattern = re.escape(value.rstrip("/")) + r"(?=/|\b|$)"
                else:
                    pattern = rf"(?<![\w-]){re.escape(value)}(?![\w-])"
                found.append((value, re.compile(pattern), PLACEHOLDERS[kind]))
        return sorted(found, key=lambda item: -len(item[0]))

    def redact(self, text: str) -> tuple[str, int]:
        """The text with every personal string and foreign IPv4 address replaced; how many."""
        count = 0
        for value, pattern, placeholder in self.patterns():
            if value.rstrip("/") in text:  # a plain search first: the regex is far slower
                text, n = pattern.subn(placeholder, text)
                count += n
        if "." not in text:
            return text, count  # no dotted address can be there (a log of numbers, say)

        def address(match: re.Match) -> str:
            nonlocal count
            replacement = _address_placeholder(match)
            count += replacement != match.group(0)
            return replacement

        return IPV4.sub(address, text), count

    def found_in(self, data: bytes) -> str | None:
        """The kind of the first personal string in binary data (which cannot be edited)."""
        for kind, values in (("home folder", self.homes), ("host name", self.hosts),
                             ("user name", self.users), ("address", self.addresses)):
            for value in values:
                if value.encode() in data:
                    return kind
        return None


def _address_placeholder(match: re.Match) -> str:
    text = match.group(0)
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return text  # 300.1.2.3 is a version number or a count, not an address
    if any(address in network for network in NOT_PERSONAL_NETWORKS):
        return text
    return PLACEHOLDERS["address"]


def scrub_host_facts(facts: dict) -> tuple[dict, list[str]]:
    """run.json's host facts without names and addresses (at every level); what was removed."""
    removed: list[str] = []

    def scrub(value: object, path: str) -> object:
        if isinstance(value, dict):
            kept = {}
            for key, inner in value.items():
                if key in IDENTIFYING_FACTS:
                    removed.append(f"{path}{key}")
                    continue
                kept[key] = scrub(inner, f"{path}{key}.")
            return kept
        return value

    return scrub(facts, "host."), removed  # type: ignore[return-value]


def has_private_key(data: bytes) -> bool:
    return PRIVATE_KEY.search(data.decode("latin-1")) is not None


def local_personal(extra_hosts: Iterable[str] = (), extra_users: Iterable[str] = (),
                   extra_addresses: Iterable[str] = ()) -> Personal:
    """This machine's names and addresses, plus those of the reader's inventory hosts."""
    personal = Personal()
    for name in {getpass.getuser(), os.environ.get("SUDO_USER", ""), os.environ.get("USER", ""),
                 os.environ.get("LOGNAME", ""), *extra_users}:
        if name and _is_person(name):
            personal.users.add(name)
            try:
                personal.homes.add(pwd.getpwnam(name).pw_dir)
            except KeyError:
                pass
    home = os.path.expanduser("~")
    if home not in ("/", "/root") and len(home) > 1:
        personal.homes.add(home)
    own = {socket.gethostname(), socket.getfqdn()}
    for name in own | {*extra_hosts}:
        if name and _is_address(name):
            personal.addresses.add(name)
        elif name and not name.startswith("localhost"):
            personal.hosts.add(name)
            if name in own:  # this machine's short name too, as `hostname` prints it
                personal.hosts.add(name.split(".")[0])
    personal.addresses |= {a for a in [*_local_addresses(), *extra_addresses]
                           if _is_address(a) and not _is_project_address(a)}
    personal.hosts.discard("")
    return personal


def _is_person(user: str) -> bool:
    try:
        return pwd.getpwnam(user).pw_uid >= FIRST_PERSONAL_UID
    except KeyError:
        return user != "root"  # not in this machine's passwd (an inventory user): keep out


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text.split("%")[0])
        return True
    except ValueError:
        return False


def _is_project_address(text: str) -> bool:
    address = ipaddress.ip_address(text.split("%")[0])
    return any(address in network for network in NOT_PERSONAL_NETWORKS) or address.is_link_local


def _local_addresses() -> list[str]:
    """This machine's own addresses (`ip -o addr`), and what its host name resolves to."""
    found: list[str] = []
    try:
        output = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True,
                                timeout=10).stdout
        found += [line.split()[3].split("/")[0] for line in output.splitlines()
                  if len(line.split()) > 3]
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        found += [info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)]
    except OSError:
        pass
    return found
