"""The write-mostly page's words on how its resync times were taken: from md's own kernel
log, or from the lab's polls of /proc/mdstat (then each time is an upper bound, and the
page says by how much)."""

from __future__ import annotations

import re

import pandas as pd

from labs.records import RecordedRun
from labs.tools.mdadm import parse_mdstat
from labs.write_mostly import tables
from labs.write_mostly.tables import NOT_MEASURED


def resync_polls(run: RecordedRun) -> pd.DataFrame:
    """What the lab's polls of /proc/mdstat saw during each timed resync of a new fast leg
    (raw/mdstat/<drill>-poll.txt), in seconds since the add: the last poll that still saw
    the copy running (its percent and md's own speed figure), the poll that saw it done,
    and the longest wait for a poll. The lab sees a resync end only at its next poll."""
    rows = []
    added = tables.event_s(run.results, "drill-fast-leg-lost", "new fast leg added")
    for resync in tables.resync_table(run.results).itertuples():
        if resync.config == "drill-resync-size":
            name, since_s = f"{resync.config}-{resync.size_mib:.0f}mib", 0.0
        elif added is not None:
            name, since_s = resync.config, added  # its polls count from the drill's start
        else:
            continue
        path = run.raw_dir / "mdstat" / f"{name}-poll.txt"
        if not path.is_file():
            continue
        polls = []
        for chunk in re.split(r"^# t_s=", path.read_text(), flags=re.M)[1:]:
            stamp, _, text = chunk.partition("\n")
            arrays = list(parse_mdstat(text, str(path)).arrays.values())
            sync = arrays[0].sync if arrays else None
            polls.append((float(stamp) - since_s, sync))
        running = [(t, sync) for t, sync in polls if sync is not None and sync.percent is not None]
        done = [t for t, sync in polls if sync is None]
        if not running or not done:
            continue
        times = [0.0] + [t for t, _ in polls]
        waits = [b - a for a, b in zip(times[:-1], times[1:], strict=True)]
        last_t, last = running[-1]
        rows.append({"config": resync.config, "size_mib": resync.size_mib,
                     "last_running_s": last_t, "last_percent": last.percent,
                     "md_speed_mib_s": (last.speed_kib_s or 0) / 1024,
                     "done_s": min(t for t in done if t > last_t),
                     "longest_wait_s": max(waits)})
    return pd.DataFrame(rows)


def resync_poll_figures(polls: pd.DataFrame) -> dict[str, str]:
    keys = ("resync_poll_wait", "resync_small_size", "resync_small_bracket", "resync_md_speeds")
    if polls.empty:
        return dict.fromkeys(keys, NOT_MEASURED)
    series = polls[polls.config == "drill-resync-size"].sort_values("size_mib")
    small = series.iloc[0] if len(series) else polls.iloc[0]
    speeds = polls["md_speed_mib_s"]
    return {"resync_poll_wait": f"{polls['longest_wait_s'].max():.1f} s",
            "resync_small_size": f"{small.size_mib:.0f} MiB",
            "resync_small_bracket": (f"still copying at {small.last_running_s:.1f} s "
                                     f"({small.last_percent:.1f} %) and seen done at the next "
                                     f"poll, {small.done_s:.1f} s after the add"),
            "resync_md_speeds": (f"{speeds.min():.0f} MiB/s" if speeds.max() - speeds.min() < 1
                                 else f"{speeds.min():.0f} to {speeds.max():.0f} MiB/s")}


def resync_timing_text(run: RecordedRun) -> str:
    """The paragraph after the resync times: whose clock timed them, and what that means."""
    table = tables.resync_table(run.results)
    if table.empty:
        return "This run timed no resync."
    if (table["timed_by"] == "kernel").all():
        return ("md's own kernel log timed each of these copies, from the line that began it to "
                "the line that ended it, so the times are the copies' own, not the moments the "
                "lab's polls of `/proc/mdstat` happened to see them end.")
    f = resync_poll_figures(resync_polls(run))
    return (
        "Each of these times runs from the add to the first poll of `/proc/mdstat` that no "
        "longer showed the copy, so each is an upper bound: the lab sees a resync end only when "
        "it next looks, and a look here is a command over SSH into an emulated machine. "
        f"Between the add and the first poll, or between two polls, up to "
        f"{f['resync_poll_wait']} went by; the {f['resync_small_size']} copy, for one, was "
        f"{f['resync_small_bracket']}. md's own speed figure at each copy's last poll that "
        f"still saw it running was {f['resync_md_speeds']}, so the copy itself did not keep "
        "one rate either. The run cannot separate how much of the time beyond size / rate is "
        "the lab's late look, how much a slower copy, and whether any of it is a fixed cost of "
        "starting a recovery. md's own kernel log times each copy from the line that begins "
        "it to the line that ends it; this run kept no such lines, and a run that keeps them "
        "can tell.")
