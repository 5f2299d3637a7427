"""labs.infra: hosts, the journal's teardowns and the device guard, on the local machine (real
loop devices, file systems and mounts; the md/dm parts need a VM and are in test_vm.py)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from labs.errors import UsageError
from labs.infra.guard import DeviceRefused, check_device, is_plain_device_path
from labs.infra.hosts import (
    TRACE_ENV,
    CommandFailed,
    CommandTimedOut,
    LocalHost,
    SSHHost,
    UnknownHost,
)
from labs.infra.inventory import get_host, link_address, load_inventory
from labs.infra.journal import Journal
from labs.infra.workspace import LabWorkspace

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def private_state(tmp_path, monkeypatch):
    """A private state dir, work dir and inventory, so nothing touches anyone else's."""
    monkeypatch.setenv("LABS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("LABS_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("LABS_INVENTORY", str(tmp_path / "hosts.toml"))
    (tmp_path / "hosts.toml").write_text("")  # an empty inventory: no SSH hosts
    return tmp_path


def labs_cli(*args: str, env_dir: Path, timeout_s: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "LABS_STATE_DIR": str(env_dir / "state"),
           "LABS_WORK_DIR": str(env_dir / "work"), "LABS_INVENTORY": str(env_dir / "hosts.toml")}
    return subprocess.run([sys.executable, "-m", "labs", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout_s)


def our_loops(work_dir: Path) -> list[str]:
    """Loop devices over files in this test's work dir, counted by losetup itself."""
    out = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if str(work_dir) in line]


def our_mounts(work_dir: Path) -> list[str]:
    return [line for line in Path("/proc/mounts").read_text().splitlines()
            if str(work_dir) in line]


def test_local_run_sudo_put_get(private_state):
    host = get_host("local")
    assert host.is_local and host.name == "local"
    assert host.run("echo hello; echo oops >&2").stdout == "hello\n"
    assert host.run(["printf", "%s", "a b"]).stdout == "a b"
    assert host.sudo("id -u").stdout.strip() == "0"
    source = private_state / "a.txt"
    source.write_text("payload")
    host.put(source, str(private_state / "b.txt"))
    host.get(str(private_state / "b.txt"), private_state / "c.txt")
    assert (private_state / "c.txt").read_text() == "payload"


def test_every_marked_command_is_told_and_traced_and_twins_tell_the_same_listener(
        private_state, monkeypatch):
    trace = private_state / "ran.jsonl"
    monkeypatch.setenv(TRACE_ENV, str(trace))
    told: list[str] = []
    host = LocalHost(str(private_state / "work"))
    host.sudo(["printf", "%s", "a b"])  # as root: `id -u` first, unmarked; nobody listens yet
    host.listen(told.append)  # hears what ran before it, then the rest
    host.run("true", check=False)
    host.twin().run("echo twin")
    host.run("echo plumbing", marked=False)
    host.listen(None)
    host.run("echo unheard")
    assert told == ["[local] printf %s 'a b'", "[local] true", "[local] echo twin"]
    assert host.unheard == ["[local] echo unheard"]
    traced = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(t["command"], t["marked"]) for t in traced] == [
        ("[local] id -u", False), ("[local] printf %s 'a b'", True), ("[local] true", True),
        ("[local] echo twin", True), ("[local] echo plumbing", False),
        ("[local] echo unheard", True)]
    started = [t["at"] for t in traced]
    assert started == sorted(started) and started[-1] - started[0] < 60


def test_failure_names_host_command_exit_code_and_stderr_tail(private_state):
    host = get_host("local")
    with pytest.raises(CommandFailed) as caught:
        host.run("echo first >&2; echo last words >&2; exit 3")
    message = str(caught.value)
    assert "host local" in message and "exit 3" in message and "exited with code 3" in message
    assert "last words" in message and "\n" not in message
    assert host.run("exit 4", check=False).exit_code == 4


def test_every_command_has_a_timeout(private_state):
    with pytest.raises(CommandTimedOut) as caught:
        get_host("local").run("sleep 30", timeout_s=1)
    assert "timed out after 1 s" in str(caught.value)


