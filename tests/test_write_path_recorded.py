"""The shipped write-path run, and every claim book/power-loss/write-path.md makes of it."""

import pytest

from labs.records import shipped_run
from labs.write_path import findings, page
from labs.write_path.params import Parameters

EACH_FAULT = "backs the verdict of 'What each fault takes' and its Summary bullets"
DIRECT = "backs the verdict of 'O_DIRECT: only the newest records' and its Summary bullet"


@pytest.fixture(scope="module")
def run():
    return shipped_run("write-path")


@pytest.fixture(scope="module")
def found(run):
    return findings.findings(run)


def test_the_shipped_run_is_a_full_run_of_every_way(found):
    assert found.params.profile == "full"
    full = Parameters.for_profile("full")
    assert (found.params.cuts, found.params.write_s) == (full.cuts, full.write_s)
    assert {t.way for t in found.tallies} == set(full.ways)
    assert all(t.cuts == full.cuts for t in found.tallies)


def test_the_flushing_ways_lose_nothing_to_either_fault(found):
    # "The two ways that flush before they answer ... lost no record to either fault."
    assert found.safe_ways_lose_nothing, EACH_FAULT


def test_every_loss_stays_within_the_models_most(found):
    # "Every loss stayed within the model's most."
    assert found.every_loss_within_the_model, EACH_FAULT


def test_a_process_crash_takes_only_the_own_buffer_and_all_of_it(found):
    # "A process crash took only the records still in the program's own buffer: all N."
    assert found.crash_takes_only_the_own_buffer, EACH_FAULT


def test_a_kernel_crash_takes_only_what_was_in_memory(found):
    # "A kernel crash took every write() record as well ... It took no O_DIRECT record and no
    # fsync() record, even with barrier=0."
    assert found.kernel_crash_takes_only_memory, EACH_FAULT


def test_the_power_cut_takes_every_write_record_and_every_barrierless_fsync(found):
    # "The power cut took every write() record." "With barrier=0, fsync() returned for
    # every record, yet the power cut took them all."
    assert found.loses_everything("write", "power cut"), EACH_FAULT
    assert found.loses_everything("fsync-nobarrier", "power cut"), EACH_FAULT
    # "longer than each run's N s": the model's window outlasts the writing.
    assert page.model.WAYS["write"].cut_window_s > found.params.write_s


def test_without_barriers_the_file_itself_was_gone_after_every_cut(found):
    # "The file itself was gone after N of the cuts": the page says how many; the claim
    # that its name was never flushed needs it gone every time.
    nobarrier = found.tally("fsync-nobarrier", "power cut")
    assert nobarrier.cuts_with_file == 0, EACH_FAULT


def test_o_direct_loses_only_its_newest_records_inside_the_window(found):
    # "The power cut took N % of the O_DIRECT records, always the newest ones. The oldest it
    # took was N s old, inside the model's 5 s."
    direct = found.tally("direct", "power cut")
    assert 0 < direct.lost < direct.acked, DIRECT
    assert found.direct_newest_lost_only, DIRECT
    assert found.direct_oldest_lost_age_s < found.direct_window_s, DIRECT
    # "N of the N cuts kept some records and lost others."
    assert found.direct_cuts_losing_some_not_all >= 1, DIRECT



def test_the_commit_timer_boundary_is_a_little_early_in_every_cut(found):
    # "In each cut, the measured boundary ... came N to N ms later than the model's."
    timer = "backs 'Details: why every cut lost about the same share'"
    errors = found.direct_boundary_errors_s
    assert len(errors) == found.params.cuts, timer
    assert all(error > 0 for error in errors), timer
    # "This timer model puts the last commit about N s before each cut": the model's
    # boundary is inside the range the cuts lost.
    assert found.direct_commit_model_lost_s < found.direct_window_s, timer
    # "The writer's first record came N s after each trial began": a start, not a stall.
    assert 0 < found.direct_first_write_s < 5, timer
