"""The labs this project can run: one package per lab, one entry here per package.

    from labs import registry
    for lab in registry.labs():
        lab.name, lab.description, lab.parameters, lab.book_page, lab.needs
    registry.lab("torn-pages").run_function()    # imports labs/torn_pages/run.py (infra)
    registry.lab("torn-pages").page_module()     # imports labs/torn_pages/page.py (charts)

The command line (`python -m labs run|list`), the live panel and the tests that cover every
lab all read this table. A lab's `__init__.py` is light (names and the parameters class);
what runs the system and what draws the page are imported only when asked for, so building
the book never loads the host, VM or container code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from labs.errors import UsageError
from labs.lab import LabParameters

# The packages, in the order the book presents their chapters. A new lab adds one line.
PACKAGES = (
    "labs.write_path",
    "labs.commit_settings",
    "labs.power_loss",
    "labs.devices",
    "labs.torn_pages",
    "labs.doublewrite",
    "labs.caches",
    "labs.write_mostly",
    "labs.drbd",
    "labs.quorum",
    "labs.consistency",
    "labs.quorum_commit",
    "labs.template",
)


@dataclass(frozen=True)
class Lab:
    name: str  # one name everywhere: `python -m labs run NAME`, data/runs/NAME/
    description: str
    parameters: type[LabParameters]
    package: str
    book_page: str | None  # the page that shows its recorded run, e.g. book/quorum/lab.md
    needs: str  # what the lab host must offer, in one line for `python -m labs list`

    def run_function(self) -> Callable:
        """`run(params, host, progress) -> RecordedRun` (imports the infrastructure)."""
        return importlib.import_module(f"{self.package}.run").run

    def page_module(self) -> ModuleType:
        """The page side: figures, charts, provenance, panel (never the infrastructure)."""
        return importlib.import_module(f"{self.package}.page")


def _describe(package: str) -> Lab:
    module = importlib.import_module(package)
    return Lab(name=module.NAME, description=module.DESCRIPTION, parameters=module.Parameters,
               package=package, book_page=module.BOOK_PAGE, needs=module.NEEDS)


def labs() -> list[Lab]:
    return [_describe(package) for package in PACKAGES]


def lab(name: str) -> Lab:
    for candidate in labs():
        if candidate.name == name:
            return candidate
    known = ", ".join(candidate.name for candidate in labs())
    raise UsageError(f"unknown lab {name!r}; known: {known}")
