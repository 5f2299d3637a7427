"""The quorum model against hand-computed cases and against its own simulation."""

import math

import numpy as np
import pytest

from labs.errors import UsageError
from labs.models import quorum as model

# The table of smallest quorums in Martin.S, "Aurora MySQL Quorum model" (2022):
# (N, R, W) for N = 1..7, typed here from the article, not from the model.
ARTICLE_TABLE = [(1, 1, 1), (2, 1, 2), (3, 2, 2), (4, 2, 3), (5, 3, 3), (6, 3, 4), (7, 4, 4)]


def test_smallest_quorums_match_the_article():
    rows = model.quorum_table(7)
    assert [(r["nodes"], r["read"], r["write"]) for r in rows] == ARTICLE_TABLE


def test_closed_form_agrees_with_search():
    for row in model.quorum_table(15):
        assert model.smallest_valid_quorum(row["nodes"]) == (row["read"], row["write"])


@pytest.mark.parametrize(("n", "w", "r", "overlap", "majority"), [
    (6, 4, 3, True, True),
    (6, 3, 4, True, False),   # 3 is not more than half of 6
    (6, 4, 2, False, True),   # 2 + 4 = 6 is not more than 6
    (3, 2, 2, True, True),
    (1, 1, 1, True, True),
    (4, 2, 2, False, False),
])
def test_rules(n, w, r, overlap, majority):
    report = model.describe(n, w, r).as_dict()
    assert report["rules"] == {"read_write_overlap": overlap, "write_majority": majority}
    assert report["valid"] == (overlap and majority)
    assert report["write_tolerates"] == n - w
    assert report["read_tolerates"] == n - r


def test_aurora_survives_an_az_and_reads_through_az_plus_one():
    report = model.describe(6, 4, 3, azs=3).as_dict()
    assert report["nodes_per_az"] == [2, 2, 2]
    assert report["lose_az"] == {"write": True, "read": True}
    assert report["lose_az_plus_one"] == {"write": False, "read": True}


def test_uneven_azs_take_the_worst_zone():
    # 7 nodes over 3 AZs: 3, 2, 2. Losing the 3-node AZ leaves 4, exactly W.
    report = model.describe(7, 4, 4, azs=3).as_dict()
    assert report["nodes_per_az"] == [3, 2, 2]
    assert report["lose_az"] == {"write": True, "read": True}
    assert report["lose_az_plus_one"] == {"write": False, "read": False}


def test_three_copies_over_two_azs_cannot_write_after_losing_the_big_one():
    report = model.describe(3, 2, 2, azs=2).as_dict()
    assert report["lose_az"] == {"write": False, "read": False}


def test_single_az_loses_everything():
    report = model.describe(3, 2, 2, azs=1).as_dict()
    assert report["lose_az"] == {"write": False, "read": False}


@pytest.mark.parametrize(("args", "fragment"), [
    ((3, 4, 1), "--write 4 is larger than --nodes 3"),
    ((3, 2, 4), "--read 4 is larger than --nodes 3"),
    ((0, 1, 1), "--nodes must be at least 1, got 0"),
    ((3, -1, 1), "--write must be at least 1, got -1"),
    ((3, 2, 2, 4), "--azs 4 is larger than --nodes 3"),
    ((3, 2, 2, 0), "--azs must be at least 1"),
    ((3.5, 2, 2), "--nodes must be a whole number"),
])
def test_bad_counts_name_the_bad_value(args, fragment):
    with pytest.raises(UsageError, match=fragment):
        model.describe(*args)


# --- exact probabilities, computed by hand ---------------------------------------------


def test_three_nodes_majority_by_hand():
    # Unavailable when 2 or 3 of 3 are down: 3 p^2 (1-p) + p^3.
    p = 0.1
    expected = 3 * p**2 * (1 - p) + p**3
    assert model.p_fewer_than_up(3, 2, p) == pytest.approx(expected, rel=1e-12)


