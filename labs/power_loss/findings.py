"""What a power-loss run found, as typed values: about its commit servers, its PostgreSQL
torn-page servers and its InnoDB doublewrite servers. The page (book/power-loss/lab.md)
formats them and the claim tests assert them.

Computed from the recorded run alone (its results and each server's acknowledgement file),
with its parameters read back as the lab's dataclass.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from labs.power_loss import model
from labs.power_loss.params import TORN_ROWS, Parameters
from labs.records import RecordedRun

ENGINES = ("postgres", "mariadb")
MANUAL_WAKEUPS = 3  # PostgreSQL's manual: at most three times wal_writer_delay is lost
WAL_WRITER_DELAY_MS = 200  # PostgreSQL's default wal_writer_delay


@dataclass(frozen=True)
class Cut:
    """One commit server (an engine under one setting) in one power cut."""

    engine: str
    setting: str  # "synchronous_commit=off", ...
    safety: str  # "safe" or "unsafe", as the book calls the setting
    cut: int
    acknowledged: int
    acknowledged_found: int
    lost: int  # acknowledged commits the server no longer had after recovery
    unacknowledged_found: int  # rows found that the client never saw acknowledged
    model_most_lost: float  # the model's estimate: the client's rate times the window
    lost_ms: float  # how long before the cut the oldest lost commit was acknowledged (0: none)
    bound_ms: float  # the model's window for the setting
    acks_per_s: float  # the client's commit rate over its last ten seconds
    boot_s: float
    recovery_s: float
    cut_after_s: float  # when the cut came, seconds after the client started

    @property
    def over_estimate(self) -> float:
        return self.lost - self.model_most_lost


@dataclass(frozen=True)
class TornCut:
    """One PostgreSQL torn-page server (full_page_writes on or off) in one power cut."""

    setting: str  # "full_page_writes=on" or "=off"
    safety: str
    cut: int
    acknowledged: int  # updates the client saw acknowledged
    lost: int  # rows whose newest acknowledged update was gone after recovery
    acks_per_s: float
    recovered_alone: bool  # the server started by itself after the cut
    table_read: bool  # the table could be read whole afterwards
    damaged_pages: int  # pages that failed their checksum after recovery
    damaged_table_pages: int  # of them, the table's
    model_damaged_pages: float
    rows_updated: int
    updates_in_hold: int  # updates acknowledged within the hold before the cut


class TornServers:
    """What the torn-page servers of either engine share: their cuts by setting, the first
    cut whose recovery stopped without the safe setting, their median update rates."""

    cuts: tuple  # of TornCut or DoublewriteCut

    def of(self, safety: str) -> list:
        return [c for c in self.cuts if c.safety == safety]

    @property
    def first_failed_cut(self) -> int | None:
        """The first cut whose recovery stopped (the page quotes its log)."""
        return min((c.cut for c in self.of("unsafe") if not c.recovered_alone), default=None)

    def median_rate(self, safety: str) -> float:
        return statistics.median(c.acks_per_s for c in self.of(safety))


@dataclass(frozen=True)
class TornLegs(TornServers):
    hold_ms: int  # how long the disk held each write while the clients wrote
    cuts: tuple[TornCut, ...]

    @property
    def full_page_writes_mended_everything(self) -> bool:
        """Backs the verdict of 'Torn pages: what full-page writes mend' with `on`."""
        return all(c.recovered_alone and c.table_read and c.damaged_pages == 0 and c.lost == 0
                   for c in self.of("safe"))

    @property
    def recovery_failed_in_every_cut_without(self) -> bool:
        """Backs "with `off`, recovery failed after every cut"."""
        return all(not c.recovered_alone for c in self.of("unsafe"))

    @property
    def only_table_pages_damaged(self) -> bool:
        """Backs "in this run no catalog page was damaged"."""
        return all(c.damaged_pages == c.damaged_table_pages for c in self.of("unsafe"))

    @property
    def every_lost_update_on_a_damaged_table_page(self) -> bool:
        return all(c.lost <= c.damaged_table_pages for c in self.of("unsafe"))

    @property
    def model_total(self) -> float:
        return sum(c.model_damaged_pages for c in self.of("unsafe"))

    @property
    def damaged_total(self) -> int:
        return sum(c.damaged_pages for c in self.of("unsafe"))

    @property
    def model_error(self) -> float:
        """The damaged pages against the model's, as a share of the model's."""
        return (self.damaged_total - self.model_total) / self.model_total

    @property
    def hold_total(self) -> int:
        return sum(c.updates_in_hold for c in self.of("unsafe"))

    @property
    def hold_error(self) -> float:
        """The damaged pages against the updates of the hold, as a share of the latter."""
        return (self.damaged_total - self.hold_total) / self.hold_total

    @property
    def hold_apart(self) -> int:
        """The most one cut's damaged pages differ from its updates within the hold."""
        return max(abs(c.damaged_pages - c.updates_in_hold) for c in self.of("unsafe"))

    @property
    def neither_faster_in_every_cut(self) -> bool:
        """Backs "neither was the faster in every cut"."""
        rates = {(c.cut, c.safety): c.acks_per_s for c in self.cuts}
        cuts = sorted({c.cut for c in self.cuts})
        faster = [rates[cut, "safe"] > rates[cut, "unsafe"] for cut in cuts]
        return any(faster) and not all(faster)


