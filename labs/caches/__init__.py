"""Lab: the page cache against an engine's own cache (`python -m labs run caches`).

The lab builds an ext4 file system on a loop device of its own and measures, from the
device's counters, how many bytes a small random read really costs: at the block level
(buffered, direct and memory-mapped reads, readahead as the device has it and at 0), then
in RocksDB (buffered reads, and direct reads with its own cache) and in Cassandra
(`disk_access_mode` mmap_index_only and standard, LZ4 chunks on and off), cold and warm;
then the hit ratio against the working set, and what a miss costs on a throttled device.
With `--engine scylla` the CQL legs run the official ScyllaDB image instead, if present.

params.py   the parameters and profiles      model.py   what the chapter predicts (pure)
probe.py    runs on the lab host (reads)     hostside.py the lab's device and files
rocks.py    the RocksDB container            cql.py     the Cassandra/ScyllaDB container
legs.py     the measurements                 run.py     the order of the legs
tables.py, page.py, charts.py   what the book shows
"""

from labs.caches.params import Parameters

NAME = "caches"
DESCRIPTION = ("page cache vs an engine's own cache: bytes read per row, hit ratio and the "
               "cost of a miss, in Cassandra and RocksDB")
BOOK_PAGE = "book/caches/lab.md"
NEEDS = ("root and a docker engine on this machine (--host local): a loop device, ext4, "
         "Cassandra and RocksDB containers")

__all__ = ["BOOK_PAGE", "DESCRIPTION", "NAME", "NEEDS", "Parameters"]
