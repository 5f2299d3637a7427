"""What the Quorums pages say about the model, checked against the model itself."""

import pytest

from labs.book import number_text as nt
from labs.models import quorum as model
from labs.quorum import findings, page


def p50(table, k, slow_ms):
    row = table[(table["k"] == k) & (table["slow_ms"] == slow_ms)]
    return float(row["p50_ms"].iloc[0])


def test_four_of_six_hides_the_slow_zone_and_the_fifth_answer_does_not():
    table = page.kth_ack_percentiles()
    slow = page.DEFAULT_SLOW_AZ_RTT_MS
    # "slide from 4 to 5 and the median jumps": the fifth answer comes from the slow zone
    assert p50(table, 5, slow) > p50(table, 4, slow) + 1.0
    assert p50(table, 5, slow) >= slow
    # "make the third zone slower still: K = 4 does not move, K = 5 and K = 6 move with it"
    slower = max(page.SLOW_AZ_RTT_CHOICES_MS)
    assert p50(table, 4, slower) == pytest.approx(p50(table, 4, slow), rel=0.01)
    for k in (5, 6):
        assert p50(table, k, slower) > p50(table, k, slow) + (slower - slow) * 0.9


def test_three_copies_with_w2_have_one_event_for_both_curves():
    curves = page.durability_curves()
    three = curves[curves["layout"].str.startswith("3 copies")]
    wide = three.pivot_table(index=["mtbf_days", "mttr_hours"], columns="event",
                             values="p_per_year")
    assert (wide["write quorum lost"] == wide["data possibly lost"]).all()
    six = curves[curves["layout"].str.startswith("6 copies")]
    wide = six.pivot_table(index=["mtbf_days", "mttr_hours"], columns="event",
                           values="p_per_year")
    assert (wide["write quorum lost"] > wide["data possibly lost"]).all()


def test_exercise_three_explains_the_ratio_by_its_causes():
    f = page.exercise_figures()
    # node failures alone: three copies are much worse; zone cases: six copies are worse
    assert float(f["ex3_three_nodes"]) > 5 * float(f["ex3_six_nodes"])
    assert float(f["ex3_six_zones"]) > float(f["ex3_three_zones"])
    assert int(f["ex3_three_left"]) - 2 == 0 and int(f["ex3_six_left"]) - 4 == 0  # no spare
    assert (int(f["ex3_three_stop"]), int(f["ex3_six_stop"])) == (2, 3)
    total_three = float(f["ex3_three_nodes"]) + float(f["ex3_three_zones"])
    assert total_three == pytest.approx(float(f["ex3_three"]), rel=0.01)


def test_an_unsafe_layout_looks_more_available_which_is_why_the_chart_marks_it():
    unsafe = model.unavailability(6, 2, 2, 0.01, 3, 0.001)["p_write_unavailable"]
    aurora = model.unavailability(6, 4, 3, 0.01, 3, 0.001)["p_write_unavailable"]
    assert unsafe < aurora and not model.is_valid(6, 2, 2)


def test_exercise_4_gives_the_time_at_the_recorded_runs_throughput():
    # "about N trials for p = 10^-4. That is K times the trials of the run above, about T at
    # its measured M million trials a second. Rare events are what make simulation expensive"
    from labs.records import shipped_run

    run = shipped_run("quorum")
    f, found = page.figures(run), findings.findings(run)
    trials = page.ex4_trials()
    assert 1.96**2 * (1 - 1e-4) / (1e-4 * 0.01**2) <= trials
    assert f["ex4_trials"] == f"{trials / 1e8:.1f} × 10⁸"
    assert trials / found.params.trials > 100  # "expensive": over a hundred runs' worth
    assert f["ex4_time"] == nt.duration_ms(trials / found.trials_per_s * 1000)


def test_the_exact_values_are_inside_the_simulations_intervals():
    from labs.records import shipped_run

    found = findings.findings(shipped_run("quorum"))
    assert found.every_exact_inside_its_interval, (
        "backs the verdict of 'Does the formula match brute force?' and its Summary bullet: "
        "every exact value lies inside the simulation's 95 % interval")


def test_an_exact_value_outside_its_interval_fails_the_finding():
    # The finding can be false: the claim test above would catch a run that missed.
    from labs.quorum.findings import Estimate

    assert Estimate(0.0079, 0.0077, 0.0080, 0.0079).exact_inside_interval
    assert not Estimate(0.0079, 0.0077, 0.0080, 0.0085).exact_inside_interval


def test_the_zone_exercises_answers_follow_from_the_model():
    # Exercise 1: "losing the largest zone leaves 3, so writes survive."
    assert model.describe(5, 3, 3, azs=3).as_dict()["lose_az"]["write"]
    # Exercise 2: "so writes stop (they need 4) and reads survive (they need 3)."
    lose_az = model.describe(6, 4, 3, azs=2).as_dict()["lose_az"]
    assert not lose_az["write"] and lose_az["read"]
