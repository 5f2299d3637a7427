"""Lab VMs for real: build the image, boot a pair, and use them as lab hosts.

One pair of VMs is booted for the whole test session (conftest.lab_vms) and shared by every
test that needs a VM:
md RAID1, module loading, the guard, the private link, clean, and fault injection all run
in it. Figures (build and boot times, kills and leaks) are printed to the terminal.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SUDO_USER, VM_PAIR_ARGS, add_sudo_user, qemu_processes_under, remove_sudo_user
from conftest import report as conftest_report

from labs.errors import LabError
from labs.infra.guard import DeviceRefused, check_device
from labs.infra.hosts import CommandTimedOut, HostUnreachable, SSHHost
from labs.infra.inventory import get_host
from labs.infra.journal import Journal
from labs.infra.vm import image as vm_image
from labs.infra.vm import machine
from labs.infra.workspace import LabWorkspace
from labs.tools.mdadm import Member

ROOT = Path(__file__).resolve().parents[1]
SLOW_IOPS = 200  # as conftest.VM_PAIR_ARGS boots the pair
FAULT_SEED = 20261120


_CONFIG: list[pytest.Config] = []


@pytest.fixture(scope="module")
def lab_env(lab_vms, request):
    """The session's shared VM pair (conftest.lab_vms)."""
    _CONFIG.append(request.config)
    return lab_vms


def report(message: str) -> None:
    """A figure for the closing note: straight to the terminal, past pytest's capture."""
    conftest_report(_CONFIG[0] if _CONFIG else None, message)


def test_image_is_cached_and_keyed_by_its_recipe(lab_env, monkeypatch):
    started = time.monotonic()
    image, built, _ = vm_image.build_image(progress=None)
    report(f"image build, cached: {time.monotonic() - started:.2f} s")
    assert not built and image.disk.exists() and image.kernel.exists()
    keys = vm_image.ensure_keys()
    assert image.recipe_hash == vm_image.recipe_hash(keys)
    monkeypatch.setitem(vm_image.PACKAGES, "hello", "a change to the recipe")
    assert vm_image.recipe_hash(keys) != image.recipe_hash
    for private in (keys.client_key, keys.host_key):
        assert private.stat().st_mode & 0o777 == 0o600
        assert ROOT not in private.resolve().parents, "keys must never be inside the repository"


def test_status_run_and_exit_code_pass_through(lab_env):
    status = lab_env.cli("vm", "status")
    assert status.returncode == 0
    assert "vm1: running" in status.stdout and "vm2: running" in status.stdout
    kernel = lab_env.cli("vm", "run", "vm1", "--", "uname", "-r")
    assert kernel.returncode == 0
    assert kernel.stdout.strip() == vm_image.cached_image().build["kernel"]
    assert lab_env.cli("vm", "run", "vm2", "--", "sh", "-c", "exit 7").returncode == 7
    assert lab_env.cli("hosts").stdout.split()[-2:] == ["vm1", "vm2"]


def test_an_emulated_vm_places_every_process_at_the_same_addresses(lab_env):
    # Under TCG: two runs of one program map its libraries at one address (QEMU can reuse
    # what it translated); under KVM the guest keeps its randomization.
    accel = machine.read_state("vm1").accel
    maps = "grep -m1 libc /proc/self/maps | cut -d- -f1"
    ran = lab_env.cli("vm", "run", "vm1", "--", f"{maps}; {maps}")
    assert ran.returncode == 0, ran.stderr
    first, second = ran.stdout.split()
    assert (first == second) == (accel == "tcg"), (accel, first, second)


def test_counting_leftovers_in_a_vm_does_not_start_its_container_engine(lab_env):
    # Asking a stopped engine would start it (docker.socket), 12 s or so under emulation,
    # and leave it running beside the labs; the count reads its state folder instead.
    # Safe: stops only the throw-away lab VM's own engine, which no test of the session uses.
    stopped = lab_env.cli("vm", "run", "vm2", "--", "systemctl stop docker.service")
    assert stopped.returncode == 0, stopped.stderr
    counted = lab_env.cli("leftovers", "--host", "vm2")
    assert counted.returncode == 0 and "container=0 network=0" in counted.stdout, counted
    engine = lab_env.cli("vm", "run", "vm2", "--", "systemctl is-active docker.service")
    assert engine.stdout.strip() == "inactive", engine


