"""Shared infrastructure: where commands run (hosts, inventory, VMs), what labs create
(workspace, journal, guard, containers, images) and how it is cleaned up."""
