"""PostgreSQL's data page checksum, so the lab can write a torn page exactly as a real
partial write would leave it (first half with the new page's own checksum).

The algorithm is PostgreSQL's `pg_checksum_page` (src/include/storage/checksum_impl.h):
32 parallel FNV-1a-like sums over the 8 KiB page read as little-endian 32-bit words, with
the page's own checksum field taken as zero, two extra rounds of zeroes, the sums folded
by XOR, the block number XORed in, and the result reduced to 1..65535.
The lab checks it against pages PostgreSQL itself wrote before relying on it.
"""

from __future__ import annotations

import struct

import numpy as np

PAGE_BYTES = 8192
N_SUMS = 32
FNV_PRIME = np.uint32(16777619)
CHECKSUM_OFFSET = 8  # pd_checksum follows the 8-byte pd_lsn in the page header
BASE_OFFSETS = np.array([
    0x5B1F36E9, 0xB8525960, 0x02AB50AA, 0x1DE66D2A, 0x79FF467A, 0x9BB9F8A3, 0x217E7CD2,
    0x83E13D2C, 0xF8D4474F, 0xE39EB970, 0x42C6AE16, 0x993216FA, 0x7B093B5D, 0x98DAFF3C,
    0xF718902A, 0x0B1C9CDB, 0xE58F764B, 0x187636BC, 0x5D7B3BB1, 0xE73DE7DE, 0x92BEC979,
    0xCCA6C0B2, 0x304A0979, 0x85AA43D4, 0x783125BB, 0x6CA8EAA2, 0xE407EAC6, 0x4B5CFC3E,
    0x9FBF8C76, 0x15CA20BE, 0xF2CA9FD3, 0x959BD756], dtype=np.uint32)


def _mix(sums: np.ndarray, values: np.ndarray) -> np.ndarray:
    mixed = sums ^ values
    return (mixed * FNV_PRIME) ^ (mixed >> np.uint32(17))


def page_checksum(page: bytes, block: int) -> int:
    """The checksum PostgreSQL stores in a page's header for block number `block`."""
    if len(page) != PAGE_BYTES:
        raise ValueError(f"a page is {PAGE_BYTES} bytes, got {len(page)}")
    data = bytearray(page)
    data[CHECKSUM_OFFSET:CHECKSUM_OFFSET + 2] = b"\0\0"
    words = np.frombuffer(bytes(data), dtype="<u4").astype(np.uint32).reshape(-1, N_SUMS)
    sums = BASE_OFFSETS.copy()
    with np.errstate(over="ignore"):
        for row in words:
            sums = _mix(sums, row)
        zeros = np.zeros(N_SUMS, dtype=np.uint32)
        for _ in range(2):
            sums = _mix(sums, zeros)
    result = int(np.bitwise_xor.reduce(sums)) ^ block
    return (result % 65535) + 1


def stored_checksum(page: bytes) -> int:
    return struct.unpack_from("<H", page, CHECKSUM_OFFSET)[0]


def with_checksum(page: bytes, block: int) -> bytes:
    """The page with its header's checksum field set as PostgreSQL would write it."""
    data = bytearray(page)
    struct.pack_into("<H", data, CHECKSUM_OFFSET, page_checksum(page, block))
    return bytes(data)
