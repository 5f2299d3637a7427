"""Generated practice problems for the Quorums chapter, in the spirit of OSTEP's homework.

    python -m labs quorum --problem sizing --seed 7       # the question, every parameter in it
    python -m labs quorum --problem sizing --seed 7 -c    # the same, with the worked answer

`make_problem(kind, seed)` returns a Problem whose `text` states everything needed to work it
(and the command that prints it again), and whose `solve()` returns the worked answer,
computed by the model in labs/models/quorum.py. Same kind and seed, same problem.

Kinds:
- "sizing": N copies; the smallest safe W and R, and the failures each survives;
- "zones": a layout over zones; does it keep writing and reading after a zone, and after a
  zone plus one node?
- "availability": N, W and the chance a node is down; the chance writes are unavailable;
- "kth-ack": six replicas' round trips; how long a commit waits for W acknowledgements.
"""

from __future__ import annotations

from math import comb

import numpy as np

from labs.models import problems
from labs.models import quorum as model
from labs.models.problems import Kind, Problem, Solution

KINDS = ("sizing", "zones", "availability", "kth-ack")


def make_problem(kind: str, seed: int) -> Problem:
    """The problem of `kind` generated from `seed` (a whole number >= 0)."""
    return problems.make(_KINDS, kind, seed, "(again: python -m labs quorum --problem {kind} "
                                             "--seed {seed}; add -c to solve)")


def _pick(rng: np.random.Generator, choices: tuple) -> object:
    return choices[int(rng.integers(0, len(choices)))]


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


# --- sizing ---------------------------------------------------------------------------------

def _gen_sizing(rng: np.random.Generator) -> dict:
    return {"nodes": int(rng.integers(2, 10))}


def _text_sizing(p: dict) -> str:
    return (f"A store keeps N = {p['nodes']} copies of every item.\n"
            "(a) What are the smallest write quorum W and read quorum R that obey both rules "
            "(R + W > N, W > N/2)?\n"
            "(b) With those quorums, how many failed nodes do writes survive, and reads?")


def _solve_sizing(p: dict) -> Solution:
    n = p["nodes"]
    r, w = model.smallest_valid_quorum(n)
    text = (f"(a) W must be a majority: the smallest W > {n}/2 is {w}. Then R + {w} > {n} "
            f"needs R >= {n - w + 1}, so R = {r}.\n"
            f"(b) A quorum of Q out of N survives N - Q failures: writes survive {n} - {w} = "
            f"{n - w}, reads survive {n} - {r} = {n - r}.")
    return Solution(text, {"write": w, "read": r, "write_tolerates": n - w,
                           "read_tolerates": n - r})


# --- zones ------------------------------------------------------------------------------------

def _gen_zones(rng: np.random.Generator) -> dict:
    nodes = int(rng.integers(3, 10))
    azs = int(rng.integers(2, min(nodes, 4) + 1))
    r, w = model.smallest_valid_quorum(nodes)
    # Sometimes a larger write quorum than the smallest, to vary the answers.
    w = min(nodes, w + int(rng.integers(0, 2)))
    r = max(nodes - w + 1, 1)
    return {"nodes": nodes, "write": w, "read": r, "azs": azs}


def _text_zones(p: dict) -> str:
    return (f"N = {p['nodes']} copies are placed round-robin over {p['azs']} availability zones; "
            f"W = {p['write']}, R = {p['read']}.\n"
            "(a) How many copies does each zone hold?\n"
            "(b) After losing the zone with the most copies, do writes go on? Reads?\n"
            "(c) After losing that zone and one more node?")


