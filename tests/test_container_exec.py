"""labs.infra.container_exec: a command's exit code and whole output, from a real container
(the parsing of the stream's end line is checked on its own first)."""

import pytest

from labs.infra import container_exec, images
from labs.infra.container_exec import END_MARK, exec_in, read_file, run_in, whole_output
from labs.infra.containers import (
    ContainerError,
    ContainerSpec,
    containers_with_owner,
    local_engine,
    start_engine_if_needed,
)
from labs.infra.inventory import get_host
from labs.infra.paths import command_marker
from labs.infra.workspace import LabWorkspace
from labs.progress import Progress


def streamed(body: bytes, size: int | None = None) -> bytes:
    """What the wrapper sends: the output, then the end line with the output's size."""
    return body + f"\n{END_MARK} {len(body) if size is None else size}\n".encode()


def test_the_whole_output_is_the_stream_before_its_end_line():
    assert whole_output(streamed(b"1\n2\n")) == b"1\n2\n"
    assert whole_output(streamed(b"")) == b""
    assert whole_output(streamed(b"no newline")) == b"no newline"
    # An output that itself prints an end line is still read up to the real one.
    fake = f"\n{END_MARK} 3\nafter\n".encode()
    assert whole_output(streamed(fake)) == fake


def test_a_stream_without_its_end_line_or_cut_short_is_not_the_output():
    assert whole_output(b"") is None  # the engine closed the stream before copying
    assert whole_output(b"1\n2\n") is None
    assert whole_output(streamed(b"1\n2\n", size=9)) is None  # part of the output is missing
    assert whole_output(streamed(b"1\n2\n")[:-1]) is None


@pytest.fixture(scope="module")
def container(tmp_path_factory):
    start_engine_if_needed()
    client = local_engine(timeout_s=1800)
    # Cached by recipe hash: a no-op when the base image is already built on this machine.
    base = images.build_base(client, Progress("image debian-base", 3))
    state = tmp_path_factory.mktemp("exec")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LABS_STATE_DIR", str(state / "state"))
        patch.setenv("LABS_WORK_DIR", str(state / "work"))
        ws = LabWorkspace(get_host("local"), lab="test-exec")
        ws.owner = command_marker()
        ws.client = client
        yield ws.run_container(ContainerSpec(name=f"{ws.run_id[-6:]}-exec", image=base,
                                             command=["sleep", "3600"],
                                             health_command=["true"]))
        ws.close()
        assert containers_with_owner(client, ws.owner) == []



@pytest.mark.slow
@pytest.mark.lab_host
def test_exit_code_and_both_streams_in_order(container):
    result = run_in(container, ["sh", "-c", "echo out; echo err >&2; printf last; exit 3"])
    assert (result.exit_code, result.output) == (3, "out\nerr\nlast")


@pytest.mark.slow
@pytest.mark.lab_host
def test_a_large_output_arrives_whole(container):
    output = exec_in(container, ["seq", "1", "200000"])
    assert output.splitlines() == [str(n) for n in range(1, 200001)]


@pytest.mark.slow
@pytest.mark.lab_host
def test_user_and_environment_reach_the_command(container):
    result = run_in(container, ["sh", "-c", 'echo "$(id -un) $GREETING"'], user="nobody",
                    environment={"GREETING": "hello"})
    assert (result.exit_code, result.output) == (0, "nobody hello\n")


@pytest.mark.slow
@pytest.mark.lab_host
def test_a_failed_command_is_one_line_naming_it(container):
    assert run_in(container, ["no-such-command"]).exit_code == 127
    with pytest.raises(ContainerError) as error:
        exec_in(container, ["sh", "-c", "echo first; echo the-reason >&2; exit 4"])
    message = str(error.value)
    assert "\n" not in message and "exited with 4: the-reason" in message


@pytest.mark.slow
@pytest.mark.lab_host
def test_when_the_stream_falls_short_the_output_file_is_read(container, monkeypatch):
    monkeypatch.setattr(container_exec, "whole_output", lambda streamed_bytes: None)
    result = run_in(container, ["sh", "-c", "seq 1 3; exit 2"])
    assert (result.exit_code, result.output) == (2, "1\n2\n3\n")


@pytest.mark.slow
@pytest.mark.lab_host
def test_output_files_do_not_pile_up(container):
    for _ in range(5):
        exec_in(container, ["true"], user="nobody")
    # Each command first removes the files its user's earlier commands left: only the
    # listing's own output file is there while it runs.
    listing = exec_in(container, ["sh", "-c", "find /tmp -name 'storage-labs-exec-*' "
                                              "-user nobody | wc -l"], user="nobody")
    assert listing.strip() == "1"


@pytest.mark.slow
@pytest.mark.lab_host
def test_reading_a_missing_file_is_one_line(container):
    exec_in(container, ["sh", "-c", "printf 'a\\000b' > /tmp/binary"])
    assert read_file(container, "/tmp/binary") == b"a\x00b"
    with pytest.raises(ContainerError, match="could not read /tmp/absent") as error:
        read_file(container, "/tmp/absent")
    assert "\n" not in str(error.value)


@pytest.mark.slow
@pytest.mark.lab_host
def test_a_command_in_a_stopped_container_is_one_line(container):
    stopped = container.client.containers.create(container.image.id, ["true"])
    try:
        with pytest.raises(ContainerError, match="is not running") as error:
            run_in(stopped, ["echo", "hello"])
        assert "\n" not in str(error.value) and stopped.name in str(error.value)
    finally:
        stopped.remove(force=True)
