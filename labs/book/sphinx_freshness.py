"""Sphinx extension: a rebuild re-executes the pages when what they read has changed.

Jupyter Book caches each page's outputs, keyed by the page's own code cells, so a page is
re-executed only when its code changes. But a lab page's output also depends on the code in
labs/ (a chart builder, the renderer) and on the recorded runs in data/: after
`python -m labs run ...` the page must show the new run. This extension fingerprints those
(every file's path, size and modification time, also under $LABS_RUNS_DIR and
$LABS_CLASSES_DIR when they point elsewhere, plus the environment variables that choose runs
and the class) and drops the execution cache when the fingerprint differs from the last
build's.
Editing only the text of a page keeps the cache, and a rebuild stays fast.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from labs import PROJECT_ROOT

WATCHED = ("labs", "data")
WATCHED_ENV = ("LABS_RUNS_DIR", "LABS_CLASS", "LABS_CLASSES_DIR")


def watched_folders(root: Path = PROJECT_ROOT) -> list[Path]:
    """labs/, data/, and the runs and classes folders when the environment moves them."""
    folders = [root / top for top in WATCHED]
    for name in ("LABS_RUNS_DIR", "LABS_CLASSES_DIR"):
        if os.environ.get(name):
            folders.append(Path(os.environ[name]))
    return folders


def fingerprint(root: Path = PROJECT_ROOT) -> str:
    digest = hashlib.sha256()
    for folder in watched_folders(root):
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                stat = path.stat()
                digest.update(f"{path} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    for name in WATCHED_ENV:
        digest.update(f"{name}={os.environ.get(name, '')}\n".encode())
    return digest.hexdigest()


def _on_config_inited(app, config) -> None:
    cache = Path(app.outdir).parent / ".jupyter_cache"
    stamp = Path(app.outdir).parent / ".inputs-fingerprint"
    current = fingerprint()
    if stamp.exists() and stamp.read_text() == current:
        return
    # Safe: the execution cache Jupyter Book keeps in the build folder, rebuilt on demand.
    shutil.rmtree(cache, ignore_errors=True)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(current)


def setup(app):
    app.connect("config-inited", _on_config_inited)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
