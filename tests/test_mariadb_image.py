"""The storage-labs MariaDB image against the real engine: build (cached), start, settings,
unix-socket root, the read-only doublewrite switch, sysbench inside, published port."""

import secrets
import socket

import pytest

from labs.infra import images
from labs.infra.container_exec import exec_in, run_in
from labs.infra.containers import ContainerSpec, wait_healthy
from labs.infra.inventory import get_host
from labs.infra.workspace import LabWorkspace
from labs.progress import Progress
from labs.tools import mariadb, sysbench

LOCAL_MARIADB = images.RECIPES["mariadb"].tag

pytestmark = pytest.mark.slow
HEALTH = ["healthcheck.sh"]


@pytest.fixture(scope="module")
def client(docker_engine):
    return docker_engine  # the session's engine, with the images built (cached by recipe)


@pytest.fixture
def lab(client, tmp_path, monkeypatch):
    monkeypatch.setenv("LABS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("LABS_WORK_DIR", str(tmp_path / "work"))
    ws = LabWorkspace(get_host("local"), lab="test-mariadb")
    ws.owner = ws.run_id[-6:]  # a short, unique prefix for this test's container names
    ws.start = ws.run_container
    yield ws
    ws.close()


def sql(container, query: str) -> str:
    return exec_in(container, mariadb.client_command(query), user="root").strip()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def greeting(port: int) -> bytes:
    """The first packet a MariaDB server sends on a new TCP connection (b'' if none)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.settimeout(5)
        try:
            return connection.recv(256)
        except (ConnectionResetError, TimeoutError):
            return b""


def test_image_is_cached_by_its_recipe(client):
    recipe = images.recipe_named("mariadb")
    assert images.image_recipe(client, LOCAL_MARIADB) == images.recipe_hash(recipe)
    image_id = client.images.get(LOCAL_MARIADB).id
    assert images.build("mariadb", client, Progress("image mariadb", 3)) == LOCAL_MARIADB
    assert client.images.get(LOCAL_MARIADB).id == image_id  # nothing rebuilt


def test_settings_from_arguments_and_environment_and_socket_only_root(lab, tmp_path):
    data, scratch = tmp_path / "data", tmp_path / "scratch"
    data.mkdir()
    settings = {"innodb_buffer_pool_size": "64M", "innodb_log_file_size": "32M",
                "innodb_flush_log_at_trx_commit": 2, "tmpdir": "/lab-tmp"}
    container = lab.start(ContainerSpec(
        name=f"{lab.owner}-mdb", image=LOCAL_MARIADB,
        command=mariadb.server_arguments(settings),
        environment=mariadb.server_environment({"innodb_doublewrite": False,
                                                "innodb_flush_method": "O_DIRECT"}),
        binds={str(data): "/var/lib/mysql", str(scratch): "/lab-tmp"},
        health_command=HEALTH), health_timeout_s=180)
    # The data directory was initialised on the bind mount, owned by the image's mysql (999).
    assert (data / "mysql").is_dir() and (data / "ibdata1").stat().st_uid == 999
    assert scratch.stat().st_uid == 999
    seen = mariadb.server_settings(mariadb.parse_name_values(
        sql(container, mariadb.show_variables_sql(mariadb.SETTING_VARIABLES))))
    assert seen.version.startswith("10.11.")
    assert (seen.doublewrite, seen.flush_method, seen.flush_log_at_trx_commit) == \
        ("OFF", "O_DIRECT", 2)
    assert (seen.buffer_pool_size_bytes, seen.log_file_size_bytes, seen.tmpdir) == \
        (64 * 2**20, 32 * 2**20, "/lab-tmp")
    assert sql(container, "SELECT @@bind_address, @@skip_name_resolve") == "127.0.0.1\t1"
    # root: unix_socket, or a password that can never match ("invalid"): none was set.
    privileges = sql(container, "SELECT priv FROM mysql.global_priv WHERE User='root'")
    assert '"authentication_string":"invalid"' in privileges and "unix_socket" in privileges
    over_tcp = run_in(container, ["mariadb", "--protocol=tcp", "-h", "127.0.0.1", "-uroot",
                                "-e", "SELECT 1"])
    # Over TCP no root account matches at all (skip-name-resolve: 127.0.0.1 is not localhost).
    assert over_tcp.exit_code == 1
    assert "Host '127.0.0.1' is not allowed to connect" in over_tcp.output
    # A TCP account created from a per-test password's hash (the password never enters SQL).
    password = secrets.token_urlsafe(24)
    sql(container, "CREATE DATABASE sbtest; " +
        mariadb.create_user_sql("lab", mariadb.native_password_hash(password)))
    as_lab = run_in(container, ["mariadb", "--protocol=tcp", "-h", "127.0.0.1", "-ulab", "-N",
                              "-e", "SELECT CURRENT_USER()"],
                    environment={"MYSQL_PWD": password})
    assert (as_lab.exit_code, as_lab.output.strip()) == (0, "lab@%")
    # 10.11: innodb_doublewrite is read only at run time; changing it needs a restart.
    refused = run_in(container, mariadb.client_command("SET GLOBAL innodb_doublewrite = ON"))
    assert refused.exit_code == 1
    assert "ERROR 1238" in refused.output and "read only variable" in refused.output


def test_restart_keeps_the_data_directory(lab, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    spec = ContainerSpec(name=f"{lab.owner}-keep", image=LOCAL_MARIADB, health_command=HEALTH,
                         binds={str(data): "/var/lib/mysql"})
    container = lab.start(spec, health_timeout_s=180)
    sql(container, "CREATE DATABASE kept; CREATE TABLE kept.t (id INT PRIMARY KEY); "
                   "INSERT INTO kept.t VALUES (1), (2)")
    container.stop(timeout=60)
    container.start()
    wait_healthy(container, 120)
    assert sql(container, "SELECT COUNT(*) FROM kept.t") == "2"
    log = container.logs().decode()
    assert log.count("storage-labs: initialising") == 1


def test_sysbench_inside_the_image(lab, tmp_path):
    data, files = tmp_path / "data", tmp_path / "files"
    data.mkdir()
    files.mkdir()
    container = lab.start(ContainerSpec(
        name=f"{lab.owner}-sb", image=LOCAL_MARIADB, health_command=HEALTH,
        command=mariadb.server_arguments({"innodb_buffer_pool_size": "64M"}),
        binds={str(data): "/var/lib/mysql", str(files): "/bench"}), health_timeout_s=180)
    sql(container, "CREATE DATABASE sbtest")
    options = sysbench.OltpOptions(table_size=1000, threads=2, time_s=0, events=500,
                                   report_interval_s=1, rand_seed=3)
    exec_in(container, sysbench.oltp_command("prepare", options), user="root")
    before = mariadb.innodb_writes(mariadb.parse_name_values(
        sql(container, mariadb.show_status_sql())))
    result = sysbench.parse_oltp(
        exec_in(container, sysbench.oltp_command("run", options), user="root"))
    after = mariadb.innodb_writes(mariadb.parse_name_values(
        sql(container, mariadb.show_status_sql())))
    assert result.transactions == result.writes == 500 and result.general.threads == 2
    assert sql(container, "SELECT COUNT(*) FROM sbtest.sbtest1") == "1500"
    assert (after - before).os_log_written_bytes > 500 * 100  # every insert reached the redo
    fileio = sysbench.FileioOptions(total_size_mib=16, file_num=4, test_mode="rndrw",
                                    direct=True, time_s=2, report_interval_s=1, rand_seed=5)
    for action in ("prepare", "run", "cleanup"):
        output = exec_in(container, ["sh", "-c", "cd /bench && exec \"$@\"", "sh",
                                     *sysbench.fileio_command(action, fileio)], user="root")
        if action == "prepare":
            assert len(list(files.iterdir())) == 4
        if action == "run":
            parsed = sysbench.parse_fileio(output)
            assert parsed.extra_flags == "directio" and parsed.reads_per_s > 0
    assert list(files.iterdir()) == []


def test_published_port_needs_the_wider_bind_address(lab, tmp_path):
    # Docker forwards a published port to the container's own address, not its loopback:
    # with the default bind address nothing answers; with 0.0.0.0 inside, the host's
    # 127.0.0.1 port reaches the server (and only the host's loopback is published).
    for bind, expect_greeting in (("127.0.0.1", False), ("0.0.0.0", True)):
        data = tmp_path / f"data-{bind}"
        data.mkdir()
        port = free_port()
        container = lab.start(ContainerSpec(
            name=f"{lab.owner}-port-{bind.replace('.', '-')}", image=LOCAL_MARIADB,
            environment={"MARIADB_BIND_ADDRESS": bind}, ports={3306: port},
            binds={str(data): "/var/lib/mysql"}, health_command=HEALTH), health_timeout_s=180)
        container.reload()
        binding = container.attrs["NetworkSettings"]["Ports"]["3306/tcp"]
        assert [(b["HostIp"], int(b["HostPort"])) for b in binding] == [("127.0.0.1", port)]
        packet = greeting(port)
        # With 0.0.0.0 the server answers; the connection arrives through docker's proxy from
        # the bridge gateway (172.17.0.1 here), for which no account exists yet, so the first
        # packet is error 1130 rather than the handshake: a TCP account needs host '%'.
        assert (b"MariaDB" in packet) is expect_greeting, (bind, packet[:40])
        if expect_greeting:
            assert b"is not allowed to connect to this MariaDB server" in packet
        lab.remove("container", container.name)
