"""The RocksDB engine in its container (the rocksdb image's JSON-over-HTTP server)."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from typing import Any

from docker.models.containers import Container

from labs.caches.hostside import LabDisk
from labs.errors import LabError
from labs.infra.containers import ContainerSpec
from labs.tools.cgroupmem import memory_accounting

PORT_IN_CONTAINER = 8080


def free_local_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RocksNode:
    """One rocksdb container, its data folder on the lab's file system."""

    def __init__(self, disk: LabDisk, image: str, name: str, memory_mib: int,
                 read_iops: int = 0, read_bps: int = 0):
        self.disk, self.image, self.name = disk, image, name
        self.data = disk.make_folder(f"{disk.fs.mount_point}/rocks")
        self.port = free_local_port()
        device = disk.fs.device
        self.spec = ContainerSpec(
            name=name, image=image, environment={"ROCKS_DATA": "/data"},
            binds={self.data: "/data"}, ports={PORT_IN_CONTAINER: self.port},
            health_command=["python3", "-c", "import urllib.request as u; u.urlopen("
                            "'http://127.0.0.1:8080/health', timeout=2)"],
            memory_limit_mib=memory_mib,
            device_read_iops={device: read_iops} if read_iops else {},
            device_read_bps={device: read_bps} if read_bps else {})
        self.container: Container | None = None
        self.start_to_first_get_s: float | None = None

    def start(self) -> Container:
        started = time.monotonic()
        self.container = self.disk.ws.run_container(self.spec, health_timeout_s=120)
        self.ready_s = time.monotonic() - started
        return self.container

    def stop(self) -> None:
        if self.container is not None:
            self.call("/close", {})
            self.disk.ws.remove("container", self.spec.name)
            self.container = None

    def call(self, path: str, body: dict | None = None, timeout_s: float = 1800) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as error:
            try:
                why = json.loads(error.read()).get("error", "")
            except ValueError:
                why = ""
            raise LabError(f"rocksdb engine {self.name}: {path} failed ({error.code}): "
                           f"{why}") from None
        except (urllib.error.URLError, OSError) as error:
            raise LabError(f"rocksdb engine {self.name}: {path} did not answer: "
                           f"{error}") from None

    def db_folder(self, db: str) -> str:
        return f"{self.data}/{db}"

    def open(self, db: str, direct_reads: bool, block_cache_mib: float,
             row_cache_mib: float = 0) -> dict:
        return self.call("/open", {"name": db, "direct_reads": direct_reads,
                                   "block_cache_mib": block_cache_mib,
                                   "row_cache_mib": row_cache_mib, "block_size": 4096})

    def gets(self, keys: list[int]) -> dict:
        return self.call("/gets", {"keys": [int(k) for k in keys]})

    def memory(self) -> dict[str, int]:
        assert self.container is not None
        return memory_accounting(self.container.stats(stream=False, one_shot=True),
                                 self.name)
