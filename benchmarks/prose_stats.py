"""How readable each page of the built book is: words, reading time, long sentences, caveats.

    .venv/bin/python benchmarks/prose_stats.py            # after `make book`

Reads _build/html, keeps the running text of each page's main column (paragraphs and list
items; not code, tables, charts, folded boxes or exercises), splits it into sentences and
prints, per page: words, reading minutes (200 words a minute), sentences, the share over 35
words, the longest, the caveat sentences (phrases that say what a run cannot tell), and the
glossary links. The targets the book writes to: at most 10 % of sentences over 35 words,
at most 2 caveat sentences in a page's main text.
"""

from __future__ import annotations

import re
import sys
from html import unescape
from pathlib import Path

from labs.book.guide import toc_chapters

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
LONG_WORDS = 35
CAVEATS = re.compile(r"cannot tell|does not show why|cannot separate|\bnoise\b|cannot say|"
                     r"not reproduced|does not explain|too few to", re.I)
FOLDED = re.compile(r'<(div|details)[^>]*class="[^"]*(dropdown|toggle|exercise|solution)'
                    r'[^"]*"[^>]*>.*?</\1>', re.S)


def toc_pages() -> list[str]:
    """The intro, then every chapter's pages in reading order (the appendix left out)."""
    return ["book/intro"] + [page for pages in toc_chapters() for page in pages]


def running_text(html: str) -> str:
    main = html.split('<article class="bd-article">', 1)[-1].split('</article>', 1)[0]
    main = re.sub(r'<p class="admonition-title">.*?</p>', " ", main, flags=re.S)
    main = main.split('<div class="toctree-wrapper', 1)[0]  # the intro's table of contents
    for tag in ("script", "style", "pre", "table", "code"):
        main = re.sub(rf"<{tag}\b.*?</{tag}>", " ", main, flags=re.S | re.I)
    main = FOLDED.sub(" ", main)
    blocks = re.findall(r"<(?:p|li)\b[^>]*>(.*?)</(?:p|li)>", main, flags=re.S)
    return "\n".join(unescape(re.sub(r"<[^>]+>", " ", block)) for block in blocks)


def sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z(\"“])", re.sub(r"\s+", " ", text))
    return [p for p in parts if len(p.split()) >= 3]


def page_stats(page: str) -> dict:
    html = (SITE / f"{page}.html").read_text()
    said = sentences(running_text(html))
    lengths = [len(s.split()) for s in said]
    words = sum(lengths)
    return {"page": page, "words": words, "reading_min": round(words / 200),
            "sentences": len(said),
            "over_35_pct": 100 * sum(n > LONG_WORDS for n in lengths) / max(1, len(said)),
            "longest": max(lengths, default=0),
            "caveats": sum(bool(CAVEATS.search(s)) for s in said),
            "terms": html.count('class="reference internal" href="../appendix/glossary.html#term-')
            + html.count('href="appendix/glossary.html#term-')}


def main() -> int:
    if not (SITE / "index.html").exists():
        print("prose_stats: no built site; run `make book` first", file=sys.stderr)
        return 2
    rows = [page_stats(page) for page in toc_pages()]
    print(f"{'page':38} {'words':>6} {'min':>4} {'sent':>5} {'>35w %':>7} {'max':>4} "
          f"{'cav':>4} {'terms':>5}")
    for r in rows:
        print(f"{r['page']:38} {r['words']:6d} {r['reading_min']:4d} {r['sentences']:5d} "
              f"{r['over_35_pct']:7.1f} {r['longest']:4d} {r['caveats']:4d} {r['terms']:5d}")
    total = sum(r["sentences"] for r in rows)
    long_total = sum(r["over_35_pct"] * r["sentences"] / 100 for r in rows)
    print(f"all pages: {total} sentences, {100 * long_total / max(1, total):.1f} % over "
          f"{LONG_WORDS} words")
    return 0


if __name__ == "__main__":
    sys.exit(main())
