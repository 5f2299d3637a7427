"""Containers for the labs, on the docker SDK: labeled, journaled, health-checked.

Every container a lab starts carries the label `storage-labs.owner=<token>` (one token per
lab invocation) and is written into the safety journal *before* it is created, so
`python -m labs clean` (or the lab's own cleanup after Ctrl-C) removes exactly the
containers the lab made, found by name and checked by label, and nothing else.

Ports are published on 127.0.0.1 only: a lab's database must never be reachable from the
network the reader's machine sits on.

Engine errors reach the reader as one line that says what to do (no engine running, image
missing, port taken) instead of a traceback from the SDK.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.models.containers import Container

from labs.errors import LabError
from labs.journal import TEARDOWNS, Journal, JournalEntry, register_teardown, state_dir

OWNER_LABEL = "storage-labs.owner"
LAB_LABEL = "storage-labs.lab"
JOURNAL_LABEL = "storage-labs.journal"
DOCKERD_LOG = Path("/var/log/storage-labs-dockerd.log")


class ContainerError(LabError):
    """The container engine or a container failed in a way the reader can act on."""


def engine(base_url: str | None = None, timeout_s: int = 120) -> docker.DockerClient:
    """A client for the engine (the local one unless base_url names another)."""
    try:
        client = (docker.DockerClient(base_url=base_url, timeout=timeout_s) if base_url
                  else docker.from_env(timeout=timeout_s))
        client.ping()
        return client
    except docker.errors.DockerException as error:
        where = base_url or os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        raise ContainerError(
            f"no container engine answers at {where}: start it (`sudo service docker start`, "
            f"or `sudo dockerd &`) and retry ({_first_line(error)})") from None


def engine_running() -> bool:
    try:
        docker.from_env(timeout=5).ping()
        return True
    except docker.errors.DockerException:
        return False


def start_engine_if_needed(wait_s: float = 60.0) -> bool:
    """Start a local dockerd when none answers (CI and fresh machines). True if started.

    Only ever starts a daemon; never stops one (another user's engine stays as it is).
    """
    if engine_running():
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
        if engine_running():
            return True
        time.sleep(0.5)
    raise ContainerError(f"dockerd did not answer within {wait_s:.0f} s; see {DOCKERD_LOG}")


def new_owner_token(lab: str) -> str:
    """A label value unique to one lab invocation (leak checks count only these)."""
    return f"{lab}-{uuid.uuid4().hex[:12]}"


@dataclass
class ContainerSpec:
    """What to start. Paths in `binds` are host paths -> container paths."""

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


@dataclass
class LabContainers:
    """Starts and removes one lab's containers, journaling each one first."""

    journal: Journal
    lab: str
    owner: str
    client: docker.DockerClient
    failed_logs_dir: Path | None = None

    def labels(self) -> dict[str, str]:
        return {OWNER_LABEL: self.owner, LAB_LABEL: self.lab,
                JOURNAL_LABEL: str(self.journal.path)}

    def start(self, spec: ContainerSpec, health_timeout_s: float = 120.0) -> Container:
        """Create and start a container, then wait until its health check passes."""
        try:
            self.client.images.get(spec.image)
        except docker.errors.ImageNotFound:
            raise ContainerError(
                f"image {spec.image} is not on this engine: build the local one with "
                f"`python -m labs images build postgres`, or `docker pull {spec.image}` "
                f"where a registry is reachable") from None
        healthcheck = None
        if spec.health_command:
            # Docker counts durations in nanoseconds.
            healthcheck = {"test": ["CMD", *spec.health_command], "interval": 500_000_000,
                           "timeout": 5_000_000_000, "retries": 3,
                           "start_period": 1_000_000_000}
        self.journal.will_create("container", spec.name, labels=self.labels(),
                                 label_key=OWNER_LABEL, label_value=self.owner,
                                 image=spec.image)
        try:
            container = self.client.containers.run(
                spec.image, spec.command, name=spec.name, detach=True,
                labels=self.labels(), environment=spec.environment,
                volumes={host: {"bind": inside, "mode": "rw"}
                         for host, inside in spec.binds.items()},
                # 127.0.0.1 only: never expose a lab database to the reader's network.
                ports={f"{inside}/tcp": ("127.0.0.1", outside)
                       for inside, outside in spec.ports.items()},
                healthcheck=healthcheck, shm_size=spec.shm_size,
                device_write_bps=[{"Path": path, "Rate": rate}
                                  for path, rate in spec.device_write_bps.items()] or None)
        except docker.errors.APIError as error:
            self._remove_quietly(spec.name)
            raise ContainerError(_explain_api_error(error, spec)) from None
        if spec.health_command:
            self.wait_healthy(container, health_timeout_s)
        return container

    def wait_healthy(self, container: Container, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            container.reload()
            state = container.attrs["State"]
            if state.get("Health", {}).get("Status") == "healthy":
                return
            if state["Status"] in ("exited", "dead"):
                logs = self.keep_logs(container)
                raise ContainerError(
                    f"container {container.name} exited with code {state.get('ExitCode')} "
                    f"before it was healthy; its log: {logs}")
            if time.monotonic() > deadline:
                logs = self.keep_logs(container)
                raise ContainerError(
                    f"container {container.name} was not healthy after {timeout_s:.0f} s; "
                    f"its log: {logs}")
            time.sleep(0.3)

    def keep_logs(self, container: Container) -> Path:
        """Save a container's log (kept after the container is removed)."""
        folder = self.failed_logs_dir or (state_dir() / "failed-containers")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{container.name}.log"
        try:
            path.write_bytes(container.logs(stdout=True, stderr=True))
        except docker.errors.APIError as error:
            path.write_text(f"could not read the log: {_first_line(error)}\n")
        return path

    def remove(self, name: str) -> None:
        """Remove one of this lab's containers (refuses containers it does not own)."""
        entry = JournalEntry("container", name, {"labels": self.labels()})
        remove_container(self.client, entry)
        self.journal.released("container", name)

    def remove_all(self) -> list[str]:
        """Remove every live container of this invocation, newest first."""
        removed = []
        for entry in reversed(self.journal.live_entries()):
            if entry.kind == "container" and \
                    entry.details.get("labels", {}).get(OWNER_LABEL) == self.owner:
                remove_container(self.client, entry)
                self.journal.released("container", entry.id)
                removed.append(entry.id)
        return removed

    def _remove_quietly(self, name: str) -> None:
        try:
            remove_container(self.client, JournalEntry("container", name,
                                                        {"labels": self.labels()}))
        except ContainerError:
            pass
        self.journal.released("container", name)


def remove_container(client: docker.DockerClient, entry: JournalEntry) -> None:
    """Remove the container an entry names, if its owner label matches. Gone is success."""
    try:
        container = client.containers.get(entry.id)
    except docker.errors.NotFound:
        return
    want = entry.details.get("labels", {}).get(OWNER_LABEL)
    have = container.labels.get(OWNER_LABEL)
    if not want or want != have:
        # The guard: a container of the same name that this lab did not label is not ours.
        raise ContainerError(
            f"container {entry.id} does not carry label {OWNER_LABEL}={want}; "
            f"not removing a container this lab did not create")
    # Safe: the owner label proves this lab created it; its volumes are anonymous ones it made.
    container.remove(force=True, v=True)


def containers_with_owner(client: docker.DockerClient, owner: str) -> list[Container]:
    """Every container (running or not) labeled with one invocation's token."""
    return client.containers.list(all=True, filters={"label": f"{OWNER_LABEL}={owner}"})


def _teardown_container(host: Any, entry: JournalEntry) -> None:
    # Containers run on the local engine in this version; `host` is unused.
    remove_container(engine(), entry)


# The journal may already know how to remove containers (labs/journal.py does on branches
# with host support; its teardown checks `label_key`/`label_value`, which our entries also
# carry): keep that one, register ours only where none exists.
if "container" not in TEARDOWNS:
    register_teardown("container")(_teardown_container)


def exec_in(container: Container, command: list[str], user: str = "postgres",
            check: bool = True, environment: dict[str, str] | None = None) -> str:
    """Run a command inside a container; returns stdout+stderr; raises on failure."""
    result = container.exec_run(command, user=user, environment=environment or {},
                                demux=False)
    output = (result.output or b"").decode(errors="replace")
    if check and result.exit_code != 0:
        tail = output.strip().splitlines()[-1] if output.strip() else "no output"
        raise ContainerError(
            f"`{' '.join(command)}` in container {container.name} exited with "
            f"{result.exit_code}: {tail}")
    return output


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
                f"`python -m labs images build postgres`")
    return f"the container engine refused to start {spec.name}: {_first_line(text)}"


def _first_line(error: Any) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
