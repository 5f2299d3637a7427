"""How long do export and import take for the largest recorded run, and how large is the file?

    .venv/bin/python benchmarks/export_import.py [--rounds 3]

Exports the largest shipped run (by bytes on disk) with names and addresses removed, as
`python -m labs export` does, then imports the file into a temporary class, as `python -m
labs import --class` does (every check, then the copy). Prints the run's size, the file's
size and the median times. Nothing is written to data/.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from labs import records
from labs.__main__ import main as labs_main
from labs.exchange import export_run
from labs.privacy import local_personal


def size_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    shipped = [records.shipped_run(lab) for lab in records.labs_with_runs()
               if (records.runs_root() / lab / records.SHIPPED_FILE).exists()]
    largest = max(shipped, key=lambda run: size_bytes(run.path))
    exports, imports = [], []
    with tempfile.TemporaryDirectory(prefix="export-import-") as scratch:
        for round_ in range(args.rounds):
            target = Path(scratch) / f"run-{round_}.tar.gz"
            started = time.monotonic()
            export_run(largest, target, participant="bench", personal=local_personal())
            exports.append(time.monotonic() - started)
            os.environ["LABS_CLASSES_DIR"] = str(Path(scratch) / f"classes-{round_}")
            started = time.monotonic()
            if labs_main(["import", str(target), "--class", "bench"]) != 0:
                raise SystemExit("import failed")
            imports.append(time.monotonic() - started)
        file_mb = target.stat().st_size / 1e6
    print(f"largest run: {largest.lab}/{largest.run_id}, {size_bytes(largest.path) / 1e6:.1f} MB "
          f"in {sum(1 for p in largest.path.rglob('*') if p.is_file())} files; export file "
          f"{file_mb:.1f} MB; export {statistics.median(exports):.1f} s, import "
          f"{statistics.median(imports):.1f} s (median of {args.rounds}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
