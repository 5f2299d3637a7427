"""Reading saved tool output from disk: recorded runs' raw/ files, and files a reader saved.

The tool modules (labs/tools/) only parse text; this is where files are read, with one-line
errors for a missing, unreadable or binary file, and `.gz` files (pgbench's per-transaction
logs are kept compressed) opened transparently.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from labs.errors import UsageError
from labs.tools import fio, pgbench


def read_text(path: str | Path, what: str = "file") -> str:
    """The text of a file, decompressed if it ends in .gz; UsageError on anything else."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        if path.name.endswith(".gz"):
            raw = gzip.decompress(raw)
        return raw.decode()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a {what}") from None
    except OSError as error:
        if isinstance(error, gzip.BadGzipFile):
            raise UsageError(f"{path}: not a {what} (a broken .gz)") from None
        raise UsageError(f"{path}: cannot read ({error.strerror or error})") from None
    except (UnicodeDecodeError, EOFError):
        raise UsageError(f"{path}: not a {what} (not text, or a broken .gz)") from None


def parse_fio_file(path: str | Path) -> list[dict[str, Any]]:
    """fio's JSON (or JSON+) output file -> one row per job and direction that did I/O."""
    text = read_text(path, "fio output file")
    return fio.fio_rows(fio.load_fio_json(text, str(path)), str(path))


def pgbench_log_files(folder: str | Path, prefix: str = "pgbench_log") -> list[Path]:
    """The -l files of one pgbench run in `folder`, in thread order."""
    folder = Path(folder)
    names = pgbench.log_file_names([p.name for p in folder.iterdir()], prefix)
    return [folder / name for name in names]


def parse_pgbench_logs(paths: list[Path]) -> pgbench.TransactionLog:
    """pgbench -l files (plain or .gz) -> every transaction of the run."""
    if not paths:
        raise UsageError("no pgbench log files given")
    return pgbench.parse_log_texts([(str(p), read_text(p, "pgbench log")) for p in paths])