@dataclass(frozen=True)
class DoublewriteCut:
    """One InnoDB torn-page server (innodb_doublewrite ON or OFF) in one power cut."""

    setting: str  # "innodb_doublewrite=ON" or "=OFF"
    safety: str
    cut: int
    acknowledged: int
    lost: int  # rows whose newest acknowledged update was gone after recovery
    acks_per_s: float
    recovered_alone: bool
    table_read: bool  # a full scan of the table succeeded afterwards
    torn_pages: int  # pages failing their checksum on the disk, before recovery
    torn_table_pages: int  # of them, the table's
    model_torn_pages: float
    doublewrite_pages: int  # pages recovery wrote back from the doublewrite area
    damaged_pages: int  # pages still failing their checksum after recovery
    rows_unreadable: int  # rows the row-by-row read could not read
    rows_updated: int
    updates_in_hold: int  # updates acknowledged within the hold before the cut
    unreadable_runs: tuple[int, ...]  # the lengths of the runs of keys it could not read


@dataclass(frozen=True)
class DoublewriteLegs(TornServers):
    cuts: tuple[DoublewriteCut, ...]

    @property
    def every_torn_page_came_back_with_the_buffer(self) -> bool:
        """Backs the verdict of 'InnoDB's doublewrite buffer under the same cut' with ON:
        every torn page written back from its copy, nothing damaged or lost after."""
        return all(c.doublewrite_pages == c.torn_pages and c.recovered_alone and c.table_read
                   and c.damaged_pages == 0 and c.lost == 0 for c in self.of("safe"))

    @property
    def recovery_and_scan_failed_in_every_cut_without(self) -> bool:
        """Backs "with OFF, recovery failed after every cut" and "a full scan of the table
        failed after every cut"."""
        return all(not c.recovered_alone and not c.table_read for c in self.of("unsafe"))

    @property
    def nothing_mended_without(self) -> bool:
        """Without the buffer, every torn page stayed damaged."""
        return all(c.damaged_pages == c.torn_pages > 0 for c in self.of("unsafe"))

    @property
    def only_the_table_tore(self) -> bool:
        return all(c.torn_pages == c.torn_table_pages for c in self.cuts)

    @property
    def rows_per_damaged_page(self) -> float:
        unsafe = self.of("unsafe")
        return sum(c.rows_unreadable for c in unsafe) / sum(c.damaged_pages for c in unsafe)

    @property
    def unreadable_run_length(self) -> int:
        """The longest run of keys the row-by-row read could not read."""
        return max((n for c in self.of("unsafe") for n in c.unreadable_runs), default=0)

    @property
    def one_run_of_that_length_per_damaged_page(self) -> bool:
        """Backs "in runs of N consecutive keys, one run for each damaged page"."""
        return all(len(c.unreadable_runs) == c.damaged_pages
                   and set(c.unreadable_runs) == {self.unreadable_run_length}
                   for c in self.of("unsafe"))

    @property
    def model_total(self) -> float:
        return sum(c.model_torn_pages for c in self.cuts)

    @property
    def torn_total(self) -> int:
        return sum(c.torn_pages for c in self.cuts)

    @property
    def model_error(self) -> float:
        """The torn pages against the model's, as a share of the model's."""
        return (self.torn_total - self.model_total) / self.model_total

    @property
    def hold_total(self) -> int:
        return sum(c.updates_in_hold for c in self.cuts)

    @property
    def hold_error(self) -> float:
        """The torn pages against the updates of the hold, as a share of the latter."""
        return (self.torn_total - self.hold_total) / self.hold_total

    @property
    def hold_apart(self) -> int:
        """The most one cut's torn pages differ from its updates within the hold."""
        return max(abs(c.torn_pages - c.updates_in_hold) for c in self.cuts)

    @property
    def buffer_slower_in_every_cut(self) -> bool:
        """Backs "ON was the slower in every cut"."""
        rates = {(c.cut, c.safety): c.acks_per_s for c in self.cuts}
        return all(rates[c.cut, "safe"] < rates[c.cut, "unsafe"] for c in self.of("safe"))

    @property
    def rate_gap(self) -> float:
        """How much lower ON's median rate was than OFF's, as a share of OFF's."""
        return 1 - self.median_rate("safe") / self.median_rate("unsafe")


