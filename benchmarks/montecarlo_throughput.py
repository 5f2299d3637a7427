"""Print the quorum Monte Carlo's throughput and its agreement with the exact model.

    .venv/bin/python benchmarks/montecarlo_throughput.py [--trials N] [--repeats K]
"""

import argparse
import time

import numpy as np

from labs.models import quorum as model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"trials={args.trials} repeats={args.repeats} layout: N=6 W=4 R=3 Z=3 p=0.05 q=0.01")
    exact = model.unavailability(6, 4, 3, 0.05, 3, 0.01)
    for repeat in range(args.repeats):
        started = time.perf_counter()
        estimate = model.simulate_unavailability(6, 4, 3, 0.05, 3, 0.01, trials=args.trials,
                                                 rng=np.random.default_rng(repeat))
        seconds = time.perf_counter() - started
        inside = all(
            low <= exact[f"p_{op}_unavailable"] <= high
            for op, (low, high) in (("write", estimate.write_interval),
                                    ("read", estimate.read_interval)))
        print(f"run {repeat}: {args.trials / seconds:,.0f} trials/s; write estimate "
              f"{estimate.p_write_unavailable:.4e} vs exact {exact['p_write_unavailable']:.4e};"
              f" exact inside both 95% intervals: {inside}")


if __name__ == "__main__":
    main()
