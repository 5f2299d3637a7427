"""The doublewrite lab's MariaDB containers on the lab host, and the files and device they use.

Every container is made through the lab's LabWorkspace (journaled, labelled, removed after);
every data directory is a folder on the file system the lab built on its own loop device,
so the device's counters (/sys/block/loopN/stat) count exactly what MariaDB wrote there.
"""

from __future__ import annotations

import base64
import shlex
import time

from docker.models.containers import Container

from labs.errors import LabError
from labs.infra.container_exec import exec_in, run_in
from labs.infra.containers import ContainerError, ContainerSpec, keep_logs
from labs.infra.workspace import LabWorkspace, LoopFilesystem
from labs.tools import mariadb, mdadm

DATADIR = "/var/lib/mysql"
TEMPLATE = "template"  # the data directory every leg and torn page starts from a copy of
HEALTH = ["healthcheck.sh"]  # the image's own check: InnoDB up, socket answering


def sql(container: Container, query: str, check: bool = True) -> str:
    return exec_in(container, mariadb.client_command(query), check=check).strip()


def exec_long(container: Container, command: list[str], timeout_s: float = 7200,
              output_path: str = "/tmp/lab-command.txt") -> str:
    """Run a long command in the container without holding one HTTP read open for it.

    The command runs detached with its output in a file on the container's own layer (not
    on the lab's file system, so the device counters never see it); this polls until it
    ends, then returns the output, or raises with its last line if it failed.
    """
    api = container.client.api
    script = f"{shlex.join(command)} > {output_path} 2>&1"
    exec_id = api.exec_create(container.id, ["sh", "-c", script])["Id"]
    api.exec_start(exec_id, detach=True)
    started = time.monotonic()
    while (state := api.exec_inspect(exec_id))["Running"]:
        if time.monotonic() - started > timeout_s:
            raise ContainerError(f"`{command[0]}` in {container.name} still running after "
                                 f"{timeout_s:.0f} s")
        time.sleep(0.5)
    output = exec_in(container, ["cat", output_path])
    if state["ExitCode"] != 0:
        tail = output.strip().splitlines()[-1] if output.strip() else "no output"
        raise ContainerError(f"`{shlex.join(command)[:80]}` in container {container.name} "
                             f"exited with {state['ExitCode']}: {tail}")
    return output


def status(container: Container) -> dict[str, str]:
    return mariadb.parse_name_values(sql(container, mariadb.show_status_sql()))


def variables(container: Container) -> dict[str, str]:
    return mariadb.parse_name_values(sql(container, mariadb.show_variables_sql()))


