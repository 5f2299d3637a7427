"""The power cuts of the quorum-commit lab: every copy loses its power at once, and the
primary's disk is counted as lost with it.

For each synchronous_commit setting in turn, under `ANY k`: a client commits numbered rows
on the primary and the controller writes down every acknowledgement (labs/infra/acks.py);
then the VM's QEMU is killed (labs/infra/vm/power.py), the VM boots again on the same disks,
and the five standbys start without their primary. Each replays the WAL on its own disk;
the one that replayed the most is the one a failover would promote, and the lab counts the
acknowledged rows it lacks. Then the primary starts too (its disk was never really lost),
the standbys catch up, and the next setting gets its cut.

The model beside each cut (labs/quorum_commit/power_cut_model.py) reads the round trips and the
flush the lab measured before.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from labs.errors import LabError
from labs.infra.acks import AckStream, lost_window_ms
from labs.infra.vm import power
from labs.infra.vm.servers import PSQL, SERVERS
from labs.progress import Progress
from labs.quorum_commit import power_cut_model as model
from labs.quorum_commit.copies import Copies, lsn
from labs.quorum_commit.params import Parameters
from labs.records import RunRecorder

CUT_STEPS = ("commits, then the power cut", "booting again", "the standbys recover; the count")
CONFIG = "power cut"


def cuts(copies: Copies, rec: RunRecorder, p: Parameters, progress: Progress, disk: str,
         flush_ms: float, rtts: dict[int, float]) -> None:
    """One power cut per setting of p.cut_settings, in that order."""
    rng = random.Random(p.seed)
    kth_rtt_ms = sorted(rtts.values())[p.quorum - 1]
    # netem holds only what a standby sends: the WAL's way out is half the round trip
    # without the added delay.
    to_standby_ms = min((rtt - p.added_rtt_ms(n, "even")) / 2 for n, rtt in rtts.items())
    names = f"ANY {p.quorum} ({', '.join(s.name for s in copies.standbys)})"
    copies.set_sync(names)
    for number, setting in enumerate(p.cut_settings, 1):
        window = model.window_ms(setting, to_standby_ms, kth_rtt_ms, flush_ms)
        cut_once(copies, rec, p, progress, disk, number, setting, rng, window, to_standby_ms)


def cut_once(copies: Copies, rec: RunRecorder, p: Parameters, progress: Progress, disk: str,
             number: int, setting: str, rng: random.Random, window: float,
             to_standby_ms: float) -> None:
    ws, primary = copies.ws, copies.primary
    host = ws.host
    label = f"power cut {number} (synchronous_commit={setting})"
    progress.step("commits, then the power cut", f"{label}: a client commits numbered rows "
                  f"for about {p.phase_s} s, then {host.name}'s power is cut")
    writer = _fresh_table_and_client(copies, label, setting)
    began = time.monotonic()
    writer.start(host, began)
    why = writer.wait_for_first(timeout_s=120)
    if why:
        raise LabError(f"{label}: the client committed nothing ({why})")
    time.sleep(p.phase_s * (2 / 3 + rng.random() / 3))  # the cut lands in the last third
    # The power cut: QEMU dies at once; the guest's memory is gone, its disks stay.
    cut_at, boot_s = power.cut_then_boot(
        host.name, waiting=[writer.thread], log=progress.detail,
        before_boot=lambda: progress.step("booting again", f"{label}: {host.name} on the "
                                          "same disks"))
    cut_at -= began
    replays, recovery_s = _recover_standbys(copies, p, progress, disk, label)
    acked = writer.acked
    dims = {"synchronous_commit": setting, "k": p.quorum, "cut": number,
            "acknowledged": acked}

    def add(metric: str, value: float, unit: str, **more) -> None:
        rec.add_result(config=CONFIG, workload=f"synchronous_commit={setting}", metric=metric,
                       value=value, unit=unit, **dims, **more)

    found, newest = _count_on_standbys(copies, acked, replays, add)
    # The standby a failover would promote: the one that replayed the most WAL.
    chosen = max(replays, key=lambda n: lsn(replays[n]))
    copies.restart([primary.number])
    on_primary = int(copies.psql(primary, f"SELECT count(*) FROM acks WHERE id <= {acked}"))
    copies.wait_streaming([s.name for s in copies.standbys])
    rate = writer.rate()
    rec.add_raw(f"power-cut/{number}-{setting}-acks.csv", writer.csv())
    add("acknowledged", acked, "count")
    add("acknowledged_found", found[chosen], "count", standby=f"s{chosen}")
    add("acknowledged_lost", acked - found[chosen], "count", standby=f"s{chosen}")
    # How long before the cut the first lost commit was acknowledged (0: none lost).
    add("lost_window_ms", lost_window_ms(writer.acks, newest[chosen], cut_at), "ms")
    add("primary_acknowledged_found", on_primary, "count")
    add("acks_per_second", round(rate, 2), "tps")
    add("model_to_standby_ms", round(to_standby_ms, 3), "ms")  # the WAL's way to a standby
    add("model_window_ms", round(window, 3), "ms")
    add("model_max_lost", round(model.max_lost(rate, window), 3), "count")
    add("cut_after_s", round(cut_at, 2), "s")
    add("boot_s", round(boot_s, 1), "s")
    add("recovery_s", round(recovery_s, 1), "s")
    progress.detail(f"acknowledged {acked}; the newest standby (s{chosen}) lacks "
                    f"{acked - found[chosen]}; the primary lacks {acked - on_primary}; the "
                    f"model allows {model.max_lost(rate, window):.1f}")


def _fresh_table_and_client(copies: Copies, label: str, setting: str) -> AckStream:
    """An empty table on every copy, and the client (not yet started) whose session runs at
    `setting`, checked."""
    primary, host = copies.primary, copies.ws.host
    # A fresh table on every standby's disk before the first commit counted.
    copies.psql(primary, "DROP TABLE IF EXISTS acks; " + SERVERS["postgres"].create_table_sql())
    copies.wait_replayed()
    session = f"PGOPTIONS='-c synchronous_commit={setting}' "
    shown = host.sudo(f"cd / && {session}runuser -u postgres -- {PSQL} -h {primary.socket} "
                      "-XAtq -c 'SHOW synchronous_commit'", timeout_s=60).stdout.strip()
    if shown != setting:
        raise LabError(f"{label}: the client's session has synchronous_commit={shown!r}")
    return AckStream(session + SERVERS["postgres"].insert_loop(primary.data,
                                                               socket=primary.socket))


def _recover_standbys(copies: Copies, p: Parameters, progress: Progress, disk: str,
                      label: str) -> tuple[dict[int, str], float]:
    """After the reboot: the standbys started without their primary, each replaying what its
    disk holds; (each one's settled replay position, the seconds that took)."""
    ws = copies.ws
    ws.reconnect()
    progress.step("the standbys recover; the count", f"{label}: without the primary")
    ws.run_guarded(["mount", disk, copies.mount_point], [disk], timeout_s=300)
    copies.after_reboot(p)
    recovering = time.monotonic()
    copies.restart([s.number for s in copies.standbys])
    replays = copies.replay_settled(copies.standbys)
    recovery_s = time.monotonic() - recovering
    return replays, recovery_s


def _count_on_standbys(copies: Copies, acked: int, replays: dict[int, str],
                       add: Callable[..., None]) -> tuple[dict[int, int], dict[int, int]]:
    """(acknowledged rows each standby holds, the newest of them), by standby number."""
    found, newest = {}, {}
    for standby in copies.standbys:
        held, top = copies.psql(standby, f"SELECT count(*), coalesce(max(id), 0) FROM acks "
                                         f"WHERE id <= {acked}").split("|")
        found[standby.number], newest[standby.number] = int(held), int(top)
        add("standby_acknowledged_found", int(held), "count", standby=standby.name,
            replay_lsn=replays[standby.number])
    return found, newest
