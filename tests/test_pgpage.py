"""The lab's PostgreSQL page checksum must agree with PostgreSQL's on pages it wrote."""

from pathlib import Path

import pytest

from labs.torn_pages import pgpage

FIXTURE = Path(__file__).parent / "fixtures" / "pgpage" / "heap-2-blocks.bin"


def test_checksum_matches_pages_postgresql_wrote():
    # Two heap blocks copied from a PostgreSQL 15 cluster initialised with --data-checksums.
    data = FIXTURE.read_bytes()
    for block in range(len(data) // pgpage.PAGE_BYTES):
        page = data[block * pgpage.PAGE_BYTES:(block + 1) * pgpage.PAGE_BYTES]
        assert pgpage.page_checksum(page, block) == pgpage.stored_checksum(page)


def test_checksum_depends_on_every_half_and_the_block_number():
    page = FIXTURE.read_bytes()[:pgpage.PAGE_BYTES]
    changed = bytearray(page)
    changed[6000] ^= 0xFF  # a byte in the second 4 KiB
    assert pgpage.page_checksum(bytes(changed), 0) != pgpage.page_checksum(page, 0)
    assert pgpage.page_checksum(page, 1) != pgpage.page_checksum(page, 0)
    fixed = pgpage.with_checksum(bytes(changed), 0)
    assert pgpage.stored_checksum(fixed) == pgpage.page_checksum(bytes(changed), 0)


def test_wrong_page_size_is_refused():
    with pytest.raises(ValueError):
        pgpage.page_checksum(b"\0" * 4096, 0)
