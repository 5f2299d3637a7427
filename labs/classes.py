"""A class: the runs of a workshop's participants, kept apart from the reader's own runs.

    data/classes/<class>/<participant>/<lab>/<run-id>/     one imported run (labs.exchange)
                                                .../imported.json   its export manifest

The root is $LABS_CLASSES_DIR, else data/classes/. `python -m labs import FILE... --class
NAME` fills a class; `make book CLASS=NAME` (or LABS_CLASS=NAME) builds the book with it:
each lab page then draws every participant's run beside the shipped one and lists their
hosts (labs.book.compare).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from labs import PROJECT_ROOT
from labs.errors import UsageError
from labs.exchange import check_label
from labs.records import RecordedRun, RecordError, list_runs, load_run

CLASS_ENV = "LABS_CLASS"
# What systemd-detect-virt reports inside a container (not a virtual machine).
CONTAINERS = {"docker", "podman", "lxc", "lxc-libvirt", "systemd-nspawn", "openvz", "rkt",
              "wsl", "proot", "pouch", "container-other"}


def classes_root() -> Path:
    return Path(os.environ.get("LABS_CLASSES_DIR") or PROJECT_ROOT / "data" / "classes")


def class_dir(name: str) -> Path:
    return classes_root() / check_label(name, "class")


def selected_class() -> str | None:
    """The class the book is built with ($LABS_CLASS), or None; an unknown one is an error."""
    name = os.environ.get(CLASS_ENV, "").strip()
    if not name:
        return None
    folder = class_dir(name)
    if not folder.is_dir():
        known = ", ".join(sorted(p.name for p in classes_root().glob("*") if p.is_dir()))
        raise UsageError(f"{CLASS_ENV}={name}: no such class in {classes_root()} "
                         f"(known: {known or 'none yet'}; `python -m labs import FILE "
                         f"--class {name}` makes one)")
    return name


@dataclass(frozen=True)
class ClassRun:
    participant: str
    run: RecordedRun


def class_runs(name: str, lab: str) -> tuple[list[ClassRun], list[tuple[Path, str]]]:
    """Every participant's valid runs of `lab`, and the refused ones with their reason."""
    runs, refused = [], []
    folder = class_dir(name)
    for participant in sorted(p for p in folder.iterdir() if p.is_dir()
                              and not p.name.startswith(".")) if folder.is_dir() else []:
        for path in list_runs(lab, participant):
            try:
                runs.append(ClassRun(participant.name, load_run(path)))
            except RecordError as error:
                refused.append((path, str(error)))
    return runs, refused


def host_description(run: RecordedRun) -> dict[str, str]:
    """What a class's table of hosts shows of one run: nothing that names the machine."""
    host = run.meta["host"]
    vm = host.get("vm") or {}
    virt = str(host.get("virtualization") or "unknown")
    if host.get("lab_vm"):
        kind, accel = "lab VM (QEMU)", str(vm.get("accel", "?")).upper()
    elif virt in ("none", ""):
        kind, accel = "no", "-"
    elif virt == "unknown":
        kind, accel = "unknown", "-"
    elif virt in CONTAINERS:
        kind, accel = f"no (a {virt} container)", "-"
    else:
        # systemd-detect-virt names the hypervisor as the guest sees it: "qemu" is QEMU
        # without KVM (software emulation, TCG); "kvm" is hardware-assisted.
        kind = f"yes ({virt})"
        accel = {"qemu": "TCG", "kvm": "KVM"}.get(virt, "-")
    memory = host.get("memory_bytes")
    return {"kernel": str(host.get("kernel") or "?"),
            "CPUs": str(host.get("cpu_count") or "?"),
            "memory": f"{memory / 2**30:.1f} GiB" if isinstance(memory, int | float) else "?",
            "virtual machine": kind, "accelerator": accel}
