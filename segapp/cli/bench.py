"""``segapp bench``: the paper's Table 1 protocol, side by side with the yardsticks, in one run.

The bundled cameraman with its bundled strokes is resized to about n pixels (aspect kept), the MRF
is built once per size, and each method is timed on the same problem (solve time only).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from typing import Any

import cv2
import numpy as np

log = logging.getLogger(__name__)

ALL_METHODS = ("mincut", "expansion", "gco", "lp", "admm-cpu", "admm-gpu")


def _sizes(text: str) -> list[int]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes must be numbers like 1e4,5e4, got {text!r}") from None
    if not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"sizes must be finite pixel counts, got {text!r}")
    sizes = [int(v) for v in values]
    if not sizes or min(sizes) < 16:
        raise argparse.ArgumentTypeError("every size must be at least 16 pixels")
    return sizes


def add_parser(sub: Any) -> None:
    """Register the ``bench`` sub-command."""
    p = sub.add_parser("bench", help="time ADMM against the yardsticks (paper's Table 1)")
    p.add_argument("--sizes", type=_sizes, default=_sizes("1e3,1e4,1e5"),
                   help="pixel counts, comma-separated (default 1e3,1e4,1e5)")
    p.add_argument("--runs", type=int, default=5, help="runs per method and size (seeds 0..R-1)")
    p.add_argument("--json", required=True, help="where to write the records")
    p.add_argument("--k", type=int, default=2, choices=[2, 3, 4], help="number of labels")
    p.add_argument("--methods", help=f"comma-separated subset of {','.join(ALL_METHODS)} "
                   "(default: the yardstick, gco for --k 3 or 4 where gco-wrapper is installed, "
                   "lp, admm-cpu, and admm-gpu when a GPU is present)")
    p.add_argument("--image", help="photo to use instead of the bundled cameraman "
                   "(needs --strokes)")
    p.add_argument("--strokes", help="stroke PNG for --image")


def sample(n: int, k: int, image_path: str | None = None, strokes_path: str | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    """The benchmark image and strokes resized to about ``n`` pixels."""
    from segapp.core.io import ASSETS_DIR, load_image, load_label_image  # noqa: PLC0415

    img = load_image(image_path or ASSETS_DIR / "cameraman.png")
    st = load_label_image(strokes_path or ASSETS_DIR / f"cameraman_strokes_k{k}.png",
                          img.shape[:2], k, "strokes")
    h, w = img.shape[:2]
    s = math.sqrt(n / (h * w))
    size = (max(2, round(w * s)), max(2, round(h * s)))
    img = cv2.resize(img, size, interpolation=cv2.INTER_AREA)
    small = np.zeros(size[::-1], np.int32)
    cover = []
    for lab in range(1, k + 1):  # keep every label present even when strokes get thin
        m = cv2.resize((st == lab).astype(np.float32), size, interpolation=cv2.INTER_AREA)
        small[m > 0.25] = lab
        cover.append(m)
    for lab, m in enumerate(cover, start=1):  # (a label thinned away, or painted over by a
        if not np.any(small == lab):          # later one: its best-covered pixel)
            small.flat[int(np.argmax(m))] = lab
    return img, small


def default_methods(k: int) -> list[str]:
    """The yardstick, gco-v3's α-expansion for K > 2 where ``gco-wrapper`` is installed (the
    peer a user could pick instead), LP, ADMM on the CPU, and ADMM on the GPU when one is
    usable."""
    from solver import gpu_available  # noqa: PLC0415
    from solver.reference.gco import gco_available  # noqa: PLC0415

    peer = ["gco"] if k > 2 and gco_available() else []
    methods = ["mincut" if k == 2 else "expansion", *peer, "lp", "admm-cpu"]
    return methods + (["admm-gpu"] if gpu_available() else [])


def run_one(problem: Any, method: str, seed: int) -> dict[str, Any]:
    """Solve once and return ``{energy, time_s, iterations}`` (ADMM adds ``energy_unpolished``).

    ``energy_unpolished`` is ADMM's own best rounded iterate before the ICM/region-move polish,
    so the polish's share of the result stays visible.
    """
    from solver.mrf import solve_mrf  # noqa: PLC0415

    if method.startswith("admm"):
        res = solve_mrf(problem, "admm", backend=method.split("-")[1], seed=seed)
        return {"energy": res.energy, "time_s": res.time_s, "iterations": res.iterations,
                "energy_unpolished": res.energy_admm}
    res = solve_mrf(problem, method)
    return {"energy": res.energy, "time_s": res.time_s, "iterations": res.iterations}


#: λ of the paper's Table 1 protocol, kept fixed so the grid's records stay comparable with
#: those measured before the app's default became 15 (2026-12-02; docs/decisions.md)
TABLE1_LAMBDA = 10.0


def run_grid(sizes: list[int], methods: list[str], runs: int, k: int,
             image: str | None = None, strokes: str | None = None) -> list[dict[str, Any]]:
    """Solve every (size, method, run) once, printing progress to stderr; returns the records.

    Each record is ``{method, n, k, run, energy, time_s, iterations}``; run ``r`` seeds ADMM's
    random start with ``r``. The MRF is built once per size (λ = :data:`TABLE1_LAMBDA`), so all
    methods see the same problem. The methods take turns within each run (run 0 of every method, then run 1, ...), so each
    ADMM solve is timed next to its yardstick's and a drift in the machine's speed reaches both.
    """
    from solver.mrf import build_problem, warm_up  # noqa: PLC0415

    # compile the kernels first, as a C++ yardstick comes compiled (a one-off per process)
    gpu = "admm-gpu" in methods
    print(f"compiling the {'CPU and GPU' if gpu else 'CPU'} kernels: {warm_up(k, gpu):.1f} s",
          file=sys.stderr, flush=True)
    records: list[dict[str, Any]] = []
    total = len(sizes) * len(methods) * runs
    for n in sizes:
        img, st = sample(n, k, image, strokes)
        problem = build_problem(img, st, k, lam=TABLE1_LAMBDA)
        for r in range(runs):
            for method in methods:
                rec = {"method": method, "n": problem.n, "k": k, "run": r,
                       **run_one(problem, method, seed=r)}
                records.append(rec)
                print(f"[{len(records)}/{total}] n={problem.n} {method} run {r}: "
                      f"E={rec['energy']:.6g} t={rec['time_s']:.3f}s it={rec['iterations']}",
                      file=sys.stderr, flush=True)
    return records


def run(args: argparse.Namespace) -> int:
    """Run the benchmark grid and write the JSON records; returns the exit status.

    The ``--json`` path is checked before the grid runs, and written atomically after it."""
    from segapp.core.io import write_atomic  # noqa: PLC0415
    from segapp.core.memory import check_memory  # noqa: PLC0415
    from segapp.core.paths import check_outputs  # noqa: PLC0415

    if args.methods is not None and not [m for m in args.methods.split(",") if m.strip()]:
        raise ValueError(f"--methods is empty: name some of {', '.join(ALL_METHODS)}")
    methods = ([m.strip() for m in args.methods.split(",") if m.strip()] if args.methods
               else default_methods(args.k))
    bad = [m for m in methods if m not in ALL_METHODS]
    if bad:
        raise ValueError(f"unknown method(s) {', '.join(bad)}: expected some of {', '.join(ALL_METHODS)}")
    if "mincut" in methods and args.k != 2:
        raise ValueError("mincut needs --k 2; use expansion")
    if args.runs < 1:
        raise ValueError("--runs must be at least 1")
    if args.image and not args.strokes:
        raise ValueError("--image needs --strokes")
    if args.strokes and not args.image:
        raise ValueError("--strokes needs --image (the bundled cameraman has its own strokes)")
    out = check_outputs([("--json", args.json)],  # before the grid, which may take hours
                        [("--image", args.image), ("--strokes", args.strokes)])[0]
    # every input read and every size's memory checked before the kernels compile
    reference = any(not m.startswith("admm") for m in methods)
    for n in sorted(set(args.sizes), reverse=True):
        check_memory(n, args.k, reference, advice="give --sizes smaller pixel counts")
    sample(min(args.sizes), args.k, args.image, args.strokes)
    records = run_grid(args.sizes, methods, args.runs, args.k, args.image, args.strokes)
    write_atomic(out, (json.dumps(records, indent=1) + "\n").encode())
    return 0
