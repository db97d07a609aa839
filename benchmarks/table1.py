"""Reproduce the seed paper's Table 1 side by side with the yardsticks, in one run.

    python benchmarks/table1.py [--sizes 1e3,5e3,1e4,5e4,1e5,5e5] [--runs 5] [--k 2] [--out DIR]

Writes ``DIR/table1_k{K}.json`` (the ``segapp bench`` records) and ``DIR/table1_k{K}.md``: mean(std)
energy and runtime per method and size, plus ADMM/yardstick ratios, in the paper's layout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from segapp.bench import default_methods, run_grid


def table(records: list[dict], k: int) -> str:
    """Markdown table: rows = methods, columns = sizes, cells = mean(std) energy / time."""
    ref = "mincut" if k == 2 else "expansion"
    sizes = sorted({r["n"] for r in records})
    methods = list(dict.fromkeys(r["method"] for r in records))

    def stats(method: str, n: int, key: str) -> tuple[float, float]:
        v = np.array([r[key] for r in records if r["method"] == method and r["n"] == n])
        return float(v.mean()), float(v.std())

    head = "| method | " + " | ".join(f"n={n} energy | n={n} s" for n in sizes) + " |"
    lines = [head, "|" + "---|" * (1 + 2 * len(sizes))]
    for m in methods:
        cells = []
        for n in sizes:
            (e, es), (t, ts) = stats(m, n, "energy"), stats(m, n, "time_s")
            cells += [f"{e:.6g}({es:.2g})", f"{t:.3g}({ts:.2g})"]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    for m in (m for m in methods if m.startswith("admm")):
        cells = []
        for n in sizes:
            e, _ = stats(m, n, "energy")
            e0, _ = stats(ref, n, "energy")
            t, _ = stats(m, n, "time_s")
            t0, _ = stats(ref, n, "time_s")
            cells += [f"{100 * (e - e0) / abs(e0):+.2f}%", f"{t / t0:.1f}×"]
        lines.append(f"| {m} / {ref} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the grid and write the JSON records and the Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e3,5e3,1e4,5e4,1e5,5e5")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--k", type=int, default=2, choices=[2, 3, 4])
    ap.add_argument("--methods", help="default: yardstick, lp, admm-cpu (+ admm-gpu if present)")
    ap.add_argument("--out", default="benchmarks/results")
    args = ap.parse_args(argv)
    methods = args.methods.split(",") if args.methods else default_methods(args.k)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    records = run_grid(sizes, methods, args.runs, args.k)
    (out / f"table1_k{args.k}.json").write_text(json.dumps(records, indent=1) + "\n")
    md = table(records, args.k)
    (out / f"table1_k{args.k}.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
