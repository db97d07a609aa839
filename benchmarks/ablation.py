"""Compare solver variants side by side on one set of cameraman problems (the A/B runs of
docs/decisions.md).

    python benchmarks/ablation.py "early_fixing.enabled=False" ""
    python benchmarks/ablation.py --cases 2:1e5,2:5e5,3:1e5 "early_fixing.delta=0.02" ""
    python benchmarks/ablation.py "polish.edge_snap=False,admm.rho_growth=1.02"
    python benchmarks/ablation.py --real tuning --k 2 "polish.tv.fuse_next=50" ""

Each argument is one variant: comma-separated ``PATH=value`` settings, where PATH is a dotted
path into :class:`solver.mrf.SolveOptions` (``polish.edge_snap``, ``polish.tv.fuse_next``,
``early_fixing.delta``) or ``admm.FIELD`` for an :class:`solver.ADMMParams` field; ``""`` is the default solver. Every variant
starts from the defaults. The yardstick (min-cut for K = 2, α-expansion for K > 2) runs once
per problem; then every variant solves every problem in turn, in this process, so their times
are side by side. ``--real SPLIT`` takes the problems from the real-input benchmark's cases
instead (:mod:`real_inputs`, one half, up to ``--max-pixels``, the K values of ``--k``). One line per variant: mean gap (and per K), total ADMM time, and each
problem's gap and time. Single ADMM runs move chaotically by a few hundredths of a percent
from one setting to the next, so judge a variant by the mean over the set, not by one size.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import sys
from pathlib import Path
from typing import Any

import numpy as np

from segapp.cli.bench import sample
from solver import ADMMParams
from solver.mrf import SolveOptions, build_problem, solve_mrf, warm_up

#: The set used for the decisions in docs/decisions.md: K = 2 at 1e4 … 5e5, K = 3 and 4 at a few
#: sizes.
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
    """The ``GROUP.FIELD=value`` settings of a variant: split at the commas outside brackets, so
    a value may be a tuple or list (``"polish.fusion.thresholds=(0.2, 0.5),polish.split=True"``)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(variant):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            out.append(variant[start:i])
            start = i + 1
    out.append(variant[start:])
    return [s.strip() for s in out if s.strip()]


def variant_options(variant: str) -> tuple[SolveOptions, dict[str, Any]]:
    """The options and ADMM parameters of a variant string (defaults for the rest): each
    setting a dotted path into :class:`SolveOptions` (``polish.tv.fuse_next=50``,
    ``early_fixing.enabled=False``) or ``admm.FIELD``."""
    options, admm = SolveOptions(), {}
    groups = {f.name for f in dataclasses.fields(SolveOptions)}
    for setting in split_settings(variant):
        target, value = setting.split("=", 1)
        path = target.strip().split(".")
        parsed = ast.literal_eval(value.strip())
        if path[0] == "admm":
            if len(path) != 2 or path[1] not in {f.name for f in dataclasses.fields(ADMMParams)}:
                raise SystemExit(f"ADMMParams has no field {'.'.join(path[1:])!r}")
            admm[path[1]] = parsed
            continue
        if path[0] not in groups or len(path) < 2:
            raise SystemExit(f"unknown group {path[0]!r}: expected admm or one of "
                             f"{sorted(groups)}")
        options = _replaced(options, path, parsed)
    return options, admm


def _replaced(obj: Any, path: list[str], value: Any) -> Any:
    """``obj`` with the field at the dotted ``path`` (a list of names) set to ``value``."""
    name = path[0]
    if not dataclasses.is_dataclass(obj) or name not in {f.name for f in dataclasses.fields(obj)}:
        raise SystemExit(f"{type(obj).__name__} has no field {name!r}")
    inner = value if len(path) == 1 else _replaced(getattr(obj, name), path[1:], value)
    return dataclasses.replace(obj, **{name: inner})


def real_problems(split: str, ks: set[int], max_pixels: float) -> list[tuple[str, int, Any]]:
    """``(label, k, problem)`` of the real-input cases of one half with K in ``ks``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import real_inputs  # noqa: PLC0415

    out = []
    for case in real_inputs.cases(max_pixels, split):
        if case.k in ks:
            image, strokes, rect = real_inputs.make_input(case, 0)
            out.append((case.key, case.k, build_problem(image, strokes, case.k, rect=rect)))
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("variants", nargs="+", help='e.g. "early_fixing.enabled=False"')
    ap.add_argument("--cases", default=DEFAULT_CASES, help="K:n pairs, comma-separated")
    ap.add_argument("--real", choices=("tuning", "heldout"),
                    help="the real-input benchmark's cases of this half instead of --cases")
    ap.add_argument("--k", default="2,3,4,5", help="with --real: K values, comma-separated")
    ap.add_argument("--max-pixels", type=float, default=1e6, help="with --real: largest case")
    args = ap.parse_args(argv)
    if args.real:
        named = real_problems(args.real, {int(k) for k in args.k.split(",")}, args.max_pixels)
    else:
        named = []
        for k, n in parse_cases(args.cases):
            image, strokes = sample(n, k)
            named.append((f"K{k} {n:g}", k, build_problem(image, strokes, k)))
    if not named:
        raise SystemExit("no cases")
    warm_up(max(k for _, k, _ in named))
    problems = [(label, k, p, solve_mrf(p, "mincut" if k == 2 else "expansion").energy)
                for label, k, p in named]
    for variant in args.variants:
        options, admm = variant_options(variant)
        gaps, times, cells = [], [], []
        for label, k, p, ref in problems:
            res = solve_mrf(p, "admm", seed=0, options=options, **admm)
            gap = 100.0 * (res.energy - ref) / abs(ref)
            gaps.append(gap)
            times.append(res.time_s)
            cells.append(f"{label}: {gap:.4f}% {res.time_s:.2f}s")
        per_k = " ".join(f"K{k} {np.mean([g for (_, kk, *_), g in zip(problems, gaps) if kk == k]):.3f}"
                         for k in sorted({k for _, k, *_ in problems}))
        print(f"[{variant or 'default'}] mean gap {np.mean(gaps):.3f}% ({per_k}) "
              f"worst {max(gaps):.4f}% time {sum(times):.2f}s | " + " | ".join(cells),
              flush=True)
    return 0

if __name__ == "__main__":
    sys.exit(main())
