"""labs/tools/innodbpage.py on two real versions of one page written by MariaDB 10.11.19."""

from pathlib import Path

import pytest

from labs.tools import innodbpage

FIXTURES = Path(__file__).parent / "fixtures" / "innodb"
V0 = (FIXTURES / "torn_t-page3-v0.bin").read_bytes()  # 48 rows 'AAA...', clean shutdown
V1 = (FIXTURES / "torn_t-page3-v1.bin").read_bytes()  # the same rows 'aaa...', flushed


def test_crc32c_known_value():
    # The CRC-32C check value of the nine ASCII digits (RFC 3720, appendix B.4).
    assert innodbpage.crc32c(b"123456789") == 0xE3069283


@pytest.mark.parametrize("page, lsn, checksum", [(V0, 62027, 0xF3823E34),
                                                  (V1, 91994, 0xB3599A8A)])
def test_pages_mariadb_wrote_have_valid_full_crc32_checksums(page, lsn, checksum):
    parsed = innodbpage.parse_page(page)
    assert parsed.checksum_ok and parsed.stored_checksum == checksum
    assert parsed.lsn == lsn and parsed.lsn_consistent
    assert (parsed.page_no, parsed.space_id, parsed.type_name) == (3, 5, "index")
    assert (parsed.n_recs, parsed.level, parsed.index_id) == (48, 0, 23)
    assert (parsed.prev_page, parsed.next_page) == (0xFFFFFFFF, 0xFFFFFFFF)  # the only leaf


def test_torn_page_fails_both_checks():
    torn = innodbpage.torn_page(V1, V0, 4096)
    assert torn[:4096] == V1[:4096] and torn[4096:] == V0[4096:]
    parsed = innodbpage.parse_page(torn)
    # The header (first 4 KiB) is new, the trailer (last 8 bytes) is old.
    assert parsed.lsn == 91994 and parsed.trailer_lsn_low32 == 62027
    assert not parsed.lsn_consistent
    assert parsed.stored_checksum == 0xF3823E34
    assert not parsed.checksum_ok and parsed.computed_checksum == 0x7B242EA4


def test_one_flipped_byte_breaks_the_checksum():
    damaged = bytearray(V0)
    damaged[8000] ^= 0x01
    assert not innodbpage.parse_page(bytes(damaged)).checksum_ok


def test_the_versions_differ_only_where_rows_changed():
    differing = [i for i in range(innodbpage.PAGE_BYTES) if V0[i] != V1[i]]
    assert differing[0] >= 16  # page number and siblings unchanged; the LSN is the first change
    # Rows 1 and 27 hold 'B' * 230 (id % 26 == 1) in V0 and 'b' * 230 in V1.
    assert V0.count(b"B" * 230) == 2 and V1.count(b"b" * 230) == 2
    assert V0.count(b"b" * 230) == 0 and V1.count(b"B" * 230) == 0


def test_find_page_copies_and_page_at():
    fake_file = bytes(innodbpage.PAGE_BYTES) * 3 + V1 + bytes(innodbpage.PAGE_BYTES)
    assert innodbpage.page_at(fake_file, 3) == V1
    copies = innodbpage.find_page_copies(fake_file, space_id=5, page_no=3)
    assert [index for index, _ in copies] == [3]
    assert copies[0][1].lsn == 91994
    assert innodbpage.find_page_copies(fake_file, space_id=6, page_no=3) == []
    with pytest.raises(innodbpage.InnodbPageError):
        innodbpage.page_at(fake_file, 5)


def test_zero_page_and_bad_sizes():
    zero = innodbpage.parse_page(bytes(innodbpage.PAGE_BYTES))
    assert zero.all_zero and zero.type_name == "allocated"
    with pytest.raises(innodbpage.InnodbPageError):
        innodbpage.parse_page(V0[:8192])
    with pytest.raises(innodbpage.InnodbPageError):
        innodbpage.torn_page(V1, V0, 1000)
