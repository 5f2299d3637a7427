"""Disposable lab VMs: Debian 12 under QEMU, booting Debian's own kernel.

    python -m labs vm build            build (or reuse) the cached image     -> labs.vm.image
    python -m labs vm up [--pair]      start vm1 (and vm2) with fresh data disks -> labs.vm.boot
                                       (boot once, then resume a saved state -> labs.vm.saved)
    python -m labs vm status | run NAME -- CMD | down

A running VM is a lab host: `labs.hosts.get_host("vm1")` returns an SSH host for it, with
`host.lab_devices` naming its extra data disks (the second one throttled by QEMU).
"""