def test_ssh_listens_on_loopback_only_with_a_pinned_host_key(lab_env, tmp_path):
    state = machine.read_state("vm1")
    listening = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state_hex = line.split()[1], line.split()[3]
        if state_hex == "0A" and int(local.split(":")[1], 16) == state.ssh_port:
            listening.append(local.split(":")[0])
    assert listening == ["0100007F"], f"SSH forward listens on {listening}, not 127.0.0.1"
    keys = vm_image.ensure_keys()
    wrong = tmp_path / "known_hosts"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")],
                   check=True)
    other_key = " ".join((tmp_path / "k.pub").read_text().split()[:2])
    for text in (f"[127.0.0.1]:{state.ssh_port} {other_key}\n", ""):
        wrong.write_text(text)
        impostor = SSHHost("vm1", "127.0.0.1", user="root", port=state.ssh_port,
                           key=str(keys.client_key), known_hosts=str(wrong))
        with pytest.raises(HostUnreachable):
            impostor.run("true")
        impostor.close()


def test_md_raid1_modules_and_guard_inside_the_vm(lab_env):
    host = get_host("vm1")
    journal = Journal("vm1")
    with LabWorkspace(host, journal=journal, lab="mdtest") as ws:
        fast, slow = ws.make_loop_device("fast", 64), ws.make_loop_device("slow", 64)
        array = ws.make_md_raid1("mdtest", [Member(fast), Member(slow, write_mostly=True)])
        mdstat = host.run("cat /proc/mdstat").stdout
        assert "active raid1" in mdstat and "(W)" in mdstat
        assert check_device(host, journal, array) == array
        assert check_device(host, journal, "/dev/vdb") == "/dev/vdb"  # a lab data disk
        loaded = host.sudo("modprobe raid1 && modprobe drbd && modprobe sch_netem && "
                           "modprobe dm_delay && cat /proc/modules").stdout
        assert {"drbd", "sch_netem", "dm_delay", "raid1"} <= {
            line.split()[0] for line in loaded.splitlines()}
        netem = host.sudo("tc qdisc add dev lo root netem delay 1ms && tc qdisc show dev lo; "
                          "tc qdisc del dev lo root").stdout
        assert "netem" in netem and "delay 1ms" in netem
        # An md array the lab did not assemble (made here by hand, unjournaled) is refused.
        foreign = host.sudo("truncate -s 64M /root/foreign.img && "
                            "losetup --find --show /root/foreign.img").stdout.strip()
        try:
            host.sudo(f"mdadm --create /dev/md/foreign --run --level=1 --raid-devices=2 "
                      f"{foreign} missing && udevadm settle")
            foreign_md = host.run("readlink -f /dev/md/foreign").stdout.strip()
            for path in ("/dev/md/foreign", foreign_md, foreign, "/dev/vda", "/dev/vda1",
                         f"/dev/md/../{foreign_md.removeprefix('/dev/')}"):
                with pytest.raises(DeviceRefused):
                    check_device(host, journal, path)
            with pytest.raises(DeviceRefused):
                ws.make_md_raid1("sneaky", [Member(fast), Member(foreign)])
        finally:
            host.sudo(f"mdadm --stop /dev/md/foreign; losetup -d {foreign}; "
                      "rm -f /root/foreign.img", check=False)
    mdstat = host.run("cat /proc/mdstat").stdout
    assert not [line for line in mdstat.splitlines() if line.startswith("md")], mdstat
    assert "mdtest" not in host.run("losetup -a").stdout
    host.close()


def test_qemu_throttles_the_slow_data_disk(lab_env):
    host = get_host("vm1")
    fio = ("fio --name=probe --filename=/dev/vdc --rw=randread --bs=4k --direct=1 "
           "--ioengine=libaio --iodepth=8 --runtime=4 --time_based --output-format=json")
    read_iops = json.loads(host.sudo(fio, timeout_s=120).stdout)["jobs"][0]["read"]["iops"]
    report(f"throttled /dev/vdc (throttling.iops-total={SLOW_IOPS}): {read_iops:.0f} read IOPS")
    assert 0 < read_iops <= SLOW_IOPS * 1.25  # QEMU lets short bursts through
    host.close()


