"""`python -m labs.book.build`: execute every page and build the static site into _build/html.

Execution errors and Sphinx warnings both fail the build (`-W`, raise_on_error).
With LABS_CLASS=NAME (`make book CLASS=NAME`) every lab page also shows the runs of that
class (data/classes/NAME/, made by `python -m labs import ... --class NAME`).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from labs import PROJECT_ROOT, classes
from labs.errors import LabError


def build_command(root: Path = PROJECT_ROOT) -> list[str]:
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    return [str(jupyter_book), "build", str(root), "--builder", "html", "-W", "-n",
            "--keep-going"]


def main() -> int:
    started = time.monotonic()
    try:
        name = classes.selected_class()  # an unknown class stops here, in one line
    except LabError as error:
        print(f"python -m labs.book.build: error: {error}", file=sys.stderr)
        return 2
    with_class = f", with class {name} ({classes.class_dir(name)})" if name else ""
    print(f"building the book (pages execute from recorded runs and models{with_class})...",
          flush=True)
    result = subprocess.run(build_command(), cwd=PROJECT_ROOT)
    seconds = time.monotonic() - started
    if result.returncode != 0:
        reports = PROJECT_ROOT / "_build" / "html" / "reports"
        print(f"book build FAILED after {seconds:.0f} s "
              f"(execution reports, if any: {reports})", file=sys.stderr)
        return result.returncode
    index = PROJECT_ROOT / "_build" / "html" / "index.html"
    print(f"book built in {seconds:.0f} s: open file://{index}  (or `make serve`)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
