"""The shipped doublewrite run against every shape the page states about it.

book/torn-pages/doublewrite.md quotes numbers through `{glue:text}` (computed, so always
true to the run); the words around them are written in the page for the shipped run, and
these tests check them: what grows, what stays flat, what beats what, what MariaDB did. A
new shipped run that breaks one of them means the text must change, not the test.
"""

import json

import pytest
from conftest import PROJECT_ROOT

from labs.book import number_text as nt
from labs.doublewrite import formats, page, tables
from labs.records import shipped_run

PAGE = PROJECT_ROOT / "book" / "torn-pages" / "doublewrite.md"

# The page's claim sections, named in the messages of the tests that back their verdicts.
BYTES = "The bytes nearly double, the write operations do not"
LIMITED = "On a write-limited device, the time follows the bytes"
LATENCY = "Doublewrite slows the inserts that wait for a free page"
NO_LIMIT = "Without a write limit, the time grows less than the bytes"
LARGE_POOL = "With a large buffer pool, there is nothing to copy"
ARTICLE = "Beside the article: the shape, but not a ratio above 2"
TORN_ON = "With doublewrite ON, a torn page is repaired"
TORN_OFF = "Without doublewrite, the torn page's table is lost"
SAFE = "Turning it off is safe only where a page cannot tear"


@pytest.fixture(scope="module")
def run():
    return shipped_run("doublewrite")


@pytest.fixture(scope="module")
def settings(run):
    return tables.setting_table(run.results).set_index(["buffer_pool_mib", "write_limit_mibps"])


@pytest.fixture(scope="module")
def small(run):
    return min(run.meta["parameters"]["buffer_pools_mib"])


@pytest.fixture(scope="module")
def large(run):
    return max(run.meta["parameters"]["buffer_pools_mib"])


@pytest.fixture(scope="module")
def limit(run):
    return run.meta["parameters"]["write_mibps"]


def test_the_shipped_run_is_a_full_profile_run_from_a_clean_commit(run):
    assert run.meta["parameters"]["profile"] == "full"
    assert not run.meta["git_commit"].endswith("-dirty")
    assert len(run.meta["parameters"]["buffer_pools_mib"]) == 2
    assert run.meta["parameters"]["write_mibps"] > 0


def test_every_pair_used_the_same_rows_and_only_on_legs_doublewrote(run):
    legs = tables.leg_table(run.results)
    assert (legs["rows"] == run.meta["parameters"]["rows"]).all()
    on, off = legs[legs["doublewrite"] == "ON"], legs[legs["doublewrite"] == "OFF"]
    assert (off["innodb_dblwr_pages_written"] == 0).all()
    small_pool = min(run.meta["parameters"]["buffer_pools_mib"])
    assert (on[on["buffer_pool_mib"] == small_pool]["innodb_dblwr_pages_written"] > 0).all()
    # "The lab's server reported it as `ON`, and its counters show pages going through the
    # doublewrite area all the same". This also backs the verdict of "Turning it off is safe
    # only where a page cannot tear": "The lab had no device that writes 16 KiB whole".
    assert page.server_variable(run, "innodb_use_atomic_writes") == "ON", (
        f"backs the verdict of '{SAFE}': only with it ON do the doublewritten pages show "
        "that the loop device promised no atomic writes")


def test_every_leg_ran_with_the_settings_the_lab_lists(run):
    # The lab, step 2: "the secondary key drawn from sysbench's `uniform` distribution" and
    # "`innodb_flush_method` `O_DIRECT`: pages bypass the page cache"
    assert run.meta["parameters"]["key_distribution"] == "uniform"
    assert page.server_variable(run, "innodb_flush_method") == "O_DIRECT"


