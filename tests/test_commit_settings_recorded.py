"""The shipped commit-settings run, and every claim book/power-loss/commit-settings.md makes
of it."""

import pytest

from labs.commit_settings import findings, model
from labs.commit_settings.params import Parameters
from labs.records import shipped_run

EACH_FAULT = "backs the verdict of 'What each fault takes' and its paragraphs"
AGES = "backs the verdict of 'How old the lost commits were' and its paragraph"
SUMMARY = "backs the Summary's bullets"


@pytest.fixture(scope="module")
def run():
    return shipped_run("commit-settings")


@pytest.fixture(scope="module")
def found(run):
    return findings.findings(run)


def test_the_shipped_run_is_a_full_run_of_every_setting(found):
    assert found.params.profile == "full"
    full = Parameters.for_profile("full")
    assert (found.params.cuts, found.params.write_s) == (full.cuts, full.write_s)
    assert {t.setting for t in found.tallies} == set(model.SETTINGS)
    assert all(t.cuts == full.cuts for t in found.tallies)


def test_the_safe_settings_lose_nothing_and_every_server_recovers(found):
    # "The two settings that flush before they answer ... lost no commit to any fault.
    # Every loss stayed within the model's most, and every server started again by itself."
    assert found.safe_settings_lose_nothing, EACH_FAULT
    assert found.every_loss_within_the_model, EACH_FAULT
    assert found.every_server_started_again, EACH_FAULT


def test_every_fault_took_only_the_newest_commits(found):
    # "Every server also started again by itself: all N recoveries." "And every fault took
    # only the newest commits: in every count, the rows left were 1 to some n, with no gap."
    # (and exercise 1's solution)
    assert found.recoveries == len(model.SETTINGS) * found.params.cuts * len(model.FAULTS)
    assert found.every_fault_took_the_newest_only, EACH_FAULT


def test_the_answer_to_predict_first(found):
    # "N of the eighteen answers are 'none': every fault for the two safe settings, and the
    # process crash for InnoDB at 2 and for fsync=off."
    safe = {(s, f) for s in ("pg-sync-on", "innodb-1") for f in model.FAULTS}
    assert found.settings_and_faults_losing_nothing == safe | {
        ("innodb-2", "process crash"), ("pg-fsync-off", "process crash")}, \
        "backs the answer to 'Predict first'"


def test_a_process_crash_takes_only_from_the_settings_that_answer_first(found):
    # "A process crash took commits only from the two settings that answer before they
    # write the log." "InnoDB at 2 and PostgreSQL with fsync=off lost none."
    losing = {t.setting for t in found.tallies if t.fault == "process crash" and t.lost}
    assert losing == {"pg-sync-off", "innodb-0"}, EACH_FAULT


def test_fsync_off_loses_every_commit_to_a_kernel_crash(found):
    # "With fsync=off, it took N of N commits: every one ... longer than each cut's commits."
    fsync_off = found.tally("pg-fsync-off", "kernel crash")
    assert fsync_off.loses_all, EACH_FAULT + " and " + SUMMARY
    assert fsync_off.window_s > max(found.writing_s), EACH_FAULT


def test_a_kernel_crash_takes_more_than_a_process_crash_from_async_commit(found):
    # "With synchronous_commit=off, the kernel crash took N commits, more than the process
    # crash took." "InnoDB at 2 lost N commits" (to the kernel crash).
    assert found.tally("pg-sync-off", "kernel crash").lost > \
        found.tally("pg-sync-off", "process crash").lost, EACH_FAULT
    assert found.lost_in_every_cut("innodb-2", "kernel crash"), EACH_FAULT


def test_innodb_at_2_wrote_its_log_through_the_page_cache(found):
    # Details: "innodb_log_file_buffering was on in every cut".
    assert found.innodb_log_buffered is True, "backs the Details on the model's windows"


def test_innodb_at_2_survives_a_process_crash_but_not_a_power_cut(found):
    # "InnoDB at 2 lost N of N commits to the power cut: it survives a process crash, not
    # the loss of the machine."
    assert found.lost_nothing("innodb-2", "process crash"), EACH_FAULT
    assert found.lost_in_every_cut("innodb-2", "power cut"), EACH_FAULT


def test_the_power_cut_took_what_the_kernel_crash_took(found):
    # "The power cut took exactly what the kernel crash took, in every cut." (and "What it
    # means for the later chapters") "For fsync=off, the model allows a power cut N more
    # ...; but the kernel crash had already taken every commit."
    assert found.power_cut_kept_what_the_kernel_crash_kept, EACH_FAULT
    fsync_off = [found.tally("pg-fsync-off", fault) for fault in ("kernel crash", "power cut")]
    assert fsync_off[1].window_s > fsync_off[0].window_s and fsync_off[0].loses_all


def test_every_lost_commit_was_younger_than_its_window(found):
    # "Every lost commit was younger than its window."
    for setting in model.SETTINGS:
        assert found.oldest_lost_within_window(setting), (setting, AGES)


def test_the_wal_writer_flushed_well_within_its_promise(found):
    # "the oldest commit any fault took was N ms old, inside the N ms ... the window is the
    # most, not the rule."
    oldest = max(t.oldest_lost_s for t in found.tallies if t.setting == "pg-sync-off")
    assert oldest < model.PG_ASYNC_FLUSH_S / 2, AGES