def test_pair_talks_over_the_private_link(lab_env):
    vm1, vm2 = get_host("vm1"), get_host("vm2")
    assert "10.77.0.2/24" in vm2.run("ip -4 addr show dev eth1").stdout
    ping = vm1.run("ping -c 3 -W 5 10.77.0.2", timeout_s=60)
    assert " 0% packet loss" in ping.stdout
    assert vm2.run("ping -c 1 -W 5 10.77.0.1", timeout_s=60).ok
    vm1.close()
    vm2.close()


def _wait_until_gone(host: SSHHost, pattern: str, within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while host.run(f"pgrep -f {shlex.quote(pattern)}", check=False, marked=False).ok:
        assert time.monotonic() < deadline, what
        time.sleep(0.5)


def _cut_the_session_under(host: SSHHost, command: str, login: str, root: SSHHost,
                           watch: str) -> None:
    """Run `command` as root through `host` in a thread, kill the SSH sessions of `login` (as
    `root`, another connection) once root's processes match `watch` (a pgrep -f pattern),
    and assert that none is left within 30 s: the command, which would run on without its
    session, is stopped over a new connection, so that it cannot outlive the lab."""
    import threading

    outcome: dict[str, object] = {}

    def long_command() -> None:
        try:
            outcome["result"] = host.sudo(command, timeout_s=400, check=False)
        except HostUnreachable as error:
            outcome["error"] = error

    runner = threading.Thread(target=long_command)
    runner.start()
    deadline = time.monotonic() + 60
    while not root.run(f"pgrep -u 0 -f '{watch}'", check=False, marked=False).ok:
        assert time.monotonic() < deadline, "the long command never started as root"
        time.sleep(0.5)
    # Safe: kills only the SSH sessions of `login` in this throw-away guest.
    root.run(f"pkill -KILL -f 'sshd: {login}'", check=False, marked=False)
    root.close()  # its own session may have been among them
    runner.join(timeout=120)
    assert not runner.is_alive()
    assert "error" in outcome or outcome["result"].exit_code == -1, outcome
    _wait_until_gone(root, watch, 30, "the command ran on after its session was cut")


def test_a_command_whose_ssh_session_is_cut_does_not_run_on(lab_env):
    """sshd's sessions die under a running command (a restarted sshd, a network blip); the
    fault benchmark found a devices run's fio reading on after its lab and `clean` had
    ended."""
    host, watcher = get_host("vm1"), get_host("vm1")
    _cut_the_session_under(host, "sleep 300", "root@", watcher, "[s]leep 300")
    watcher.close()
    host.close()


def test_a_user_with_sudo_has_its_root_commands_stopped_too(lab_env):
    """An inventory host where the labs log in as a user with password-less sudo (the README
    allows it): a root command's time limit, and a cut session, stop the command itself,
    even one that ignores SIGTERM and SIGINT, through `timeout`'s SIGKILL 5 s later. With
    `sudo -n` inside the user's `timeout`, that SIGKILL ended sudo and the user's shell but
    could not reach root's command, which ran on."""
    root = get_host("vm1")
    add_sudo_user(root)
    user = SSHHost("vm1", root.address, user=SUDO_USER, port=root.port, key=root.key,
                   known_hosts=root.known_hosts, work_dir=root.work_dir)
    try:
        assert not user.is_root() and user.sudo("id -u").stdout.strip() == "0"
        with pytest.raises(CommandTimedOut):
            user.sudo("trap '' TERM INT; sleep 301", timeout_s=3)
        _wait_until_gone(root, "[s]leep 301", 20, "the root command outlived its timeout")
        _cut_the_session_under(user, "trap '' TERM INT; sleep 302", SUDO_USER, root,
                               "[s]leep 302")
    finally:
        user.close()
        remove_sudo_user(root)
        root.close()


FLUSH_MS = 500  # long beside a loop device's own write and flush in a lab VM


def _seconds_in_vm(host: SSHHost, device: str, action: str) -> float:
    """Seconds one action on `device` takes, timed inside the VM: `write` (4 KiB, O_DIRECT,
    at the start) or `flush` (an fsync of the block device: one flush of its cache)."""
    script = ("import mmap, os, sys, time\n"
              "flags = os.O_WRONLY | (os.O_DIRECT if sys.argv[2] == 'write' else 0)\n"
              "fd = os.open(sys.argv[1], flags)\n"
              "block = mmap.mmap(-1, 4096)\n"
              "started = time.monotonic()\n"
              "os.write(fd, block) if sys.argv[2] == 'write' else os.fsync(fd)\n"
              "print(time.monotonic() - started)\n")
    return float(host.sudo(["python3", "-c", script, device, action]).stdout)


def test_a_flush_delay_slows_flushes_only_and_is_made_again_after_a_reboot_lost_it(lab_env):
    host = get_host("vm1")
    journal = Journal("vm1")
    with LabWorkspace(host, journal=journal, lab="flush-delay") as ws:
        device = ws.make_dm_flush_delay("labs-flush", ws.make_loop_device("disk", 32),
                                        FLUSH_MS)
        # Safe: the test's own dm device over its own loop device, which the guard allowed.
        write_s, flush_s = (_seconds_in_vm(host, device, a) for a in ("write", "flush"))
        assert write_s < FLUSH_MS / 1000 <= flush_s, (write_s, flush_s)
        made = host.sudo(["dmsetup", "table", "labs-flush"]).stdout
        # What a power cut does to it: the mapping is gone, the disk below is not.
        # Safe: the test's own device-mapper name, over its own loop device.
        host.sudo(["dmsetup", "remove", "labs-flush"])
        assert ws.restore_dm("labs-flush") == device
        assert host.sudo(["dmsetup", "table", "labs-flush"]).stdout == made
        assert _seconds_in_vm(host, device, "flush") >= FLUSH_MS / 1000
        assert ws.restore_dm("labs-flush") == device  # there already: left as it is
        with pytest.raises(LabError, match="no device-mapper device labs-none"):
            ws.restore_dm("labs-none")
    assert "labs-flush" not in host.sudo("dmsetup ls").stdout
    assert journal.live_entries() == []
    host.close()


def test_clean_in_a_vm_after_a_crash(lab_env):
    host = get_host("vm1")
    ws = LabWorkspace(host, journal=Journal("vm1"), lab="crash")
    first, second = ws.make_loop_device("one", 32), ws.make_loop_device("two", 32)
    ws.make_md_raid1("crash", [Member(first), Member(second)])
    third, fourth = ws.make_loop_device("three", 32), ws.make_loop_device("four", 32)
    mapped = ws.make_dm("crashdm", f"0 {32 * 2048} linear {third} 0", devices=[third])
    assert ws.check_device(mapped) == mapped
    config = "/etc/drbd.d/labs-crash.res"
    resource = "\n".join(["resource labs-crash {",
                          f" device /dev/drbd7; disk {fourth}; meta-disk internal;",
                          " on vm1 { address 10.77.0.1:7790; }",
                          " on vm2 { address 10.77.0.2:7790; }", "}", ""])
    ws.journaled("drbd", "labs-crash",
                 f"printf %s {shlex.quote(resource)} > {config} && "
                 "drbdadm create-md --force labs-crash </dev/null && drbdadm up labs-crash",
                 config=config, device="/dev/drbd7")
    assert ws.check_device("/dev/drbd7") == "/dev/drbd7"
    assert "labs-crash role:Secondary" in host.sudo("drbdsetup status labs-crash").stdout
    host.close()
    # The lab "dies" here; a new process cleans from the journal alone.
    cleaned = lab_env.cli("clean", "--host", "vm1")
    assert cleaned.returncode == 0, cleaned.stderr
    assert "removed 8 resource" in cleaned.stdout  # 7 and the run's work folder
    after = host.run("cat /proc/mdstat; losetup -a; dmsetup ls; ls /etc/drbd.d").stdout
    assert "crash" not in after and "active" not in after
    assert host.sudo("drbdsetup status labs-crash", check=False).exit_code != 0
    again = lab_env.cli("clean", "--host", "vm1")
    assert again.returncode == 0 and "removed 0 resource" in again.stdout
    host.close()


# --- fault injection ----------------------------------------------------------------------

def _local_leaks(work_dir: Path) -> dict[str, int]:
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    mounts = Path("/proc/mounts").read_text()
    return {"loop": sum(str(work_dir) in line for line in loops.splitlines()),
            "mount": sum(str(work_dir) in line for line in mounts.splitlines())}


def _run_and_kill(command: list[str], env: dict, kill_after_s: float | None, sig: int,
                  log_path: Path, start_marker: str) -> tuple[bool, float]:
    """Start the set-up; kill it kill_after_s after it prints start_marker (None: let it
    finish). Returns (whether set-up was still under way when killed, seconds it ran)."""
    with open(log_path, "w") as log:
        # A shell that started pytest in the background may have set SIGINT to "ignore",
        # which children inherit; restore the default so Ctrl-C reaches the lab as it would.
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                    signal.SIG_DFL))
        # Python's start-up is not the lab's set-up: the clock starts at the lab's first line.
        give_up = time.monotonic() + 120
        while (start_marker not in log_path.read_text() and process.poll() is None
               and time.monotonic() < give_up):
            time.sleep(0.02)
        started = time.monotonic()
        deadline = started + (kill_after_s if kill_after_s is not None else 600)
        while time.monotonic() < deadline:
            if "setup complete" in log_path.read_text() or process.poll() is not None:
                break
            time.sleep(0.05)
        complete = "setup complete" in log_path.read_text()
        process.send_signal(sig)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return not complete, time.monotonic() - started


