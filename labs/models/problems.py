"""Generated practice problems, in the spirit of OSTEP's homework simulators (shared shape).

A chapter's problem module declares its kinds, each a generator (seeded numbers), a text
(the question, stating every number it needs) and a solver (the worked answer, computed by
the chapter's model), and calls `make(...)`. Same kind and seed, same problem.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from labs.errors import UsageError


@dataclass(frozen=True)
class Solution:
    text: str
    numbers: dict


@dataclass(frozen=True)
class Kind:
    generate: Callable[[np.random.Generator], dict]
    text: Callable[[dict], str]
    solve: Callable[[dict], Solution]


@dataclass(frozen=True)
class Problem:
    kind: str
    seed: int
    params: dict = field(hash=False)
    text: str
    solver: Callable[[dict], Solution] = field(repr=False, compare=False, hash=False)

    def solve(self) -> Solution:
        solution = self.solver(self.params)
        return replace(solution, text=wrap_long_lines(solution.text))


LINE_WIDTH = 78  # a terminal's width, and a book page's code block without a scroll bar


def wrap_long_lines(text: str) -> str:
    """Wrap each line longer than LINE_WIDTH on its own, keeping its indentation; shorter
    lines (tables, aligned columns) stay exactly as they are."""
    out = []
    for line in text.splitlines():
        if len(line) <= LINE_WIDTH:
            out.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip())]
        out.append(textwrap.fill(line.strip(), LINE_WIDTH, initial_indent=indent,
                                 subsequent_indent=indent + "  "))
    return "\n".join(out)


def make(kinds: dict[str, Kind], kind: str, seed: int, again: str) -> Problem:
    """The problem of `kind` from `seed`; `again` says how to print it again (may use
    {kind} and {seed})."""
    if kind not in kinds:
        raise UsageError(f"unknown problem kind {kind!r}; choose one of {', '.join(kinds)}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise UsageError(f"--seed must be a whole number >= 0, got {seed!r}")
    seed = int(seed)
    # The kind is mixed into the stream, so seed 1 of two kinds are unrelated draws.
    rng = np.random.default_rng([seed, list(kinds).index(kind)])
    chosen = kinds[kind]
    params = chosen.generate(rng)
    text = wrap_long_lines(chosen.text(params) + "\n" + again.format(kind=kind, seed=seed))
    return Problem(kind, seed, params, text, chosen.solve)
