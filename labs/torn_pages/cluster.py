"""The torn-pages lab's PostgreSQL containers on the lab host, and the host's files."""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

from docker.models.containers import Container

from labs.infra.container_exec import exec_in
from labs.infra.containers import ContainerSpec
from labs.infra.workspace import LabWorkspace, LoopFilesystem

PGDATA = "/var/lib/postgresql/data"
OUT = "/lab-out"


def psql(container: Container, sql: str, check: bool = True) -> str:
    return exec_in(container, ["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql],
                   user="postgres", check=check).strip()


class Cluster:
    """The lab's PostgreSQL containers, their data directories on the lab's file system."""

    def __init__(self, ws: LabWorkspace, fs: LoopFilesystem, image: str, token: str):
        self.ws, self.host, self.fs, self.image, self.token = ws, ws.host, fs, image, token

    def data_dir(self, name: str) -> str:
        return f"{self.fs.mount_point}/{name}"

    def out_dir(self, name: str) -> str:
        return f"{self.ws.work_dir}/out/{name}"

    def start(self, name: str, settings: dict[str, str], checksums: bool,
              write_mibps: int = 0, data_name: str | None = None) -> Container:
        """PostgreSQL on <lab fs>/<data_name or name> (reused if it already exists)."""
        data, out = self.data_dir(data_name or name), self.out_dir(name)
        # The out folder is written by the container's postgres user (uid 999).
        self.host.sudo(f"mkdir -p {shlex.quote(data)} {shlex.quote(out)} && "
                       f"chmod 777 {shlex.quote(out)}", timeout_s=60)
        command = ["postgres"]
        for key, value in settings.items():
            command += ["-c", f"{key}={value}"]
        spec = ContainerSpec(
            name=f"tp-{self.token}-{name}", image=self.image, command=command,
            environment={"POSTGRES_HOST_AUTH_METHOD": "trust",
                         "POSTGRES_INITDB_ARGS": "--data-checksums" if checksums else ""},
            binds={data: PGDATA, out: OUT},
            health_command=["pg_isready", "-q", "-h", "127.0.0.1", "-U", "postgres"],
            device_write_bps={self.fs.device: write_mibps * 2**20} if write_mibps else {})
        return self.ws.run_container(spec, health_timeout_s=180)

    def remove(self, container: Container) -> None:
        self.ws.remove("container", container.name)

    def fetch(self, path: str) -> bytes:
        """A file from the lab host (pgbench's logs, written in the out folder)."""
        with tempfile.TemporaryDirectory(prefix="storage-labs-fetch-") as tmp:
            local = Path(tmp) / "file"
            self.host.get(path, local)
            return local.read_bytes()

    def read_text(self, path: str) -> str:
        return self.host.sudo(["cat", "--", path], timeout_s=120).stdout


