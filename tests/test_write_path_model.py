"""The write path's model (labs/power_loss/write_path.py) and what its page claims from it."""

import numpy as np
import pytest

from labs import registry
from labs.book import guide
from labs.errors import UsageError
from labs.power_loss import write_path as model
from labs.power_loss import write_path_page as page

FSYNC, WRITE_ONLY, DIRECT = "write() + fsync()", "write() only", "O_DIRECT overwrite, no flush"
DSYNC, ACK_FIRST, FSYNC_EVERY_T = ("O_DIRECT | O_DSYNC", "acknowledge, flush every T",
                                   "write() each, fsync every T")


def window(policy, fault, cache="volatile", interval_s=1.0):
    return model.window_s(policy, fault, cache, interval_s)


@pytest.mark.parametrize("fault", model.FAULTS)
@pytest.mark.parametrize("cache", model.DEVICE_CACHES)
def test_a_flushed_write_survives_every_fault(fault, cache):
    # backs explain.md, "The model": "With fsync after each write it takes none".
    for policy in (FSYNC, DSYNC):
        assert window(policy, fault, cache) == 0
        assert model.most_lost(1000, policy, fault, cache, 5.0) == 0


def test_write_only_waits_for_writeback_and_then_for_the_next_flush():
    page_cache_s = model.DIRTY_EXPIRE_S + model.WRITEBACK_PERIOD_S
    assert window(WRITE_ONLY, "process crash") == 0
    assert window(WRITE_ONLY, "kernel crash") == page_cache_s
    assert window(WRITE_ONLY, "power cut") == page_cache_s + model.JOURNAL_COMMIT_S
    assert window(WRITE_ONLY, "power cut", "power-loss protected") == page_cache_s


def test_o_direct_survives_a_kernel_crash_but_not_a_power_cut():
    # backs explain.md, "Three faults": "an O_DIRECT overwrite survives a kernel crash, yet
    # can be lost to a power cut", and exercise write-path-ex-direct.
    assert window(DIRECT, "process crash") == window(DIRECT, "kernel crash") == 0
    assert window(DIRECT, "power cut") > 0
    assert window(DIRECT, "power cut", "power-loss protected") == 0


def test_innodb_2_survives_a_process_crash_only():
    # backs explain.md, "Three faults": "innodb_flush_log_at_trx_commit = 2 survives a
    # process crash but not a kernel crash or a power cut", and exercise write-path-ex-innodb.
    assert window(FSYNC_EVERY_T, "process crash") == 0
    assert window(FSYNC_EVERY_T, "kernel crash", interval_s=1) == 1
    assert window(FSYNC_EVERY_T, "power cut", interval_s=1) == 1
    assert window(ACK_FIRST, "process crash", interval_s=1) == 1


def test_a_background_flush_window_grows_with_its_interval():
    assert window(ACK_FIRST, "power cut", interval_s=0.6) == pytest.approx(0.6)
    assert window(FSYNC_EVERY_T, "power cut", interval_s=2.5) == pytest.approx(2.5)


def test_the_most_lost_is_the_rate_times_the_window_and_a_fault_only_adds():
    """A fault that wipes more layers never takes less: process crash <= kernel <= power."""
    rng = np.random.default_rng(36)
    for _ in range(200):
        rate, interval = rng.uniform(0, 5000), rng.uniform(0, 10)
        name, cache = rng.choice([p.name for p in model.POLICIES]), rng.choice(
            model.DEVICE_CACHES)
        windows = [model.window_s(name, fault, cache, interval) for fault in model.FAULTS]
        assert windows == sorted(windows)
        assert model.most_lost(rate, name, "power cut", cache, interval) == pytest.approx(
            rate * windows[-1])


def test_the_browser_formula_matches_the_model():
    """The chart recomputes the loss in the browser from a + b * T: it must be the model's."""
    table = page.exposure_table()
    for interval_s in (0.1, 0.6, 2.5):
        for row in table.itertuples():
            args = (row.policy, row.fault, row.device_cache, interval_s)
            assert 100 * (row.longest_fixed_s + row.longest_per_interval * interval_s) == \
                pytest.approx(model.most_lost(100, *args))


@pytest.mark.parametrize(("call", "message"), [
    (lambda: model.window_s(WRITE_ONLY, "meteor", "volatile", 1), "fault 'meteor'"),
    (lambda: model.window_s(WRITE_ONLY, "power cut", "magic", 1), "device cache 'magic'"),
    (lambda: model.window_s("mmap", "power cut", "volatile", 1), "policy 'mmap'"),
    (lambda: model.most_lost(-1, FSYNC, "power cut", "volatile", 1), "negative"),
    (lambda: model.most_lost(1, FSYNC, "power cut", "volatile", -1), "negative"),
])
def test_bad_input_is_one_clear_error(call, message):
    with pytest.raises(UsageError, match=message):
        call()


def test_every_chapter_has_a_reading_time_and_every_lab_a_measured_quick_time():
    table = guide.start_here_table(registry.labs())
    assert len(table) == len(guide.toc_chapters())
    assert table["Reading"].str.fullmatch(r"\d+ min").all()
    timed = set(guide.quick_run_times()["lab"])
    for lab in registry.labs():
        if lab.book_page and lab.name != "template":
            assert lab.name in timed, f"data/timings/quick-runs.csv has no row for {lab.name}"
            # The instructor's guide quotes every lab's quick time by its written-out key.
            assert guide.quick_figures()[guide.QUICK_KEYS[lab.name]].isdigit(), lab.name


@pytest.mark.parametrize(("text", "message"), [
    ("lab,host\nquorum,local\n", "missing column 'seconds'"),
    ("lab,host,seconds,boot_included,measured_on,commit,how\nquorum,local,-3,no,,,x\n",
     "lab 'quorum': seconds must be a positive number"),
    ("lab,host,seconds,boot_included,measured_on,commit,how\nquorum,local,soon,no,,,x\n",
     "lab 'quorum': seconds must be a positive number"),
])
def test_a_bad_timings_file_is_one_clear_error(tmp_path, text, message):
    path = tmp_path / "quick-runs.csv"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        guide.quick_run_times(path)


def test_page_words_leave_code_and_front_matter_out(tmp_path):
    page_path = tmp_path / "page.md"
    page_path.write_text("---\nkernelspec:\n  name: python3\n---\n# Title here\n\n"
                         "```{code-cell} ipython3\n:tags: [remove-cell]\nx = 1 + 2\n```\n"
                         "Three words {glue:text}`n` here.\n")
    assert guide.page_words(page_path) == 6  # "Title here", then "Three words 0 here."
