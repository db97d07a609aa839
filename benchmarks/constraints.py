"""Area bounds and nestings: ADMM against the constrained yardsticks, and against its own
unconstrained time.

    python benchmarks/constraints.py [--sizes 1e4,5e4,1e5,2.6e5,5e5] [--out DIR]

Cases (each image resized so it has about n pixels, strokes resized with it):

* **area, K = 2**: every bundled image with K = 2 strokes (cameraman; coffee with a GrabCut
  rectangle over its middle), label 1's area bounded to a band around 0.8× and 1.2× its
  unconstrained min-cut area (one case below, one above), so the bound binds. The yardstick is
  the parametric min-cut; its Lagrangian bound is reported too.
* **nesting, K = 3**: the bundled K = 3 samples (cameraman, coffee, cells, washer with its hard
  hole) with labels 1 and 3 apart, against the exact layered min-cut.

Per case: the constrained ADMM energy's gap to the yardstick's feasible energy (and to its
lower bound), ADMM's time over the unconstrained ADMM solve of the same problem (medians of
``--repeat`` runs each, the two taking turns), and whether every constraint holds. Writes ``DIR/constraints.json``, ``DIR/constraints.md`` and
``DIR/constraints.png``; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from segapp.core.io import ASSETS_DIR, load_image, load_label_image  # noqa: E402
from solver.mrf import AreaBound, Constraints, build_problem, solve_mrf  # noqa: E402

ASSETS = Path(ASSETS_DIR)


def _resized(image, layers, n):
    h, w = image.shape[:2]
    f = (n / (h * w)) ** 0.5
    size = (max(8, round(w * f)), max(8, round(h * f)))
    out = cv2.resize(image, size, interpolation=cv2.INTER_AREA if f < 1 else cv2.INTER_CUBIC)
    return out, [None if a is None else cv2.resize(a, size, interpolation=cv2.INTER_NEAREST)
                 for a in layers]


def _cases():
    """``(name, kind, image, strokes, hard, rect_fraction, k)`` at full size."""
    cam = load_image(ASSETS / "cameraman.png")
    coffee = load_image(ASSETS / "coffee.png")
    out = [("cameraman", "area", cam,
            load_label_image(ASSETS / "cameraman_strokes_k2.png", cam.shape[:2]), None, None, 2),
           ("coffee-rect", "area", coffee, None, None, (0.2, 0.15, 0.6, 0.7), 2)]
    for stem, hard in (("cameraman", None), ("coffee", None), ("cells", None),
                       ("washer", "washer_hard_k3.png")):
        img = load_image(ASSETS / f"{stem}.png")
        st = load_label_image(ASSETS / f"{stem}_strokes_k3.png", img.shape[:2])
        hd = None if hard is None else load_label_image(ASSETS / hard, img.shape[:2])
        out.append((stem, "nesting", img, st, hd, None, 3))
    return out


def _timed(problem, method):
    t0 = time.perf_counter()
    r = solve_mrf(problem, method)
    return r, time.perf_counter() - t0


#: Runs of each ADMM solve (constrained and unconstrained taking turns); times are medians.
REPEAT = 3


def _side_by_side(plain, problem, repeat):
    """``(result, median time, median unconstrained time)``: the constrained and the
    unconstrained ADMM solves of the same image timed in turns (the machine is shared)."""
    times, free_times, res = [], [], None
    for _ in range(repeat):
        free_times.append(_timed(plain, "admm")[1])
        res, t = _timed(problem, "admm")
        times.append(t)
    return res, float(np.median(times)), float(np.median(free_times))


def run_case(name, kind, image, strokes, hard, rect_f, k, n, repeat=REPEAT):
    image, (strokes, hard) = _resized(image, [strokes, hard], n)
    h, w = image.shape[:2]
    rect = None if rect_f is None else (int(rect_f[0] * w), int(rect_f[1] * h),
                                        int(rect_f[2] * w), int(rect_f[3] * h))
    plain = build_problem(image, strokes, k, rect=rect, hard=hard)
    rows = []
    if kind == "area":
        a1 = float((solve_mrf(plain, "mincut").labels == 1).mean())
        variants = [("below", Constraints(area=(AreaBound(1, 0.75 * a1, 0.8 * a1),))),
                    ("above", Constraints(area=(AreaBound(1, 1.2 * a1, min(1.0, 1.25 * a1)),)))]
    else:
        variants = [("1,3 apart", Constraints(apart=((1, 3),)))]
    for what, c in variants:
        try:
            p = build_problem(image, strokes, k, rect=rect, hard=hard, constraints=c)
        except ValueError as exc:
            print(f"  {name} {what}: skipped ({exc})", file=sys.stderr)
            continue
        ref, t_ref = _timed(p, "mincut")
        res, t, t_free = _side_by_side(plain, p, repeat)
        gap = (res.energy - ref.energy) / abs(ref.energy)
        gap_bound = None if ref.bound is None else (res.energy - ref.bound) / abs(ref.bound)
        rows.append({"case": name, "kind": kind, "constraint": what, "n": h * w, "k": k,
                     "energy": res.energy, "reference": ref.energy, "reference_detail": ref.detail,
                     "bound": ref.bound, "gap": gap, "gap_to_bound": gap_bound,
                     "time_s": t, "time_unconstrained_s": t_free, "ratio": t / t_free,
                     "reference_time_s": t_ref, "feasible": bool(res.feasible)})
        print(f"  {name} {what} n={h * w}: gap {100 * gap:+.3f}%, {t / t_free:.1f}x "
              f"unconstrained, feasible {res.feasible}", file=sys.stderr)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e4,5e4,1e5,2.6e5,5e5")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--repeat", type=int, default=REPEAT,
                    help="runs of each ADMM solve, in turns; times are medians")
    ap.add_argument("--kinds", default="area,nesting",
                    help="which cases: area, nesting or both")
    ap.add_argument("--merge", action="store_true",
                    help="keep the other rows of the last results in --out")
    args = ap.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = np.zeros((16, 16), int)
    seeds[0], seeds[8, 6:10] = 2, 1
    warm = build_problem(np.random.default_rng(0).random((16, 16, 3)), seeds, 2,
                         constraints=Constraints(area=(AreaBound(1, 0.1, 0.2),)))
    solve_mrf(warm, "admm")
    rows = []
    for n in sizes:
        for case in _cases():
            if case[1] in args.kinds.split(","):
                rows.extend(run_case(*case, n, repeat=args.repeat))
    if args.merge:
        rows = merged(json.loads((out / "constraints.json").read_text()), rows)
    write_results(rows, out)
    return 0


def merged(old: list[dict], new: list[dict]) -> list[dict]:
    """``old``'s rows in their order, each replaced by the row of ``new`` for the same case,
    constraint and size where there is one; ``new``'s other rows after them."""
    def key(r):
        return r["case"], r["kind"], r["constraint"], r["n"]
    fresh = {key(r): r for r in new}
    rows = [fresh.pop(key(r), r) for r in old]
    return rows + [r for r in new if key(r) in fresh]


