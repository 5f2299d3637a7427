"""The one number format every page uses (labs/book/number_text.py)."""

import math

import numpy as np
import pandas as pd
import pytest

from labs.book import number_text as nt


@pytest.mark.parametrize("value", [None, math.nan, pd.NA, np.float64("nan")])
def test_a_missing_value_reads_n_a(value):
    assert nt.number(value) == nt.percent(value) == nt.count(value) == "n/a"


@pytest.mark.parametrize("value, digits, signed, text", [
    (12345.4, 0, False, "12,345"), (0.254, 2, False, "0.25"), (3.2, 0, True, "+3"),
    (-3.2, 0, True, "-3"), (-0.2, 0, True, "0"), (-0.004, 2, False, "0.00"),
    (0, 1, True, "0.0")])
def test_numbers_are_grouped_and_never_read_minus_zero(value, digits, signed, text):
    assert nt.number(value, digits, signed=signed) == text


@pytest.mark.parametrize("share, kwargs, text", [
    (0.123, {}, "12 %"), (0.123, {"signed": True}, "+12 %"),
    (-0.123, {"signed": True}, "-12 %"), (-0.123, {"size_only": True}, "12 %"),
    (0.0004, {}, "0.04 %"), (0.9996, {}, "99.96 %"), (1, {}, "100 %"), (0, {}, "0 %"),
    (-0.004, {"signed": True}, "-0.4 %"), (0.004, {"digits": 1}, "0.4 %"),
    (0.0000001, {}, "0.000 %"), (12.5, {}, "1,250 %")])
def test_a_percentage_has_a_space_and_never_rounds_to_0_or_100(share, kwargs, text):
    assert nt.percent(share, **kwargs) == text


def test_lists_read_as_a_sentence_would():
    assert [nt.listed(x) for x in ([], ["a"], ["a", "b"], ["a", "b", "c"])] == [
        "", "a", "a and b", "a, b and c"]


@pytest.mark.parametrize("value, text", [
    (1234.5, "1,234"), (99.96, "100"), (12.34, "12.3"), (9.996, "10.0"), (1.234, "1.23"),
    (0.9996, "1.00"), (0.254, "0.25"), (-0.254, "-0.25"), (0.0, "0")])
def test_an_automatic_number_keeps_three_significant_digits(value, text):
    assert nt.number(value, None) == text


@pytest.mark.parametrize("value_ms, text", [
    (0.25, "250 µs"), (0.9999, "1.00 ms"), (2.534, "2.53 ms"), (123.4, "123 ms"),
    (999.7, "1.00 s"), (1500, "1.50 s"), (None, "n/a")])
def test_a_duration_takes_the_unit_that_suits_it(value_ms, text):
    assert nt.duration_ms(value_ms) == text


@pytest.mark.parametrize("value_bytes, text", [
    (512, "512 B"), (100.4, "100 B"), (4096, "4.00 KiB"), (1023.6, "1.00 KiB"),
    (317 * 2**20, "317 MiB"), (1.5 * 2**30, "1.50 GiB"), (math.nan, "n/a")])
def test_a_size_takes_the_binary_unit_that_keeps_it_under_1024(value_bytes, text):
    assert nt.size(value_bytes) == text
