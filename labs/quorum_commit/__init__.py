"""Quorum-commit lab: PostgreSQL's quorum commit laid out like Aurora, six copies over zones.

params.py   the parameters, the layout of copies over zones, the points of the sweep
copies.py   the six PostgreSQL servers in a lab VM, each standby in its own network
            namespace with its own netem delay; losing copies and getting them back
run.py      the lab: commit latency for ANY k and FIRST k beside the model's k-th
            acknowledgement, then a zone lost, then one more copy
power_cut*  the power cuts of every copy, one per synchronous_commit setting: the run's
            part, its findings, its model and its page figures
failover*   zone 1 (the primary's) lost, the newest survivor promoted: the run's part,
            its findings and its page figures
page.py     the book page: the charts and tables beside the model (labs/models/quorum.py)
"""

from labs.quorum_commit.params import Parameters

NAME = "quorum-commit"
DESCRIPTION = ("quorum-commit: six PostgreSQL copies over three zones in a lab VM; commit "
               "latency under ANY k, what a lost zone (and one more copy) does, and a "
               "failover after losing the primary's zone")
BOOK_PAGE = "book/quorum/quorum-commit.md"
NEEDS = "a lab VM (`python -m labs vm up`) with about 850 MiB of free memory; minutes"

__all__ = ["BOOK_PAGE", "DESCRIPTION", "NAME", "NEEDS", "Parameters"]
