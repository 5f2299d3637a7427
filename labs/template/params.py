"""The template lab's parameters."""

from __future__ import annotations

from dataclasses import dataclass

from labs.errors import UsageError
from labs.lab import LabParameters, option


@dataclass
class Parameters(LabParameters):
    LAB = "template"
    PROFILES = {"quick": {"blocks": (1, 4)}, "full": {}}

    block_kib: int = option(64, "dd block size in KiB", minimum=4, maximum=4096)
    blocks: tuple[int, ...] = option((1, 4, 16), "how many blocks each file gets",
                                     minimum=1, maximum=1024)

    def check(self) -> None:
        if not self.blocks:
            raise UsageError("--blocks: give at least one count, e.g. 1,4,16")
