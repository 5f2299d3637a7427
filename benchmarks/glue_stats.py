"""What the pages glue in: keys, uses, and the values that are words rather than numbers.

    .venv/bin/python benchmarks/glue_stats.py            # after `make book`
    .venv/bin/python benchmarks/glue_stats.py --list     # and every worded value

Reads the glued values of the built book (_build/jupyter_execute/**/*.glue.json) and the
`{glue:text}` roles of its Markdown pages. A value is "worded" when it has no digit in it
("inside", "off and on"), and "long" when it has more than five words. The book's target
for both is none: the words are the pages' own, the glue carries numbers, charts and tables.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from labs.book import glue as book_glue

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = ROOT / "_build" / "jupyter_execute"
GLUE_ROLE = re.compile(r"\{glue(?::text)?\}`([^`]+)`")
LONG_WORDS = 5


def glued_values() -> dict[str, dict[str, str]]:
    """page -> key -> the value as text (charts and tables are left out)."""
    return book_glue.glued_values(EXECUTED)


def glue_uses() -> dict[str, list[str]]:
    """page -> every key its Markdown glues, in order, repeats kept."""
    return {path.relative_to(ROOT).as_posix().removesuffix(".md"):
            GLUE_ROLE.findall(path.read_text())
            for path in sorted((ROOT / "book").rglob("*.md"))}


def worded(text: str) -> bool:
    return not re.search(r"\d", text)


def long(text: str) -> bool:
    return len(text.split()) > LONG_WORDS


def main(argv: list[str]) -> int:
    if not EXECUTED.is_dir():
        print("no built book: run `make book` first", file=sys.stderr)
        return 2
    values, uses = glued_values(), glue_uses()
    text_keys = sum(len(v) for v in values.values())
    role_uses = sum(len(u) for u in uses.values())
    wordy = [(page, key, text) for page, keys in values.items() for key, text in keys.items()
             if worded(text) and key in uses.get(page, [])]
    lengthy = [(page, key, text) for page, keys in values.items()
               for key, text in keys.items() if long(text) and key in uses.get(page, [])]
    print(f"text values glued: {text_keys} keys over {len(values)} pages; "
          f"{role_uses} {{glue:text}} uses in the Markdown")
    print(f"used values with no digit in them: {len(wordy)}")
    print(f"used values over {LONG_WORDS} words: {len(lengthy)}")
    if "--list" in argv:
        for page, key, text in sorted(set(wordy) | set(lengthy)):
            print(f"  {page}: {key} = {text[:100]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
