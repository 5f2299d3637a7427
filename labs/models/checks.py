"""Argument checks the models share: one-line UsageErrors that name the bad value."""

from __future__ import annotations

import math

import numpy as np

from labs.errors import UsageError


def positive(name: str, value: float) -> float:
    """A finite number above zero, as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UsageError(f"{name} must be a finite number, got {value!r}")
    if value <= 0:
        raise UsageError(f"{name} must be positive, got {value}")
    return float(value)


def whole(name: str, value: int, minimum: int = 0) -> int:
    """A whole number of at least `minimum`, as an int."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise UsageError(f"{name} must be a whole number, got {value!r}")
    if value < minimum:
        raise UsageError(f"{name} must be at least {minimum}, got {value}")
    return int(value)
