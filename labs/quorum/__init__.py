"""Lab: quorum availability, by Monte Carlo, checked against the exact model.

    python -m labs run quorum --nodes 6 --write 4 --read 3 --azs 3 --p-node 0.05 \
        --p-az 0.01 --trials 2000000 --seed 2017

params.py  the parameters (Aurora's layout by default)
run.py     the simulation, recorded under data/runs/quorum/
findings.py  what a run found (each estimate, its interval, the exact value), typed
page.py    what the chapter's pages show: chart data, figures, the live panel
charts.py  the chapter's Altair charts
"""

from labs.quorum.params import Parameters

NAME = "quorum"
DESCRIPTION = "Monte Carlo of quorum availability, checked against the exact model"
BOOK_PAGE = "book/quorum/lab.md"
NEEDS = "no lab host: pure Python (numpy), a few seconds"

__all__ = ["BOOK_PAGE", "DESCRIPTION", "NAME", "NEEDS", "Parameters"]