def test_bytes_nearly_double_while_operations_barely_grow(run, small):
    """Backs the verdict of "The bytes nearly double, the write operations do not" and its
    Summary bullet."""
    pairs = tables.pair_table(run.results)
    for pair in pairs[pairs["buffer_pool_mib"] == small].itertuples():
        why = f"backs the verdict of '{BYTES}', {pair.setting}"
        assert pair.bytes_on_over_off > 1.5, why
        assert pair.writes_on / pair.writes_off < 1.3, why
        assert pair.dblwr_pages_on / pair.dblwr_batches_on > 8, why


def test_some_pages_skip_the_doublewrite_area(settings, small, limit):
    # "The share matters: pages initialised since their last write skip the doublewrite area."
    assert 0 < settings.loc[(small, limit), "dblwr_share_on"] < 1


def test_the_write_limit_binds_and_doublewrite_costs_throughput(settings, small, limit):
    """Backs the verdict of "Beside the article: the shape, but not a ratio above 2": "The
    write-limited pair reproduces the shape of the article's result"."""
    row = settings.loc[(small, limit)]
    assert row["elapsed_on_over_off"] > 1.5, f"backs the verdict of '{ARTICLE}'"
    assert row["tps_on"] <= row["model_tps_on"] * 1.05
    assert row["tps_off"] <= row["model_tps_off"] * 1.05


def test_limited_pair_was_bandwidth_bound_and_on_wrote_more_pages_than_the_model_expects(
        run, small, limit):
    """Backs the verdict of "On a write-limited device, the time follows the bytes" (partly
    confirmed: the time followed the bytes, but the ON legs flushed more pages per row than
    the model expects) and its Summary bullet."""
    why = f"backs the verdict of '{LIMITED}'"
    # "Every leg wrote at or near the limit, so this pair was bound by bandwidth, and its time
    # followed its bytes." and "ON used the limit about as fully as OFF.": use of the limit
    # by measured bytes.
    legs = tables.leg_table(run.results)
    legs = legs[(legs["buffer_pool_mib"] == small) & (legs["write_limit_mibps"] == limit)]
    use = formats.limit_use(legs, limit)
    assert ((use > 0.85) & (use < 1.05)).all(), why
    on = use[legs["doublewrite"] == "ON"].to_numpy()
    off = use[legs["doublewrite"] == "OFF"].to_numpy()
    assert (abs(on - off) < 0.03).all(), why
    f = page.figures(run)
    pairs = tables.pair_table(run.results)
    pairs = pairs[(pairs["buffer_pool_mib"] == small) & (pairs["write_limit_mibps"] == limit)]
    assert (abs(pairs["elapsed_on_over_off"] - pairs["bytes_on_over_off"]) < 0.05).all(), why
    # "the rows took T times as long to insert with doublewrite ON, about as much as the bytes
    # grew", the two means the page prints
    assert abs(pairs["elapsed_on_over_off"].mean() - pairs["bytes_on_over_off"].mean()) < 0.05, (
        why)
    # "the two repetitions agree (time ratios A and B)"
    assert pairs["elapsed_on_over_off"].max() - pairs["elapsed_on_over_off"].min() < 0.1
    # "The ON legs wrote ..., N more, because they flushed more pages per row": N is the
    # measured bytes over the model's, less 1
    assert (pairs["bytes_per_row_on"] > pairs["model_bytes_per_row_on"]).all(), why
    beyond = (pairs["bytes_per_row_on"] / pairs["model_bytes_per_row_on"]).mean() - 1
    assert f["limited_model_short"] == nt.percent(beyond)
    # "because they flushed more pages per row"
    assert (pairs["pages_per_row_on"] > pairs["pages_per_row_off"] * 1.02).all(), why
    # "The ON bars therefore fall further short of their ticks than the OFF bars do."
    assert (pairs["tps_on"] / pairs["model_tps_on"] < pairs["tps_off"] / pairs["model_tps_off"]
            ).all()
    # the model chart: limited dots above the curve, unlimited ones below
    assert (pairs["tps_off_over_on"] > pairs["model_ratio"]).all()
    free = tables.pair_table(run.results)
    free = free[(free["buffer_pool_mib"] == small) & (free["write_limit_mibps"] == 0)]
    assert (free["tps_off_over_on"] < free["model_ratio"]).all()


