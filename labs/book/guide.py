"""What the instructor's guide (book/appendix/instructors.md) computes: how long each lab took.

    lab_times(registry.labs())   # one row per lab with a page: where it runs, the shipped
                                 # run's profile, host and wall time
    figures(registry.labs())     # the same times as text for the guide's schedules

Times come from the shipped runs' own start and end (run.json), never typed in: a rerun on
another machine takes what it takes, and the guide says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from labs import PROJECT_ROOT, classes, records
from labs.errors import UsageError
from labs.timings import QUICK_RUNS_CSV


def wall_minutes(run: records.RecordedRun) -> float:
    return run.wall_s / 60


def lab_times(labs: Iterable[Any]) -> pd.DataFrame:
    rows = []
    for lab in labs:
        if not lab.book_page:
            continue
        run = records.shipped_run(lab.name)
        host = classes.host_description(run)
        minutes = wall_minutes(run)
        rows.append({
            "lab": lab.name, "needs": lab.needs,
            "shipped run": f"{run.meta['parameters'].get('profile') or 'full'} profile, "
                           f"{host['CPUs']} CPUs"
                           + ("" if host["virtual machine"].startswith(("no", "unknown"))
                              else f", {host['virtual machine']}"),
            "took": "under a minute" if minutes < 1 else f"{minutes:.0f} min"})
    return pd.DataFrame(rows)


def figures(labs: Iterable[Any]) -> dict[str, str]:
    """The shipped runs' wall times, in minutes, keyed `<lab>_min` (dashes as underscores)."""
    times = {}
    for lab in labs:
        if lab.book_page:
            minutes = wall_minutes(records.shipped_run(lab.name))
            times[f"{lab.name.replace('-', '_')}_min"] = f"{max(minutes, 1):.0f}"
    return times


# ------------------------------------------------------------------------------------------
# The intro's "Start here": the chapters in reading order, how long each takes to read and
# to run. Chapters come from _toc.yml; a chapter's labs are those whose page it holds.
# ------------------------------------------------------------------------------------------

QUICK_RUN_COLUMNS = ("lab", "host", "seconds", "boot_included", "measured_on", "commit", "how")
# A reader of technical prose, with charts to look at: a common planning figure.
READING_WORDS_PER_MIN = 200


def quick_run_times(path: Path = QUICK_RUNS_CSV) -> pd.DataFrame:
    """The measured quick-profile times (data/timings/quick-runs.csv), checked."""
    try:
        table = pd.read_csv(path, dtype={"commit": str, "measured_on": str})
    except (OSError, pd.errors.ParserError) as error:
        raise UsageError(f"{path}: cannot read the quick-run times ({error})") from None
    missing = [c for c in QUICK_RUN_COLUMNS if c not in table.columns]
    if missing:
        raise UsageError(f"{path}: missing column {missing[0]!r}")
    seconds = pd.to_numeric(table["seconds"], errors="coerce")
    if seconds.isna().any() or (seconds <= 0).any():
        row = table[seconds.isna() | (seconds <= 0)].iloc[0]
        raise UsageError(f"{path}: lab {row['lab']!r}: seconds must be a positive number")
    return table.assign(seconds=seconds)


def page_words(page: Path) -> int:
    """Words of prose in a MyST page: front matter, code cells and directives' options out."""
    text = page.read_text()
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    text = re.sub(r"```\{code-cell\}.*?```", " ", text, flags=re.S)
    text = re.sub(r"^:[a-z-]+:.*$", " ", text, flags=re.M)
    text = re.sub(r"\{glue:text\}`[^`]*`", "0", text)
    return len(re.findall(r"[A-Za-z0-9][\w'’.-]*", text))


def page_title(page: Path) -> str:
    match = re.search(r"^# (.+)$", page.read_text(), flags=re.M)
    return match.group(1).strip() if match else page.stem


def toc_chapters(toc_path: Path = PROJECT_ROOT / "_toc.yml") -> list[list[str]]:
    """The book's chapters in reading order, each as its pages (first: the explanation)."""
    toc = yaml.safe_load(toc_path.read_text())
    chapters = toc["parts"][0]["chapters"]
    return [[chapter["file"]] + [s["file"] for s in chapter.get("sections", [])]
            for chapter in chapters]


def _quick_time(seconds: float) -> str:
    if seconds < 60:
        return "under a minute"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def start_here_table(labs: Iterable[Any]) -> pd.DataFrame:
    """One row per chapter: its title, reading time, each lab's measured quick time and needs."""
    by_page = {lab.book_page.removesuffix(".md"): lab for lab in labs if lab.book_page}
    quick = quick_run_times()
    rows = []
    for number, pages in enumerate(toc_chapters(), start=1):
        words = sum(page_words(PROJECT_ROOT / f"{page}.md") for page in pages)
        chapter_labs = [by_page[page] for page in pages if page in by_page]
        rows.append({
            "Chapter": f"{number}. {page_title(PROJECT_ROOT / f'{pages[0]}.md')}",
            "Reading": f"{max(1, round(words / READING_WORDS_PER_MIN))} min",
            "Quick lab runs (measured)": "; ".join(
                f"{lab.name}: {_quick_time(row.seconds)} on {row.host}"
                for lab in chapter_labs for row in quick[quick["lab"] == lab.name].itertuples()),
            "What the labs need": "; ".join(f"{lab.name}: {lab.needs}" for lab in chapter_labs),
        })
    return pd.DataFrame(rows)


# The glue key of each lab's measured quick time, written out so that a search for a key
# finds where it is made.
QUICK_KEYS = {
    "write-path": "quick_write_path_min", "commit-settings": "quick_commit_settings_min",
    "power-loss": "quick_power_loss_min", "devices": "quick_devices_min",
    "torn-pages": "quick_torn_pages_min", "doublewrite": "quick_doublewrite_min",
    "caches": "quick_caches_min", "write-mostly": "quick_write_mostly_min",
    "drbd": "quick_drbd_min", "quorum": "quick_quorum_min",
    "consistency": "quick_consistency_min", "quorum-commit": "quick_quorum_commit_min",
}


def quick_figures() -> dict[str, str]:
    """Each lab's measured quick time in whole minutes (at least 1), under its QUICK_KEYS
    key; a lab measured on several hosts gets the longest, the one a schedule must allow for."""
    longest = quick_run_times().groupby("lab")["seconds"].max()
    return {key: f"{max(1, round(longest[lab] / 60))}"
            for lab, key in QUICK_KEYS.items() if lab in longest}