def write_results(rows: list[dict], out: Path) -> None:
    """``constraints.json``, ``constraints.md`` and ``constraints.png`` of ``rows`` in ``out``;
    prints the table."""
    (out / "constraints.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = ["| case | constraint | n | gap to yardstick | gap to bound | × unconstrained | "
             "feasible |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        gb = "—" if r["gap_to_bound"] is None else f"{100 * r['gap_to_bound']:+.3f}%"
        lines.append(f"| {r['case']} ({r['reference_detail']}) | {r['constraint']} | {r['n']} | "
                     f"{100 * r['gap']:+.3f}% | {gb} | {r['ratio']:.1f} | {r['feasible']} |")
    (out / "constraints.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(1, 2, figsize=(10, 4))
        for kind, marker in (("area", "o"), ("nesting", "s")):
            sel = [r for r in rows if r["kind"] == kind]
            ax[0].scatter([r["n"] for r in sel], [100 * r["gap"] for r in sel], marker=marker,
                          label=kind)
            ax[1].scatter([r["n"] for r in sel], [r["ratio"] for r in sel], marker=marker,
                          label=kind)
        for a, title in zip(ax, ("gap to the yardstick (%)", "time / unconstrained ADMM")):
            a.set_xscale("log")
            a.set_title(title)
            a.set_xlabel("pixels")
            a.legend()
        ax[0].axhline(0.5, ls="--", c="grey")
        ax[1].axhline(3.0, ls="--", c="grey")
        fig.tight_layout()
        fig.savefig(out / "constraints.png", dpi=100)
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
