"""The formats the DRBD lab page prints its numbers in (labs/drbd/figures.py computes them)."""

from __future__ import annotations


def ms_text(value: float) -> str:
    return f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def mib_s_text(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else (f"{value:.1f}" if value >= 1 else f"{value:.2f}")