def test_fault_injection_kill_during_setup_then_clean_leaks_nothing(lab_env, tmp_path):
    rng = random.Random(FAULT_SEED)
    kills, kills_mid_setup, leaks_found = 0, 0, 0
    local_env = {**os.environ, "LABS_STATE_DIR": str(tmp_path / "local-state"),
                 "LABS_WORK_DIR": str(tmp_path / "local-work")}
    up_state = tmp_path / "up-state"
    up_state.mkdir()
    shutil.copy(Path(lab_env.env["LABS_STATE_DIR"]) / "kvm-probe.json", up_state)
    up_env = {**os.environ, "LABS_STATE_DIR": str(up_state)}

    scenarios = [
        # name, command, env, line that starts the kill clock, clean args, leaks, kills wanted
        ("local", [sys.executable, "tests/fault_setup.py", "local"], local_env,
         "setup starting", ["clean"], lambda: _local_leaks(tmp_path / "local-work"), 4),
        ("vm-up", [sys.executable, "-m", "labs", "vm", "up", "--cpus", "1"], up_env, "vm up:",
         ["clean"], lambda: {"qemu": len(qemu_processes_under(up_state))}, 2),
    ]
    per_scenario: list[str] = []
    for name, command, env, start_marker, clean_args, count_leaks, wanted in scenarios:
        scenario_started, kills_before = time.monotonic(), kills
        # One uncut run shows how long set-up takes, so kills can land anywhere in it.
        if name == "vm-up":
            setup_s = 6.0  # the boot itself; a killed boot is what we want to clean up
        else:
            _, setup_s = _run_and_kill(command, env, None, signal.SIGKILL,
                                       tmp_path / f"{name}-uncut.log", start_marker)
            subprocess.run([sys.executable, "-m", "labs", *clean_args], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600, check=True)
        done = 0  # kills that landed while set-up was still under way
        while done < wanted and kills - kills_before < 3 * wanted:
            kill_after_s = rng.uniform(0, setup_s)
            sig = signal.SIGINT if rng.random() < 0.25 else signal.SIGKILL
            mid, _ = _run_and_kill(command, env, kill_after_s, sig,
                                   tmp_path / f"{name}-{kills}.log", start_marker)
            kills += 1
            kills_mid_setup += mid
            done += mid
            cleaned = subprocess.run([sys.executable, "-m", "labs", *clean_args], cwd=ROOT,
                                     env=env, capture_output=True, text=True, timeout=600)
            assert cleaned.returncode == 0, (
                f"clean failed after kill {kills} ({name} at {kill_after_s:.2f} s): "
                f"{cleaned.stdout} {cleaned.stderr} lab output: "
                f"{(tmp_path / f'{name}-{kills - 1}.log').read_text()[-1500:]}")
            leaks = count_leaks()
            leaks_found += sum(leaks.values())
            print(f"kill {kills}: {name} {signal.Signals(sig).name} at {kill_after_s:.2f} s "
                  f"(set-up {'under way' if mid else 'finished'}), leaks after clean: {leaks}")
            assert sum(leaks.values()) == 0, f"leak after kill {kills} ({name}): {leaks}"
        per_scenario.append(f"{name}: {kills - kills_before} kills (set-up {setup_s:.1f} s) "
                            f"in {time.monotonic() - scenario_started:.0f} s")
    report(f"fault injection (seed {FAULT_SEED}): {kills} kills, {kills_mid_setup} during "
           f"set-up, {leaks_found} leaks found; " + "; ".join(per_scenario))
    # CI-sized, and apart from the labs' kills: test_fault_injection.py kills real labs (a VM
    # lab's set-up among them), and the full count (200 kills and more over every lab) is
    # benchmarks/fault_injection.py.
    assert kills_mid_setup >= 6 and leaks_found == 0