def test_inventory_format_and_errors(private_state):
    inventory = private_state / "hosts.toml"
    inventory.write_text('[hosts.cloud1]\naddress = "203.0.113.10"\nuser = "admin"\nport = 2222\n'
                         'known_hosts = "~/.ssh/known_hosts"\n')
    assert load_inventory()["cloud1"]["port"] == 2222
    host = get_host("cloud1")
    assert isinstance(host, SSHHost) and host.address == "203.0.113.10" and host.port == 2222
    assert isinstance(get_host("local"), LocalHost)
    with pytest.raises(UnknownHost, match="unknown host 'nowhere'"):
        get_host("nowhere")
    with pytest.raises(UnknownHost, match="vm1 is not running"):
        get_host("vm1")
    inventory.write_text('[hosts.local]\naddress = "x"\n')
    with pytest.raises(UsageError, match="reserved"):
        load_inventory()
    inventory.write_text('[hosts.a]\nuser = "x"\n')
    with pytest.raises(UsageError, match="'address'"):
        load_inventory()
    inventory.write_text('[hosts.a]\naddress = "x"\npassword = "no"\n')
    with pytest.raises(UsageError, match="unknown field 'password'"):
        load_inventory()
    # A pair's link: where the other host reaches this one; the SSH address by default.
    inventory.write_text('[hosts.a]\naddress = "203.0.113.10"\nlink_address = "10.0.1.10"\n'
                         '[hosts.b]\naddress = "203.0.113.11"\n')
    assert link_address("a") == "10.0.1.10" and link_address("b") == "203.0.113.11"
    with pytest.raises(UsageError, match="not in the inventory"):
        link_address("c")
    inventory.write_text('[hosts.a]\naddress = "x"\nlink_address = 10\n')
    with pytest.raises(UsageError, match="'link_address' must be a string"):
        load_inventory()


def test_unreachable_ssh_host_is_one_clear_error(private_state):
    # A closed port on loopback: refused at once, no traffic leaves the machine.
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    host = SSHHost("nobody", "127.0.0.1", port=port, user="root", connect_timeout_s=5)
    with pytest.raises(Exception) as caught:
        host.run("true")
    assert "host nobody" in str(caught.value) and "could not reach" in str(caught.value)


def test_workspace_creates_journals_and_cleans_loop_fs_mount(private_state):
    host = get_host("local")
    journal = Journal("local")
    work = private_state / "work"
    with LabWorkspace(host, journal=journal, lab="demo") as ws:
        device = ws.make_loop_device("disk1", size_mib=32)
        assert device.startswith("/dev/loop")
        # The run's work folder is journaled first, then each resource in turn.
        assert journal.live_entries()[1].details["device"] == device
        ws.make_filesystem(device, "ext4")
        point = ws.mount(device, "data")
        assert len(our_loops(work)) == 1 and len(our_mounts(work)) == 1
        assert [e.kind for e in journal.live_entries()] == ["work-dir", "loop", "mount"]
        Path(point, "hello").write_text("x")
    assert our_loops(work) == [] and our_mounts(work) == []
    assert journal.live_entries() == []


def test_clean_tears_down_exactly_the_journal_newest_first_and_is_idempotent(private_state):
    host = get_host("local")
    journal = Journal("local")
    work = private_state / "work"
    ws = LabWorkspace(host, journal=journal, lab="crashy")
    device = ws.make_loop_device("disk1", size_mib=16)
    ws.make_filesystem(device)
    ws.mount(device, "m")
    ws.make_loop_device("disk2", size_mib=16)
    # A loop device nobody journaled (standing for the reader's own): clean must leave it.
    foreign_file = private_state / "foreign.img"
    foreign_file.write_bytes(b"\0" * 1024 * 1024)
    foreign = subprocess.run(["losetup", "--find", "--show", str(foreign_file)],
                             capture_output=True, text=True, check=True).stdout.strip()
    try:
        # The lab "crashes" here: nothing was torn down. clean is a separate process.
        first = labs_cli("clean", env_dir=private_state)
        assert first.returncode == 0, first.stderr
        lines = [line for line in first.stdout.splitlines() if "removing" in line]
        assert [line.split()[3] for line in lines] == [  # newest first
            "loop", "mount", "loop", "work-dir"]
        assert our_loops(work) == [] and our_mounts(work) == []
        second = labs_cli("clean", env_dir=private_state)
        assert second.returncode == 0 and "removed 0 resource" in second.stdout
        assert Path(f"/sys/block/{foreign.removeprefix('/dev/')}/loop/backing_file").exists()
    finally:
        subprocess.run(["losetup", "--detach", foreign], check=False)