def test_latencies_per_repetition_are_as_the_text_states(run, small, limit):
    """Backs the verdict of "Doublewrite slows the inserts that wait for a free page": "The
    medians showed no such rise." """
    pairs = tables.pair_table(run.results)
    pairs = pairs[(pairs["buffer_pool_mib"] == small) & (pairs["write_limit_mibps"] == limit)
                  ].sort_values("repetition")
    assert list(pairs["repetition"]) == [1, 2]
    p50 = (pairs["latency_p50_on"] / pairs["latency_p50_off"]).to_numpy()
    # "The median insert took A ms ON and B ms OFF: about the same in both repetitions"
    # (within a quarter), so the medians showed no such rise.
    assert ((0.8 <= p50) & (p50 <= 1.25)).all(), f"backs the verdict of '{LATENCY}', {p50}"
    # "The 99th percentile was ... higher ON in both."
    assert (pairs["latency_p99_on"] > pairs["latency_p99_off"] * 1.25).all()


def test_large_pool_differences_are_not_doublewrite(run, large, limit):
    """Backs the verdict of "With a large buffer pool, there is nothing to copy"."""
    # "InnoDB sent 0 pages through the doublewrite area ... not the doublewrite buffer's doing"
    f = page.figures(run)
    assert f["large_pages_written"] == f["large_dblwr_pages"] == "0", (
        f"backs the verdict of '{LARGE_POOL}'")
    pairs = tables.pair_table(run.results)
    pairs = pairs[pairs["buffer_pool_mib"] == large]
    # "the time ratios stayed between A and B. That is less than one leg swings on its own:
    # its inserts per second moved between C and D from one second to the next."
    ratios = pairs["elapsed_on_over_off"]
    series = tables.tps_series(run.results)
    series = series[series["setting"].str.startswith(f"buffer pool {large} MiB")]
    assert ratios.max() / ratios.min() < series["tps"].max() / series["tps"].min()
    assert 0 < int(f["large_on_faster"]) <= int(f["large_pairs"])
    assert int(f["large_elapsed_max"]) < 15
    # "The limit never bound, so the page draws no model rate for them."
    assert float(f["large_limited_max_mibps"]) < limit / 2
    assert pairs["model_tps_on"].isna().all() and pairs["model_tps_off"].isna().all()


def test_without_a_limit_the_cpus_not_the_device_set_the_pace(settings, small, limit):
    """Backs the verdict of "Without a write limit, the time grows less than the bytes"."""
    why = f"backs the verdict of '{NO_LIMIT}'"
    # "took T times as long with doublewrite ON, much less than its bytes grew"
    row = settings.loc[(small, 0)]
    assert row["elapsed_on_over_off"] < row["bytes_on_over_off"] - 0.2, why
    # "while the time grew less than on the limited device"
    assert row["elapsed_on_over_off"] < settings.loc[(small, limit), "elapsed_on_over_off"], why


def test_the_limited_pair_sits_between_the_model_and_the_article(settings, small, limit):
    """Backs the verdict of "On a write-limited device, the time follows the bytes": the time
    ratio passed the model's, which is why the verdict is only "partly confirmed"."""
    # "That time ratio is below the article's A and above the model's M for this setting."
    row = settings.loc[(small, limit)]
    assert row["model_ratio"] < row["elapsed_on_over_off"] < page.article_ratio(), (
        f"backs the verdict of '{LIMITED}'")


