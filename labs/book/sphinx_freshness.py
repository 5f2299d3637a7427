"""Sphinx extension: a rebuild re-executes the pages whose inputs have changed.

Jupyter Book caches each page's outputs, keyed by the page's own code cells, and Sphinx
re-reads a page only when its source file changed. But a page's output also depends on the
code in labs/ (a chart builder, the renderer) and on the recorded runs in data/: after
`python -m labs run quorum` the quorum pages must show the new run. This extension
fingerprints those inputs by area (every file's path, size and modification time):

    runs:<lab>   the recorded runs of one lab (data/runs/<lab>/, or under $LABS_RUNS_DIR)
    code         labs/, the rest of data/, the class's runs ($LABS_CLASSES_DIR), and the
                 environment variables that choose runs and the class

When an area changed since the last good build, it drops the execution cache and tells
Sphinx which pages are outdated: for `runs:<lab>`, the pages whose code names the lab
("<lab>" in a code cell); for `code`, every page with code. Only those are re-read and
executed again. Editing only a page's text keeps the cache, and a rebuild stays fast.
The fingerprint is saved once a build has succeeded, so a failed build is retried in full.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

from labs import PROJECT_ROOT
from labs.records import runs_root

WATCHED_ENV = ("LABS_RUNS_DIR", "LABS_CLASS", "LABS_CLASSES_DIR")
CODE_AREA = "code"
CODE_CELL = re.compile(r"```\{code-cell\}.*?```", flags=re.S)


def _files_digest(paths, digest=None):
    digest = digest or hashlib.sha256()
    for path in sorted(paths):
        if path.is_file() and "__pycache__" not in path.parts:
            stat = path.stat()
            digest.update(f"{path} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    return digest


def _code_fingerprint(root: Path, runs: Path) -> str:
    """labs/, data/ outside the runs, the class's folder, and the environment."""
    data = [p for p in (root / "data").rglob("*") if runs not in p.parents]
    folders = [root / "labs"] + ([Path(os.environ["LABS_CLASSES_DIR"])]
                                 if os.environ.get("LABS_CLASSES_DIR") else [])
    digest = _files_digest([p for folder in folders for p in folder.rglob("*")] + data)
    for name in WATCHED_ENV:
        digest.update(f"{name}={os.environ.get(name, '')}\n".encode())
    return digest.hexdigest()


def fingerprints(root: Path = PROJECT_ROOT) -> dict[str, str]:
    """One fingerprint per area: `code`, and `runs:<lab>` for each lab with runs."""
    runs = runs_root()
    areas = {CODE_AREA: _code_fingerprint(root, runs)}
    if runs.is_dir():
        for lab in sorted(p for p in runs.iterdir() if p.is_dir()):
            areas[f"runs:{lab.name}"] = _files_digest(lab.rglob("*")).hexdigest()
    return areas


def changed_areas(before: dict[str, str], now: dict[str, str]) -> set[str]:
    return {area for area in before.keys() | now.keys() if before.get(area) != now.get(area)}


def page_is_outdated(source: str, areas: set[str]) -> bool:
    """Whether a page's output can depend on one of the changed areas."""
    code = "\n".join(CODE_CELL.findall(source))
    if not code:
        return False
    if CODE_AREA in areas:
        return True
    labs = {area.split(":", 1)[1] for area in areas if area.startswith("runs:")}
    return any(f'"{lab}"' in code or f"'{lab}'" in code for lab in labs)


def _paths(app) -> tuple[Path, Path]:
    build = Path(app.outdir).parent
    return build / ".jupyter_cache", build / ".inputs-fingerprint.json"


def _on_config_inited(app, config) -> None:
    cache, stamp = _paths(app)
    now = fingerprints()
    try:
        before = json.loads(stamp.read_text())
    except (OSError, ValueError):
        before = {}
    app.labs_fingerprints = now
    app.labs_changed_areas = changed_areas(before, now) if before else {CODE_AREA}
    if app.labs_changed_areas:
        # Safe: the execution cache Jupyter Book keeps in the build folder, rebuilt on demand.
        shutil.rmtree(cache, ignore_errors=True)


def _on_env_get_outdated(app, env, added, changed, removed) -> list[str]:
    areas = app.labs_changed_areas
    if not areas:
        return []
    outdated = []
    for docname in sorted(env.found_docs - added - changed):
        source = Path(env.doc2path(docname))
        if source.suffix == ".md" and page_is_outdated(source.read_text(), areas):
            outdated.append(docname)
    return outdated


def _on_build_finished(app, exception) -> None:
    # With -W --keep-going, warnings fail the build only after this event: count them too.
    if exception is None and not getattr(app, "_warncount", 0):
        _, stamp = _paths(app)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(json.dumps(app.labs_fingerprints, indent=1, sort_keys=True))


def setup(app):
    app.connect("config-inited", _on_config_inited)
    app.connect("env-get-outdated", _on_env_get_outdated)
    app.connect("build-finished", _on_build_finished)
    return {"version": "2.0", "parallel_read_safe": True, "parallel_write_safe": True}