def test_guard_refuses_foreign_devices(private_state, tmp_path):
    host = get_host("local")
    journal = Journal("local")
    with LabWorkspace(host, journal=journal, lab="guard") as ws:
        ours = ws.make_loop_device("ours", size_mib=8)
        assert check_device(host, journal, ours) == ours
        # An unjournaled loop device over a file outside the work dir.
        outside = tmp_path / "outside.img"
        outside.write_bytes(b"\0" * 1024 * 1024)
        stray = subprocess.run(["losetup", "--find", "--show", str(outside)],
                               capture_output=True, text=True, check=True).stdout.strip()
        # A journaled loop file that is not inside the work dir is not ours either.
        journal.will_create("loop", str(outside), work_dir=str(tmp_path), remove_file=False)
        link = Path(f"/dev/storage-labs-test-{os.getpid()}")
        link.symlink_to(ours)
        try:
            refused = ["/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/vda1", stray,
                       f"/dev/../dev/{ours.removeprefix('/dev/')}", "/dev//vda",
                       f"{ours}/../vda", "/dev/./vda", str(link), str(tmp_path / "x"), "vda",
                       "/dev/md0", "/dev/md/anything", "/dev/mapper/anything"]
            for path in refused:
                with pytest.raises(DeviceRefused) as caught:
                    check_device(host, journal, path)
                assert "refusing" in str(caught.value) and "\n" not in str(caught.value)
            # --allow-device names one exact path, nothing else.
            assert check_device(host, journal, "/dev/vda", ["/dev/vda"]) == "/dev/vda"
            for path in ("/dev/../dev/vda", "/dev/vda1", stray):
                with pytest.raises(DeviceRefused):
                    check_device(host, journal, path, ["/dev/vda"])
            with pytest.raises(DeviceRefused):
                ws.make_filesystem(stray)
        finally:
            link.unlink()
            subprocess.run(["losetup", "--detach", stray], check=False)
            journal.released("loop", str(outside))
    assert not is_plain_device_path("/dev/loop0/../sda")


def test_run_guarded_refuses_foreign_devices_before_running_anything(private_state):
    marker = private_state / "ran"
    with LabWorkspace(get_host("local"), lab="guarded") as ws:
        ours = ws.make_loop_device("ours", size_mib=8)
        for foreign in ("/dev/sda", "/dev/nvme0n1", "/dev/vda"):
            with pytest.raises(DeviceRefused):
                ws.run_guarded(["touch", str(marker)], [ours, foreign])
        assert not marker.exists()
        ws.run_guarded(["touch", str(marker)], [ours])
        assert marker.exists()