def test_the_large_pool_flushed_no_page_until_shutdown(run, large):
    """Backs the verdict of "With a large buffer pool, there is nothing to copy", leg by leg:
    "Its pages went out at shutdown." """
    legs = tables.leg_table(run.results)
    big = legs[legs["buffer_pool_mib"] == large]
    assert (big["innodb_pages_written"] == 0).all() and (big["innodb_dblwr_pages_written"] == 0
                                                         ).all(), (
        f"backs the verdict of '{LARGE_POOL}'")
    assert (big["device_bytes_per_row_with_shutdown"] > big["device_bytes_per_row"]).all()
    # "were within N % of each other ON and OFF"
    apart = page.figures(run)["large_bytes_apart"]
    ratio = tables.setting_table(run.results).query("buffer_pool_mib == @large and "
                                                    "write_limit_mibps == 0")["bytes_on_over_off"]
    assert abs(float(ratio.iloc[0]) - 1) * 100 <= float(apart.split()[0])


def test_the_model_chart_leaves_out_only_the_pairs_without_page_writes(run, large):
    pairs = tables.pair_table(run.results)
    assert (pairs.loc[pairs["buffer_pool_mib"] == large, "pages_per_row_off"] == 0).all()
    assert (pairs.loc[pairs["buffer_pool_mib"] != large, "pages_per_row_off"] > 0).all()


def test_the_torn_page_mixes_two_versions(run):
    """Backs "With doublewrite ON, a torn page is repaired": "The torn page really mixed two
    versions: its header carried V1's log position, its trailer V0's, and its CRC-32C
    checksum failed." """
    torn = tables.torn_table(run.results)
    for mode in ("ON", "OFF"):
        assert torn.loc["changed_bytes_first_part", mode] > 0
        assert torn.loc["changed_bytes_rest", mode] > 0
        assert torn.loc["torn_checksum_ok", mode] == 0
        assert torn.loc["torn_lsn_consistent", mode] == 0
        assert torn.loc["checkpoint_before_page_change", mode] == 1
    pages = page.torn_pages(run, "ON")
    assert list(pages["checksum ok"]) == ["yes", "yes", "no"]
    copy = int(page.figures(run)["torn_copy_page"])
    assert 64 <= copy < 192  # inside ibdata1's doublewrite area


def test_doublewrite_on_repaired_the_page_and_kept_every_row(run):
    """Backs the verdict of "With doublewrite ON, a torn page is repaired" and its Summary
    bullet: "MariaDB started, and all 48 rows were there with the updated value. `CHECK
    TABLE` found nothing wrong." """
    why = f"backs the verdict of '{TORN_ON}'"
    on = tables.torn_table(run.results)["ON"]
    assert on["restart_completed"] == 1 and on["log_recovered_from_doublewrite"] == 1, why
    assert on["rows_visible"] == on["rows_new_version"] == 48, why
    assert on["check_table_ok"] == 1, why
    said = page.server_said(run, "ON")
    assert "from the doublewrite buffer" in said


def test_doublewrite_off_stopped_recovery_and_forcing_it_lost_a_commit(run):
    """Backs the verdict of "Without doublewrite, the torn page's table is lost" and its
    Summary bullet: "The server did not start ... Forced to start at level 1, it could not
    read the torn table." """
    why = f"backs the verdict of '{TORN_OFF}'"
    off = tables.torn_table(run.results)["OFF"]
    assert off["restart_completed"] == 0 and off["restart_exit_code"] != 0, why
    said = page.server_said(run, "OFF")
    assert "Unable to apply log to corrupted page" in said
    assert "Set innodb_force_recovery=1" in said  # "The log names the way out"
    # force 1: "The other table, updated just before the crash, kept its update: only the
    # torn page's table is lost."
    assert off["force1_started"] == 1 and off["force1_select_error_1877"] == 1, why
    assert off["force1_other_rows_updated"] == 1
    # force 6 (the Details of "Turning it off is safe only where a page cannot tear"): "The
    # torn table is still unreadable, and the other table shows the value from before the
    # update, without any error."
    assert off["force6_started"] == 1 and off["force6_select_error_1877"] == 1
    assert off["force6_other_rows_updated"] == 0 and off["force6_other_rows_visible"] == 2
    # "The server started read-only (its log says ...) and did not apply the redo log."
    log = (run.raw_dir / "torn" / "dblwr-off" / "force-recovery-6.log").read_text()
    assert "Started in read only mode" in log


