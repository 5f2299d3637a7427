"""The power-cut drill's numbered blocks: the writer and the reader that run in the lab VM
(as Python scripts, so the VM needs nothing but python3), and the reader's result (pure).

Block N holds the cut's token and N; the writer prints `ack N` after block N's write
returned; the reader lists the acknowledged blocks that are not there, intact.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from labs.errors import LabError

BLOCK_BYTES = 4096

# Block N holds the cut's token and N, repeated over 4 KiB: a block left from an earlier cut
# (another token), a zeroed one or a torn one all fail the check.
BLOCK_CODE = """
import random
def block(token, number):
    header = token + b"%012d" % number
    return (header * (4096 // len(header) + 1))[:4096]
def positions(order, blocks, seed):
    where = list(range(1, blocks + 1))  # block N goes to where[N - 1] (block 0 stays unused)
    if order == "random":
        random.Random(seed).shuffle(where)
    return where
"""
# The writer: one process, one O_DIRECT descriptor (O_DSYNC too where the setting syncs), one
# block at a time; `ack N` only after the write returned. Exit 3 if the region is full
# before the power goes.
WRITER_SCRIPT = BLOCK_CODE + """
import mmap, os, sys
device, token, blocks, order, seed, sync = sys.argv[1:7]
token, blocks, seed = token.encode(), int(blocks), int(seed)
flags = os.O_WRONLY | os.O_DIRECT | (os.O_DSYNC if sync == "dsync" else 0)
fd = os.open(device, flags)
buffer = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT needs
for number, where in enumerate(positions(order, blocks, seed), start=1):
    buffer[:] = block(token, number)
    os.pwrite(fd, buffer, where * 4096)
    print("ack %d" % number, flush=True)
sys.exit(3)
"""
# The check: read the whole region with O_DIRECT; print the acknowledged blocks that are
# not intact (as ranges of block numbers), the newest intact block, and how many written
# blocks beyond the last acknowledgement are intact.
CHECK_SCRIPT = BLOCK_CODE + """
import json, mmap, os, sys
device, token, blocks, order, seed, acked = sys.argv[1:7]
token, blocks, seed, acked = token.encode(), int(blocks), int(seed), int(acked)
fd = os.open(device, os.O_RDONLY | os.O_DIRECT)
chunk = mmap.mmap(-1, 256 * 4096)
content = {}
where = 1
while where <= blocks:
    got = os.preadv(fd, [chunk], where * 4096) // 4096
    if got <= 0:
        sys.exit("short read at block %d" % where)
    for index in range(min(got, blocks - where + 1)):
        content[where + index] = chunk[index * 4096:(index + 1) * 4096]
    where += got
missing, newest, beyond = [], 0, 0
for number, where in enumerate(positions(order, blocks, seed), start=1):
    if content[where] == block(token, number):
        newest = number
        beyond += number > acked
    elif number <= acked:
        if missing and missing[-1][1] == number - 1:
            missing[-1][1] = number
        else:
            missing.append([number, number])
print(json.dumps({"missing": missing, "newest_intact": newest, "intact_beyond_ack": beyond}))
"""


@dataclass
class BlockCheck:
    """What the reader found on the slow leg after the cut."""

    missing: list[tuple[int, int]]  # acknowledged blocks not intact, as inclusive ranges
    newest_intact: int
    intact_beyond_ack: int  # written, found, but their ack never reached the controller

    @property
    def lost(self) -> int:
        return sum(last - first + 1 for first, last in self.missing)


def parse_check(text: str) -> BlockCheck:
    """The check script's one JSON line."""
    try:
        found = json.loads(text.strip().splitlines()[-1])
        return BlockCheck([(int(a), int(b)) for a, b in found["missing"]],
                          int(found["newest_intact"]), int(found["intact_beyond_ack"]))
    except (IndexError, KeyError, TypeError, ValueError) as error:
        raise LabError(f"the power-cut check printed no result ({error}): {text[-200:]!r}"
                       ) from None
