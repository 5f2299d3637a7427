"""InnoDB data pages as MariaDB 10.11 writes them, so a lab can find, check and tear one.

A page is 16 KiB (innodb_page_size). Every page starts with the 38-byte FIL header and ends
with an 8-byte trailer (storage/innobase/include/fil0fil.h):

    0  FIL_PAGE_SPACE_OR_CHKSUM  4  (full_crc32 format: unused for checksums)
    4  FIL_PAGE_OFFSET           4  page number within its tablespace
    8  FIL_PAGE_PREV / 12 NEXT   4+4 siblings on the same B-tree level
   16  FIL_PAGE_LSN              8  LSN of the newest change written into the page
   24  FIL_PAGE_TYPE             2  17855 = B-tree index page, ...
   26  FIL_PAGE_FILE_FLUSH_LSN   8  (or the encryption key version)
   34  FIL_PAGE_SPACE_ID         4
  -8   low 32 bits of FIL_PAGE_LSN
  -4   CRC-32C of bytes [0, page size - 4)   (the full_crc32 format, 10.5+ default)

All integers are big-endian. Tablespaces created by MariaDB 10.5 and later with the default
innodb_checksum_algorithm=full_crc32 use the layout above; older ones keep a checksum in the
first 4 bytes as well, which this module does not compute.

Index pages carry a PAGE header at byte 38: number of records at +16, B-tree level at +26
(0 = leaf) and the index id at +28.

In a file-per-table .ibd, page 0 is the FSP header, 1 the change-buffer bitmap, 2 the
segment inodes and 3 the root of the first (clustered) index: a table small enough to fit
one page keeps all its rows in page 3. The doublewrite buffer lives in the system tablespace
(ibdata1), two blocks of 64 pages at pages 64..191 (bytes 1 MiB..3 MiB).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

PAGE_BYTES = 16384
FIL_HEADER_BYTES = 38
FIL_PAGE_INDEX = 17855
PAGE_TYPES = {0: "allocated", 2: "undo log", 3: "inode", 4: "ibuf free list", 5: "ibuf bitmap",
              6: "system", 7: "trx system", 8: "fsp header", 9: "xdes", 10: "blob",
              17855: "index", 17854: "rtree", 17853: "instant"}
DOUBLEWRITE_FIRST_PAGE = 64  # in ibdata1; FSP_EXTENT_SIZE pages per block at 16 KiB
DOUBLEWRITE_PAGES = 128


class InnodbPageError(ValueError):
    """Bytes that are not an InnoDB page of the expected size."""


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        value = byte
        for _ in range(8):
            value = (value >> 1) ^ 0x82F63B78 if value & 1 else value >> 1
        table.append(value)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum MariaDB's ut_crc32 computes."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


@dataclass(frozen=True)
class InnodbPage:
    page_no: int
    prev_page: int
    next_page: int
    lsn: int
    page_type: int
    space_id: int
    trailer_lsn_low32: int
    stored_checksum: int
    computed_checksum: int
    n_recs: int | None = None  # index pages only
    level: int | None = None
    index_id: int | None = None

    @property
    def type_name(self) -> str:
        return PAGE_TYPES.get(self.page_type, f"type {self.page_type}")

    @property
    def checksum_ok(self) -> bool:
        return self.stored_checksum == self.computed_checksum

    @property
    def lsn_consistent(self) -> bool:
        """The trailer's copy of the LSN matches the header's: a cheap torn-page hint."""
        return self.trailer_lsn_low32 == self.lsn & 0xFFFFFFFF

    @property
    def all_zero(self) -> bool:
        return self.stored_checksum == 0 and self.lsn == 0 and self.page_type == 0 \
            and self.space_id == 0 and self.page_no == 0


def full_crc32_checksum(page: bytes) -> int:
    _check_size(page)
    return crc32c(page[:-4])


def parse_page(page: bytes) -> InnodbPage:
    """The FIL header, trailer and (for index pages) the PAGE header fields."""
    _check_size(page)
    page_no, prev_page, next_page, lsn, page_type = struct.unpack_from(">IIIQH", page, 4)
    (space_id,) = struct.unpack_from(">I", page, 34)
    trailer_lsn, stored = struct.unpack_from(">II", page, len(page) - 8)
    index = {}
    if page_type in (FIL_PAGE_INDEX, 17853):
        (n_recs,) = struct.unpack_from(">H", page, FIL_HEADER_BYTES + 16)
        level, index_id = struct.unpack_from(">HQ", page, FIL_HEADER_BYTES + 26)
        index = {"n_recs": n_recs, "level": level, "index_id": index_id}
    return InnodbPage(page_no=page_no, prev_page=prev_page, next_page=next_page, lsn=lsn,
                      page_type=page_type, space_id=space_id, trailer_lsn_low32=trailer_lsn,
                      stored_checksum=stored, computed_checksum=full_crc32_checksum(page),
                      **index)


def page_at(data: bytes, page_no: int) -> bytes:
    """Page `page_no` of a tablespace file's bytes."""
    start = page_no * PAGE_BYTES
    if page_no < 0 or start + PAGE_BYTES > len(data):
        raise InnodbPageError(f"page {page_no} is beyond the {len(data)} bytes given")
    return data[start:start + PAGE_BYTES]


def torn_page(new: bytes, old: bytes, written_bytes: int = 4096) -> bytes:
    """What a write of `new` over `old` leaves when only its first `written_bytes` arrived:
    a power cut in the middle of a 16 KiB write on a device that is atomic per 4 KiB."""
    _check_size(new)
    _check_size(old)
    if not 0 < written_bytes < PAGE_BYTES or written_bytes % 512:
        raise InnodbPageError("written_bytes must be a multiple of 512 inside the page")
    return new[:written_bytes] + old[written_bytes:]


def find_page_copies(data: bytes, space_id: int, page_no: int,
                     first_page: int = 0) -> list[tuple[int, InnodbPage]]:
    """(page index in `data`, parsed page) of every page that names (space_id, page_no),
    e.g. the copies of one page in ibdata1's doublewrite area."""
    copies = []
    for index in range(first_page, len(data) // PAGE_BYTES):
        start = index * PAGE_BYTES
        if struct.unpack_from(">I", data, start + 34)[0] == space_id and \
                struct.unpack_from(">I", data, start + 4)[0] == page_no:
            copies.append((index, parse_page(data[start:start + PAGE_BYTES])))
    return copies


def _check_size(page: bytes) -> None:
    if len(page) != PAGE_BYTES:
        raise InnodbPageError(f"an InnoDB page here is {PAGE_BYTES} bytes, got {len(page)}")