@dataclass(frozen=True)
class Findings:
    params: Parameters
    cuts: tuple[Cut, ...]
    # Commits the client of the cut furthest over its estimate had acknowledged within its
    # setting's window before the cut, counted from its acknowledgement file.
    over_cut_acked_in_window: int
    torn: TornLegs | None  # None: a run without the torn-page servers
    doublewrite: DoublewriteLegs | None  # None: a run without InnoDB's torn-page servers

    def of(self, safety: str, engine: str | None = None) -> list[Cut]:
        return [c for c in self.cuts if c.safety == safety and engine in (None, c.engine)]

    def lost(self, safety: str) -> int:
        return sum(c.lost for c in self.of(safety))

    def acknowledged(self, safety: str) -> int:
        return sum(c.acknowledged for c in self.of(safety))

    @property
    def cut_count(self) -> int:
        return max(c.cut for c in self.cuts)

    @property
    def safe_settings_lost_nothing(self) -> bool:
        """Backs "with the safe settings, 0 acknowledged commits were lost"."""
        return all(c.acknowledged > 0 and c.lost == 0 for c in self.of("safe"))

    @property
    def unsafe_losses_within_their_window(self) -> bool:
        """Backs "every lost commit had been acknowledged within its setting's window"."""
        return all(c.lost_ms <= c.bound_ms for c in self.of("unsafe"))

    @property
    def cuts_over_their_estimate(self) -> list[Cut]:
        return [c for c in self.of("unsafe") if c.lost > c.model_most_lost]

    @property
    def furthest_over_estimate(self) -> Cut:
        """The unsafe cut that lost the most commits beyond its estimate (the latest of a
        tie)."""
        return max(self.of("unsafe"), key=lambda c: (c.over_estimate, c.cut))

    def lossy(self, engine: str) -> list[Cut]:
        """The engine's unsafe cuts that took acknowledged commits."""
        return [c for c in self.of("unsafe", engine) if c.lost > 0]

    def rate(self, engine: str, safety: str) -> float:
        """The median commit rate of the engine's server under that setting, over the cuts."""
        return statistics.median(c.acks_per_s for c in self.of(safety, engine))

    def speedup(self, engine: str) -> float:
        """How many times as fast the unsafe setting committed as the safe one."""
        return self.rate(engine, "unsafe") / self.rate(engine, "safe")

    @property
    def longest_recovery_s(self) -> float:
        return max(c.recovery_s for c in self.cuts)

    @property
    def boot_s(self) -> tuple[float, ...]:
        return tuple(c.boot_s for c in self.cuts)

    def unacknowledged_found(self, safety: str | None = None) -> int:
        return sum(c.unacknowledged_found for c in self.cuts if safety in (None, c.safety))

    @property
    def postgres_oldest_loss(self) -> Cut:
        """The unsafe PostgreSQL cut whose oldest lost commit was the oldest (an exercise)."""
        return max(self.of("unsafe", "postgres"), key=lambda c: (c.lost_ms, c.cut))

    @property
    def postgres_oldest_loss_wakeups(self) -> float:
        """That loss in wal_writer_delay wake-ups."""
        return self.postgres_oldest_loss.lost_ms / WAL_WRITER_DELAY_MS

    @property
    def postgres_oldest_loss_share_of_manual(self) -> float:
        """That loss as a share of the manual's bound (three wake-ups)."""
        return self.postgres_oldest_loss.lost_ms / (MANUAL_WAKEUPS * WAL_WRITER_DELAY_MS)


