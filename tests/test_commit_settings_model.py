"""The commit-settings lab's model and parameters, the probe's stamp, and the acknowledgement
stream's stamped lines (no VM)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from labs.commit_settings import model
from labs.commit_settings.params import Parameters
from labs.errors import UsageError
from labs.infra.acks import AckStream
from labs.write_path.logged_disk import PROBE_SOURCE


@pytest.mark.parametrize("name", ["pg-sync-on", "innodb-1"])
def test_the_settings_that_flush_before_they_answer_have_no_window(name):
    setting = model.SETTINGS[name]
    assert setting.safe
    assert [setting.window_s(fault) for fault in model.FAULTS] == [0, 0, 0]


def test_answering_first_leaves_the_flush_interval_to_every_fault():
    assert [model.SETTINGS["pg-sync-off"].window_s(f) for f in model.FAULTS] == \
        pytest.approx([0.6] * 3)
    assert [model.SETTINGS["innodb-0"].window_s(f) for f in model.FAULTS] == [1.0] * 3


def test_writing_the_log_without_a_flush_survives_only_a_process_crash():
    flush_2 = model.SETTINGS["innodb-2"]
    assert [flush_2.window_s(f) for f in model.FAULTS] == [0.0, 1.0, 1.0]
    fsync_off = model.SETTINGS["pg-fsync-off"]
    # The page cache's 30 s expiry and 5 s writeback period, then ext4's 5 s commit.
    assert [fsync_off.window_s(f) for f in model.FAULTS] == [0.0, 35.0, 40.0]


def test_the_most_lost_counts_commits_younger_than_the_window():
    assert model.most_lost([0.1, 0.5, 0.99, 1.0, 3.0], 1.0) == 3
    assert model.most_lost([0.1, 0.5], 0.0) == 0
    # Printed a moment after the freeze, answered before it: no window, nothing at risk.
    assert model.most_lost([-0.002, 0.5], 0.0) == 0


def test_only_the_safe_settings_are_called_safe():
    assert {s.name for s in model.SETTINGS_LIST if s.safe} == {"pg-sync-on", "innodb-1"}


@pytest.mark.parametrize("fields, words", [
    ({"host": "local"}, "takes over a lab VM's two lab disks"),
    ({"settings": ("innodb-2", "innodb-2")}, "each setting once"),
])
def test_bad_parameters_are_refused(fields, words):
    with pytest.raises(UsageError, match=words):
        Parameters(**fields).check()


def test_the_ci_profile_has_a_safe_setting_and_innodb_at_2():
    ci = Parameters.for_profile("ci")
    assert set(ci.settings) == {"pg-sync-on", "innodb-2"}


def test_the_probe_stamps_acknowledgements_with_its_clock_and_drops_other_lines():
    ran = subprocess.run([sys.executable, str(PROBE_SOURCE), "stamp"],
                         input="ack 1\nhello\nack 2\n",
                         capture_output=True, text=True, timeout=60, check=True)
    lines = [line.split() for line in ran.stdout.splitlines()]
    assert [words[:2] for words in lines] == [["ack", "1"], ["ack", "2"]]
    first, second = (float(words[2]) for words in lines)
    assert 0 <= second - first < 5


def test_an_ack_stream_keeps_the_hosts_stamps_beside_its_own_times():
    stream = AckStream("true")
    stream._note(["ack", "7", "12.5"], 0.25)
    stream._note(["ack", "8"], 0.5)
    assert stream.acks == [(7, 0.25), (8, 0.5)]
    assert stream.host_times_s == [12.5]
    assert stream.acked == 8
