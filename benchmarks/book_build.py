"""Print book build times (clean, then incremental after editing one page) and page sizes.

    .venv/bin/python benchmarks/book_build.py

Works on a throw-away copy of the project, so the real _build/ is left alone.
"""

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from labs import PROJECT_ROOT


def build(root: Path) -> float:
    started = time.perf_counter()
    subprocess.run([str(Path(sys.executable).with_name("jupyter-book")), "build", str(root),
                    "--builder", "html", "-W", "-n", "--keep-going"],
                   check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "book"
        shutil.copytree(PROJECT_ROOT, root, ignore=shutil.ignore_patterns(
            ".venv", "_build", ".git", "__pycache__", ".pytest_cache"))
        print(f"clean build: {build(root):.1f} s")
        page = root / "book" / "quorum" / "explain.md"
        page.write_text(page.read_text() + "\nOne more sentence.\n")
        print(f"incremental build after editing one page: {build(root):.1f} s")
        pages = sorted((p.stat().st_size, p.relative_to(root / "_build" / "html"))
                       for p in (root / "_build" / "html").rglob("*.html"))
        for size, path in pages[-3:]:
            print(f"page {path}: {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
