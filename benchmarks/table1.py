"""Reproduce the seed paper's Table 1 side by side with the yardsticks, in one run.

    python benchmarks/table1.py [--sizes 1e3,5e3,1e4,5e4,1e5,5e5] [--runs 5] [--k 2] [--out DIR]

Writes ``DIR/table1_k{K}.json`` (the ``segapp bench`` records), ``DIR/table1_k{K}.md`` (mean(std)
energy and runtime per method and size, plus ADMM/yardstick ratios, in the paper's layout) and
``DIR/table1_k{K}.png`` (time vs n and energy gap vs n). Progress goes to stderr, a line per solve.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from segapp.cli.bench import default_methods, run_grid


def _median(records: list[dict], method: str, n: int, key: str) -> float:
    return float(np.median([r[key] for r in records if r["method"] == method and r["n"] == n]))


def table(records: list[dict], k: int) -> str:
    """Markdown table: rows = methods, columns = sizes, cells = mean(std) energy / time; then, per
    method, median energy gap to the yardstick and median time ratio."""
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
    # against the yardstick, and for K > 2 against gco-v3 too (the peer a user could pick)
    for base in [ref] + (["gco"] if k > 2 and "gco" in methods else []):
        for m in (m for m in methods if m != base):
            cells = []
            for n in sizes:  # ratios of medians, as the targets are stated
                e, e0 = _median(records, m, n, "energy"), _median(records, base, n, "energy")
                t, t0 = _median(records, m, n, "time_s"), _median(records, base, n, "time_s")
                cells += [f"{100 * (e - e0) / abs(e0):+.3f}%", f"{t / t0:.2f}×"]
            lines.append(f"| {m} / {base} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _median_by_n(records: list[dict], method: str, key: str) -> tuple[np.ndarray, np.ndarray]:
    sizes = sorted({r["n"] for r in records if r["method"] == method})
    vals = [_median(records, method, n, key) for n in sizes]
    return np.array(sizes, float), np.array(vals, float)


def plot(records: list[dict], k: int, path: Path) -> None:
    """PNG with two panels: median time vs n (log-log, with an O(n) guide) and median energy gap
    to the yardstick vs n, for every method (ADMM also before its polish)."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    ref = "mincut" if k == 2 else "expansion"
    methods = list(dict.fromkeys(r["method"] for r in records))
    fig, (ax_t, ax_g) = plt.subplots(1, 2, figsize=(11, 4.2))
    ns_ref, e_ref = _median_by_n(records, ref, "energy")
    for m in methods:
        ns, t = _median_by_n(records, m, "time_s")
        colour = f"C{methods.index(m)}"  # one colour per method in both panels
        ax_t.loglog(ns, t, "o-", label=m, color=colour)
        if m == ref or ns_ref.size == 0:
            continue
        _, e = _median_by_n(records, m, "energy")
        e0 = np.interp(ns, ns_ref, e_ref)
        ax_g.semilogx(ns, 100 * (e - e0) / np.abs(e0), "o-", label=m, color=colour)
        if any("energy_unpolished" in r for r in records if r["method"] == m):
            _, eu = _median_by_n(records, m, "energy_unpolished")
            ax_g.semilogx(ns, 100 * (eu - e0) / np.abs(e0), "x--", label=f"{m} (no polish)",
                          color=colour, alpha=0.6)
    if ns_ref.size:
        _, t_ref = _median_by_n(records, ref, "time_s")
        ax_t.loglog(ns_ref, t_ref[-1] * ns_ref / ns_ref[-1], ":", color="grey", label="O(n)")
    ax_t.set(xlabel="pixels n", ylabel="solve time (s, median)", title=f"time vs n (K = {k})")
    ax_g.set(xlabel="pixels n", ylabel=f"energy above {ref} (%, median)",
             title="energy gap vs n")
    ax_g.axhline(0.0, color="grey", lw=0.8)
    ax_g.set_yscale("symlog", linthresh=0.1)
    for ax in (ax_t, ax_g):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


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
    plot(records, args.k, out / f"table1_k{args.k}.png")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
