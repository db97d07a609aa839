"""``segapp segment``: segment a photo headless, from the command line."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from solver.names import BACKENDS, COLOUR_MODELS, METHODS


def _rect(text: str) -> tuple[int, int, int, int]:
    try:
        parts = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"rectangle must be X,Y,W,H integers, got {text!r}") from None
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(f"rectangle must be X,Y,W,H (4 numbers), got {text!r}")
    return tuple(parts)  # type: ignore[return-value]


def _finite(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return v


def add_parser(sub: Any) -> None:
    """Register the ``segment`` sub-command."""
    p = sub.add_parser("segment", help="segment an image headless",
                       description="Segment IMAGE into K labels from strokes (and a rectangle / "
                                   "hard constraints) and write the label PNG.")
    p.add_argument("image", help="photo to segment (PNG, JPEG, TIFF, ...)")
    p.add_argument("--strokes", help="single-channel PNG: 0 = none, k = label k (1..K)")
    p.add_argument("--k", type=int, default=2, help="number of labels K (default 2)")
    p.add_argument("--rect", type=_rect, help="GrabCut-style rectangle X,Y,W,H (K = 2)")
    p.add_argument("--hard", help="single-channel PNG of hard constraints: k = fixed to label k")
    p.add_argument("--solver", default="admm", choices=METHODS)
    p.add_argument("--backend", default="cpu", choices=BACKENDS)
    p.add_argument("--lam", type=_finite, help="smoothness weight λ (default 10)")
    p.add_argument("--beta", type=_finite, help="contrast β (default: from the image)")
    p.add_argument("--colour-model", default="gmm", choices=COLOUR_MODELS)
    p.add_argument("--seed", type=int, help="seed of ADMM's random start (default: start at 1/2)")
    p.add_argument("--max-iter", type=int, help="ADMM iteration limit")
    p.add_argument("--rho0", type=_finite, help="ADMM starting penalty (relative)")
    p.add_argument("--rho-growth", type=_finite, help="ADMM penalty growth per iteration")
    p.add_argument("--no-polish", action="store_true", help="skip the ICM polish after ADMM")
    p.add_argument("--out", required=True, help="label PNG to write (values 1..K)")
    p.add_argument("--overlay", help="colour overlay PNG to write")
    p.add_argument("--report", help="JSON report to write")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no summary line (nor the first-run compiling note)")


def run(args: argparse.Namespace) -> int:
    """Run ``segapp segment``; returns the exit status (errors raise, see
    :func:`segapp.cli.main`)."""
    from segapp.core.io import load_image, load_label_image, overlay, save_image, save_labels
    from segapp.core.pipeline import SegmentParams, run_segmentation  # noqa: PLC0415
    from solver.backend.compile_notice import COMPILE_MESSAGE, first_compile_notice  # noqa: PLC0415
    from solver.mrf import DEFAULT_LAMBDA  # noqa: PLC0415

    image = load_image(args.image)
    shape = image.shape[:2]
    strokes = load_label_image(args.strokes, shape, what="strokes") if args.strokes else None
    hard = load_label_image(args.hard, shape, what="hard constraints") if args.hard else None
    admm = {k: v for k, v in (("max_iter", args.max_iter), ("rho0", args.rho0),
                              ("rho_growth", args.rho_growth)) if v is not None}
    params = SegmentParams(k=args.k, lam=args.lam, beta=args.beta,
                           colour_model=args.colour_model, solver=args.solver,
                           backend=args.backend, seed=args.seed, admm=admm,
                           polish=not args.no_polish)
    def note() -> None:  # the first run on a machine compiles for about a minute
        if not args.quiet:
            print(f"segapp: note: {COMPILE_MESSAGE}", file=sys.stderr, flush=True)

    with first_compile_notice(note):
        out = run_segmentation(image, strokes, params, rect=args.rect, hard=hard,
                               reference=args.report is not None)
    for w in out.warnings:
        print(f"segapp: warning: {w}", file=sys.stderr)
    over = overlay(image, out.labels) if args.overlay else None
    report = {
        "energy": out.energy, "solver": out.method, "backend": out.backend,
        "iterations": out.iterations, "time_s": out.time_s, "n_pixels": int(out.labels.size),
        "k": args.k, "status": out.status, "converged": out.converged, "width": int(shape[1]), "height": int(shape[0]),
        "lam": DEFAULT_LAMBDA if args.lam is None else args.lam, "beta": out.problem.beta,
        "colour_model": args.colour_model, "seed": args.seed,
        "reference_method": "mincut" if args.k == 2 else "expansion",
        "reference_energy": out.reference_energy, "gap": out.gap,
        "build_time_s": out.build_time_s, "image": str(args.image),
    }
    text = json.dumps(report, indent=2) if args.report else None
    save_labels(args.out, out.labels)
    if over is not None:
        save_image(args.overlay, over)
    if text is not None:
        Path(args.report).write_text(text + "\n")
    if not args.quiet:
        gap = "" if out.gap is None else f", {100 * out.gap:+.3f}% vs {report['reference_method']}"
        print(f"{out.method} ({out.backend}): energy {out.energy:.6g}{gap}, "
              f"{out.iterations} iterations, {out.time_s:.3f} s, {out.labels.size} pixels, "
              f"K = {args.k} -> {args.out}")
    return 0
