"""Lab template: copy this folder to start a new lab (see the README's "Lab contract").

The toy lab here is complete and tested (tests/test_template_lab.py): it writes files of a
few sizes with `dd` into its workspace on the lab host, reads their sizes back, and compares
them with the model (blocks x block size). Replace each part with your lab's:

__init__.py  NAME, DESCRIPTION, BOOK_PAGE, NEEDS and the Parameters class (this file)
params.py    the parameters dataclass: fields with ranges, PROFILES, cross-field check()
run.py       run(params, host, progress) -> RecordedRun: the only part that touches a host
findings.py  findings(run) -> Findings: typed numbers and yes/no answers about one run, which
             the page formats and the claim tests assert (never the page's words)
page.py      figures(run), chart(run), provenance(run), panel(), headline(run): what the
             book page shows, and the measures a reader's run is set beside
"""

from labs.template.params import Parameters

NAME = "template"
DESCRIPTION = "template lab: dd writes files of a few sizes; the model predicts their sizes"
BOOK_PAGE = None  # a real lab names its page, e.g. "book/<topic>/lab.md"
NEEDS = "any lab host with dd (root for the journaled work folder); seconds"

__all__ = ["BOOK_PAGE", "DESCRIPTION", "NAME", "NEEDS", "Parameters"]