def test_single_copy():
    assert model.p_fewer_than_up(1, 1, 0.2) == pytest.approx(0.2)


def test_az_outage_by_hand():
    # 2 nodes, 2 AZs (one node each), need both, no node failures: fails if either AZ out.
    q = 0.1
    assert model.p_fewer_than_up(2, 2, 0.0, azs=2, p_az=q) == pytest.approx(1 - (1 - q) ** 2)
    # Need one: fails only if both AZs out.
    assert model.p_fewer_than_up(2, 1, 0.0, azs=2, p_az=q) == pytest.approx(q**2)


def test_aurora_writes_with_az_outages_by_hand():
    # 6 nodes, 2 per AZ, W = 4, no node failures: writes stop iff 2 or 3 AZs are out.
    q = 0.05
    expected = 3 * q**2 * (1 - q) + q**3
    got = model.unavailability(6, 4, 3, p_node=0.0, azs=3, p_az=q)
    assert got["p_write_unavailable"] == pytest.approx(expected, rel=1e-12)
    # Reads need 3: also stop only when 2 or more AZs are out (one AZ leaves 4 >= 3).
    assert got["p_read_unavailable"] == pytest.approx(expected, rel=1e-12)


def test_probability_edges():
    assert model.p_fewer_than_up(6, 4, 0.0) == 0.0
    assert model.p_fewer_than_up(6, 4, 1.0) == 1.0
    assert model.p_fewer_than_up(6, 4, 0.3, azs=3, p_az=1.0) == 1.0


@pytest.mark.parametrize(("n", "w", "r", "z", "p", "q"), [
    (6, 4, 3, 3, 0.1, 0.05),
    (5, 3, 3, 3, 0.2, 0.0),
    (7, 4, 4, 2, 0.05, 0.02),
])
def test_monte_carlo_agrees_with_exact_within_its_interval(n, w, r, z, p, q):
    # A 95 % interval misses the truth 1 time in 20 by design, so the test uses the
    # simulation's own 99.9 % Wilson interval: a false alarm is then 1 in 1,000 per check,
    # while a wrong model (see the next test) lands far outside.
    estimate = model.simulate_unavailability(n, w, r, p, z, q, trials=400_000,
                                             rng=np.random.default_rng(12345))
    exact = model.unavailability(n, w, r, p, z, q)
    for op in ("write", "read"):
        hits = getattr(estimate, f"{op}_failures")
        low, high = model.wilson_interval(hits, estimate.trials, z=3.2905)
        assert low <= exact[f"p_{op}_unavailable"] <= high, op


def test_the_interval_check_catches_an_off_by_one_model():
    estimate = model.simulate_unavailability(6, 4, 3, 0.1, 3, 0.05, trials=400_000,
                                             rng=np.random.default_rng(12345))
    low, high = model.wilson_interval(estimate.write_failures, estimate.trials, z=3.2905)
    wrong = model.p_fewer_than_up(6, 3, 0.1, 3, 0.05)  # W - 1 instead of W
    assert not low <= wrong <= high


def test_monte_carlo_is_reproducible_with_a_seed():
    a = model.simulate_unavailability(6, 4, 3, 0.1, 3, 0.01, trials=50_000,
                                      rng=np.random.default_rng(7))
    b = model.simulate_unavailability(6, 4, 3, 0.1, 3, 0.01, trials=50_000,
                                      rng=np.random.default_rng(7))
    assert a == b


def test_monte_carlo_demands_a_seeded_generator():
    with pytest.raises(ValueError, match="seeded"):
        model.simulate_unavailability(6, 4, 3, 0.1, trials=10)


def test_wilson_interval_contains_the_estimate_and_is_sane_at_zero():
    low, high = model.wilson_interval(0, 1000)
    assert low == 0.0 and 0 < high < 0.01
    low, high = model.wilson_interval(50, 1000)
    assert low < 0.05 < high