GUEST_IDENTITY = ("date +%s.%N; hostname; cat /etc/machine-id; ip -4 -o addr show eth1 | "
                  "awk '{print $4}'; for disk in /dev/vdb /dev/vdc; do head -c 1048576 $disk "
                  "| tr -d '\\0' | wc -c; done")


@pytest.mark.last  # it stops and starts the session's pair: after every test that uses it
def test_the_pair_started_again_is_resumed_with_its_own_identity_clock_and_disks(lab_env):
    """The session's first `vm up --pair` booted the kernel and saved both VMs (or resumed
    a pair an earlier session saved); the next one resumes both from their saved states."""
    assert lab_env.cli("vm", "down").returncode == 0
    started = time.monotonic()
    upped = lab_env.cli("vm", "up", *VM_PAIR_ARGS, timeout_s=900)
    wall_s = time.monotonic() - started
    assert upped.returncode == 0, upped.stdout + upped.stderr
    assert upped.stdout.count("(resumed from its saved state)") == 2, upped.stdout
    seen = {}
    for name in ("vm1", "vm2"):
        host = get_host(name)
        before = time.time()
        lines = host.run(GUEST_IDENTITY, timeout_s=120).stdout.split()
        after = time.time()
        host.close()
        guest_s, hostname, machine_id, address, *nonzero_bytes = lines
        # The clock was set from this machine's as the VM came up (1 s of slack for SSH).
        assert before - 1 <= float(guest_s) <= after + 1, (name, guest_s, before, after)
        assert nonzero_bytes == ["0", "0"], f"{name}: its data disks are not fresh"
        seen[name] = (hostname, machine_id, address)
    assert seen["vm1"][0] == "vm1" and seen["vm2"][0] == "vm2"
    assert seen["vm1"][1] != seen["vm2"][1], "the two VMs share a machine id"
    assert (seen["vm1"][2], seen["vm2"][2]) == ("10.77.0.1/24", "10.77.0.2/24")
    link = get_host("vm1").run("ping -c 1 -W 10 10.77.0.2", check=False, timeout_s=60)
    assert link.exit_code == 0, "the private link does not carry the resumed pair's traffic"
    ready = [line for line in upped.stdout.splitlines() if "SSH ready" in line]
    report(f"vm up --pair, resumed: {wall_s:.1f} s wall; " + "; ".join(ready))


