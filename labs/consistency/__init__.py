"""Consistency lab: Cassandra's consistency levels on a real three-node cluster.

params.py   the parameters and profiles
cluster.py  the three Cassandra containers, their driver sessions, stopping and starting
run.py      the lab: which operations each level allows with 0, 1, 2 nodes stopped, then
            reads of rows that a stopped replica missed (which reads see the old value)
model.py    which requests each level allows, and how often a read may be stale
findings.py what a run found: its tables and the counts the page quotes, typed
page.py     the book page: the tables and charts beside the model
"""

from labs.consistency.params import Parameters

NAME = "consistency"
DESCRIPTION = ("consistency: a three-node Cassandra cluster; which consistency levels work "
               "with nodes stopped, and which reads see a write a replica missed")
BOOK_PAGE = "book/quorum/consistency.md"
NEEDS = "this machine, with docker and the Cassandra image; about 3 GiB of memory; minutes"

__all__ = ["BOOK_PAGE", "DESCRIPTION", "NAME", "NEEDS", "Parameters"]
