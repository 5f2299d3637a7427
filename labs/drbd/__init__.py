"""The DRBD chapter (book/drbd/) and its lab (`python -m labs run drbd --host vm1 --peer vm2`).

Two lab VMs mirror one data disk each through DRBD over their private link (or two SSH
hosts of the inventory mirror a loop file each, over the link between their
`link_address`es). The lab adds network delay with netem, measures the round trip it got,
and at each delay measures small synchronous writes (fio) under protocols A, B and C and
PostgreSQL's pgbench, beside the model in labs/drbd/model.py. A failover drill then fails
the primary mid-write (a VM's power cut; on SSH hosts, its server frozen and its link cut),
promotes the peer and counts the acknowledged writes the peer does not hold.

By default the lab runs in the source article's regime: pgbench at its scale 1 (commits one
at a time) and each disk's flushes slowed with dm-delay, so that a commit waits on a disk
rather than on an emulated processor; it then runs pgbench at the article's two zones,
placed on the run's own time scale.

params.py    the parameters and profiles
sides.py     the two hosts, checked before anything is made (a VM pair or two SSH hosts)
run.py       the baselines, the resource and the sweep (`--part sweep`: no pgbench)
databases.py PostgreSQL and pgbench: the bare disk, the mirror, and the article's two zones
ssh_link.py  the checks of the link between two SSH hosts (its route, its queueing discipline)
drill.py     the failover drill: numbered commits, the failure, the count, the resync
pair.py      the two hosts' workspaces and the small steps run.py and drill.py share
model.py     what each protocol waits for, and what a commit costs a transaction
article.py   the source article's published figures, as numbers
results.py   the recorded run's tables, beside the model
findings.py  what the run found, as typed values (the page's claims)
figures.py   the numbers the lab page quotes, formatted from the findings
page.py      the lab page's charts and tables, the headline, the panel
explain.py   the explanation page's model tables
charts.py    the explanation page's Altair charts
"""

from labs.drbd.params import Parameters

NAME = "drbd"
DESCRIPTION = ("synchronous mirroring with DRBD between two hosts: write latency and pgbench "
               "by protocol and round trip, and a failover drill that counts lost writes")
BOOK_PAGE = "book/drbd/lab.md"
NEEDS = ("two lab VMs started together (`python -m labs vm up --pair`), as root; or two SSH "
         "hosts of the inventory with DRBD (README)")

__all__ = ["BOOK_PAGE", "DESCRIPTION", "NAME", "NEEDS", "Parameters"]
