"""A recorded run's provenance, as the book's pages show it: the command that made it, the
host, the project's commit, the tools, when it ran and how busy its machine was."""

from __future__ import annotations

from typing import Any

import pandas as pd

from labs.records import RecordedRun


def commands_shown(commands: list[str], shown: int = 3) -> str:
    """The run's first commands (the lab's own command line first), and how many more
    run.json lists: a lab that records every command on its host records hundreds."""
    if not commands:
        return "-"
    more = len(commands) - shown
    return "; ".join(commands[:shown]) + (f"; and {more} more, listed in run.json" if more > 0
                                          else "")


def run_summary(run: RecordedRun) -> pd.DataFrame:
    """Provenance of a run as a two-column table for a book page."""
    meta = run.meta
    host = meta["host"]
    rows = [
        ("run", f"{meta['lab']}/{meta['run_id']}"),
        ("command", commands_shown(meta["commands"])),
        ("seed", "-" if meta["seed"] is None else str(meta["seed"])),
        ("host", f"{host.get('name', '?')}, kernel {host.get('kernel', '?')}, "
                 f"{host.get('cpu_count', '?')} CPUs"
                 + (f", lab VM ({emulation(host)})" if host.get("lab_vm") else "")),
        ("project commit", meta["git_commit"][:12] + ("-dirty" if meta["git_commit"].endswith(
            "-dirty") else "")),
        ("tools", ", ".join(f"{k} {v}" for k, v in sorted(meta["tool_versions"].items()))
         or "-"),
        ("started / finished (UTC)", f"{meta['started_at']} / {meta['finished_at']}"),
    ]
    load = load_at_start_and_end(meta)
    if load is not None:
        rows.append(("machine's load (1-minute average, start / end)",
                     f"{load[0]:.2f} / {load[1]:.2f} on {host_cpus(host)} CPUs"))
    return pd.DataFrame(rows, columns=["", "recorded run"])


def emulation(host: dict[str, Any]) -> str:
    """How a lab VM's processor ran: TCG (emulated in software) or KVM."""
    accel = (host.get("vm") or {}).get("accel")
    return str(accel).upper() if accel else "emulation not recorded"


def load_at_start_and_end(meta: dict[str, Any]) -> tuple[float, float] | None:
    """The 1-minute load average of the machine that ran the lab, at the run's start and end:
    recorded by every run since the recorder kept it, and by the write-mostly lab's own host
    facts before; None for a run that kept neither."""
    kept = meta.get("controller_load") or {}
    start, end = kept.get("at_start"), kept.get("at_end")
    if not (start and end):
        own = meta["host"].get("load_average") or {}
        start, end = own.get("controller_before"), own.get("controller_after")
    return (float(start[0]), float(end[0])) if start and end else None


def host_cpus(host: dict[str, Any]) -> str:
    """The CPUs of the machine that ran the lab (the controller's, for a remote host): how
    many, and their model where the run recorded it."""
    controller = host.get("controller") or host
    model = controller.get("cpu_model")
    return f"{controller.get('cpu_count', '?')}" + (f" {model}" if model else "")