@pytest.mark.last
def test_down_stops_the_vms_and_keeps_their_console_logs(lab_env):
    state_dir = Path(lab_env.env["LABS_STATE_DIR"])
    stopped = lab_env.cli("vm", "down")
    assert stopped.returncode == 0, stopped.stderr
    assert qemu_processes_under(state_dir) == []
    logs = list((state_dir / "vms" / "ended").glob("vm*/serial.log"))
    assert len(logs) >= 2
    # A booted VM's console shows the login prompt; a resumed VM's console starts empty.
    for log in logs:
        state = log.parent / "state.json"
        resumed = state.exists() and json.loads(state.read_text()).get("resumed", False)
        assert resumed or "login:" in log.read_text(), log
    assert not list((state_dir / "vms" / "ended").glob("*/*.qcow2"))
    status = lab_env.cli("vm", "status")
    assert "running" not in status.stdout


def test_qemu_command_line_throttles_forwards_on_loopback_and_links_the_pair(tmp_path):
    fake = vm_image.Image(tmp_path, tmp_path / "disk.raw", tmp_path / "vmlinuz",
                          tmp_path / "initrd.img", "0" * 16, {})
    command = machine.qemu_command("vm2", 2, tmp_path, fake, accel="tcg", memory_mib=512,
                                   cpus=1, ssh_port=2222, slow_iops=50, slow_bps=1_000_000,
                                   pair_ports=(4001, 4002), machine_id="0123456789abcdef" * 2)
    text = " ".join(command)
    assert "systemd.machine_id=0123456789abcdef0123456789abcdef" in text
    assert "virtio-rng-pci" in text
    assert "throttling.iops-total=50,throttling.bps-total=1000000" in text
    assert text.count("throttling.") == 2  # only the slow disk is throttled
    assert "hostfwd=tcp:127.0.0.1:2222-:22" in text
    assert "socket,id=net1,udp=127.0.0.1:4002,localaddr=127.0.0.1:4001" in text
    assert "mac=52:54:00:77:00:02" in text and "systemd.hostname=vm2" in text
    assert command[command.index("-m") + 1] == "512" and "-daemonize" in command


