"""The consistency-level model: levels as quorums, availability, and the two freshness rules."""

from itertools import combinations
from math import isclose

import pytest

from labs.consistency import model
from labs.errors import UsageError


def test_levels_wait_for_one_a_majority_or_every_replica():
    assert [model.replicas_needed(level, 3) for level in model.LEVELS] == [1, 2, 3]
    assert [model.replicas_needed(level, 5) for level in model.LEVELS] == [1, 3, 5]
    assert model.replicas_needed("QUORUM", 4) == 3


def test_a_level_is_served_while_enough_replicas_are_up():
    table = {(level, up): model.succeeds(level, up, 3) for level in model.LEVELS
             for up in (1, 2, 3)}
    assert table == {("ONE", 1): True, ("ONE", 2): True, ("ONE", 3): True,
                     ("QUORUM", 1): False, ("QUORUM", 2): True, ("QUORUM", 3): True,
                     ("ALL", 1): False, ("ALL", 2): False, ("ALL", 3): True}


def test_overlap_is_r_plus_w_over_n():
    assert model.overlap_guaranteed("QUORUM", "QUORUM", 3)
    assert model.overlap_guaranteed("ONE", "ALL", 3)
    assert not model.overlap_guaranteed("ONE", "QUORUM", 3)
    assert not model.overlap_guaranteed("ONE", "ONE", 3)


def test_the_sharp_rule_needs_more_replicas_read_than_missed():
    assert model.fresh_guaranteed("QUORUM", 1, 3)  # R = 2 > 1 missed
    assert not model.fresh_guaranteed("QUORUM", 2, 3)
    assert not model.fresh_guaranteed("ONE", 1, 3)
    assert model.fresh_guaranteed("ALL", 2, 3)


@pytest.mark.parametrize("level, missed", [(lv, m) for lv in model.LEVELS for m in range(4)])
def test_uniform_stale_probability_counts_the_read_sets_inside_the_missed_ones(level, missed):
    read = model.replicas_needed(level, 3)
    sets = list(combinations(range(3), read))
    inside = sum(set(s) <= set(range(missed)) for s in sets)  # replicas 0..missed-1 missed it
    assert isclose(model.stale_probability_uniform(level, missed, 3), inside / len(sets))
    if model.fresh_guaranteed(level, missed, 3):
        assert model.stale_probability_uniform(level, missed, 3) == 0


def test_bad_levels_and_counts_are_refused_in_one_line():
    with pytest.raises(UsageError, match="consistency level 'TWO'"):
        model.replicas_needed("TWO", 3)
    with pytest.raises(UsageError, match="replicas missed must be between 0 and 3"):
        model.stale_probability_uniform("ONE", 4, 3)
    with pytest.raises(UsageError, match="replication factor must be at least 1"):
        model.replicas_needed("ONE", 0)


def test_the_replication_factor_5_exercise():
    # book/quorum/consistency.md, exercise cl-ex-rf5: two of five replicas stopped.
    served = [level for level in model.LEVELS if model.succeeds(level, 3, 5)]
    assert served == ["ONE", "QUORUM"]
    safe = [(w, r) for w in served for r in served if model.overlap_guaranteed(w, r, 5)]
    assert safe == [("QUORUM", "QUORUM")]
    assert model.overlap_guaranteed("ONE", "ALL", 5)
    assert not model.overlap_guaranteed("ONE", "QUORUM", 5)


def test_the_pages_level_table():
    # book/quorum/consistency.md: "replicas waited for (of 3)" and "nodes that may be down"
    waited = [model.replicas_needed(level, 3) for level in model.LEVELS]
    assert waited == [1, 2, 3]
    may_be_down = [max(down for down in range(4) if model.succeeds(level, 3 - down, 3))
                   for level in model.LEVELS]
    assert may_be_down == [2, 1, 0]
    # "QUORUM writes with QUORUM reads give R + W = 4 > 3, and so do ONE with ALL; ONE with
    # ONE, or ONE with QUORUM, give 2 or 3"
    assert model.overlap_guaranteed("QUORUM", "QUORUM", 3)
    assert model.overlap_guaranteed("ONE", "ALL", 3)
    assert not model.overlap_guaranteed("ONE", "ONE", 3)
    assert not model.overlap_guaranteed("ONE", "QUORUM", 3)