def _solve_zones(p: dict) -> Solution:
    n, w, r, z = p["nodes"], p["write"], p["read"], p["azs"]
    report = model.describe(n, w, r, azs=z).as_dict()
    sizes = report["nodes_per_az"]
    left = model.survivors_after_az_loss(n, z)
    text = (f"(a) Round-robin gives {sizes}.\n"
            f"(b) The largest zone holds {max(sizes)}, so {left} copies are left: writes "
            f"{_yes(report['lose_az']['write'])} (need {w}), reads "
            f"{_yes(report['lose_az']['read'])} (need {r}).\n"
            f"(c) {left - 1} left: writes {_yes(report['lose_az_plus_one']['write'])}, reads "
            f"{_yes(report['lose_az_plus_one']['read'])}.")
    return Solution(text, {"nodes_per_az": sizes, "lose_az": report["lose_az"],
                           "lose_az_plus_one": report["lose_az_plus_one"]})


# --- availability ---------------------------------------------------------------------------

def _gen_availability(rng: np.random.Generator) -> dict:
    nodes = int(_pick(rng, (3, 4, 5, 6, 7)))
    write = model.smallest_valid_quorum(nodes)[1]
    return {"nodes": nodes, "write": write, "p_node": float(_pick(rng, (0.001, 0.01, 0.05)))}


def _text_availability(p: dict) -> str:
    return (f"N = {p['nodes']} copies, W = {p['write']}; each node is down, independently of "
            f"the others, with probability p = {p['p_node']:g}.\n"
            "What is the chance that fewer than W nodes are up, so that writes are unavailable?")


def _solve_availability(p: dict) -> Solution:
    n, w, q = p["nodes"], p["write"], p["p_node"]
    down_from = n - w + 1  # writes stop once this many nodes are down
    terms = [comb(n, k) * q**k * (1 - q) ** (n - k) for k in range(down_from, n + 1)]
    exact = model.unavailability(n, w, 1, q)["p_write_unavailable"]
    parts = " + ".join(f"C({n},{k}) p^{k} (1-p)^{n - k}" for k in range(down_from, n + 1))
    text = (f"Writes stop when at least N - W + 1 = {down_from} nodes are down. "
            f"P = {parts} = {sum(terms):.3e} (the first term, {terms[0]:.3e}, is most of it).")
    return Solution(text, {"p_write_unavailable": exact, "first_term": terms[0]})


# --- kth-ack --------------------------------------------------------------------------------

def _gen_kth_ack(rng: np.random.Generator) -> dict:
    near = [round(float(x), 1) for x in rng.uniform(0.3, 1.5, 2)]
    far = round(float(rng.uniform(3.0, 12.0)), 1)
    zones = [*near, far]
    order = rng.permutation(3).tolist()
    return {"zone_rtts_ms": [zones[i] for i in order], "write": int(_pick(rng, (3, 4, 5)))}


def _text_kth_ack(p: dict) -> str:
    rtts = ", ".join(f"{ms:g} ms" for ms in p["zone_rtts_ms"])
    return ("Six replicas sit two per zone in three zones whose round trips from the writer are "
            f"{rtts}. Ignore the replicas' own service time.\n"
            f"How long does a commit wait if it needs W = {p['write']} acknowledgements? "
            "And if it needed all six?")


def _solve_kth_ack(p: dict) -> Solution:
    times = sorted(ms for ms in p["zone_rtts_ms"] for _ in range(2))
    w = p["write"]
    text = (f"The acknowledgements arrive at {', '.join(f'{t:g}' for t in times)} ms. "
            f"The commit waits for the {_ordinal(w)} of them: {times[w - 1]:g} ms. With all six it "
            f"waits for the slowest zone: {times[-1]:g} ms.")
    return Solution(text, {"commit_ms": times[w - 1], "all_ms": times[-1]})


_KINDS = {
    "sizing": Kind(_gen_sizing, _text_sizing, _solve_sizing),
    "zones": Kind(_gen_zones, _text_zones, _solve_zones),
    "availability": Kind(_gen_availability, _text_availability, _solve_availability),
    "kth-ack": Kind(_gen_kth_ack, _text_kth_ack, _solve_kth_ack),
}
