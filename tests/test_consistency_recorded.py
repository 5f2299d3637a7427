"""The shipped consistency run, and every sentence of the page that describes its shape."""

import pytest
from conftest import PROJECT_ROOT

from labs.consistency import page
from labs.records import shipped_run

PAGE = PROJECT_ROOT / "book" / "quorum" / "consistency.md"


@pytest.fixture(scope="module")
def run():
    return shipped_run("consistency")


@pytest.fixture(scope="module")
def figures(run):
    return page.figures(run)


def test_the_shipped_run_is_a_full_run(run):
    assert run.meta["parameters"]["profile"] == "full"
    assert run.meta["parameters"]["reads_per_case"] == 30


def test_every_request_did_what_the_model_predicts_and_refusals_are_unavailable(figures, run):
    # "N of the N requests did what the model predicts, and the refusals are Unavailable"
    assert figures["operations_agreeing"] == figures["operations"] == "18"
    grid = page.availability(run)
    assert set(grid.loc[~grid["succeeded"], "outcome"]) == {"Unavailable"}


def test_one_stopped_keeps_quorum_and_two_stopped_keep_only_one(run):
    # "With one node of three stopped, QUORUM still works and ALL does not; with two
    # stopped, only ONE does."
    grid = page.availability(run)
    served_by_cell = grid.groupby(["stopped", "level"])["succeeded"].all()
    served = {key for key, ok in served_by_cell.items() if ok}
    assert served == {(0, "ONE"), (0, "QUORUM"), (0, "ALL"), (1, "ONE"), (1, "QUORUM"),
                      (2, "ONE")}


def test_no_guaranteed_read_was_stale_and_every_stale_read_only_met_missed_replicas(figures):
    assert figures["overlap_stale"] == "0" and figures["guaranteed_stale"] == "0"
    assert int(figures["overlap_reads"]) > 0 and int(figures["guaranteed_reads"]) > 0
    # "All N stale reads were answered only by replicas that had missed the write"
    assert int(figures["stale_total"]) > 0
    assert figures["stale_only_missed"] == figures["stale_total"]


def test_staleness_depended_mostly_on_the_coordinator(figures):
    # "depended mostly on which node coordinated it": node 3 (missed everything) far above
    # node 1 (holds everything), and the uniform model in between.
    n1, n3 = int(figures["possible_n1_pct"]), int(figures["possible_n3_pct"])
    assert n3 - n1 >= 30
    assert n1 < int(figures["possible_model_pct"]) < n3
    # "A client talking to a node that took the write mostly reads the new value"
    assert n1 < 50


def test_coordinators_mostly_read_their_own_copy_and_the_ranking_moved(run, figures):
    # "mostly reads that node's stale copy"; "a coordinator did not always ask the same
    # replicas"
    assert int(figures["one_local_pct"]) > 50
    assert int(figures["possible_n3_pct"]) > 50
    assert page.coordinators_that_changed_replicas(run) != []


def test_the_page_quotes_no_figure_it_does_not_compute(figures):
    text = PAGE.read_text()
    assert 'shipped_run("consistency")' in text
    for name in ("possible_n3_stale", "c_quorum_n2_stale", "one_local_pct", "refused_max_ms"):
        assert f"{{glue:text}}`{name}`" in text
        assert figures[name] not in ("nan", "")


def test_row_c_quorum_model_is_right_on_average_and_wrong_for_each_node(run, figures):
    # "right on average, wrong for each client"
    model_pct = int(figures["c_quorum_model_pct"])
    shares = [100 * int(figures[f"c_quorum_n{c}_stale"]) / int(figures[f"c_quorum_n{c}_reads"])
              for c in (1, 2, 3)]
    assert abs(sum(shares) / 3 - model_pct) <= 10
    assert all(abs(share - model_pct) >= 20 for share in shares)
    assert figures["n2_quorum_top_set"] == "2 + 3"  # both missed row C
