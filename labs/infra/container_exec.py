"""Commands run inside a container, with output that is never silently lost.

    result = run_in(container, ["psql", "-XAtq", "-c", "SELECT 1"], user="postgres")
    result.exit_code, result.output     # 0, "1\\n"
    exec_in(container, ["pgbench", "--version"])   # the output; raises if the command failed

Why not the docker SDK's `exec_run` alone: the engine sends an exec's output over the
attached stream, and once the process has exited it waits at most 2 s for that copy to
finish before it closes the stream. On a loaded machine the copy can miss that deadline;
the caller then gets exit code 0 and no output, with no error (it happened to a psql query
and to a sysbench run while two lab VMs kept both cores busy).

So the command's output (stdout and stderr, interleaved as a terminal would show them) goes
to a file in the container. The shell that ran it sends the file over the stream, followed
by an end line with the file's size. When the stream brings the whole file, that is the
output; when it does not, the file is read back with an archive request, an ordinary HTTP
response that nothing cuts short. The file is removed by the next command the same user
runs in that container (or goes with the container).
"""

from __future__ import annotations

import io
import re
import secrets
import tarfile
import threading
import time
from dataclasses import dataclass

import docker.errors
from docker.models.containers import Container

from labs.infra.containers import ContainerError, first_line

OUTPUT_DIR = "/tmp"  # writable by every user in every image the labs use
END_MARK = "storage-labs-exec-end"
# Arguments: output file, how many old output files follow, those files, then the command.
# Old files are removed quietly: one that is already gone is fine.
WRAPPER = ('out=$1; n=$2; shift 2; '
           'while [ "$n" -gt 0 ]; do rm -f -- "$1" 2>/dev/null; shift; n=$((n - 1)); done; '
           '"$@" > "$out" 2>&1; rc=$?; '
           f'cat "$out"; printf "\\n{END_MARK} %s\\n" "$(wc -c < "$out")"; exit $rc')
END_LINE = re.compile(rb"\n" + END_MARK.encode() + rb" (\d+)\n\Z")
EXIT_WAIT_S = 60.0  # the process has exited when the stream ends; the engine may lag

_old_files: dict[tuple[str, str], list[str]] = {}  # (container id, user) -> output files
_old_files_lock = threading.Lock()


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    output: str  # stdout and stderr, interleaved


def exec_in(container: Container, command: list[str], user: str = "",
            check: bool = True, environment: dict[str, str] | None = None) -> str:
    """Run a command inside a container; returns stdout+stderr; raises on failure."""
    result = run_in(container, command, user=user, environment=environment)
    if check and result.exit_code != 0:
        output = result.output.strip()
        tail = output.splitlines()[-1] if output else "no output"
        raise ContainerError(f"`{' '.join(command)}` in container {container.name} exited "
                             f"with {result.exit_code}: {tail}")
    return result.output


def run_in(container: Container, command: list[str], user: str = "",
           environment: dict[str, str] | None = None) -> ExecResult:
    """Run a command inside a container: its exit code and its whole output."""
    api = container.client.api
    path = f"{OUTPUT_DIR}/storage-labs-exec-{secrets.token_hex(8)}"
    old = _take_old_files(container, user)
    try:
        exec_id = api.exec_create(container.id, ["sh", "-c", WRAPPER, "sh", path, str(len(old)),
                                                 *old, *command],
                                  user=user, environment=environment or {})["Id"]
    except docker.errors.APIError as error:  # most often: the container is not running
        for left in old:  # still there: the next command removes them
            _keep_old_file(container, user, left)
        raise ContainerError(f"`{' '.join(command)}` in container {container.name}: "
                             f"{first_line(error)}") from None
    streamed = api.exec_start(exec_id)
    exit_code = _exit_code(api, exec_id, command)
    output = whole_output(streamed)
    if output is None:
        output = read_file(container, path)
    _keep_old_file(container, user, path)
    return ExecResult(exit_code, output.decode(errors="replace"))


def whole_output(streamed: bytes) -> bytes | None:
    """The command's output, if the stream brought all of it and its end line."""
    end = END_LINE.search(streamed)
    if end is None:
        return None
    body = streamed[:end.start()]
    return body if len(body) == int(end.group(1)) else None


def read_file(container: Container, path: str) -> bytes:
    """One file from inside a container, by an archive request (no exec stream)."""
    try:
        chunks, _ = container.get_archive(path)
        with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as archive:
            member = archive.extractfile(archive.getmembers()[0])
            return member.read() if member else b""
    except (docker.errors.APIError, tarfile.TarError, IndexError) as error:
        raise ContainerError(f"could not read {path} in container {container.name}: "
                             f"{first_line(error)}") from None


def _exit_code(api: docker.APIClient, exec_id: str, command: list[str]) -> int:
    deadline = time.monotonic() + EXIT_WAIT_S
    while True:
        info = api.exec_inspect(exec_id)
        if not info["Running"] and info["ExitCode"] is not None:
            return int(info["ExitCode"])
        if time.monotonic() > deadline:
            raise ContainerError(f"`{' '.join(command)}`: the container engine still reports "
                                 f"it running {EXIT_WAIT_S:.0f} s after its output ended")
        time.sleep(0.01)


def _take_old_files(container: Container, user: str) -> list[str]:
    with _old_files_lock:
        return _old_files.pop((container.id, user), [])


def _keep_old_file(container: Container, user: str, path: str) -> None:
    with _old_files_lock:
        _old_files.setdefault((container.id, user), []).append(path)
