"""The Device speed chapter (book/devices/) and its lab (`python -m labs run devices --host vm1`).

A lab VM's two data disks are throttled by QEMU into a gp3 and an sc1 volume (AWS's published
limits, labs/models/cloud_volume.py) and measured with fio, sysbench and a MariaDB stored
procedure beside the model. On `--host local` the reader's own disk is measured instead,
through a loop device over a file of the lab's (fio and sysbench, nothing emulated).

params.py  the parameters and profiles
run.py     the throttles, fio's sweeps, the sc1 burst, sysbench fileio, the MariaDB inserts
           (touches the VM, or the local loop device)
results.py the recorded run's tables (fio, the burst, sysbench, MariaDB) and the models beside them
page.py    what the book pages show: the models' tables and the recorded run
charts.py  the Altair charts
"""

from labs.devices.params import Parameters

NAME = "devices"
DESCRIPTION = ("disks throttled into cloud volumes (gp3, sc1) and measured with fio, sysbench "
               "and MariaDB inserts")
BOOK_PAGE = "book/devices/lab.md"
NEEDS = ("a lab VM (the lab throttles its data disks through QEMU's monitor); or local, as root: "
         "your own disk, nothing emulated")

__all__ = ["BOOK_PAGE", "DESCRIPTION", "NAME", "NEEDS", "Parameters"]
