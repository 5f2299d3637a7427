"""`python -m labs vm build|up|status|run|down`: the lab VMs from the command line."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable

from labs.errors import UsageError
from labs.infra.vm import boot, image, machine

HELP = "build, boot, use and stop disposable lab VMs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="vm_action", metavar="ACTION",
                                    parser_class=type(parser))
    actions.required = True
    build = actions.add_parser("build", help="build (or reuse) the cached Debian image")
    build.add_argument("--force", action="store_true", help="rebuild even if cached")
    default = image.DEFAULT_RELEASE
    release_help = (f"Debian release of the image: {', '.join(image.RELEASES)} "
                    f"(default {default}, Debian {image.RELEASES[default]})")
    build.add_argument("--release", default=image.DEFAULT_RELEASE, help=release_help)
    start = actions.add_parser("up", help="start vm1 (and vm2 with --pair) with fresh data "
                                         "disks: resumed from a saved state once one boot saved it")
    start.add_argument("--pair", action="store_true",
                      help="two VMs on a private link (10.77.0.1 and 10.77.0.2)")
    # 1536 MiB: the six PostgreSQL servers of quorum-commit need about 850 MiB free, and
    # every lab's tests and measured quick runs use this size.
    start.add_argument("--memory", type=int, default=1536, metavar="MiB",
                      help="memory per VM (default 1536)")
    start.add_argument("--cpus", type=int, default=2, help="virtual CPUs per VM (default 2)")
    start.add_argument("--disk-mib", type=int, default=1024,
                      help="size of each data disk, /dev/vdb and /dev/vdc (default 1024)")
    start.add_argument("--slow-iops", type=int, default=200,
                      help="QEMU throttle on /dev/vdc, I/O per second (0: none; default 200)")
    start.add_argument("--slow-bps", type=int, default=0,
                      help="QEMU throttle on /dev/vdc, bytes per second (0: none)")
    start.add_argument("--release", default=image.DEFAULT_RELEASE, help=release_help)
    start.add_argument("--cold", action="store_true",
                      help="boot the kernel even where a saved state exists (and save anew)")
    actions.add_parser("status", help="list this install's lab VMs")
    run = actions.add_parser("run", help="run a command on a VM; its exit code is passed on")
    run.add_argument("name", help="vm1 or vm2")
    run.add_argument("--timeout", type=float, default=600, help="seconds (default 600)")
    run.add_argument("words", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")
    stop = actions.add_parser("down", help="stop VMs (default: all of them)")
    stop.add_argument("names", nargs="*", help="vm1, vm2 (default: all)")


def _check_vm_names(action: str, names: list[str]) -> None:
    for name in names:
        if name not in boot.VM_NAMES:
            raise UsageError(f"{action}: {name!r} is no lab VM "
                             f"(they are {' and '.join(boot.VM_NAMES)})")


def _build(args: argparse.Namespace) -> int:
    image.check_release(args.release)
    print(f"vm build: release={args.release} force={args.force} cache={image.cache_dir()}")
    built_image, built, seconds = image.build_image(force=args.force, release=args.release)
    what = "built" if built else "already cached (recipe unchanged)"
    print(f"vm build: image {built_image.recipe_hash} {what} in {seconds:.1f} s: "
          f"{built_image.directory}")
    return 0


def _up(args: argparse.Namespace) -> int:
    boot.check_up(memory_mib=args.memory, cpus=args.cpus, data_disk_mib=args.disk_mib,
                  slow_iops=args.slow_iops, slow_bps=args.slow_bps, release=args.release)
    print(f"vm up: pair={args.pair} memory_mib={args.memory} cpus={args.cpus} "
          f"disk_mib={args.disk_mib} slow_iops={args.slow_iops} slow_bps={args.slow_bps} "
          f"release={args.release} cold={args.cold}")
    boot.up(pair=args.pair, memory_mib=args.memory, cpus=args.cpus,
            data_disk_mib=args.disk_mib, slow_iops=args.slow_iops,
            slow_bps=args.slow_bps, release=args.release, cold=args.cold)
    return 0


def _status(args: argparse.Namespace) -> int:
    rows = machine.status()
    if not rows:
        print("vm status: no lab VMs (start one with `python -m labs vm up`)")
    for row in rows:
        if not row.get("directory"):
            print(f"{row['name']}: starting or left behind (`python -m labs clean` stops it)")
            continue
        print(f"{row['name']}: {'running' if row['running'] else 'stopped'} "
              f"accel={row['accel']} ssh=127.0.0.1:{row['ssh_port']} "
              f"boot_s={row['boot_s']} memory_mib={row['memory_mib']} cpus={row['cpus']} "
              f"release={row.get('release', image.DEFAULT_RELEASE)} "
              f"private_ip={row['private_ip'] or '-'} disks={','.join(row['lab_devices'])} "
              f"console={row['directory']}/serial.log")
    return 0


def _run(args: argparse.Namespace) -> int:
    words = args.words[1:] if args.words[:1] == ["--"] else args.words
    if not words:
        raise UsageError("vm run: give a command after --, e.g. vm run vm1 -- uname -r")
    _check_vm_names("vm run", [args.name])
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UsageError(f"vm run: --timeout must be a number of seconds above 0, "
                         f"got {args.timeout:g}")
    host = machine.vm_host(args.name)
    # One word is a shell command line ("cat /proc/mdstat | head"); several are argv.
    command = words[0] if len(words) == 1 else words
    try:
        result = host.run(command, check=False, timeout_s=args.timeout)
    finally:
        host.close()
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.exit_code


def _down(args: argparse.Namespace) -> int:
    _check_vm_names("vm down", args.names)  # a typo is not "nothing to do"
    stopped = machine.down(args.names or None)
    not_running = [name for name in args.names if name not in stopped]
    if not_running:
        print(f"vm down: {', '.join(not_running)} not running")
    elif not stopped:
        print("vm down: no lab VM to stop")
    return 0


ACTIONS: dict[str, Callable[[argparse.Namespace], int]] = {
    "build": _build, "up": _up, "status": _status, "run": _run, "down": _down}


def main(args: argparse.Namespace) -> int:
    action = ACTIONS.get(args.vm_action)
    if action is None:
        raise UsageError(f"vm: unknown action {args.vm_action}")
    return action(args)
