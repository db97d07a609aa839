"""Compare solver variants side by side on one set of cameraman problems (the README's A/B runs).

    python benchmarks/ablation.py "solver.mrf.freeze.ENABLED=False" "solver.mrf.freeze.ENABLED=True"
    python benchmarks/ablation.py --cases 2:1e5,2:5e5,3:1e5 "solver.mrf.freeze.DELTA=0.02" ""

Each argument is one variant: comma-separated ``module.ATTRIBUTE=value`` settings (``""`` is the
default solver). Settings are applied in order and not undone, so give every variant all the
attributes it changes. The yardstick (min-cut for K = 2, α-expansion for K > 2) runs once per
problem; then every variant solves every problem in turn, in this process, so their times are
side by side. One line per variant: mean gap (and per K), total ADMM time, and each problem's gap
and time. Single ADMM runs move chaotically by a few hundredths of a percent from one setting to
the next, so judge a variant by the mean over the set, not by one size.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import sys

import numpy as np

from segapp.bench import sample
from solver.mrf import build_problem, solve_mrf, warm_up

#: The set used for the decisions in the README: K = 2 at 1e4 … 5e5, K = 3 and 4 at a few sizes.
DEFAULT_CASES = ("2:1e4,2:2e4,2:5e4,2:7e4,2:1e5,2:1.5e5,2:2e5,2:5e5,"
                 "3:1e4,3:3e4,3:7e4,3:1e5,4:1e4,4:5e4")


def parse_cases(text: str) -> list[tuple[int, int]]:
    """``"2:1e4,3:5e4"`` -> ``[(2, 10000), (3, 50000)]``."""
    out = []
    for item in text.split(","):
        k, n = item.split(":")
        out.append((int(k), int(float(n))))
    return out


def split_settings(variant: str) -> list[str]:
    """The ``module.ATTRIBUTE=value`` settings of a variant: split at the commas outside
    brackets, so a value may be a tuple or list (``"m.T=(0.2, 0.5),m.F=True"``)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(variant):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            out.append(variant[start:i])
            start = i + 1
    out.append(variant[start:])
    return [s.strip() for s in out if s.strip()]


def apply(variant: str) -> None:
    """Set each ``module.ATTRIBUTE=value`` of a comma-separated variant string."""
    for setting in split_settings(variant):
        target, value = setting.split("=", 1)
        module, attr = target.rsplit(".", 1)
        mod = importlib.import_module(module)
        if not hasattr(mod, attr):
            raise SystemExit(f"{module} has no attribute {attr!r}")
        setattr(mod, attr, ast.literal_eval(value))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("variants", nargs="+", help='e.g. "solver.mrf.freeze.ENABLED=False"')
    ap.add_argument("--cases", default=DEFAULT_CASES, help="K:n pairs, comma-separated")
    args = ap.parse_args(argv)
    cases = parse_cases(args.cases)
    warm_up(max(k for k, _ in cases))
    problems = []
    for k, n in cases:
        image, strokes = sample(n, k)
        p = build_problem(image, strokes, k)
        ref = solve_mrf(p, "mincut" if k == 2 else "expansion")
        problems.append((k, n, p, ref.energy))
    for variant in args.variants:
        apply(variant)
        gaps, times, cells = [], [], []
        for k, n, p, ref in problems:
            res = solve_mrf(p, "admm", seed=0)
            gap = 100.0 * (res.energy - ref) / abs(ref)
            gaps.append(gap)
            times.append(res.time_s)
            cells.append(f"K{k} {n:g}: {gap:.3f}% {res.time_s:.2f}s")
        per_k = " ".join(f"K{k} {np.mean([g for (kk, *_), g in zip(problems, gaps) if kk == k]):.3f}"
                         for k in sorted({k for k, _ in cases}))
        print(f"[{variant or 'default'}] mean gap {np.mean(gaps):.3f}% ({per_k}) "
              f"time {sum(times):.2f}s | " + " | ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
