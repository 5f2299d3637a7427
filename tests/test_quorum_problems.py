"""Generated quorum problems: reproducible from their seed, answers from the model."""

import pytest
from conftest import run_labs

from labs.errors import UsageError
from labs.models import quorum as model
from labs.models import quorum_problems as problems


@pytest.mark.parametrize("kind", problems.KINDS)
def test_same_seed_same_problem_and_answer(kind):
    first, again = problems.make_problem(kind, 11), problems.make_problem(kind, 11)
    assert first.text == again.text and first.solve() == again.solve()
    texts = {problems.make_problem(kind, seed).text for seed in range(20)}
    assert len(texts) >= 8, "seeds should give different problems"
    assert f"--problem {kind} --seed 11" in first.text


def test_sizing_answers_obey_both_rules():
    for seed in range(30):
        problem = problems.make_problem("sizing", seed)
        n = problem.params["nodes"]
        answer = problem.solve().numbers
        assert model.is_valid(n, answer["write"], answer["read"])
        assert not model.is_valid(n, answer["write"] - 1, answer["read"])
        assert answer["write_tolerates"] == n - answer["write"]


def test_kth_ack_answer_is_the_wth_smallest_round_trip():
    for seed in range(30):
        problem = problems.make_problem("kth-ack", seed)
        times = sorted(ms for ms in problem.params["zone_rtts_ms"] for _ in range(2))
        numbers = problem.solve().numbers
        assert numbers["commit_ms"] == times[problem.params["write"] - 1]
        assert numbers["all_ms"] == max(problem.params["zone_rtts_ms"])


def test_availability_answer_matches_the_model():
    for seed in range(10):
        problem = problems.make_problem("availability", seed)
        p = problem.params
        numbers = problem.solve().numbers
        assert numbers["p_write_unavailable"] == pytest.approx(
            model.unavailability(p["nodes"], p["write"], p["nodes"] - p["write"] + 1,
                                 p["p_node"])["p_write_unavailable"])
        assert numbers["first_term"] <= numbers["p_write_unavailable"]


def test_bad_problem_input_is_one_line():
    with pytest.raises(UsageError):
        problems.make_problem("sizing", -1)
    with pytest.raises(UsageError):
        problems.make_problem("nonsense", 1)
    result = run_labs("quorum", "--problem", "zones", "--seed", "-2")
    assert result.returncode == 2 and result.stderr.count("\n") == 1


def test_the_command_prints_the_problem_then_the_answer_only_with_c():
    plain = run_labs("quorum", "--problem", "zones", "--seed", "4")
    solved = run_labs("quorum", "--problem", "zones", "--seed", "4", "-c")
    assert plain.returncode == solved.returncode == 0
    assert "Answer" not in plain.stdout and "Answer" in solved.stdout
    assert solved.stdout.startswith(plain.stdout.strip())
