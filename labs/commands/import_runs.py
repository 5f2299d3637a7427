"""`python -m labs import FILE... [--class NAME]`: add exported runs, all of them or none.

Every file is checked completely before anything is written (labs.exchange): a truncated,
tampered or malformed file, a run of a lab this book does not have, a run its page cannot
show, or a run that is already there is refused with one line naming the file and the
reason, and then nothing is imported. Without --class the runs join your own runs
(data/runs/<lab>/), where each lab page shows your newest beside the book's; with
--class they go to data/classes/NAME/<participant>/ for `make book CLASS=NAME`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from labs import classes, records, registry
from labs.errors import LabError
from labs.exchange import (
    ExportRefused,
    ImportBatch,
    RunExport,
    check_duplicates,
    imported_digests,
    place,
)

HELP = "add exported runs to your runs or to a class (checked first; all or nothing)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="files made by `export`")
    parser.add_argument("--class", dest="class_name", metavar="NAME",
                        help="put the runs in this class (made if new) instead of your runs")


def check_feeds_its_page(export: RunExport) -> None:
    """The run must belong to a lab of this book, and its page must be able to show it."""
    try:
        lab = registry.lab(export.lab)
    except LabError:
        raise ExportRefused(export.source, f"lab {export.lab!r} is not in this version of "
                                           "the book") from None
    if lab.book_page is None:
        return
    try:
        table = lab.page_module().headline(export.run)
    except (LabError, KeyError, IndexError, ValueError) as error:
        raise ExportRefused(export.source, f"its results do not fit the {lab.name} page "
                                           f"({str(error).splitlines()[0]})") from None
    if table.empty:
        raise ExportRefused(export.source, f"it measured nothing the {lab.name} page compares")


def destination(root: Path, export: RunExport, in_class: bool) -> Path:
    base = root / export.participant if in_class else root
    return base / export.lab / export.run_id


def main(args: argparse.Namespace) -> int:
    in_class = args.class_name is not None
    root = classes.class_dir(args.class_name) if in_class else records.runs_root()
    started = time.monotonic()
    refusals: list[ExportRefused] = []
    with ImportBatch() as batch:
        exports = []
        for name in args.files:
            try:
                export = batch.read(Path(name))
                check_feeds_its_page(export)
                exports.append(export)
            except ExportRefused as refused:
                refusals.append(refused)
        if not refusals:
            targets = [destination(root, export, in_class) for export in exports]
            try:
                check_duplicates(exports, targets, imported_digests(root))
            except ExportRefused as refused:
                refusals.append(refused)
        if refusals:
            # One line per refused file; the last one is the command's error.
            for refused in refusals[:-1]:
                print(f"python -m labs: error: {refused} (nothing was imported)",
                      file=sys.stderr)
            last = refusals[-1]
            raise ExportRefused(last.path, f"{last.reason} (nothing was imported)")
        try:
            placed = place(exports, targets)
        except OSError as error:  # a full disk, a folder without write permission
            raise LabError(f"import: could not write {error.filename or root} "
                           f"({error.strerror or error}); nothing was imported") from None
    seconds = time.monotonic() - started
    for export, folder in zip(exports, placed, strict=True):
        where = f"class {args.class_name}" if in_class else "your runs"
        print(f"imported {export.lab}/{export.run_id} (participant {export.participant}) "
              f"into {where}: {records.display_path(folder)}")
    print(f"{len(placed)} run(s) imported in {seconds:.1f} s")
    return 0
