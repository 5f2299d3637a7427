"""A class on the built page, in a real browser, and the site from a sub-path and a file.

Two quorum runs are recorded on this machine with the lab's own command, exported by two
participants (`python -m labs export`) and imported into a class (`python -m labs import
--class`); one of them is also imported as the reader's own run. The quorum lab page is then
built with that class (LABS_CLASS, as `make book CLASS=...` sets it) in a copy of the book
that holds only this page, assembled as `make site` does, served from a sub-path, and opened
in chromium with the network cut off, over HTTP and as a file.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, run_labs, small_book
from test_book import open_page, outside_requests, severe_errors

from labs import records
from labs.book import site

CLASS = "workshop"
PEOPLE = ("ada", "grace")
PAGE = "book/quorum/lab.html"
SUB_PATH = "courses/storage/2026"


@pytest.fixture(scope="module")
def class_site(tmp_path_factory, figures_module):
    base = tmp_path_factory.mktemp("classbook")
    machine, reader = base / "machine-runs", base / "reader-runs"
    env = {"LABS_RUNS_DIR": str(machine), "LABS_CLASSES_DIR": str(base / "classes"),
           "LABS_INVENTORY": str(base / "hosts.toml")}
    (base / "hosts.toml").write_text("")
    exports = []
    for seed, who in enumerate(PEOPLE, start=21):
        made = run_labs("run", "quorum", "--quick", "--seed", str(seed), env=env)
        assert made.returncode == 0, made.stderr
        run_id = Path(made.stdout.strip().splitlines()[-1].split(": ", 1)[1]).name
        target = base / f"{who}.tar.gz"
        exported = run_labs("export", "quorum", "--run", run_id, "-o", str(target),
                            "--label", who, env=env)
        assert exported.returncode == 0, exported.stderr
        exports.append(target)
    imported = run_labs("import", *map(str, exports), "--class", CLASS, env=env)
    assert imported.returncode == 0, imported.stderr
    for lab in ("quorum", "torn-pages", "write-mostly"):  # the shipped runs, and SHIPPED
        shipped = records.shipped_run(lab)
        shutil.copytree(shipped.path, reader / lab / shipped.run_id)
        shutil.copy(shipped.path.parent / records.SHIPPED_FILE, reader / lab)
    mine = run_labs("import", str(exports[1]), env={**env, "LABS_RUNS_DIR": str(reader)})
    assert mine.returncode == 0, mine.stderr
    book = small_book(base / "book", ["quorum/lab.md"])
    started = time.monotonic()
    built = subprocess.run(
        [str(Path(sys.executable).with_name("jupyter-book")), "build", str(book), "--builder",
         "html", "-W", "-n", "--keep-going"], cwd=book, capture_output=True, text=True,
        timeout=1200, env={**os.environ, **env, "LABS_RUNS_DIR": str(reader),
                           "LABS_CLASS": CLASS,
                           "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT),
                                                          os.environ.get("PYTHONPATH", "")])})
    assert built.returncode == 0, (built.stdout + built.stderr)[-4000:]
    figures_module(f"one-page book with a class of {len(PEOPLE)}: built in "
                   f"{time.monotonic() - started:.0f} s")
    published = site.assemble(book / "_build" / "html", base / "www" / SUB_PATH)
    return {"base": base, "site": published, "www": base / "www"}


@pytest.fixture(scope="module")
def figures_module(request):
    from conftest import report

    return lambda message: report(request.config, message)


@pytest.fixture(scope="module")
def www_url(class_site):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler,
                                directory=str(class_site["www"]))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/{SUB_PATH}"
    server.shutdown()


POINTS_OF = """
    const chart = [...document.querySelectorAll('.labs-chart')].find(
        c => c.dataset.chartTitle.startsWith(arguments[0]));
    if (!chart) { return null; }
    return [...chart.querySelectorAll('svg [aria-roledescription="point"]')]
        .map(p => p.getAttribute('aria-label') || '');"""


@pytest.mark.parametrize("mode", ["http-sub-path", "file"])
def test_the_class_chart_has_every_participants_run(browser, class_site, www_url, mode):
    url = (f"{www_url}/{PAGE}" if mode == "http-sub-path"
           else (class_site["site"] / PAGE).resolve().as_uri())
    open_page(browser, url)
    assert severe_errors(browser) == []
    assert outside_requests(browser) == []
    points = browser.execute_script(POINTS_OF, f"Class {CLASS}")
    assert points is not None, "no class chart on the page"
    for who in PEOPLE:
        mine = [p for p in points if f"label: {who}:" in p]
        assert len(mine) == 3, (who, points)  # one point per measure: 3 panels
    book = [p for p in points if "the book's run" in p]
    assert len(book) == 3
    beside = browser.execute_script(POINTS_OF, "Your run beside the book's")
    assert any("your run" in p for p in beside) and any("the book's run" in p for p in beside)
    text = browser.find_element("tag name", "main").text
    assert "2 runs of this lab from 2 participants" in text
    for who in PEOPLE:
        assert who in text  # the table of hosts names every participant
    assert "kernel" in text and "virtual machine" in text


def test_the_assembled_site_links_only_within_itself(class_site):
    assert site.link_problems(class_site["site"]) == []
    assert (class_site["site"] / ".nojekyll").exists()


def test_link_problems_finds_what_breaks_on_a_sub_path(tmp_path):
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "ok.js").write_text("")
    (tmp_path / "page.html").write_text(
        '<a href="other.html">x</a><a href="/root.html">r</a>'
        '<script src="_static/ok.js"></script><script src="https://cdn.example/v.js"></script>'
        '<a href="https://example.org/ref">a reference</a><img src="missing.png">')
    problems = site.link_problems(tmp_path)
    assert len(problems) == 4, problems
    assert any("other.html (no such file)" in p for p in problems)
    assert any("/root.html (absolute" in p for p in problems)
    assert any("cdn.example" in p and "another server" in p for p in problems)
    assert any("missing.png" in p for p in problems)


def test_the_publishing_workflow_builds_with_make_site_and_publishes_its_folder():
    import yaml

    workflow = yaml.safe_load((PROJECT_ROOT / ".github" / "workflows" / "site.yml").read_text())
    assert workflow[True]["push"]["branches"] == ["main"]  # YAML reads the key `on` as True
    steps = workflow["jobs"]["build"]["steps"]
    assert any("make site" in step.get("run", "") for step in steps)
    upload = next(s for s in steps if s.get("uses", "").startswith(
        "actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/site"
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    assert "site:" in makefile and "labs.book.site" in makefile
    deploy = workflow["jobs"]["deploy"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
