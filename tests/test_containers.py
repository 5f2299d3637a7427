"""labs.infra.containers and labs.infra.images against the real engine (started here if none
runs), through a LabWorkspace on the local host as the labs use them."""

import socket
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from labs import PROJECT_ROOT
from labs.infra import images
from labs.infra.containers import (
    OWNER_LABEL,
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

LOCAL_POSTGRES = images.RECIPES["postgres"].tag

# lab_host: the local container engine
pytestmark = [pytest.mark.slow, pytest.mark.lab_host]


@pytest.fixture(scope="module")
def client():
    start_engine_if_needed()
    client = local_engine(timeout_s=1800)
    # Cached by recipe hash: a no-op when the image is already built on this machine.
    images.build("postgres", client, Progress("image postgres", 3))
    return client


@pytest.fixture
def lab(client, tmp_path, monkeypatch):
    monkeypatch.setenv("LABS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("LABS_WORK_DIR", str(tmp_path / "work"))
    ws = LabWorkspace(get_host("local"), lab="test-containers")
    ws.owner = command_marker()  # this test's state dir: no other test's containers
    ws.client = client
    yield ws
    ws.close()
    assert containers_with_owner(client, ws.owner) == []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_labeled_healthy_container_with_bind_mount_and_local_port(lab, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    container = lab.run_container(ContainerSpec(
        name=f"{lab.run_id[-6:]}-pg", image=LOCAL_POSTGRES,
        environment={"POSTGRES_HOST_AUTH_METHOD": "trust"},
        binds={str(data): "/var/lib/postgresql/data"}, ports={5432: port},
        health_command=["pg_isready", "-q", "-h", "127.0.0.1", "-U", "postgres"]))
    container.reload()
    assert container.labels[OWNER_LABEL] == lab.owner
    binding = container.attrs["NetworkSettings"]["Ports"]["5432/tcp"]
    assert [(b["HostIp"], int(b["HostPort"])) for b in binding] == [("127.0.0.1", port)]
    assert (data / "PG_VERSION").read_text().strip() == "15"  # initdb wrote to the bind mount
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
    assert lab.journal.owns("container", container.name)
    lab.remove("container", container.name)
    assert not lab.journal.owns("container", container.name)


def test_failed_container_keeps_its_log(lab):
    with pytest.raises(ContainerError, match="exited with code 3") as error:
        lab.run_container(ContainerSpec(name=f"{lab.run_id[-6:]}-bad", image=LOCAL_POSTGRES,
                                command=["sh", "-c", "echo no-database-here; exit 3"],
                                health_command=["true"]), health_timeout_s=60)
    log_path = Path(str(error.value).rsplit("its log: ", 1)[1])
    assert "no-database-here" in log_path.read_text()


def test_port_taken_is_one_actionable_line(lab):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(ContainerError, match=f"port 127.0.0.1:{port} is taken"):
            lab.run_container(ContainerSpec(name=f"{lab.run_id[-6:]}-port",
                                            image=LOCAL_POSTGRES, command=["sleep", "30"],
                                            ports={5432: port}))
    assert not lab.journal.owns("container", f"{lab.run_id[-6:]}-port")
    assert containers_with_owner(lab.client, lab.owner) == []


def test_missing_image_is_one_actionable_line(lab):
    with pytest.raises(ContainerError, match="python -m labs images build"):
        lab.run_container(ContainerSpec(name=f"{lab.run_id[-6:]}-noimage",
                                        image="storage-labs/does-not-exist:1"))
    with pytest.raises(ContainerError, match="not on this engine"):
        images.choose_image(lab.client, "postgres", "storage-labs/does-not-exist:1")


def test_no_engine_is_one_actionable_line(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(ContainerError, match="no container engine answers"):
        local_engine()


def test_journal_clean_removes_only_this_labs_containers(lab, client):
    lab.run_container(ContainerSpec(name=f"{lab.run_id[-6:]}-left", image=LOCAL_POSTGRES,
                                    command=["sleep", "300"]))
    # A container of someone else, same engine: clean must not touch it.
    other = client.containers.run(LOCAL_POSTGRES, ["sleep", "300"], detach=True,
                                  name=f"{lab.run_id[-6:]}-other", entrypoint=[])
    try:
        removed = lab.journal.clean(host=get_host("local"), log=lambda line: None)
        assert [entry.id for entry in removed if entry.kind == "container"] == [
            f"{lab.run_id[-6:]}-left"]
        assert containers_with_owner(client, lab.owner) == []
        other.reload()
        assert other.status == "running"
    finally:
        other.remove(force=True)


def test_leftovers_counts_this_installs_containers_and_networks_and_only_those(lab, client):
    # The count reads the engine's state folder first and asks the engine only when that
    # folder names this install's owner (labs/infra/leftovers.py): each answer is checked
    # against what the engine itself holds, before, during and after.
    from labs.infra.leftovers import leftovers

    local = get_host("local")
    assert (leftovers(local)["container"], leftovers(local)["network"]) == (0, 0)
    other = client.containers.create(LOCAL_POSTGRES, ["true"], name=f"{lab.run_id[-6:]}-not-ours")
    try:
        network = lab.create_network(f"{lab.run_id[-6:]}-net")
        lab.run_container(ContainerSpec(name=f"{lab.run_id[-6:]}-left", image=LOCAL_POSTGRES,
                                        command=["sleep", "300"], network=network))
        counts = leftovers(local)
        assert (counts["container"], counts["network"]) == (1, 1), counts
        lab.journal.clean(host=local, log=lambda line: None)
        counts = leftovers(local)
        assert (counts["container"], counts["network"]) == (0, 0), counts
    finally:
        other.remove(force=True)


def test_image_is_cached_by_recipe_and_choice_is_printed(client):
    result = subprocess.run([sys.executable, "-m", "labs", "images", "build", "postgres"],
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stdout
    assert images.image_recipe(client, LOCAL_POSTGRES)
    choice = images.choose_image(client, "postgres", None)
    assert (choice.tag, choice.source) == (LOCAL_POSTGRES, "local build")


def test_save_and_load_round_trip(client, tmp_path):
    base = f"storage-labs/debian-base:bookworm-{images.base_recipe_hash()}"
    image_id = client.images.get(base).id
    tar = images.save_image(client, base, tmp_path / "base.tar")
    assert tar.stat().st_size > 10_000_000
    assert base in images.load_image(client, tar)
    assert client.images.get(base).id == image_id


def test_unknown_image_name_is_usage_error():
    result = subprocess.run([sys.executable, "-m", "labs", "images", "build", "mysql"],
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_docker_sdk_is_the_pinned_one():
    assert docker.__version__ == "7.1.0"


def test_a_login_user_outside_the_docker_group_is_told_in_one_line():
    """The SDK reaches an SSH host's engine as the login user (outside sudo): a user with sudo
    but not in the docker group gets one line saying so, not 'the engine did not answer'."""
    from labs.infra.containers import ContainerError, remote_engine
    from labs.infra.hosts import CommandResult

    class UserWithSudo:
        name = "cloud1"

        def sudo(self, command, **kwargs):
            return CommandResult("cloud1", command, 0, "24.0.7\n", "")

        def is_root(self):
            return False

        def run(self, command, **kwargs):
            return CommandResult("cloud1", command, 1, "", "permission denied while trying "
                                 "to connect to the Docker daemon socket")

    with pytest.raises(ContainerError) as refused:
        remote_engine(UserWithSudo())
    message = str(refused.value)
    assert "\n" not in message and "docker group" in message and "cloud1" in message