def outcomes(run: RecordedRun) -> pd.DataFrame:
    """One row per database and power cut: acknowledged, lost, the model's bounds."""
    rows = run.results[run.results["workload"] == "power-cut"]
    table = rows.pivot_table(index=["engine", "setting", "safety", "cut"], columns="metric",
                             values="value").reset_index()
    table.columns.name = None
    # The model in time: how long before the cut a lost commit can have been acknowledged.
    table["bound_ms"] = [1000 * model.window_s(engine, *setting.split("=", 1))
                         for engine, setting in zip(table["engine"], table["setting"],
                                                    strict=True)]
    # Measured from the acknowledgements' own times (see labs.infra.acks.lost_window_ms).
    table["lost_ms"] = table["lost_window_ms"]
    order = {engine: index for index, engine in enumerate(ENGINES)}
    return table.sort_values(["engine", "safety", "cut"],
                             key=lambda c: c.map(order) if c.name == "engine" else c) \
        .reset_index(drop=True)


def _cut(row) -> Cut:
    return Cut(engine=row.engine, setting=row.setting, safety=row.safety, cut=int(row.cut),
               acknowledged=int(row.acknowledged), acknowledged_found=int(row.acknowledged_found),
               lost=int(row.acknowledged_lost), unacknowledged_found=int(row.unacknowledged_found),
               model_most_lost=float(row.model_max_lost), lost_ms=float(row.lost_ms),
               bound_ms=float(row.bound_ms), acks_per_s=float(row.acks_per_second),
               boot_s=float(row.boot_s), recovery_s=float(row.recovery_s),
               cut_after_s=float(row.cut_after_s))


def has_legs(run: RecordedRun, workload: str) -> bool:
    """Whether the run had the servers whose results are named `workload` ("torn-pages",
    "doublewrite"): runs with --tear-delay-ms 0, or older ones, do not."""
    return bool((run.results["workload"] == workload).any())


def leg_outcomes(run: RecordedRun, workload: str) -> pd.DataFrame:
    """One row per setting and power cut of the servers whose results are named `workload`,
    each metric a column (safe settings first)."""
    rows = run.results[run.results["workload"] == workload]
    table = rows.pivot_table(index=["setting", "safety", "cut"], columns="metric",
                             values="value").reset_index()
    table.columns.name = None
    return table.sort_values(["safety", "cut"]).reset_index(drop=True)


def leg_file(run: RecordedRun, leg: str, cut: float, suffix: str) -> Path:
    """A server's raw file from one cut, as the lab writes it: `leg` such as
    "postgres-fpw-off" or "mariadb-dblwr-on", `suffix` such as ".log" or "-acks.txt"."""
    return run.path / "raw" / f"cut{cut:.0f}" / f"{leg}-cut{cut:.0f}{suffix}"


def acks_in_window(path: Path, cut_after_s: float, window_s: float) -> int:
    """Acknowledgements in a raw acks file ("N seconds" a line) that came within `window_s`
    before the cut."""
    times_s = [float(line.split()[1]) for line in path.read_text().splitlines()]
    return sum(1 for at in times_s if at >= cut_after_s - window_s)