# --- durability ------------------------------------------------------------------------


def test_single_copy_loss_is_exponential():
    # One copy, failure rate l: P(lost within t) = 1 - exp(-l t), mean 1/l.
    generator = model.failed_copies_chain(1, 1, failure_rate_per_hour=0.01, repair_hours=5)
    assert model.p_reach_within(generator, 50) == pytest.approx(1 - math.exp(-0.5), rel=1e-9)
    assert model.mean_hours_to_reach(generator) == pytest.approx(100.0)


def test_two_copies_mean_time_by_hand():
    # States 0 -> 1 at 2l, 1 -> 0 at m, 1 -> lost at l. Mean from 0: (3l + m) / (2 l^2).
    lam, mu = 0.01, 0.5
    generator = model.failed_copies_chain(2, 2, lam, 1 / mu)
    assert model.mean_hours_to_reach(generator) == pytest.approx((3 * lam + mu) / (2 * lam**2))


def test_transient_probability_matches_a_direct_matrix_exponential():
    generator = model.failed_copies_chain(5, 3, 0.05, 4.0)
    values, vectors = np.linalg.eig(generator)
    direct = (vectors @ np.diag(np.exp(values * 30.0)) @ np.linalg.inv(vectors)).real
    assert model.p_reach_within(generator, 30.0) == pytest.approx(1 - direct[0].sum(), rel=1e-9)


def test_faster_repair_lowers_risk_and_six_copies_beat_three():
    rate = 1 / (24 * 365)
    slow = model.durability_risk(6, 4, rate, repair_hours=24, horizon_hours=8760)
    fast = model.durability_risk(6, 4, rate, repair_hours=10 / 3600, horizon_hours=8760)
    assert fast["p_write_quorum_lost"] < slow["p_write_quorum_lost"]
    three = model.durability_risk(3, 2, rate, repair_hours=24, horizon_hours=8760)
    assert slow["p_data_possibly_lost"] < three["p_data_possibly_lost"]


def test_rare_event_probability_matches_its_mean_time():
    # For rare events the waiting time is close to exponential: P ~ 1 - exp(-T/mean).
    risk = model.durability_risk(6, 4, 1 / (24 * 365), 24, 8760)
    from_mean = -math.expm1(-8760 / risk["mean_hours_to_write_quorum_lost"])
    assert risk["p_write_quorum_lost"] == pytest.approx(from_mean, rel=0.01)


# --- write latency ---------------------------------------------------------------------


def test_kth_ack_of_identical_replicas_matches_the_binomial():
    replicas = model.replicas_over_azs(3, [1.0])
    t = np.array([1.4])
    p = replicas[0].cdf(t)[0]
    # Second fastest of 3 has arrived when at least 2 answered.
    expected = 3 * p**2 * (1 - p) + p**3
    assert model.kth_ack_cdf(replicas, 2, t)[0] == pytest.approx(expected, rel=1e-12)


def test_kth_ack_cdf_matches_simulation():
    replicas = model.replicas_over_azs(6, [0.5, 0.8, 4.0])
    samples = model.simulate_kth_ack(replicas, 4, 200_000, np.random.default_rng(3))
    for t in (1.2, 1.6, 2.5):
        empirical = (samples <= t).mean()
        half_width = 1.96 * math.sqrt(empirical * (1 - empirical) / samples.size) + 1e-3
        assert abs(model.kth_ack_cdf(replicas, 4, np.array([t]))[0] - empirical) < half_width


def test_fourth_of_six_hides_the_slow_zone():
    replicas = model.replicas_over_azs(6, [0.5, 0.8, 4.0])
    fourth = model.kth_ack_quantile(replicas, 4, 0.5)
    fifth = model.kth_ack_quantile(replicas, 5, 0.5)
    assert fourth < 4.0 < fifth  # the 5th answer must come from the 4 ms zone
