"""Where lab commands run: the local machine or an SSH host (a lab VM is an SSH host).

API (stable; other labs build on it):

    from labs.infra.inventory import get_host
    host = get_host("vm1")            # "local", a name from the inventory, or a booted VM
    result = host.run("uname -r", timeout_s=30)          # -> CommandResult
    host.sudo(["mdadm", "--detail", "/dev/md/fast"])     # as root (sudo -n unless already root)
    host.put("local/file", "/remote/file"); host.get("/remote/file", "local/file")
    result.stdout, result.stderr, result.exit_code, result.ok
    host.run("false", check=False)    # returns the failed result instead of raising
    host.name, host.work_dir (where labs keep loop-device files), host.is_local,
    host.lab_devices (block devices the project created for this host, e.g. a VM's data disks)
    host.interrupt()  # from another thread: stop the command running now; the lab then stops

Commands are strings (run by bash) or lists of arguments (quoted for you). Every command
has a timeout (`timeout_s`, default DEFAULT_TIMEOUT_S) and carries the command marker
(labs.infra.paths.command_marker), so `clean` can wait for what a killed lab left running.
Failures raise:

    CommandFailed   non-zero exit; message names host, command, exit code, stderr tail
    CommandTimedOut the timeout passed; the command was stopped
    HostUnreachable the SSH connection could not be made
    UnknownHost     (a UsageError) no host of that name
    HostInterrupted (a KeyboardInterrupt) the host was interrupted (`interrupt()`): raised
                    once, by the command that was running or the next one, so the lab
                    unwinds as after a Ctrl-C and its own teardown commands still run

All are LabError subclasses (one line, exit code 1; UnknownHost exits 2). Which names exist
(local, the inventory, running VMs) is labs.infra.inventory's business.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import shlex
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labs.errors import Interrupted, LabError, UsageError, unwinding_from_an_interrupt
from labs.infra.paths import command_marker, state_dir

DEFAULT_TIMEOUT_S = 300

# Paramiko logs a traceback for every refused connection while a VM boots; our own errors
# (HostUnreachable) already say what happened, in one line.
logging.getLogger("paramiko").addHandler(logging.NullHandler())
logging.getLogger("paramiko").propagate = False
STDERR_TAIL_LINES = 3


class HostError(LabError):
    """A command on a lab host did not succeed."""

    def __init__(self, host: str, command: str, exit_code: int | None, stderr: str, why: str):
        self.host, self.command, self.exit_code, self.stderr = host, command, exit_code, stderr
        tail = " | ".join(line.strip() for line in stderr.strip().splitlines()[-STDERR_TAIL_LINES:])
        shown = command if len(command) <= 160 else command[:157] + "..."
        message = f"host {host}: `{shown}` {why}"
        if tail:
            message += f": {tail}"
        super().__init__(message)


class CommandFailed(HostError):
    def __init__(self, host: str, command: str, exit_code: int, stderr: str):
        super().__init__(host, command, exit_code, stderr, f"exited with code {exit_code}")


class CommandTimedOut(HostError):
    def __init__(self, host: str, command: str, timeout_s: float, stderr: str):
        super().__init__(host, command, None, stderr, f"timed out after {timeout_s:g} s")


class HostUnreachable(HostError):
    def __init__(self, host: str, command: str, reason: str):
        super().__init__(host, command, None, "", f"could not reach the host ({reason})")


class ConnectionLost(HostUnreachable):
    """The connection died while a command ran: the command may run on without it."""


class UnknownHost(UsageError):
    """No host of that name."""


class HostInterrupted(Interrupted):
    """The host was interrupted while a lab ran on it (a Ctrl-C during a run on many hosts)."""

    def __init__(self, host: str):
        super().__init__(f"host {host}: interrupted")


@dataclass(frozen=True)
class CommandResult:
    host: str
    command: str
    exit_code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def printed_json(stdout: str, who: str = "the probe") -> dict[str, Any]:
    """The JSON object a script run on a host printed as its last line of output (a lab's
    probe, for example), or one clear LabError naming what it printed instead."""
    try:
        return json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise LabError(f"{who} printed no JSON: {stdout.strip()[-200:]!r}") from None


# A file (for tests): every command any host object runs, one JSON line each, so that a test
# can compare what a lab ran with what its run.json says it ran.
TRACE_ENV = "LABS_TRACE_COMMANDS"


def _tell(host: Host, text: str, marked: bool) -> None:
    """Report a command about to run: to the host's listener (a lab's recorder), unless it
    is unmarked (the session's own plumbing: who am I, stop my commands, find orphans, does
    SSH answer); and to the trace file, if one is named."""
    shown = f"[{host.name}] {text}"
    if marked:
        (host.unheard.append if host.on_command is None else host.on_command)(shown)
    trace = os.environ.get(TRACE_ENV)
    if trace:
        with open(trace, "a", encoding="utf-8") as out:
            # When it started (Unix time): the gaps between lines show where a run's time went.
            out.write(json.dumps({"command": shown, "marked": marked,
                                  "at": round(time.time(), 3)}) + "\n")


def _as_shell(command: str | list[str]) -> str:
    return command if isinstance(command, str) else shlex.join(command)


def _wrapped(command: str, timeout_s: float, marked: bool, tag: str = "",
             via_sudo: bool = False) -> str:
    """The command line a host actually runs.

    `exec timeout`: coreutils timeout stops the whole command (its process group), not just
    the shell, and as the process the transport started it also passes a Ctrl-C on to it.
    ": marker tag" names the inner shell (the tag is the command's own, after the Host
    object's, so `interrupt` can stop exactly that object's commands, and a cut session
    exactly its command); the trailing "exit" keeps bash from exec'ing the
    command in place of itself, so the marker lives exactly as long as the command.
    `via_sudo` puts `sudo -n` before `timeout`, not inside the shell: `timeout` and the marked
    shell then run as root, so the SIGKILL that follows a time limit (or a Ctrl-C, or a cut
    session) by 5 s reaches a root command that outlived the first signal (a user's
    `timeout` cannot signal root's processes), and the marker and tag are root's command's.
    """
    inner = f": {command_marker()} {tag}; {command}\nexit $?" if marked else command
    sudo = "sudo -n " if via_sudo else ""
    return f"exec {sudo}timeout --kill-after=5 {timeout_s:g} bash -c {shlex.quote(inner)}"


def _local_runner() -> type:
    import invoke

    class InterruptibleLocal(invoke.Local):
        def send_interrupt(self, interrupt: KeyboardInterrupt) -> None:
            # invoke would type ^C into the command's stdin and keep waiting; instead stop
            # the command (timeout hands SIGINT to its process group) and stop the lab too.
            try:
                os.kill(self.process.pid, signal.SIGINT)
            except (ProcessLookupError, AttributeError):
                pass
            raise interrupt

        def stop(self) -> None:
            # A Ctrl-C that lands before invoke has read its options leaves `using_pty` unset;
            # invoke's own stop would then raise AttributeError in place of the Ctrl-C.
            if hasattr(self, "using_pty"):
                super().stop()

    return InterruptibleLocal


def _remote_runner(host: Host) -> type:
    from fabric.runners import Remote

    class InterruptibleRemote(Remote):
        def send_interrupt(self, interrupt: KeyboardInterrupt) -> None:
            # Without a pty Fabric re-raises the Ctrl-C but first waits for the remote
            # command to end on its own (minutes for a long fio); stop it first, so the lab
            # unwinds now and its teardown runs.
            host.stop_commands()
            raise interrupt

    return InterruptibleRemote


@dataclass
class Host:
    """Common part of every host; subclasses provide _execute, put and get."""

    name: str
    work_dir: str = ""
    lab_devices: tuple[str, ...] = ()
    is_local: bool = False
    _is_root: bool | None = field(default=None, repr=False)
    # Carried by every command this object runs (after the marker): `interrupt` stops these.
    run_tag: str = field(default_factory=lambda: "run-" + uuid.uuid4().hex[:12], repr=False)
    _interrupt: threading.Event = field(default_factory=threading.Event, repr=False)
    _serial: Any = field(default_factory=itertools.count, repr=False)  # numbers each command
    # Told of every command this object runs (a lab's run.json lists them), as "[host] cmd";
    # what runs while nobody listens (a lab's checks before its recorder opens) is kept for
    # the next listener.
    on_command: Callable[[str], None] | None = field(default=None, repr=False, compare=False)
    unheard: list[str] = field(default_factory=list, repr=False, compare=False)

    def run(self, command: str | list[str], *, timeout_s: float = DEFAULT_TIMEOUT_S,
            check: bool = True, env: dict[str, str] | None = None,
            marked: bool = True, as_root: bool = False) -> CommandResult:
        """Run a command; raise CommandFailed on a non-zero exit unless check=False.

        `marked=False` leaves out the command marker, for the session's own plumbing (`clean`'s
        orphan check, who am I, stop my commands, does SSH answer), which a lab's run.json
        leaves out too; `as_root=True` runs it as root (see `sudo`).
        """
        text = _as_shell(command)
        via_sudo = as_root and not self.is_root()
        self._raise_if_interrupted()
        _tell(self, text, marked)
        # The command's own tag starts with the object's (stop_commands stops them all) and
        # ends with ";" in the command line (so "-c1" does not match "-c12").
        tag = f"{self.run_tag}-c{next(self._serial)}"
        # The transport's own timeout, a little later, is the backstop for a hung connection.
        wrapped = _wrapped(text, timeout_s, marked, tag, via_sudo)
        if via_sudo:
            text = "sudo -n " + text  # as errors show it
        started = time.monotonic()
        try:
            result = self._execute(text, wrapped, timeout_s=timeout_s + 15, env=env or {})
        except ConnectionLost:
            if marked:
                self.stop_commands(tag + ";")
            self._raise_if_interrupted()
            raise
        except HostError:
            self._raise_if_interrupted()
            raise
        if result.exit_code == -1 and marked and not self.is_local:
            # No exit status: the session was cut while the command ran (a restarted sshd, a
            # network blip) and the command may run on without it, or a signal ended it (then
            # this finds nothing). Stop it over a new connection, so that it does not outlive
            # the lab; the caller sees the failure.
            self.stop_commands(tag + ";")
        self._raise_if_interrupted()
        # 124: the time limit's signal ended the command. A command that outlives that signal
        # gets SIGKILL 5 s later, sent to timeout's whole process group, timeout among it (and
        # sudo passes the signal on to itself): the shell reports 137, a session none (-1).
        if ((result.exit_code in (124, 137) or result.exit_code < 0)
                and time.monotonic() - started >= timeout_s):
            raise CommandTimedOut(self.name, text, timeout_s, result.stderr)
        if check and not result.ok:
            raise CommandFailed(self.name, text, result.exit_code, result.stderr)
        return result

    def tell(self, command: str) -> None:
        """Report a command this object runs some other way than `run` (a stream read line
        by line over its own channel), so that the run's record lists it too."""
        _tell(self, command, marked=True)

    def listen(self, on_command: Callable[[str], None] | None) -> None:
        """Tell `on_command` of every command from now on, and first of those that ran while
        nobody listened (None: stop telling; what runs next is kept for the next one)."""
        self.on_command = on_command
        if on_command is not None:
            for command in self.unheard:
                on_command(command)
            self.unheard.clear()

    def interrupt(self) -> None:
        """Stop the command this host runs now and make the lab stop (from another thread).

        The lab's thread gets HostInterrupted from the command that was running (or from the
        next one) and unwinds as after a Ctrl-C; the commands its teardown runs after that
        are not refused, so it removes what it made. What it cannot remove stays journaled.
        """
        self._interrupt.set()
        self.stop_commands()

    def stop_commands(self, tag: str | None = None) -> None:
        """Send SIGINT to the commands this object runs on the host now (over a second
        connection), so that a command waited for returns at once; with `tag`, only the one
        command whose tag that is."""
        tag = tag or self.run_tag
        pattern = f"[{tag[0]}]{tag[1:]}"  # never matches pkill's own line
        twin = self.twin()
        try:
            # Safe: signals only processes whose command line carries this object's own tag,
            # the commands this lab started on this host; a Ctrl-C's SIGINT, which `timeout`
            # passes on to the command's process group.
            twin.sudo(f"pkill -INT -f -- {shlex.quote(pattern)} || true", timeout_s=30,
                      marked=False)
        except HostError:
            pass  # unreachable now: the lab's thread fails on its own; `clean` does the rest
        finally:
            twin.close()

    def _raise_if_interrupted(self) -> None:
        if self._interrupt.is_set():
            self._interrupt.clear()  # once: the teardown that follows may run commands
            # The lab's progress may have stopped it first (Interrupted): the same stop.
            if not unwinding_from_an_interrupt():
                raise HostInterrupted(self.name)

    def twin(self) -> Host:
        """A new object for the same host, with its own connection (used by `interrupt` and
        by readers of a command's output while it runs), telling the same listener."""
        twin = self._another()
        twin.on_command = self.on_command
        return twin

    def _another(self) -> Host:
        """A new object for the same host (subclasses: how to reach it again)."""
        raise NotImplementedError

    def sudo(self, command: str | list[str], **kwargs: Any) -> CommandResult:
        """Run a command as root: directly if we are root, else through `sudo -n` (which
        needs a password-less sudo), with the command's timeout and marker inside it."""
        return self.run(command, as_root=True, **kwargs)

    def put_as_root(self, local_path: str | Path, remote_path: str) -> None:
        """Copy a file into a place only root writes (the lab's work dir): directly as root,
        else to a file of the login user's in /tmp first, then into place with sudo."""
        if self.is_root():
            self.put(local_path, remote_path)
            return
        staging = f"/tmp/storage-labs-put-{uuid.uuid4().hex[:12]}"
        self.put(local_path, staging)
        try:
            self.sudo(["install", "-m", "0644", staging, remote_path], timeout_s=60)
        finally:
            # Safe: the temporary copy this call just made.
            self.run(["rm", "-f", staging], check=False, timeout_s=60)

    def missing_commands(self, commands: Sequence[str], extra_check: str = "") -> list[str]:
        """Which of `commands` root's PATH lacks here; `extra_check` is shell that prints the
        name of anything else missing."""
        probe = (f"for t in {' '.join(shlex.quote(c) for c in commands)}; do "
                 "command -v $t >/dev/null || echo $t; done"
                 + (f"; {extra_check}" if extra_check else ""))
        return self.sudo(probe, timeout_s=60).stdout.split()

    def is_root(self) -> bool:
        if self._is_root is None:
            # Unmarked: nothing to stop if its session is cut (so no nested stop either).
            self._is_root = self.run("id -u", timeout_s=60, marked=False).stdout.strip() == "0"
        return self._is_root

    def _execute(self, command: str, wrapped: str, *, timeout_s: float,
                 env: dict[str, str]) -> CommandResult:
        raise NotImplementedError

    def put(self, local_path: str | Path, remote_path: str) -> None:
        raise NotImplementedError

    def get(self, remote_path: str, local_path: str | Path) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release connections (a no-op for the local host)."""


class LocalHost(Host):
    """The machine running `python -m labs`, through invoke."""

    def __init__(self, work_dir: str | None = None):
        default_work = os.environ.get("LABS_WORK_DIR") or str(state_dir() / "work")
        super().__init__(name="local", work_dir=work_dir or default_work, is_local=True)

    def _execute(self, command: str, wrapped: str, *, timeout_s: float,
                 env: dict[str, str]) -> CommandResult:
        import invoke

        context = invoke.Context(invoke.Config(overrides={"runners": {"local": _local_runner()}}))
        try:
            result = context.run(wrapped, hide=True, warn=True, timeout=timeout_s,
                                 in_stream=False, env=env, pty=False)
        except invoke.exceptions.CommandTimedOut as timed_out:
            raise CommandTimedOut(self.name, command, timeout_s,
                                  timed_out.result.stderr) from None
        return CommandResult(self.name, command, result.exited, result.stdout, result.stderr)

    def put(self, local_path: str | Path, remote_path: str) -> None:
        shutil.copyfile(local_path, remote_path)

    def _another(self) -> LocalHost:
        return LocalHost(self.work_dir)

    def get(self, remote_path: str, local_path: str | Path) -> None:
        shutil.copyfile(remote_path, local_path)


class SSHHost(Host):
    """A host reached over SSH with Fabric. Host keys are checked, never learned silently."""

    def __init__(self, name: str, address: str, *, user: str | None = None, port: int = 22,
                 key: str | None = None, known_hosts: str | None = None,
                 work_dir: str = "/var/tmp/storage-labs", lab_devices: tuple[str, ...] = (),
                 connect_timeout_s: float = 20):
        super().__init__(name=name, work_dir=work_dir, lab_devices=lab_devices)
        self.address, self.user, self.port = address, user, port
        self.key, self.known_hosts = key, known_hosts
        self.connect_timeout_s = connect_timeout_s
        self._connection: Any = None

    def _another(self) -> SSHHost:
        return SSHHost(self.name, self.address, user=self.user, port=self.port, key=self.key,
                       known_hosts=self.known_hosts, work_dir=self.work_dir,
                       lab_devices=self.lab_devices, connect_timeout_s=self.connect_timeout_s)

    def connection(self) -> Any:
        if self._connection is None:
            import fabric
            import paramiko

            connect_kwargs: dict[str, Any] = {"banner_timeout": self.connect_timeout_s,
                                              "auth_timeout": self.connect_timeout_s}
            if self.key:
                connect_kwargs.update(key_filename=os.path.expanduser(self.key),
                                      look_for_keys=False, allow_agent=False)
            connection = fabric.Connection(self.address, user=self.user, port=self.port,
                                           connect_timeout=self.connect_timeout_s,
                                           connect_kwargs=connect_kwargs)
            # Pin host keys: an unknown or changed key is refused, never added.
            connection.client.set_missing_host_key_policy(paramiko.RejectPolicy())
            known_hosts = os.path.expanduser(self.known_hosts or "~/.ssh/known_hosts")
            if os.path.exists(known_hosts):
                connection.client.load_host_keys(known_hosts)
            connection.config.runners.remote = _remote_runner(self)  # Ctrl-C stops the command
            self._connection = connection
        return self._connection

    def _open(self, command: str) -> Any:
        import paramiko

        connection = self.connection()
        try:
            connection.open()
        except paramiko.BadHostKeyException:
            raise HostUnreachable(self.name, command, "its host key does not match the pinned "
                                  "key: refusing to connect") from None
        except paramiko.SSHException as error:
            raise HostUnreachable(self.name, command, str(error) or type(error).__name__) from None
        except (OSError, EOFError) as error:
            reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
            raise HostUnreachable(self.name, command, reason) from None
        return connection

    def _execute(self, command: str, wrapped: str, *, timeout_s: float,
                 env: dict[str, str]) -> CommandResult:
        import invoke
        import paramiko

        connection = self._open(command)
        try:
            result = connection.run(wrapped, hide=True, warn=True, timeout=timeout_s,
                                    in_stream=False, env=env, pty=False)
        except invoke.exceptions.CommandTimedOut as timed_out:
            raise CommandTimedOut(self.name, command, timeout_s,
                                  timed_out.result.stderr) from None
        except (EOFError, OSError, paramiko.SSHException) as error:
            self.close()
            raise ConnectionLost(self.name, command, f"connection lost: {error}") from None
        return CommandResult(self.name, command, result.exited, result.stdout, result.stderr)

    def put(self, local_path: str | Path, remote_path: str) -> None:
        self._open(f"put {remote_path}").put(str(local_path), remote_path)

    def ssh_client(self) -> Any:
        """The open paramiko client of this host's connection (the docker SDK rides on it)."""
        return self._open("connect").client

    def get(self, remote_path: str, local_path: str | Path) -> None:
        self._open(f"get {remote_path}").get(remote_path, str(local_path))

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