def test_check_device_command_exit_codes(private_state):
    refused = labs_cli("check-device", "/dev/vda", env_dir=private_state)
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "refusing to use /dev/vda" in refused.stderr
    allowed = labs_cli("check-device", "/dev/vda", "--allow-device", "/dev/vda",
                       env_dir=private_state)
    assert allowed.returncode == 0, allowed.stderr
    bad = labs_cli("vm", "up", "--cpus", "0", env_dir=private_state)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_a_ctrl_c_before_invoke_has_set_up_stays_a_ctrl_c(private_state, monkeypatch):
    # Found by sending Ctrl-C to a torn-pages run again and again at step 3: one landed while
    # invoke was still reading its options, and invoke's clean-up then raised AttributeError
    # ('using_pty'), so the lab exited 1 with that line instead of 130, "interrupted".
    import invoke

    def interrupted_while_setting_up(self, kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(invoke.Runner, "_unify_kwargs_with_config", interrupted_while_setting_up)
    with pytest.raises(KeyboardInterrupt):
        LocalHost().run("true")


def test_a_command_left_without_its_session_is_stopped_by_its_own_tag(monkeypatch):
    """The transport's parts stand in here (the lab VM test cuts a real session): a result
    without an exit status, or a connection lost mid-command, stops that command alone."""
    from labs.infra.hosts import CommandResult, ConnectionLost

    host = SSHHost("vm9", "127.0.0.1", port=1)
    stopped: list[str | None] = []
    monkeypatch.setattr(host, "stop_commands", lambda tag=None: stopped.append(tag))
    seen: list[str] = []

    def cut(command, wrapped, *, timeout_s, env):
        seen.append(wrapped)
        return CommandResult("vm9", command, -1, "", "")

    monkeypatch.setattr(host, "_execute", cut)
    with pytest.raises(CommandFailed):
        host.run("sleep 300")
    assert stopped == [f"{host.run_tag}-c0;"] and f"{host.run_tag}-c0;" in seen[0]

    def lost(command, wrapped, *, timeout_s, env):
        raise ConnectionLost("vm9", command, "connection lost: EOF")

    monkeypatch.setattr(host, "_execute", lost)
    with pytest.raises(ConnectionLost):
        host.run("sleep 300")
    assert stopped[-1] == f"{host.run_tag}-c1;"
    # An ordinary failure stops nothing, and a command without the marker has no tag to stop.
    monkeypatch.setattr(host, "_execute", lambda c, w, *, timeout_s, env:
                        CommandResult("vm9", c, 1, "", "no"))
    assert host.run("false", check=False).exit_code == 1
    monkeypatch.setattr(host, "_execute", cut)
    host.run("pkill -KILL -f 'sshd: root@'", check=False, marked=False)
    assert len(stopped) == 2


def test_a_user_with_sudo_runs_timeout_and_marker_as_root(monkeypatch):
    """On a host where the labs log in as a user with password-less sudo, `sudo -n` comes
    before `timeout`: the timeout, the marker and the command's tag then belong to root's
    processes, which a user's `timeout` could not stop (the lab VM test runs it for real)."""
    from labs.infra.hosts import CommandResult
    from labs.infra.paths import command_marker

    host = SSHHost("vm9", "127.0.0.1", port=1)
    seen: list[str] = []

    def answer(command, wrapped, *, timeout_s, env):
        seen.append(wrapped)
        return CommandResult("vm9", command, 1, "", "mdadm: no such device")

    monkeypatch.setattr(host, "_execute", answer)
    host._is_root = False
    with pytest.raises(CommandFailed, match="sudo -n mdadm --detail /dev/md/x"):
        host.sudo("mdadm --detail /dev/md/x", timeout_s=30)
    argv = shlex.split(seen[-1])
    assert argv[:6] == ["exec", "sudo", "-n", "timeout", "--kill-after=5", "30"]
    assert argv[6:8] == ["bash", "-c"]
    assert argv[8].startswith(f": {command_marker()} {host.run_tag}-c0; mdadm --detail")
    host.run("id", check=False)  # not as root: no sudo
    assert shlex.split(seen[-1])[:2] == ["exec", "timeout"]
    host._is_root = True
    host.sudo("id", check=False)  # root already: no sudo either
    assert shlex.split(seen[-1])[:2] == ["exec", "timeout"]


def test_put_as_root_goes_through_a_temporary_file_for_a_user_with_sudo(monkeypatch):
    """A user with sudo cannot write the root-owned work dir: the file goes to /tmp first,
    then into place as root, and the temporary copy is removed even when that fails."""
    host = SSHHost("vm9", "127.0.0.1", port=1)
    host._is_root = False
    calls: list[tuple] = []
    monkeypatch.setattr(host, "put", lambda local, remote: calls.append(("put", remote)))

    def run(command, **kwargs):
        calls.append(("run", command, kwargs.get("as_root", False)))
        if command[0] == "install":
            raise CommandFailed("vm9", "install", 1, "no space left")

    monkeypatch.setattr(host, "run", run)
    with pytest.raises(CommandFailed):
        host.put_as_root("probe.py", "/var/tmp/storage-labs/caches/probe.py")
    staging = calls[0][1]
    assert staging.startswith("/tmp/storage-labs-put-")
    assert calls[1] == ("run", ["install", "-m", "0644", staging,
                                "/var/tmp/storage-labs/caches/probe.py"], True)
    assert calls[2] == ("run", ["rm", "-f", staging], False)
    calls.clear()
    host._is_root = True
    host.put_as_root("probe.py", "/var/tmp/x/probe.py")
    assert calls == [("put", "/var/tmp/x/probe.py")]


def test_a_command_killed_by_its_time_limit_is_a_timeout_even_without_an_exit_status(
        monkeypatch):
    """`timeout`'s SIGKILL (5 s after its first signal, for a command that outlived it) kills
    timeout too, and sudo passes it on to itself: the session then has no exit status (-1).
    Past the limit, that is a timeout; before it, a failure (a cut session)."""
    import time as clock

    from labs.infra.hosts import CommandResult

    host = SSHHost("vm9", "127.0.0.1", port=1)
    monkeypatch.setattr(host, "stop_commands", lambda tag=None: None)

    def killed(command, wrapped, *, timeout_s, env):
        clock.sleep(0.05)
        return CommandResult("vm9", command, -1, "", "")

    monkeypatch.setattr(host, "_execute", killed)
    with pytest.raises(CommandTimedOut):
        host.run("trap '' TERM; sleep 300", timeout_s=0.01)
    with pytest.raises(CommandFailed) as failed:
        host.run("sleep 300", timeout_s=60)
    assert not isinstance(failed.value, CommandTimedOut)
