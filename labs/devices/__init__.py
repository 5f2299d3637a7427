"""The Device speed chapter (book/devices/): disks, SSDs and cloud volumes.

page.py   the models' tables and the numbers the explanation page quotes
charts.py the Altair charts drawn from them
"""
