"""labs/doublewrite/model.py: bytes per row, the ON/OFF ratio and its bound, the inverse."""

import pytest

from labs.doublewrite.model import (
    MIB,
    PAGE_BYTES,
    RowWrites,
    elapsed_ratio,
    full_page_image_bytes,
    pages_for_ratio,
    ratio_bound,
)
from labs.errors import UsageError


def test_bytes_per_row_adds_a_copy_of_the_doublewritten_share():
    row = RowWrites(pages_per_row=2.0, doublewrite_share=0.5, redo_bytes_per_row=500)
    assert row.bytes_per_row(False) == 2 * PAGE_BYTES + 500
    assert row.bytes_per_row(True) == 2 * PAGE_BYTES * 1.5 + 500
    assert row.doublewrite_bytes(False) == 0


def test_ratio_approaches_one_plus_share_and_never_reaches_two():
    for share in (0.3, 0.8, 1.0):
        ratios = [RowWrites(p, share, 600).bytes_ratio() for p in (0.001, 0.1, 10, 1000)]
        assert ratios == sorted(ratios)  # more page writes per row: closer to the bound
        assert ratios[-1] < 1 + share <= ratio_bound()
        assert ratios[-1] == pytest.approx(1 + share, abs=1e-3)


def test_no_page_writes_means_no_cost():
    assert RowWrites(0.0, 1.0, 600).bytes_ratio() == 1.0


def test_other_bytes_dilute_the_ratio():
    plain = RowWrites(1.0, 1.0, 500).bytes_ratio()
    assert RowWrites(1.0, 1.0, 500, other_bytes_per_row=5000).bytes_ratio() < plain


def test_rows_per_second_is_the_limit_over_the_bytes():
    row = RowWrites(1.0, 1.0, 0.0)
    assert row.rows_per_second(16, False) == pytest.approx(16 * MIB / PAGE_BYTES)
    assert row.rows_per_second(16, True) == pytest.approx(16 * MIB / PAGE_BYTES / 2)
    with pytest.raises(UsageError):
        row.rows_per_second(0, True)


def test_pages_for_ratio_inverts_the_model():
    for ratio, share, redo in ((1.1, 1.0, 600), (1.5, 0.8, 2000), (1.9, 1.0, 100)):
        pages = pages_for_ratio(ratio, share, redo)
        assert RowWrites(pages, share, redo).bytes_ratio() == pytest.approx(ratio)
    with pytest.raises(UsageError):
        pages_for_ratio(2.1, 1.0, 600)  # above 1 + share: no number of pages gets there


def test_bad_inputs_are_usage_errors():
    with pytest.raises(UsageError):
        RowWrites(1.0, 1.5, 0.0)
    with pytest.raises(UsageError):
        RowWrites(-1.0, 0.5, 0.0)
    with pytest.raises(UsageError):
        RowWrites(0.0, 0.5, 0.0).bytes_ratio()
    with pytest.raises(UsageError):
        elapsed_ratio(0, 1)
    with pytest.raises(UsageError):
        full_page_image_bytes(100, 0)


def test_the_articles_times_give_its_ratio():
    assert elapsed_ratio(122 * 60 + 42, 58 * 60 + 12) == pytest.approx(2.108, abs=1e-3)
    assert full_page_image_bytes(4000, 0.5) == 8000