def acked_within(run: RecordedRun, cut: Cut, window_ms: float) -> int:
    """Commits the client of `cut` had acknowledged within `window_ms` before its cut,
    counted from its acknowledgement file."""
    value = cut.setting.split("=", 1)[1]
    path = leg_file(run, f"{cut.engine}-{value}", cut.cut, "-acks.txt")
    return acks_in_window(path, cut.cut_after_s, window_ms / 1000)


def torn_legs(run: RecordedRun, params: Parameters) -> TornLegs | None:
    if not has_legs(run, "torn-pages"):
        return None
    cuts = []
    for row in leg_outcomes(run, "torn-pages").itertuples():
        acks = leg_file(run, f"postgres-fpw-{row.setting.split('=', 1)[1]}", row.cut,
                                  "-acks.txt")
        cuts.append(TornCut(
            setting=row.setting, safety=row.safety, cut=int(row.cut),
            acknowledged=int(row.acknowledged), lost=int(row.acknowledged_lost),
            acks_per_s=float(row.acks_per_second), recovered_alone=bool(row.recovered_alone),
            table_read=bool(row.table_read), damaged_pages=int(row.damaged_pages),
            damaged_table_pages=int(row.damaged_table_pages),
            model_damaged_pages=float(row.model_damaged_pages),
            rows_updated=int(row.rows_updated),
            updates_in_hold=acks_in_window(acks, row.cut_after_s,
                                                     params.tear_delay_ms / 1000)))
    return TornLegs(hold_ms=params.tear_delay_ms, cuts=tuple(cuts))


def unreadable_runs(path: Path, rows: int) -> tuple[int, ...]:
    """The lengths of the runs of consecutive keys (0 to rows - 1) a row-by-row read's raw
    output ("key<TAB>value" a line) does not have."""
    found = {int(line.split("\t")[0]) for line in path.read_text().splitlines() if "\t" in line}
    lengths: list[int] = []
    for key in range(rows):
        if key in found:
            continue
        if key - 1 in found or key == 0 or not lengths:
            lengths.append(1)
        else:
            lengths[-1] += 1
    return tuple(lengths)


def doublewrite_legs(run: RecordedRun, params: Parameters) -> DoublewriteLegs | None:
    if not has_legs(run, "doublewrite"):
        return None
    cuts = []
    for row in leg_outcomes(run, "doublewrite").itertuples():
        leg = f"mariadb-dblwr-{row.setting.split('=', 1)[1].lower()}"
        cuts.append(DoublewriteCut(
            setting=row.setting, safety=row.safety, cut=int(row.cut),
            acknowledged=int(row.acknowledged), lost=int(row.acknowledged_lost),
            acks_per_s=float(row.acks_per_second), recovered_alone=bool(row.recovered_alone),
            table_read=bool(row.table_read), torn_pages=int(row.torn_pages),
            torn_table_pages=int(row.torn_table_pages),
            model_torn_pages=float(row.model_torn_pages),
            doublewrite_pages=int(row.doublewrite_pages), damaged_pages=int(row.damaged_pages),
            rows_unreadable=int(row.rows_unreadable), rows_updated=int(row.rows_updated),
            updates_in_hold=acks_in_window(leg_file(run, leg, row.cut, "-acks.txt"),
                                           row.cut_after_s, params.tear_delay_ms / 1000),
            unreadable_runs=unreadable_runs(leg_file(run, leg, row.cut, "-rows.txt"),
                                            TORN_ROWS)))
    return DoublewriteLegs(cuts=tuple(cuts))


def findings(run: RecordedRun) -> Findings:
    params = Parameters.of(run)
    cuts = tuple(_cut(row) for row in outcomes(run).itertuples())
    unsafe = [c for c in cuts if c.safety == "unsafe"]
    furthest = max(unsafe, key=lambda c: (c.over_estimate, c.cut))
    return Findings(params=params, cuts=cuts,
                    over_cut_acked_in_window=acked_within(run, furthest, furthest.bound_ms),
                    torn=torn_legs(run, params), doublewrite=doublewrite_legs(run, params))
