"""Quorum sizing: the math behind the Quorums chapter. Pure functions, fast, no I/O.

Vocabulary (the chapter's):

- `nodes` (N): copies of the data, one per storage node;
- `write_quorum` (W): acknowledgements a write needs before it counts as done;
- `read_quorum` (R): copies a read must consult to be sure it sees the latest write;
- `azs` (Z): availability zones; nodes are placed round-robin (node i goes to AZ i mod Z),
  so Aurora's 6 nodes over 3 AZs are 2 per AZ.

Two rules make a quorum system safe:

- read/write overlap, R + W > N: every read quorum meets every write quorum, so a read
  always reaches at least one copy of the latest write;
- write majority, W > N/2: two write quorums always meet, so two conflicting writes can
  never both succeed.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from labs.errors import UsageError

# ----------------------------------------------------------------------------------------
# Validity and failure tolerance
# ----------------------------------------------------------------------------------------


def check_counts(nodes: int, write_quorum: int, read_quorum: int, azs: int | None = None) -> None:
    """Raise UsageError (one line naming the bad value) unless the counts make sense."""
    for name, value in (("nodes", nodes), ("write", write_quorum), ("read", read_quorum)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(f"--{name} must be a whole number, got {value!r}")
        if value < 1:
            raise UsageError(f"--{name} must be at least 1, got {value}")
    if write_quorum > nodes:
        raise UsageError(f"--write {write_quorum} is larger than --nodes {nodes}")
    if read_quorum > nodes:
        raise UsageError(f"--read {read_quorum} is larger than --nodes {nodes}")
    if azs is not None:
        if isinstance(azs, bool) or not isinstance(azs, int):
            raise UsageError(f"--azs must be a whole number, got {azs!r}")
        if azs < 1:
            raise UsageError(f"--azs must be at least 1, got {azs}")
        if azs > nodes:
            raise UsageError(f"--azs {azs} is larger than --nodes {nodes} (an AZ with no node)")


def check_probability(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise UsageError(f"--{name} must be a probability between 0 and 1, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise UsageError(f"--{name} must be between 0 and 1, got {value}")


def read_write_overlap(nodes: int, write_quorum: int, read_quorum: int) -> bool:
    """R + W > N: every read quorum shares a node with every write quorum."""
    return read_quorum + write_quorum > nodes


def write_majority(nodes: int, write_quorum: int) -> bool:
    """W > N/2 (written 2W > N to stay in integers): two writes cannot both win."""
    return 2 * write_quorum > nodes


def is_valid(nodes: int, write_quorum: int, read_quorum: int) -> bool:
    return read_write_overlap(nodes, write_quorum, read_quorum) and write_majority(
        nodes, write_quorum)


def smallest_valid_quorum(nodes: int) -> tuple[int, int]:
    """(R, W) with the smallest W, then the smallest R, that satisfy both rules."""
    write_quorum = nodes // 2 + 1
    read_quorum = nodes - write_quorum + 1
    return read_quorum, write_quorum


def quorum_table(max_nodes: int) -> list[dict[str, int]]:
    """Smallest valid quorums for N = 1..max_nodes, found by search over every (R, W)."""
    rows = []
    for nodes in range(1, max_nodes + 1):
        # Search rather than use the closed form, so the table checks the formula.
        write_quorum, read_quorum = min(
            (w, r) for w in range(1, nodes + 1) for r in range(1, nodes + 1)
            if is_valid(nodes, w, r))
        rows.append({"nodes": nodes, "read": read_quorum, "write": write_quorum})
    return rows


def tolerated_failures(nodes: int, quorum: int) -> int:
    """How many nodes may fail while `quorum` nodes can still answer."""
    return nodes - quorum


def nodes_per_az(nodes: int, azs: int) -> list[int]:
    """Round-robin placement: node i lives in AZ i mod Z."""
    return [len(range(az, nodes, azs)) for az in range(azs)]


def survivors_after_az_loss(nodes: int, azs: int, extra_nodes_lost: int = 0) -> int:
    """Nodes left in the worst case after losing one whole AZ and `extra_nodes_lost` more.

    The worst AZ to lose is the most populated one; the extra losses come from the rest.
    """
    largest_az = max(nodes_per_az(nodes, azs))
    return max(nodes - largest_az - extra_nodes_lost, 0)


@dataclass(frozen=True)
class QuorumReport:
    nodes: int
    write_quorum: int
    read_quorum: int
    azs: int | None

    @property
    def rules(self) -> dict[str, bool]:
        return {
            "read_write_overlap": read_write_overlap(
                self.nodes, self.write_quorum, self.read_quorum),
            "write_majority": write_majority(self.nodes, self.write_quorum),
        }

    @property
    def valid(self) -> bool:
        return all(self.rules.values())

    def survives(self, extra_nodes_lost: int) -> dict[str, bool]:
        assert self.azs is not None
        left = survivors_after_az_loss(self.nodes, self.azs, extra_nodes_lost)
        return {"write": left >= self.write_quorum, "read": left >= self.read_quorum}

    def as_dict(self) -> dict:
        report = {
            "nodes": self.nodes,
            "write": self.write_quorum,
            "read": self.read_quorum,
            "valid": self.valid,
            "rules": self.rules,
            "write_tolerates": tolerated_failures(self.nodes, self.write_quorum),
            "read_tolerates": tolerated_failures(self.nodes, self.read_quorum),
        }
        if self.azs is not None:
            report["azs"] = self.azs
            report["nodes_per_az"] = nodes_per_az(self.nodes, self.azs)
            report["lose_az"] = self.survives(0)
            report["lose_az_plus_one"] = self.survives(1)
        return report


def describe(nodes: int, write_quorum: int, read_quorum: int,
             azs: int | None = None) -> QuorumReport:
    check_counts(nodes, write_quorum, read_quorum, azs)
    return QuorumReport(nodes, write_quorum, read_quorum, azs)


# ----------------------------------------------------------------------------------------
# Availability: exact, and a seeded Monte Carlo of the same
# ----------------------------------------------------------------------------------------


def _binomial_pmf(trials: int, p: float) -> np.ndarray:
    """P(k successes) for k = 0..trials."""
    k = np.arange(trials + 1)
    coefficients = np.array([math.comb(trials, int(i)) for i in k], dtype=float)
    with np.errstate(invalid="ignore"):  # 0 ** 0 is 1 here, as it should be
        return coefficients * np.power(p, k) * np.power(1.0 - p, trials - k)


def p_fewer_than_up(nodes: int, needed: int, p_node: float, azs: int = 1,
                    p_az: float = 0.0) -> float:
    """Exact P(fewer than `needed` nodes are up).

    Each node is down independently with probability `p_node`; each AZ is out
    independently with probability `p_az`, taking all its nodes with it. Sums over which
    AZs are out (2^Z cases), then a binomial over the nodes of the AZs that are up.
    """
    sizes = nodes_per_az(nodes, azs)
    total = 0.0
    for outage in itertools.product((False, True), repeat=azs):
        down_azs = sum(outage)
        p_outage = (p_az ** down_azs) * ((1.0 - p_az) ** (azs - down_azs))
        if p_outage == 0.0:
            continue
        reachable = sum(size for size, out in zip(sizes, outage, strict=True) if not out)
        # Up nodes ~ Binomial(reachable, 1 - p_node); unavailable when up < needed.
        pmf_up = _binomial_pmf(reachable, 1.0 - p_node)
        total += p_outage * float(pmf_up[: max(min(needed, reachable + 1), 0)].sum())
    return min(max(total, 0.0), 1.0)


def unavailability(nodes: int, write_quorum: int, read_quorum: int, p_node: float,
                   azs: int = 1, p_az: float = 0.0) -> dict[str, float]:
    """Exact probabilities that writes / reads cannot gather their quorum."""
    return {
        "p_write_unavailable": p_fewer_than_up(nodes, write_quorum, p_node, azs, p_az),
        "p_read_unavailable": p_fewer_than_up(nodes, read_quorum, p_node, azs, p_az),
    }


@dataclass(frozen=True)
class MonteCarloEstimate:
    trials: int
    write_failures: int
    read_failures: int
    p_write_unavailable: float
    p_read_unavailable: float
    # 95 % Wilson score intervals (sound even when the estimate is near 0)
    write_interval: tuple[float, float]
    read_interval: tuple[float, float]


def wilson_interval(hits: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (z = 1.96: 95 %)."""
    if trials == 0:
        return (0.0, 1.0)
    if hits == 0:
        return (0.0, z * z / (trials + z * z))
    if hits == trials:
        return (trials / (trials + z * z), 1.0)
    phat = hits / trials
    denominator = 1 + z * z / trials
    centre = (phat + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(phat * (1 - phat) / trials + z * z / (4 * trials * trials)) / denominator
    return (max(centre - half, 0.0), min(centre + half, 1.0))


def simulate_unavailability(nodes: int, write_quorum: int, read_quorum: int, p_node: float,
                            azs: int = 1, p_az: float = 0.0, trials: int = 1_000_000,
                            rng: np.random.Generator | None = None,
                            chunk_trials: int = 200_000,
                            progress=None) -> MonteCarloEstimate:
    """Monte Carlo of `unavailability`, vectorised in chunks.

    `rng` must be a seeded generator (np.random.default_rng(seed)) so that every reader
    gets the numbers the book prints. `progress(done_trials, trials)` is called per chunk.
    """
    if rng is None:
        raise ValueError("pass a seeded generator: np.random.default_rng(seed)")
    check_counts(nodes, write_quorum, read_quorum, azs)
    az_of_node = np.arange(nodes) % azs
    write_failures = read_failures = done = 0
    while done < trials:
        batch = min(chunk_trials, trials - done)
        node_down = rng.random((batch, nodes)) < p_node
        az_down = rng.random((batch, azs)) < p_az
        down = node_down | az_down[:, az_of_node]
        up = nodes - down.sum(axis=1)
        write_failures += int((up < write_quorum).sum())
        read_failures += int((up < read_quorum).sum())
        done += batch
        if progress is not None:
            progress(done, trials)
    return MonteCarloEstimate(
        trials=trials,
        write_failures=write_failures,
        read_failures=read_failures,
        p_write_unavailable=write_failures / trials,
        p_read_unavailable=read_failures / trials,
        write_interval=wilson_interval(write_failures, trials),
        read_interval=wilson_interval(read_failures, trials),
    )


# ----------------------------------------------------------------------------------------
# Durability over time: failures racing repairs
# ----------------------------------------------------------------------------------------


def failed_copies_chain(nodes: int, absorbing_failed: int, failure_rate_per_hour: float,
                        repair_hours: float) -> np.ndarray:
    """Generator of the birth-death chain over `failed` = 0..absorbing_failed-1 copies.

    Each working copy fails at `failure_rate_per_hour`; each failed copy is re-made
    independently (in parallel) with mean time `repair_hours` (rate 1/MTTR). Reaching
    `absorbing_failed` failed copies is the event we fear; the returned matrix is the
    transient part (rows sum to minus the rate of falling into it).
    """
    repair_rate = 1.0 / repair_hours
    size = absorbing_failed
    generator = np.zeros((size, size))
    for failed in range(size):
        to_more = (nodes - failed) * failure_rate_per_hour
        to_fewer = failed * repair_rate
        if failed + 1 < size:
            generator[failed, failed + 1] = to_more
        if failed > 0:
            generator[failed, failed - 1] = to_fewer
        generator[failed, failed] = -(to_more + to_fewer)
    return generator


def p_reach_within(generator: np.ndarray, hours: float) -> float:
    """P(the chain, started with no failures, is absorbed within `hours`).

    A birth-death generator is similar to a symmetric matrix (scale state k by the square
    root of the detailed-balance weights), so exp(Q t) comes from a stable eigh.
    """
    size = generator.shape[0]
    weights = np.ones(size)
    for k in range(1, size):
        weights[k] = weights[k - 1] * generator[k - 1, k] / generator[k, k - 1]
    scale = np.sqrt(weights)
    symmetric = (generator * scale[:, None]) / scale[None, :]
    symmetric = (symmetric + symmetric.T) / 2
    eigenvalues, eigenvectors = np.linalg.eigh(symmetric)
    # exp(Q t) = D^-1/2 V e^(L t) V^T D^1/2 with D = diag(weights). Starting in state 0,
    # P(still transient at t) = sum_i c_i e^(l_i t), where sum_i c_i = 1 (at t = 0), so
    # P(absorbed by t) = sum_i c_i (1 - e^(l_i t)): expm1 keeps tiny probabilities exact.
    coefficients = (eigenvectors[0, :] / scale[0]) * (eigenvectors.T @ scale)
    absorbed = float(np.sum(coefficients * -np.expm1(eigenvalues * hours)))
    return min(max(absorbed, 0.0), 1.0)


def mean_hours_to_reach(generator: np.ndarray) -> float:
    """Mean time until absorption, starting with no failures.

    Uses the birth-death closed form, a sum of positive terms: with up-rates b_k,
    down-rates d_k and weights w_0 = 1, w_(k+1) = w_k b_k / d_(k+1),
    mean = sum_k (w_0 + ... + w_k) / (w_k b_k). Solving -Q m = 1 directly is badly
    conditioned when repairs are a million times faster than failures.
    """
    size = generator.shape[0]
    up_rates = [generator[k, k + 1] if k + 1 < size else -generator[k].sum() for k in
                range(size)]
    weights = [1.0]
    for k in range(1, size):
        weights.append(weights[-1] * up_rates[k - 1] / generator[k, k - 1])
    total = 0.0
    running = 0.0
    for k in range(size):
        running += weights[k]
        total += running / (weights[k] * up_rates[k])
    return total


def durability_risk(nodes: int, write_quorum: int, failure_rate_per_hour: float,
                    repair_hours: float, horizon_hours: float) -> dict[str, float]:
    """Chance, within `horizon_hours`, of losing write quorum and of possibly losing data.

    - write quorum lost: N - W + 1 copies down at once;
    - data possibly lost: W copies down at once, which in the worst case are exactly the W
      that acknowledged the newest write.
    """
    report = {}
    for name, threshold in (("write_quorum_lost", nodes - write_quorum + 1),
                            ("data_possibly_lost", write_quorum)):
        generator = failed_copies_chain(nodes, threshold, failure_rate_per_hour, repair_hours)
        report[f"p_{name}"] = p_reach_within(generator, horizon_hours)
        report[f"mean_hours_to_{name}"] = mean_hours_to_reach(generator)
    return report


# ----------------------------------------------------------------------------------------
# Write latency: the W-th fastest of N acknowledgements
# ----------------------------------------------------------------------------------------


_erf = np.vectorize(math.erf, otypes=[float])


@dataclass(frozen=True)
class ReplicaLatency:
    """One replica's acknowledgement time: network round trip plus a lognormal service time.

    `rtt_ms` is the round trip to the replica's AZ; the service time has median
    `service_median_ms` and spread `service_sigma` (sigma of the underlying normal).
    """

    rtt_ms: float
    service_median_ms: float = 0.5
    service_sigma: float = 0.6

    def cdf(self, t_ms: np.ndarray) -> np.ndarray:
        shifted = np.asarray(t_ms, dtype=float) - self.rtt_ms
        result = np.zeros_like(shifted)
        positive = shifted > 0
        z = (np.log(shifted[positive]) - math.log(self.service_median_ms)) / (
            self.service_sigma * math.sqrt(2.0))
        result[positive] = 0.5 * (1.0 + _erf(z))
        return result

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return self.rtt_ms + rng.lognormal(math.log(self.service_median_ms),
                                           self.service_sigma, size)


def replicas_over_azs(nodes: int, az_rtts_ms: list[float], **service) -> list[ReplicaLatency]:
    """Round-robin placement of `nodes` replicas over AZs with the given round trips."""
    return [ReplicaLatency(az_rtts_ms[i % len(az_rtts_ms)], **service) for i in range(nodes)]


def kth_ack_cdf(replicas: list[ReplicaLatency], k: int, t_ms: np.ndarray) -> np.ndarray:
    """Exact P(the k-th fastest acknowledgement has arrived by t).

    The k-th fastest has arrived when at least k replicas have answered: a Poisson-binomial
    tail over the replicas' own CDFs (they need not be identical), by dynamic programming.
    """
    t_ms = np.asarray(t_ms, dtype=float)
    # answered[j] = P(exactly j replicas have answered by t), for every t at once
    answered = np.zeros((len(replicas) + 1, t_ms.size))
    answered[0] = 1.0
    for replica in replicas:
        p = replica.cdf(t_ms)
        answered[1:] = answered[1:] * (1 - p) + answered[:-1] * p
        answered[0] = answered[0] * (1 - p)
    return answered[k:].sum(axis=0)


def kth_ack_quantile(replicas: list[ReplicaLatency], k: int, quantile: float,
                     hi_ms: float = 10_000.0) -> float:
    """The time by which the k-th acknowledgement has arrived with probability `quantile`."""
    lo = 0.0
    for _ in range(80):  # bisection: 80 halvings of 10 s is far below a nanosecond
        mid = (lo + hi_ms) / 2
        if kth_ack_cdf(replicas, k, np.array([mid]))[0] < quantile:
            lo = mid
        else:
            hi_ms = mid
    return hi_ms


def simulate_kth_ack(replicas: list[ReplicaLatency], k: int, samples: int,
                     rng: np.random.Generator) -> np.ndarray:
    """Sampled k-th fastest acknowledgement times (to check kth_ack_cdf)."""
    times = np.column_stack([r.sample(rng, samples) for r in replicas])
    return np.sort(times, axis=1)[:, k - 1]


# ----------------------------------------------------------------------------------------
# Quorum commit (PostgreSQL's synchronous_standby_names, laid out like Aurora)
# ----------------------------------------------------------------------------------------


def lognormal_sigma(p50_ms: float, p99_ms: float) -> float:
    """The spread of a lognormal time with this median and 99th percentile."""
    if not 0 < p50_ms <= p99_ms:
        raise UsageError(f"percentiles {p50_ms} <= {p99_ms} ms: not so")
    return max(math.log(p99_ms / p50_ms) / 2.3263479, 0.01)


def quorum_commit_ms(standby_rtts_ms: list[float], k: int, local_commit_ms: float,
                     flush_p50_ms: float, flush_sigma: float, quantile: float = 0.5,
                     first: bool = False) -> float:
    """Commit latency under `ANY k` (or `FIRST k`: the first k standbys listed, all of them).

    The commit costs what it costs on the primary alone (`local_commit_ms`), plus the wait
    for standbys: the primary sends the commit's WAL once it is flushed, each standby writes
    and flushes it (a lognormal time, median `flush_p50_ms`) and answers one round trip
    after it was sent. The commit returns at the k-th answer.
    """
    if not 1 <= k <= len(standby_rtts_ms):
        raise UsageError(f"k = {k}: between 1 and the {len(standby_rtts_ms)} standbys")
    rtts = standby_rtts_ms[:k] if first else standby_rtts_ms
    replicas = [ReplicaLatency(rtt, flush_p50_ms, flush_sigma) for rtt in rtts]
    return local_commit_ms + kth_ack_quantile(replicas, k, quantile)


def commits_go_on(standbys_up: int, k: int) -> bool:
    """`ANY k` commits return while at least k standbys answer; otherwise they wait."""
    return standbys_up >= k
