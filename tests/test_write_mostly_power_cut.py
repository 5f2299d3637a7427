"""The power-cut drill's writer and reader, run here on a plain file: what the reader calls
lost is exactly what was not written intact. (The drill itself runs in the lab VM test.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from labs.errors import LabError
from labs.write_mostly.params import ALL_CUTS, PROFILE_SETTINGS, WRITE_BEHIND
from labs.write_mostly.power_cut import (
    CHECK_SCRIPT,
    CUT_SETTINGS,
    WRITER_SCRIPT,
    parse_check,
    region_blocks,
)

TOKEN = "0123456789abcdef"


def python(script: str, *args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(params=["random", "sequential"])
def written(tmp_path, request):
    """300 blocks written by the drill's writer into a file (O_DIRECT works on ext4 here),
    to shuffled places or in order."""
    device = tmp_path / "device.img"
    device.write_bytes(bytes(301 * 4096))
    layout = (300, request.param, 7)
    writer = python(WRITER_SCRIPT, device, TOKEN, *layout, "dsync")
    return device, writer, layout


def place(layout: tuple, number: int) -> int:
    """Where block `number` went (the scripts' own positions function)."""
    scope: dict = {}
    exec(CHECK_SCRIPT.split("import json")[0], scope)
    return scope["positions"](layout[1], layout[0], layout[2])[number - 1]


def test_the_writer_acknowledges_every_block_in_order_and_stops_when_its_region_is_full(written):
    _device, writer, _layout = written
    assert writer.returncode == 3, writer.stderr  # the region is full: never before the cut
    assert writer.stdout.splitlines() == [f"ack {n}" for n in range(1, 301)]


def test_the_reader_counts_exactly_the_blocks_that_are_not_intact(written):
    device, _writer, layout = written
    with device.open("r+b") as f:
        for number in range(100, 121):  # blocks 100..120 zeroed, as if never written
            f.seek(place(layout, number) * 4096)
            f.write(bytes(4096))
        f.seek(place(layout, 250) * 4096)
        f.write(b"another cut's token" * 100)  # block 250 overwritten at its start
        f.seek(place(layout, 260) * 4096 + 4000)
        f.write(b"torn")  # block 260 torn near its end
    # The controller saw 280 acknowledgements; the writer wrote 300.
    check = parse_check(python(CHECK_SCRIPT, device, TOKEN, *layout, 280).stdout)
    assert check.missing == [(100, 120), (250, 250), (260, 260)]
    assert check.lost == 23
    assert check.newest_intact == 300 and check.intact_beyond_ack == 20
    # Another token: nothing written by this cut is there.
    other = parse_check(python(CHECK_SCRIPT, device, "fedcba9876543210", *layout, 280).stdout)
    assert other.missing == [(1, 280)] and other.newest_intact == 0


def test_shuffled_blocks_land_apart_and_blocks_in_order_side_by_side():
    shuffled = [place((300, "random", 7), n) for n in range(1, 301)]
    in_order = [place((300, "sequential", 7), n) for n in range(1, 301)]
    assert sorted(shuffled) == in_order == list(range(1, 301))
    neighbours = sum(abs(a - b) == 1 for a, b in zip(shuffled, shuffled[1:], strict=False))
    assert neighbours < 10  # a few by chance, against 299 in order


def test_each_cut_setting_is_one_variable_apart_from_the_one_before():
    assert tuple(CUT_SETTINGS) == ALL_CUTS
    for profile in PROFILE_SETTINGS.values():
        assert set(profile.power_cut_settings) <= set(CUT_SETTINGS)
    settings = list(CUT_SETTINGS.values())
    for earlier, later in zip(settings, settings[1:], strict=False):
        apart = [field for field in ("write_behind", "sync", "order")
                 if getattr(earlier, field) != getattr(later, field)]
        assert len(apart) == 1, (earlier.name, later.name, apart)


def test_a_reader_that_printed_nothing_is_one_clear_error():
    with pytest.raises(LabError, match="the power-cut check printed no result"):
        parse_check("Traceback (most recent call last):\n  ...\nOSError: boom\n")


def test_the_region_holds_the_writer_at_the_slow_legs_pace_with_room_and_fits_in_memory():
    assert region_blocks(15, 200) == 2 * 15 * 200 + 4 * WRITE_BEHIND + 1024
    assert region_blocks(6, None) > 2 * 6 * 5000
    assert region_blocks(600, 100000) * 4096 == 256 * 1024 * 1024
