"""`python -m labs.book.site`: the static site, ready for any static host (`make site`).

Builds the book (labs.book.build), then copies _build/html to _build/site and checks it:
every link, script, stylesheet and image in every page is relative and points at a file
that is there, so the folder works as it is from a sub-path of any web server
(https://example.org/some/path/) and opened straight from disk (file://). Nothing is loaded
from another server: the chart libraries are bundled (labs.book.sphinx_offline). A
`.nojekyll` file keeps GitHub Pages from hiding the folders whose name starts with "_".

    python -m labs.book.site              # build, assemble, check; prints the folder
    python -m labs.book.site --no-build   # assemble and check the last build only
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

from labs import PROJECT_ROOT
from labs.book import build

LINK = re.compile(r"""<(?P<tag>a|link|script|img|source|iframe)\b[^>]*?\s(?P<attr>href|src)=
                      (?P<quote>["'])(?P<url>.*?)(?P=quote)""", re.I | re.S | re.X)
LOADED_TAGS = {"link", "script", "img", "source", "iframe"}  # fetched when the page opens
SKIPPED_FILES = {".buildinfo"}


class SiteError(Exception):
    """The built site would not work from a sub-path or from file://."""


def assemble(html_dir: Path, site_dir: Path) -> Path:
    """A fresh copy of the built html in `site_dir`, with .nojekyll."""
    if not (html_dir / "index.html").is_file():
        raise SiteError(f"{html_dir}: no built book (run `make book` first)")
    if site_dir.exists():
        # Safe: the site folder this command made last time, under the build folder.
        shutil.rmtree(site_dir)
    shutil.copytree(html_dir, site_dir, ignore=shutil.ignore_patterns(*SKIPPED_FILES))
    (site_dir / ".nojekyll").write_text("")
    return site_dir


def link_problems(site_dir: Path) -> list[str]:
    """Every link that would break on a sub-path or from a file, as 'page: url (why)'."""
    problems = []
    for page in sorted(site_dir.rglob("*.html")):
        if page.relative_to(site_dir).parts[0] == "_static":
            continue  # the theme's template snippets, not pages
        text = page.read_text(errors="replace")
        for match in LINK.finditer(text):
            tag, url = match["tag"].lower(), match["url"].strip()
            parts = urlsplit(url)
            where = f"{page.relative_to(site_dir)}: {url[:80]}"
            if parts.scheme in ("data", "mailto", "javascript") or url.startswith("#") or not url:
                continue
            if parts.scheme in ("http", "https") or url.startswith("//"):
                if tag in LOADED_TAGS and not (tag == "link" and _is_plain_link(match[0])):
                    problems.append(f"{where} (loads from another server)")
                continue  # a link the reader may follow to a reference: fine
            if parts.scheme or url.startswith("/"):
                problems.append(f"{where} (absolute: breaks on a sub-path or from a file)")
                continue
            target = (page.parent / unquote(parts.path)).resolve()
            if not target.is_relative_to(site_dir.resolve()):
                problems.append(f"{where} (leaves the site)")
            elif not target.exists():
                problems.append(f"{where} (no such file)")
            elif target.is_dir() and not (target / "index.html").exists():
                problems.append(f"{where} (a folder without index.html: fails from file://)")
    return problems


def _is_plain_link(element: str) -> bool:
    """<link rel="canonical|alternate|..."> names a page; only stylesheets, icons and
    preloads are fetched."""
    rel = re.search(r"""rel=["']([^"']*)["']""", element, re.I)
    fetched = {"stylesheet", "icon", "preload", "modulepreload", "prefetch", "manifest"}
    return rel is not None and not set(rel.group(1).lower().split()) & fetched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labs.book.site", description=__doc__
                                     .splitlines()[0])
    parser.add_argument("--no-build", action="store_true",
                        help="use the last build in _build/html instead of building")
    parser.add_argument("-o", "--output", default=str(PROJECT_ROOT / "_build" / "site"),
                        help="where to put the site (default: _build/site)")
    args = parser.parse_args(argv)
    if not args.no_build:
        code = build.main()
        if code:
            return code
    try:
        site = assemble(PROJECT_ROOT / "_build" / "html", Path(args.output))
        problems = link_problems(site)
        if problems:
            raise SiteError(f"{len(problems)} link(s) would break; first: {problems[0]}")
    except SiteError as error:
        print(f"python -m labs.book.site: error: {error}", file=sys.stderr)
        return 1
    pages = len([p for p in site.rglob("*.html") if p.relative_to(site).parts[0] != "_static"])
    size_mb = sum(p.stat().st_size for p in site.rglob("*") if p.is_file()) / 1e6
    print(f"site ready: {site} ({pages} pages, {size_mb:.1f} MB). Copy the folder as it is to "
          "any static host, at any path, or open index.html from disk.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