def test_the_torn_exercise_quotes_the_table_its_solution_prints(run):
    torn = page.torn_pages(run, "OFF").iloc[-1]
    f = page.figures(run)
    assert f["torn_off_header_lsn"] == str(torn["LSN in header"])
    assert f["torn_off_trailer_lsn"] == str(torn["LSN in trailer (low 32 bits)"])
    assert f["torn_off_header_lsn"] != f["torn_off_trailer_lsn"]
    text = PAGE.read_text()
    assert 'page.torn_pages(run, "OFF")' in text and "torn_off_trailer_lsn" in text


def test_checksums_are_on_and_cannot_be_turned_off(run):
    """Backs the verdict of "Turning it off is safe only where a page cannot tear": "This
    server writes full_crc32 checksums and refused to write none, so the tear was loud"."""
    torn = tables.torn_table(run.results)
    assert (torn.loc["checksum_full_crc32"] == 1).all(), f"backs the verdict of '{SAFE}'"
    assert (torn.loc["checksum_none_refused"] == 1).all(), f"backs the verdict of '{SAFE}'"
    assert page.figures(run)["innodb_checksum_algorithm"] == "full_crc32"


def test_full_page_images_are_smaller_than_a_page(run):
    # The side-by-side table: an image drops the page's free hole; a doublewrite copy does not.
    image = float(page.figures(run)["fpw_image_bytes"].replace(",", ""))
    assert 0 < image < 8192


def test_every_chart_draws_and_stays_small(run):
    for chart in (page.model_chart, page.ratio_chart, page.legs_chart, page.timeline_chart):
        assert len(chart(run).to_json()) < 300_000


def test_the_page_names_the_shipped_run_and_links_its_sources():
    text = PAGE.read_text()
    assert 'shipped_run("doublewrite")' in text
    for url in ("https://hoing.io/archives/8801",
                "https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/rds-optimized-writes.html",
                "https://dev.mysql.com/doc/refman/8.0/en/innodb-doublewrite-buffer.html"):
        assert url in text


def test_doublewrite_costs_the_mean_and_the_95th_percentile_not_only_the_tail(run, small,
                                                                              limit):
    """Backs the verdict of "Doublewrite slows the inserts that wait for a free page": "the
    95th percentile of insert latency was P ms with doublewrite ON, well above the OFF legs"."""
    # "So the cost is not only in the slowest 1 %", and its Details: "The mean insert took M ms
    # ON against N ms OFF (the client's threads divided by the inserts per second, as Little's
    # law says)"
    legs = tables.leg_table(run.results)
    legs = legs[(legs["buffer_pool_mib"] == small) & (legs["write_limit_mibps"] == limit)]
    threads = run.meta["parameters"]["threads"]
    assert ((threads / legs["tps"] * 1000 - legs["latency_avg"]).abs()
            < 0.05 * legs["latency_avg"]).all()
    on = legs[legs["doublewrite"] == "ON"].sort_values("repetition")
    off = legs[legs["doublewrite"] == "OFF"].sort_values("repetition")
    assert (on["latency_p95"].to_numpy() > 1.5 * off["latency_p95"].to_numpy()).all(), (
        f"backs the verdict of '{LATENCY}'")
    assert (on["latency_avg"].to_numpy() > 1.5 * off["latency_avg"].to_numpy()).all()
    f = page.figures(run)
    assert [f["limited_mean_on_rep1"], f["limited_mean_on_rep2"]] == \
        [f"{v:.1f}" for v in on["latency_avg"]]
    assert [f["limited_p95_off_rep1"], f["limited_p95_off_rep2"]] == \
        [f"{v:,.0f}" for v in off["latency_p95"]]


