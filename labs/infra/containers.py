"""Containers for the labs, on the docker SDK, on any lab host.

    client = engine_for(host)          # the docker engine of the lab host (local or over SSH)
    container = ws.run_container(ContainerSpec(...))   # labs.infra.workspace: journaled first
    wait_healthy(container, 120)

Lab hosts: the local engine is reached through its socket (started when none answers, as
root); a remote host's engine (a lab VM's or an inventory host's) is reached through the
host's own SSH connection, with its pinned host key, by `docker system dial-stdio`, the
same way the docker SDK's `ssh://` URLs work. So a lab drives a container in a VM exactly
as it drives one on this machine.

Every container a lab starts carries one label, OWNER_LABEL, whose value is the state
dir's command marker (labs.infra.paths): `clean` removes a journaled container only when
the container still carries that label. Ports are published on 127.0.0.1 only: a lab's
database must never be reachable from the network the reader's machine sits on.

Engine errors reach the reader as one line that says what to do (no engine running, image
missing, port taken) instead of a traceback from the SDK.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import docker
import docker.errors
from docker.models.containers import Container
from docker.transport.sshconn import SSHHTTPAdapter

from labs.errors import LabError
from labs.infra.hosts import Host, SSHHost
from labs.infra.journal import JournalEntry, register_teardown
from labs.infra.paths import state_dir

OWNER_LABEL = "storage-labs.owner"  # value: labs.infra.paths.command_marker()
LAB_LABEL = "storage-labs.lab"  # which lab made it (for people reading `docker ps`)
DOCKERD_LOG = Path("/var/log/storage-labs-dockerd.log")
REMOTE_API_VERSION = "1.41"  # Docker 20.10 (Debian 12's docker.io) and newer


class ContainerError(LabError):
    """The container engine or a container failed in a way the reader can act on."""


# --- engines ------------------------------------------------------------------------------

def local_engine_running() -> bool:
    try:
        docker.from_env(timeout=5).ping()
        return True
    except docker.errors.DockerException:
        return False


def start_engine_if_needed(wait_s: float = 60.0) -> bool:
    """Start a local dockerd when none answers (CI and fresh machines). True if started.

    Only ever starts a daemon; never stops one (another user's engine stays as it is).
    """
    if local_engine_running():
        return False
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise ContainerError("no container engine running and dockerd is not installed: "
                             "install it with `sudo apt-get install docker.io`")
    if os.geteuid() != 0:
        raise ContainerError("no container engine running and starting dockerd needs root: "
                             "run `sudo service docker start`")
    with open(DOCKERD_LOG, "ab") as log:
        # A new session so the daemon outlives this process and a Ctrl-C here.
        subprocess.Popen([dockerd], stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if local_engine_running():
            return True
        time.sleep(0.5)
    raise ContainerError(f"dockerd did not answer within {wait_s:.0f} s; see {DOCKERD_LOG}")


def local_engine(timeout_s: int = 120) -> docker.DockerClient:
    """The engine on this machine (started first when none runs and we are root).

    Only the default engine is ever started: a DOCKER_HOST the reader set names an engine
    someone else runs.
    """
    if os.geteuid() == 0 and not os.environ.get("DOCKER_HOST"):
        start_engine_if_needed()
    try:
        client = docker.from_env(timeout=timeout_s)
        client.ping()
        return client
    except docker.errors.DockerException as error:
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        raise ContainerError(
            f"no container engine answers at {where}: start it (`sudo service docker start`, "
            f"or `sudo dockerd &`) and retry ({first_line(error)})") from None


class _HostSSHAdapter(SSHHTTPAdapter):
    """The docker SDK's SSH transport, over a lab host's own (pinned, open) SSH connection."""

    def __init__(self, ssh_client, timeout: int):
        super().__init__("ssh://lab-host", timeout=timeout, shell_out=True)
        self.ssh_client = ssh_client

    def _connect(self) -> None:
        raise ContainerError("the SSH connection to the lab host was lost; run the lab again")

    def close(self) -> None:
        # The SSH connection belongs to the Host (labs.infra.hosts), which closes it.
        self.pools.clear()


# Succeeds only when the engine answers (the client alone prints no server version).
ENGINE_VERSION = "docker version --format '{{.Server.Version}}'"


def remote_engine(host: SSHHost, timeout_s: int = 120) -> docker.DockerClient:
    """The docker engine of an SSH host (a lab VM or an inventory host), started if needed."""
    probe = host.sudo(ENGINE_VERSION, check=False, timeout_s=60)
    if not probe.ok:
        # Lab VMs keep dockerd off at boot (it slows an emulated boot); start it on demand.
        host.sudo("systemctl start docker", check=False, timeout_s=180)
        probe = host.sudo(ENGINE_VERSION, check=False, timeout_s=60)
    if not probe.ok:
        raise ContainerError(f"host {host.name}: no docker engine answers (install docker.io "
                             f"there and start it): {first_line(probe.stderr or probe.stdout)}")
    if not host.is_root() and not host.run(ENGINE_VERSION, check=False, timeout_s=60).ok:
        # The SDK talks to the engine through `docker system dial-stdio` run as the login user,
        # outside sudo: that user must reach the engine's socket itself.
        raise ContainerError(f"host {host.name}: its login user cannot reach the docker "
                             "engine (it is not root): add it to the docker group there, or "
                             "log in as root")
    api = docker.APIClient(base_url="ssh://lab-host", use_ssh_client=True,
                           version=REMOTE_API_VERSION, timeout=timeout_s)
    adapter = _HostSSHAdapter(host.ssh_client(), timeout_s)
    api.mount("http+docker://ssh", adapter)
    api._custom_adapter = adapter
    client = docker.DockerClient.__new__(docker.DockerClient)
    client.api = api
    try:
        client.ping()
    except docker.errors.DockerException as error:
        raise ContainerError(f"host {host.name}: the docker engine did not answer over SSH "
                             f"({first_line(error)})") from None
    return client


def engine_for(host: Host, timeout_s: int = 120) -> docker.DockerClient:
    """The docker engine a lab uses on `host`."""
    if host.is_local:
        return local_engine(timeout_s)
    if not isinstance(host, SSHHost):
        raise ContainerError(f"host {host.name}: no way to reach its docker engine")
    return remote_engine(host, timeout_s)


# --- containers -----------------------------------------------------------------------------

@dataclass
class ContainerSpec:
    """What to start. Paths in `binds` are paths on the lab host -> paths in the container."""

    name: str
    image: str
    command: list[str] | None = None
    environment: dict[str, str] = field(default_factory=dict)
    binds: dict[str, str] = field(default_factory=dict)
    ports: dict[int, int] = field(default_factory=dict)  # container port -> 127.0.0.1 port
    health_command: list[str] | None = None
    shm_size: str = "256m"
    # block device -> write limit in bytes/s (cgroup blkio throttling), to model a slow disk
    device_write_bps: dict[str, int] = field(default_factory=dict)
    device_read_bps: dict[str, int] = field(default_factory=dict)
    device_read_iops: dict[str, int] = field(default_factory=dict)  # reads per second
    memory_limit_mib: int | None = None
    network: str | None = None  # a docker network name; None: the default bridge
    user: str | None = None
    entrypoint: list[str] | None = None
    cap_add: list[str] = field(default_factory=list)


def create_container(client: docker.DockerClient, spec: ContainerSpec,
                     labels: dict[str, str]) -> Container:
    """`docker run -d` the spec with these labels (the caller journaled it first)."""
    try:
        client.images.get(spec.image)
    except docker.errors.ImageNotFound:
        raise ContainerError(
            f"image {spec.image} is not on this engine: build the local one with "
            f"`python -m labs images build NAME`, or `docker pull {spec.image}` where a "
            f"registry is reachable") from None
    healthcheck = None
    if spec.health_command:
        # Docker counts durations in nanoseconds.
        healthcheck = {"test": ["CMD", *spec.health_command], "interval": 500_000_000,
                       "timeout": 5_000_000_000, "retries": 3, "start_period": 1_000_000_000}
    options = {}
    if spec.memory_limit_mib:
        # No swap beyond the limit: the page cache and the engine share exactly this much.
        options["mem_limit"] = f"{spec.memory_limit_mib}m"
        options["memswap_limit"] = f"{spec.memory_limit_mib}m"
    if spec.network:
        options["network"] = spec.network
    if spec.user:
        options["user"] = spec.user
    if spec.entrypoint is not None:
        options["entrypoint"] = spec.entrypoint
    if spec.cap_add:
        options["cap_add"] = spec.cap_add
    try:
        return client.containers.run(
            spec.image, spec.command, name=spec.name, detach=True, labels=labels,
            environment=spec.environment,
            volumes={outside: {"bind": inside, "mode": "rw"}
                     for outside, inside in spec.binds.items()},
            # 127.0.0.1 only: never expose a lab database to the reader's network.
            ports={f"{inside}/tcp": ("127.0.0.1", outside)
                   for inside, outside in spec.ports.items()},
            healthcheck=healthcheck, shm_size=spec.shm_size,
            device_write_bps=[{"Path": path, "Rate": rate}
                              for path, rate in spec.device_write_bps.items()] or None,
            device_read_bps=[{"Path": path, "Rate": rate}
                             for path, rate in spec.device_read_bps.items()] or None,
            device_read_iops=[{"Path": path, "Rate": rate}
                              for path, rate in spec.device_read_iops.items()] or None,
            **options)
    except docker.errors.APIError as error:
        raise ContainerError(_explain_api_error(error, spec)) from None


def wait_healthy(container: Container, timeout_s: float = 120.0) -> None:
    """Wait for the container's health check; on failure keep its log and say where."""
    deadline = time.monotonic() + timeout_s
    while True:
        container.reload()
        state = container.attrs["State"]
        if state.get("Health", {}).get("Status") == "healthy":
            return
        if state["Status"] in ("exited", "dead"):
            raise ContainerError(
                f"container {container.name} exited with code {state.get('ExitCode')} "
                f"before it was healthy; its log: {keep_logs(container)}")
        if time.monotonic() > deadline:
            raise ContainerError(
                f"container {container.name} was not healthy after {timeout_s:.0f} s; "
                f"its log: {keep_logs(container)}")
        time.sleep(0.3)


def keep_logs(container: Container, folder: Path | None = None) -> Path:
    """Save a container's log on this machine (kept after the container is removed)."""
    folder = folder or (state_dir() / "failed-containers")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{container.name}.log"
    try:
        path.write_bytes(container.logs(stdout=True, stderr=True))
    except docker.errors.APIError as error:
        path.write_text(f"could not read the log: {first_line(error)}\n")
    return path


def containers_with_owner(client: docker.DockerClient, owner: str) -> list[Container]:
    """Every container (running or not) carrying the owner label value `owner`."""
    return client.containers.list(all=True, filters={"label": f"{OWNER_LABEL}={owner}"})


def _remove_if_ours(host: Host, entry: JournalEntry, inspect: list[str], labels: str,
                    remove: list[str]) -> None:
    """Remove an engine object (`inspect` + name, `remove` + name) if it still carries the
    owner label this journal gave it; retried, as the engine may refuse for a moment.

    The engine's own CLI on the host: works wherever the object lives, with or without a
    Python docker client, and after the lab process that made it is gone."""
    key = entry.details.get("label_key", OWNER_LABEL)
    value = entry.details.get("label_value", "")
    template = "{{index " + labels + " " + json.dumps(key) + "}}"
    removed = None
    for _ in range(5):
        found = host.sudo([*inspect, "--format", template, entry.id], timeout_s=120,
                          check=False)
        if not (found.ok and value and found.stdout.strip() == value):
            return  # gone, or never made, or not ours
        # Safe: the object carries the owner label this journal gave it.
        removed = host.sudo([*remove, entry.id], timeout_s=120, check=False)
        if removed.ok:
            return
        time.sleep(1)
    raise LabError(f"{entry.kind} {entry.id} would not go: {first_line(removed.stderr)}")


@register_teardown("container")
def _teardown_container(host: Host, entry: JournalEntry) -> None:
    # Retried: a lab stopped while the engine was still starting the container may be
    # refused a removal for a moment ("removal already in progress", "is starting").
    _remove_if_ours(host, entry, ["docker", "inspect"], ".Config.Labels",
                    ["docker", "rm", "--force", "--volumes"])


def create_network(client: docker.DockerClient, name: str, labels: dict[str, str]) -> None:
    """`docker network create NAME` (a bridge of its own) with these labels (the caller
    journaled it first)."""
    try:
        client.networks.create(name, driver="bridge", labels=labels)
    except docker.errors.APIError as error:
        raise ContainerError(f"the container engine refused to create network {name}: "
                             f"{first_line(getattr(error, 'explanation', None) or error)}"
                             ) from None


@register_teardown("network")
def _teardown_network(host: Host, entry: JournalEntry) -> None:
    # Its containers, journaled after it, are removed before it; retried while one is still
    # leaving it ("has active endpoints").
    _remove_if_ours(host, entry, ["docker", "network", "inspect"], ".Labels",
                    ["docker", "network", "rm"])


def _explain_api_error(error: docker.errors.APIError, spec: ContainerSpec) -> str:
    text = str(getattr(error, "explanation", None) or error)
    if "port is already allocated" in text or "address already in use" in text:
        ports = ", ".join(f"127.0.0.1:{p}" for p in spec.ports.values())
        return (f"port {ports} is taken by another program: pick another port or stop "
                f"what listens there (`ss -ltnp`)")
    if "is already in use by container" in text:
        return (f"a container named {spec.name} already exists: if a lab left it behind, run "
                f"`python -m labs clean`; otherwise pick another name")
    if "No such image" in text:
        return (f"image {spec.image} is not on this engine: build it with "
                f"`python -m labs images build NAME`")
    return f"the container engine refused to start {spec.name}: {first_line(text)}"


def first_line(error: object) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


# --- per-device read limits on a running container -------------------------------------------

def set_device_read_limits(host: Host, container: Container, device: str, read_iops: int,
                           read_bps: int) -> str:
    """Limit (or, with 0, free) a running container's reads from one block device.

    The engine's API sets these limits only when a container is created (an update is
    accepted and ignored), so this writes the container's own blkio cgroup files (cgroup v1)
    or its io.max (cgroup v2) on the host, as `docker run --device-read-iops/bps` would.
    Returns the file written. The caller checks that `device` is its own.
    """
    container.reload()
    pid = container.attrs["State"]["Pid"]
    if not pid:
        raise ContainerError(f"container {container.name} is not running")
    cgroups = host.run(["cat", f"/proc/{pid}/cgroup"], timeout_s=60).stdout.splitlines()
    numbers = host.run(["lsblk", "--nodeps", "--noheadings", "--output", "MAJ:MIN", device],
                       timeout_s=60).stdout.strip()
    v1 = [line.split(":", 2)[2] for line in cgroups if ":blkio:" in line]
    if v1:
        folder = f"/sys/fs/cgroup/blkio{v1[0]}"
        writes = [(f"{folder}/blkio.throttle.read_iops_device", f"{numbers} {int(read_iops)}"),
                  (f"{folder}/blkio.throttle.read_bps_device", f"{numbers} {int(read_bps)}")]
    else:
        unified = [line.split(":", 2)[2] for line in cgroups if line.startswith("0::")]
        if not unified:
            raise ContainerError(f"container {container.name}: no blkio or unified cgroup")
        limits = (f"riops={int(read_iops) or 'max'} rbps={int(read_bps) or 'max'}")
        writes = [(f"/sys/fs/cgroup{unified[0]}/io.max", f"{numbers} {limits}")]
    for path, line in writes:
        # Safe: the container's own cgroup, for a device the caller owns.
        host.sudo(f"echo {shlex.quote(line)} > {shlex.quote(path)}", timeout_s=60)
    return writes[0][0]