class Servers:
    """The lab's MariaDB containers, their data directories on the lab's file system."""

    def __init__(self, ws: LabWorkspace, fs: LoopFilesystem, image: str, token: str):
        self.ws, self.host, self.fs, self.image, self.token = ws, ws.host, fs, image, token

    # --- data directories ------------------------------------------------------------------

    def data_dir(self, name: str) -> str:
        return f"{self.fs.mount_point}/{name}"

    def inside(self, path: str) -> str:
        """`path` if it lies inside the lab's own file system, else refuse."""
        if not path.startswith(self.fs.mount_point + "/") or "/.." in path:
            raise LabError(f"refusing to touch {path}: not inside the lab's file system")
        return path

    def copy_data(self, source: str, target: str) -> None:
        src, dst = self.inside(self.data_dir(source)), self.inside(self.data_dir(target))
        # Safe: both folders lie on the lab's own loop file system (checked just above).
        self.host.sudo(f"rm -rf -- {shlex.quote(dst)} && cp -a -- {shlex.quote(src)} "
                       f"{shlex.quote(dst)} && sync -f {shlex.quote(dst)}", timeout_s=900)

    def remove_data(self, name: str) -> None:
        path = self.inside(self.data_dir(name))
        # Safe: a data directory on the lab's own loop file system (checked just above).
        self.host.sudo(f"rm -rf -- {shlex.quote(path)} && sync -f "
                       f"{shlex.quote(self.fs.mount_point)}", timeout_s=600)

    def read_bytes(self, path: str, offset: int, length: int) -> bytes:
        """`length` bytes at `offset` of a file in the lab's file system (root-owned data)."""
        self.inside(path)
        out = self.host.sudo(f"dd if={shlex.quote(path)} iflag=skip_bytes,count_bytes "
                             f"skip={offset} count={length} status=none | base64 -w0",
                             timeout_s=120).stdout
        data = base64.b64decode(out)
        if len(data) != length:
            raise LabError(f"{path}: read {len(data)} bytes at {offset}, wanted {length}")
        return data

    def write_bytes(self, path: str, offset: int, data: bytes) -> None:
        self.inside(path)
        encoded = base64.b64encode(data).decode()
        # Safe: a file inside a data directory on the lab's own loop file system (inside()
        # checked it), never a device or a file the lab did not create.
        self.host.sudo(f"echo {encoded} | base64 -d | dd of={shlex.quote(path)} "
                       f"oflag=seek_bytes seek={offset} conv=notrunc,fsync status=none",
                       timeout_s=120)

    # --- the device --------------------------------------------------------------------------

    def device_stats(self) -> mdadm.DiskStat:
        """The lab's loop device's own counters (sectors of 512 bytes)."""
        name = self.fs.device.removeprefix("/dev/")
        text = self.host.run(mdadm.disk_stats_command([name]), timeout_s=60).stdout
        return mdadm.parse_disk_stats(text)[name]

    # --- containers ----------------------------------------------------------------------------

    def start(self, name: str, settings: dict[str, str | int | bool], data_name: str,
              write_mibps: int = 0, wait: bool = True) -> Container:
        """MariaDB on <lab fs>/<data_name> (initialised there when empty)."""
        data = self.inside(self.data_dir(data_name))
        self.host.sudo(["mkdir", "-p", data], timeout_s=60)
        spec = ContainerSpec(
            name=f"dw-{self.token}-{name}", image=self.image,
            command=mariadb.server_arguments(settings), binds={data: DATADIR},
            health_command=HEALTH if wait else None,
            # The kernel's block throttling (cgroup blkio) on the lab's own loop device: it
            # slows the server's direct and fsync'ed writes, as a slow cloud volume would.
            device_write_bps={self.fs.device: write_mibps * 2**20} if write_mibps else {})
        return self.ws.run_container(spec, health_timeout_s=600)

    def restart(self, container: Container, timeout_s: float = 300) -> float | None:
        """Start a stopped container again; seconds until it answers, None if it exited."""
        container.start()
        return self.wait_ready(container, timeout_s)

    def wait_ready(self, container: Container, timeout_s: float = 300) -> float | None:
        """Seconds until the server answers (InnoDB up), or None if the container exited."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            container.reload()
            if container.status in ("exited", "dead"):
                return None
            if _answers(container):
                return time.monotonic() - started
            time.sleep(0.2)
        raise ContainerError(f"container {container.name} neither answered nor exited in "
                             f"{timeout_s:.0f} s; its log: {keep_logs(container)}")

    def stop(self, container: Container, timeout_s: int = 900) -> float:
        """A clean shutdown (SIGTERM: InnoDB flushes every dirty page); seconds it took."""
        started = time.monotonic()
        container.stop(timeout=timeout_s)
        return time.monotonic() - started

    def remove(self, container: Container) -> None:
        self.ws.remove("container", container.name)


def _answers(container: Container) -> bool:
    """Whether the server answers its health check. A server that exits between the caller's
    look at the container and this question (a torn page can stop it seconds after it
    started) makes the engine refuse the exec: that is no answer, and the next look sees it
    exited."""
    try:
        return run_in(container, HEALTH).exit_code == 0
    except ContainerError:
        return False