def test_the_no_limit_pair_passes_the_byte_models_ceiling_as_the_page_says(run, small):
    """The Details of "Beside the article: the shape, but not a ratio above 2": how a measured
    ratio can pass the model's figure."""
    # "Without a limit, the ON legs wrote P pages per row against Q. Their bytes per row grew
    # B times, past the byte model's ceiling of 2 (the model said M)"
    pairs = tables.pair_table(run.results)
    nolimit = pairs[(pairs["buffer_pool_mib"] == small) & (pairs["write_limit_mibps"] == 0)]
    setting = tables.setting_table(run.results).set_index(
        ["buffer_pool_mib", "write_limit_mibps"]).loc[(small, 0)]
    assert round(float(setting["bytes_on_over_off"]), 2) > 2  # as the page prints it
    assert nolimit["pages_per_row_on"].mean() > nolimit["pages_per_row_off"].mean()
    assert (nolimit["model_ratio"] < 2).all()


def test_no_pair_went_past_a_throughput_ratio_of_2(run):
    """Backs the verdict of "Beside the article: the shape, but not a ratio above 2" (partly
    confirmed) and its Summary bullet: "But no pair passed 2: the largest throughput ratio,
    OFF over ON, was X, so the run cannot explain the article's figure." """
    pairs = tables.pair_table(run.results)
    largest = pairs["tps_off_over_on"].max()
    f = page.figures(run)
    why = f"backs the verdict of '{ARTICLE}'"
    assert largest < 2, f"{why}: a pair's throughput ratio {largest:.2f} passed 2"
    assert (pairs["elapsed_on_over_off"] < 2).all(), f"{why}: a time ratio passed 2"
    assert f["max_tps_ratio"] == f"{largest:,.2f}", f"{why}: the largest ratio"
    assert float(f["max_tps_ratio"]) < 2 < float(f["article_ratio"]), (
        f"{why}: the run's largest ratio and the article's sit on either side of 2")


def test_every_leg_flushed_neighbouring_pages(run):
    # The lab, step 2: "innodb_flush_neighbors 1: InnoDB flushes neighbouring dirty pages
    # together" (the value the page explains is 1).
    assert page.server_variable(run, "innodb_flush_neighbors") == "1", (
        "The lab, step 2: the list explains innodb_flush_neighbors=1")
    assert page.figures(run)["innodb_flush_neighbors"] == "1"


def test_the_torn_table_is_a_single_page(run):
    # "With doublewrite ON, a torn page is repaired", its Details: "The torn table is a single
    # page: its 48 rows of 230 letters sit in one leaf page (page 3 of `torn_t.ibd`), which is
    # also the root of its index."
    expected = tables.torn_table(run.results).loc["rows_expected"]
    for mode in ("ON", "OFF"):
        info = json.loads((run.raw_dir / "torn" / f"dblwr-{mode.lower()}" / "pages.json"
                           ).read_text())
        for version in ("v0_clean_shutdown", "v1_written_home"):
            torn_page = info[version]
            assert torn_page["page_no"] == 3 and torn_page["level"] == 0, (
                f"{TORN_ON}: page 3 is not a leaf in {mode}, {version}")
            assert torn_page["n_recs"] == expected[mode], (
                f"{TORN_ON}: page 3 does not hold every row in {mode}, {version}")


def test_the_off_server_already_started_at_force_recovery_1(run):
    """Backs the verdict of "Turning it off is safe only where a page cannot tear": "the tear
    was loud until level 6 hid a committed update". Its Details: "The lab's server already
    started at level 1, and the other table kept its committed update there." """
    why = f"backs the verdict of '{SAFE}'"
    off = tables.torn_table(run.results)["OFF"]
    assert off["restart_completed"] == 0, f"{why}: a plain start refused"
    assert off["force1_started"] == 1, f"{why}: level 1 started"
    assert off["force1_other_rows_updated"] == 1, f"{why}: update kept"
    assert off["force6_other_rows_updated"] == 0, f"{why}: old value at 6"