def test_only_an_emulated_vm_runs_without_address_space_randomization(tmp_path):
    # Under TCG it costs every new process a fresh translation of its code; under KVM it
    # costs nothing, and the guest keeps it.
    fake = vm_image.Image(tmp_path, tmp_path / "disk.raw", tmp_path / "vmlinuz",
                          tmp_path / "initrd.img", "0" * 16, {})

    def kernel_line(accel: str) -> list[str]:
        command = machine.qemu_command("vm1", 1, tmp_path, fake, accel=accel, memory_mib=512,
                                       cpus=1, ssh_port=2222, slow_iops=0, slow_bps=0,
                                       pair_ports=None, machine_id="0" * 32)
        return command[command.index("-append") + 1].split()

    assert "norandmaps" in kernel_line("tcg")
    assert "norandmaps" not in kernel_line("kvm")


def test_the_release_is_part_of_the_recipe_and_of_the_vm_state(tmp_path):
    keys = vm_image.SSHKeys(tmp_path / "k", "ssh-ed25519 AAAA client", tmp_path / "h",
                            "ssh-ed25519 AAAA host")
    hashes = {release: vm_image.recipe_hash(keys, release) for release in vm_image.RELEASES}
    assert len(set(hashes.values())) == len(vm_image.RELEASES)
    assert vm_image.recipe_hash(keys) == hashes[vm_image.DEFAULT_RELEASE] == hashes["bookworm"]
    assert vm_image.recipe(keys, "trixie")["suite"] == "trixie"
    # Debian 13 has no postgresql-contrib (its postgresql package carries pgbench).
    assert "postgresql-contrib" in vm_image.packages("bookworm")
    assert "postgresql-contrib" not in vm_image.packages("trixie")
    # A state file written before releases existed still loads, as bookworm.
    old = {f.name: 0 for f in machine.VMState.__dataclass_fields__.values()
           if f.name != "release"}
    old.update(name="vm1", directory=str(tmp_path), accel="tcg", private_ip="",
               lab_devices=[], image_hash="0", started_at="")
    (tmp_path / "vm1").mkdir()
    (tmp_path / "vm1" / "state.json").write_text(json.dumps(old))
    state = machine.VMState(**json.loads((tmp_path / "vm1" / "state.json").read_text()))
    assert state.release == "bookworm"


@pytest.mark.parametrize("action", ["build", "up"])
def test_an_unknown_release_is_one_line_and_exit_2(tmp_path, action):
    env = {**os.environ, "LABS_STATE_DIR": str(tmp_path / "state"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = subprocess.run([sys.executable, "-m", "labs", "vm", action, "--release", "sid"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "--release sid: use one of bookworm, trixie" \
        in result.stderr
    assert not (tmp_path / "cache").exists()  # nothing built, nothing booted
