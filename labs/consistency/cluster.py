"""Three Cassandra nodes in containers, and a driver session to each.

The nodes sit on a bridge network of their own, made for the run, which only this machine
reaches; no port is published. On the engine's shared default bridge, another container
started meanwhile could take the address of a stopped node, and the node that comes back
with that address is refused by Cassandra ("a node with address ... already exists"). The
driver on this machine talks to each node at its container address, and each session is
held to its one node (a whitelist policy), so the lab chooses which node coordinates each
operation.

Each node owns one token, evenly spaced, so the two later nodes can join at once without
drawing the same token. Hinted handoff is off: a replica that was down while a row was
written does not receive it later from the other nodes, so the lab can read what it missed.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from docker.models.containers import Container

from labs.errors import LabError
from labs.infra import containers
from labs.infra.container_exec import exec_in
from labs.infra.containers import ContainerSpec
from labs.infra.workspace import LabWorkspace
from labs.tools import nodetool

CQL_PORT = 9042
# One token per node, a third of the Murmur3 ring apart.
TOKENS = (-9223372036854775808, -3074457345618258603, 3074457345618258602)
# The first node needs nobody; the others wait longer for gossip to show them the first.
RING_DELAY_MS = {1: 1000, 2: 5000, 3: 5000}


@dataclass
class Node:
    number: int
    spec: ContainerSpec
    container: Container | None = None
    address: str = ""
    host_id: str = ""
    sessions: list = field(default_factory=list)  # [driver Cluster, Session] when connected


class Cluster:
    def __init__(self, ws: LabWorkspace, image: str, token: str, heap_mib: int,
                 memory_mib: int, timeout_s: float = 300):
        self.ws, self.image, self.timeout_s = ws, image, timeout_s
        self.heap_mib, self.memory_mib = heap_mib, memory_mib
        self.network = f"consistency-{token}"
        self.nodes = {n: Node(n, self._spec(n, f"consistency-{token}-n{n}", seed=""))
                      for n in range(1, len(TOKENS) + 1)}
        for name in ("cassandra", "cassandra.cluster", "cassandra.connection",
                     "cassandra.pool", "cassandra.policies"):
            logging.getLogger(name).setLevel(logging.CRITICAL)  # retries while nodes boot

    def _spec(self, number: int, name: str, seed: str) -> ContainerSpec:
        environment = {"CASSANDRA_HEAP": f"{self.heap_mib}M", "CASSANDRA_NUM_TOKENS": "1",
                       "CASSANDRA_INITIAL_TOKEN": str(TOKENS[number - 1]),
                       "CASSANDRA_HINTED_HANDOFF_ENABLED": "false",
                       "CASSANDRA_RING_DELAY_MS": str(RING_DELAY_MS[number]),
                       "CASSANDRA_SKIP_GOSSIP_SETTLE": "1"}
        if seed:
            environment["CASSANDRA_SEEDS"] = seed
            # Two empty nodes may join at the same time (their tokens differ).
            environment["CASSANDRA_JVM_EXTRA"] = "-Dcassandra.consistent.rangemovement=false"
        return ContainerSpec(name=name, image=self.image, environment=environment,
                             health_command=["bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/"
                                                           f"{CQL_PORT}"],
                             memory_limit_mib=self.memory_mib, network=self.network)

    # --- the cluster's life ---------------------------------------------------------------

    def start(self) -> float:
        """Start node 1, then nodes 2 and 3 together; seconds until all three are up."""
        started = time.monotonic()
        self.ws.create_network(self.network)
        first = self.nodes[1]
        first.container = self.ws.run_container(first.spec, health_timeout_s=self.timeout_s)
        first.address = self._address(first.container)
        later = [node for number, node in self.nodes.items() if number != 1]
        for node in later:
            node.spec = self._spec(node.number, node.spec.name, seed=first.address)
            node.container = self.ws.run_container(node.spec, wait=False)
        for node in later:
            containers.wait_healthy(node.container, self.timeout_s)
            node.address = self._address(node.container)
        self.wait_until(observer=1, up=set(self.nodes))
        by_address = {s.address: s.host_id for s in self.status(1)}
        for node in self.nodes.values():
            node.host_id = by_address[node.address]
        return time.monotonic() - started

    def stop_node(self, number: int) -> None:
        """A clean stop (SIGTERM): the node tells the others it is going down."""
        node = self.nodes[number]
        self.disconnect(number)
        node.container.stop(timeout=60)

    def start_node(self, number: int) -> None:
        node = self.nodes[number]
        node.container.start()
        containers.wait_healthy(node.container, self.timeout_s)
        node.address = self._address(node.container)  # the engine may hand out another

    def _address(self, container: Container) -> str:
        """The node's address on the run's network (a node started again may get another)."""
        container.reload()
        networks = container.attrs["NetworkSettings"].get("Networks") or {}
        address = (networks.get(self.network) or {}).get("IPAddress", "")
        if not address:
            raise LabError(f"container {container.name} has no address on network "
                           f"{self.network}")
        return address

    def status(self, observer: int) -> list[nodetool.NodeStatus]:
        text = exec_in(self.nodes[observer].container, nodetool.status_command(),
                       user="cassandra")
        return nodetool.parse_status(text)

    def wait_until(self, observer: int, up: set[int]) -> float:
        """Wait until `observer` sees exactly the nodes `up` as up (gossip spreads news of
        a start or stop within seconds); returns the seconds waited."""
        started = time.monotonic()
        seen: dict[str, bool] = {}
        while time.monotonic() - started < self.timeout_s:
            statuses = self.status(observer)
            # A node is known by its host id once the lab has read it (a node that starts
            # again may get another address), by its address before.
            seen = {key: s.up for s in statuses for key in (s.host_id, s.address)}
            wanted = {}
            for node in self.nodes.values():
                key = node.host_id or node.address
                wanted[key] = node.number in up
            if all(seen.get(key) == is_up for key, is_up in wanted.items()):
                return time.monotonic() - started
            time.sleep(1)
        raise LabError(f"node {observer} did not see nodes {sorted(up)} up (and no others) "
                       f"within {self.timeout_s:.0f} s; it saw {seen}")

    # --- driver sessions ------------------------------------------------------------------

    def session(self, number: int):
        """A driver session whose every request goes to node `number` (its coordinator)."""
        from cassandra.cluster import EXEC_PROFILE_DEFAULT, ExecutionProfile
        from cassandra.cluster import Cluster as DriverCluster
        from cassandra.policies import FallthroughRetryPolicy, WhiteListRoundRobinPolicy

        node = self.nodes[number]
        if node.sessions:
            return node.sessions[1]
        # No retries by the driver: the lab records what the node answered the first time.
        profile = ExecutionProfile(
            load_balancing_policy=WhiteListRoundRobinPolicy([node.address]),
            retry_policy=FallthroughRetryPolicy(), request_timeout=30)
        deadline = time.monotonic() + self.timeout_s
        last_error = ""
        while time.monotonic() < deadline:
            driver = DriverCluster([node.address], port=CQL_PORT, connect_timeout=5,
                                   control_connection_timeout=5,
                                   execution_profiles={EXEC_PROFILE_DEFAULT: profile})
            try:
                session = driver.connect()
                node.sessions = [driver, session]
                return session
            except Exception as error:  # the driver raises many kinds while a node boots
                last_error = str(error).splitlines()[0][:200] if str(error) else repr(error)
                driver.shutdown()
                time.sleep(1)
        raise LabError(f"node {number} ({node.spec.name}) answered no CQL connection within "
                       f"{self.timeout_s:.0f} s: {last_error}")

    def disconnect(self, number: int | None = None) -> None:
        for node in self.nodes.values():
            if number in (None, node.number) and node.sessions:
                node.sessions[0].shutdown()
                node.sessions = []

    def number_of(self, address: str) -> int | None:
        for node in self.nodes.values():
            if node.address == address:
                return node.number
        return None

