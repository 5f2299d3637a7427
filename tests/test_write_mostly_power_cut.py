"""The power-cut drill's writer and reader, run here on a plain file: what the reader calls
lost is exactly what was not written intact; and the recorded run the page shows says what
section 8 says. (The drill itself runs in the lab VM test.)"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from conftest import PROJECT_ROOT

from labs.errors import LabError, UsageError
from labs.write_mostly import page, power_cut_page
from labs.write_mostly.cut_blocks import CHECK_SCRIPT, WRITER_SCRIPT, parse_check
from labs.write_mostly.model import HELD_TO_THE_SLOW_PACE, power_cut_lost
from labs.write_mostly.params import ALL_CUTS, CUT_SETTINGS, WRITE_BEHIND, Parameters
from labs.write_mostly.power_cut import region_blocks

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
    for profile in Parameters.PROFILES:
        cuts = Parameters.for_profile(profile).power_cut_settings
        assert cuts and set(cuts) <= set(CUT_SETTINGS)
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


# --- the recorded run the page shows (data/runs/write-mostly/SHIPPED-power-cut) -------------

@pytest.fixture(scope="module")
def cut_run():
    recorded = page.companion_run("power-cut", PROJECT_ROOT / "data" / "runs")
    assert recorded is not None, "data/runs/write-mostly/SHIPPED-power-cut names no run"
    return recorded


def by_cut(recorded) -> pd.DataFrame:
    rows = recorded.results[recorded.results["config"] == "drill-power-cut"]
    rows = rows.assign(cut=rows["cut"].astype(int))
    return rows.pivot_table(index=["setting", "cut"], columns="metric", values="value")


def test_the_power_cut_run_was_recorded_by_the_project_command_on_a_lab_vm(cut_run):
    meta = cut_run.meta
    assert meta["parameters"]["command_line"].startswith(
        "python -m labs run write-mostly --host vm1")
    assert meta["parameters"]["part"] == "power-cut" and meta["parameters"]["profile"] == "full"
    assert meta["host"]["lab_vm"] and not meta["git_commit"].endswith("-dirty")
    by = by_cut(cut_run)
    cuts = Parameters.for_profile("full").power_cuts
    assert sorted(by.index) == sorted((s, c) for s in ALL_CUTS for c in range(1, cuts + 1))


def test_the_power_cut_counts_re_derive_from_the_raw_files(cut_run):
    by = by_cut(cut_run)
    for (setting, cut), row in by.iterrows():
        acks = (cut_run.raw_dir / f"power-cut/{setting}-cut{cut}-acks.txt").read_text()
        assert int(acks.split()[-2]) == row["acknowledged"]
        check = parse_check((cut_run.raw_dir / f"power-cut/{setting}-cut{cut}-check.json")
                            .read_text())
        assert check.lost == row["acknowledged_lost"]
        assert check.newest_intact == row["newest_found"]
        assert len(check.missing) == row["lost_ranges"]


def test_what_section_8_says_is_what_the_run_measured(cut_run):
    by = by_cut(cut_run)
    cap = cut_run.meta["parameters"]["slow_cap_iops"]
    figures = page.figures(cut_run)
    # "It cut each setting twice"
    assert sorted(set(by.index.get_level_values("cut"))) == [1, 2]
    for setting in ALL_CUTS:
        rows = by.loc[setting]
        limit = CUT_SETTINGS[setting].write_behind or 0
        assert (rows["acknowledged_lost"] <= limit).all(), setting  # the model's most
        held = rows["acks_per_second"].median() >= HELD_TO_THE_SLOW_PACE * cap
        rate = rows["acks_per_second"].median()
        expected = power_cut_lost(limit, rate, cap, power_cut_page.slow_latency_ms(cut_run))[1]
        assert expected == (limit / 2 if held else min(limit, rate * 6 / 1000))  # 5 + 1 ms
    # "Write-mostly alone. ... The cuts took none of 1,270 acknowledged writes, as the model
    # says."
    assert by.loc["wm-dsync"]["acknowledged_lost"].sum() == 0
    assert figures["cut_wm_dsync_acked"] == f"{by.loc['wm-dsync']['acknowledged'].sum():,.0f}"
    # "Write-behind, O_DSYNC. ... For each acknowledged write the slow disk completed 1.3 cache
    # flushes ... That pace is below the slow disk's cap of 200 ... the cuts took none"
    synced = by.loc["wb-dsync"]
    assert (synced["slow_flushes_before_cut"] >= synced["acknowledged"]).all()
    assert synced["acks_per_second"].median() < HELD_TO_THE_SLOW_PACE * cap
    assert synced["acknowledged_lost"].sum() == 0
    # "Write-behind, no sync. Without a flush per write the writer kept to the slow disk's
    # pace ... md's own counter peaked at 180, below the limit, so the backlog never filled
    # as the model assumes."
    unsynced = by.loc["wb-nosync"]
    assert unsynced["acks_per_second"].median() >= HELD_TO_THE_SLOW_PACE * cap
    assert unsynced["max_backlog_before_cut"].max() < WRITE_BEHIND
    # "The cuts took 28 and 42: the model expects 4.6 and 3.0 times that."
    assert (unsynced["acknowledged_lost"] > 0).all()
    table = power_cut_page.power_cut_table(cut_run)
    expected = table[table["setting"] == "wb-nosync"]["model_expected"]
    assert list(expected) == [WRITE_BEHIND / 2] * 2  # half the limit: the writer was held
    assert (WRITE_BEHIND / 2 > 2 * unsynced["acknowledged_lost"]).all()
    assert figures["cut_wb_nosync_lost_1"] == f"{unsynced.loc[1, 'acknowledged_lost']:,.0f}"
    # "A cross-check: the writes acknowledged by each cut, less those the slow disk had
    # completed ..., were 28 and 41, against 28 and 42 lost": within a few writes, cut by cut.
    outstanding = unsynced["acknowledged"] - unsynced["slow_writes_before_cut"]
    assert (abs(outstanding - unsynced["acknowledged_lost"]) <= 3).all()
    # "In cut 1 the missing writes were not one unbroken run of the newest": from the raw
    # checks.
    gaps = []
    for cut, row in unsynced.iterrows():
        missing = parse_check((cut_run.raw_dir / f"power-cut/wb-nosync-cut{cut}-check.json")
                              .read_text()).missing
        if missing and (len(missing) > 1 or missing[-1][1] != row["acknowledged"]):
            gaps.append(cut)
    assert gaps == [1]
    assert power_cut_page.cuts_with_gaps(power_cut_page.power_cut_table(cut_run),
                                         "wb-nosync") == gaps
    # "The same, blocks in order. ... The order alone kept the writer below the slow disk's
    # pace and the backlog nearly empty" (a tenth of the shuffled writer's at most).
    in_order = by.loc["wb-nosync-in-order"]
    assert in_order["acks_per_second"].median() < HELD_TO_THE_SLOW_PACE * cap
    assert in_order["max_backlog_before_cut"].max() * 10 <= unsynced[
        "max_backlog_before_cut"].max()
    assert all("not measured" not in value and "nan" not in value.split()
               for key, value in figures.items() if "expected_ratio" not in key)


def test_the_page_keeps_a_place_for_every_figure_of_the_shipped_drill(cut_run):
    # CUT_KEYS (the placeholders without a drill) and what a full drill gives stay one list.
    assert set(power_cut_page.power_cut_figures(cut_run)) == set(power_cut_page.CUT_KEYS)


def test_section_8_without_its_run_leaves_every_figure_unmeasured_and_the_chart_says_so():
    assert power_cut_page.power_cut_figures(None) == {}
    unmeasured = power_cut_page.page_cut_figures(None)
    assert "cut_wb_nosync_lost_2" in unmeasured
    assert set(unmeasured.values()) == {"not measured in this run"}
    chart = power_cut_page.power_cut_chart(None).to_dict()
    assert "This run has no power-cut drill." in json.dumps(chart)
    assert power_cut_page.power_cut_display(None).empty


def test_the_power_cut_chart_and_table_show_every_cut_with_the_model(cut_run):
    table = power_cut_page.power_cut_table(cut_run)
    assert len(table) == len(by_cut(cut_run))
    assert {"model_expected", "model_most"} <= set(table.columns)
    chart = power_cut_page.power_cut_chart(cut_run).to_dict()
    assert len(json.dumps(chart)) < 100_000
    marks = [layer["mark"]["type"] for layer in chart["layer"]]
    assert marks == ["bar", "tick", "point"]
    shown = power_cut_page.power_cut_display(cut_run)
    assert len(shown.columns) == 1 + len(ALL_CUTS) and not shown.isna().any().any()
    lost = shown.set_index("cut 1 / cut 2").loc["lost"]
    by = by_cut(cut_run)
    for setting in ALL_CUTS:  # each cell lists the cuts in order
        assert lost[CUT_SETTINGS[setting].label] == " / ".join(
            f"{v:,.0f}" for v in by.loc[setting]["acknowledged_lost"])


def test_the_models_expected_loss_by_setting_and_pace():
    assert power_cut_lost(None, 500, 200, 6) == (0, 0.0)  # every write waited
    assert power_cut_lost(256, 200, 200, 6) == (256, 128.0)  # held to the slow pace: N/2
    assert power_cut_lost(256, 100, 200, 6) == (256, 0.6)  # Little's law: W × latency
    assert power_cut_lost(256, 100, None, 6) == (256, 0.6)  # no cap: only the latency
    with pytest.raises(UsageError):
        power_cut_lost(256, -1, 200, 6)
