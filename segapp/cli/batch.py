"""``segapp batch``: segment many photos headless, on a local Dask cluster or a running one."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from segapp.cli.segment import (_finite, _int_at_least, _rect, add_cutout_shape_arguments,
                                add_model_arguments, check_cutout_shape, cutout_labels,
                                segment_params)


def _fractions(text: str) -> tuple[float, float, float, float]:
    """An argparse type: ``X,Y,W,H`` as fractions of the photo, the rectangle inside it."""
    parts = text.split(",")
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(f"expected X,Y,W,H (4 fractions), got {text!r}")
    try:
        x, y, w, h = (_finite(p) for p in parts)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected X,Y,W,H fractions, got {text!r}") from None
    if min(x, y) < 0 or min(w, h) <= 0 or x + w > 1 + 1e-9 or y + h > 1 + 1e-9:
        raise argparse.ArgumentTypeError(
            f"expected a rectangle inside the photo: 0 <= X, Y and X + W, Y + H <= 1 with W, "
            f"H > 0, got {text!r}")
    return (x, y, w, h)


def add_parser(sub: Any) -> None:
    """Register the ``batch`` sub-command."""
    p = sub.add_parser(
        "batch", help="segment many photos (Dask: local processes or a cluster)",
        description="Segment every photo of INPUTS (files, folders, glob patterns) and write "
                    "<stem>_labels.png for each into --out, with summary.csv and summary.json "
                    "(per photo its status, error sentence, energy, areas and time). One bad "
                    "photo never stops the others. Exit status 0 when every photo is done, 1 "
                    "when any failed, 2 for bad arguments, 130 when interrupted (the finished "
                    "photos' files are kept; --resume goes on).",
        epilog="Each photo is annotated by one of --rect, --rect-fraction, --annotations or "
               "--model. Photos run as tasks of a local Dask cluster of worker processes (as "
               "many as the cores and the memory allow, each photo's need estimated from its "
               "size), or of a running cluster (--scheduler). A worker that dies has its photo "
               "tried once more.")
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="photos, folders of photos, or glob patterns ('shots/*.jpg')")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (made if missing)")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--rect", type=_rect, metavar="X,Y,W,H",
                     help="the same rectangle, in pixels, on every photo (K = 2)")
    how.add_argument("--rect-fraction", type=_fractions, metavar="X,Y,W,H",
                     help="a rectangle as fractions of each photo's width and height "
                          "(0.1,0.1,0.8,0.8; K = 2)")
    how.add_argument("--annotations", metavar="FILE.csv",
                     help="per photo a rectangle and/or strokes and hard images: columns "
                          "image, rect (\"X,Y,W,H\"), strokes, hard; paths relative to the CSV; "
                          "without INPUTS, every photo it lists")
    how.add_argument("--model", metavar="SESSION",
                     help="a saved session: the colour models fitted on its photo and strokes, "
                          "with its K, settings and constraints, applied to every photo")
    add_model_arguments(p)
    p.set_defaults(backend=None)  # (with --model: the session's)
    p.add_argument("--k", type=int, help="number of labels K (default 2; with --model, the "
                                         "session's)")
    p.add_argument("--overlay", action="store_true", help="also write <stem>_overlay.png")
    p.add_argument("--cutout", action="store_true",
                   help="also write <stem>_cutout.png: the photo on the kept labels, "
                        "transparent elsewhere")
    add_cutout_shape_arguments(p)
    p.add_argument("--report", action="store_true",
                   help="also write <stem>_report.json (with the yardstick's energy and gap)")
    p.add_argument("--labels-palette", action="store_true",
                   help="write the labels as colour-coded palette PNGs")
    again = p.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="skip the photos whose files are all in --out already")
    again.add_argument("--overwrite", action="store_true",
                       help="replace the files an earlier batch wrote in --out")
    p.add_argument("--workers", type=_int_at_least(1),
                   help="at most this many local worker processes (default: one a core, as "
                        "memory allows)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="a running Dask scheduler to use instead of local workers (its workers "
                        "need segapp installed and the photos' paths)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress and no summary line")


def _k_and_params(args: argparse.Namespace) -> tuple[Any, tuple | None]:
    """The parameters and (``--model``) the session's colour models."""
    from dataclasses import replace  # noqa: PLC0415

    from segapp.batch import session_models  # noqa: PLC0415

    if args.model:
        given = _model_options_given(args)
        if given:
            raise ValueError(f"{given[0]} comes from the session with --model (its K, settings "
                             "and constraints); leave it out")
        params, models = session_models(args.model)
        return (params if args.backend is None else replace(params, backend=args.backend),
                models)
    k = 2 if args.k is None else args.k
    if (args.rect or args.rect_fraction) and k != 2:
        raise ValueError(f"--rect and --rect-fraction seed two labels (object and "
                         f"background), not K = {k}; use --annotations with strokes for more")
    if args.backend is None:
        args.backend = "cpu"
    return segment_params(args, k), None


#: The model options a session sets, as (option, attribute, default).
_SESSION_OPTIONS = (("--k", "k", None), ("--lam", "lam", None), ("--beta", "beta", None),
                    ("--seed", "seed", None), ("--max-iter", "max_iter", None),
                    ("--rho0", "rho0", None), ("--rho-growth", "rho_growth", None),
                    ("--rounds", "rounds", None), ("--area", "area", []),
                    ("--apart", "apart", []), ("--no-polish", "no_polish", False),
                    ("--soft-strokes", "soft_strokes", False),
                    ("--one-shot-model", "one_shot_model", False),
                    ("--solver", "solver", "admm"), ("--colour-model", "colour_model", "gmm"))


def _model_options_given(args: argparse.Namespace) -> list[str]:
    """The options given that a session's settings would decide."""
    return [opt for opt, name, default in _SESSION_OPTIONS if getattr(args, name) != default]


def _progress(quiet: bool):
    """The progress callback: one rewritten line on a terminal, a line a photo otherwise."""
    from segapp.batch import format_progress  # noqa: PLC0415

    if quiet:
        return None
    tty = sys.stderr.isatty()

    def show(finished: int, total: int, row: dict, elapsed: float) -> None:
        line = format_progress(finished, total, row, elapsed)
        if tty:
            end = "\n" if finished == total else ""
            print(f"\r\033[K{line}", end=end, file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)
    return show


def run(args: argparse.Namespace) -> int:
    """Run ``segapp batch``; returns the exit status (argument errors raise ValueError, see
    :func:`segapp.cli.main`)."""
    from segapp import batch  # noqa: PLC0415

    annotations = batch.read_annotations(args.annotations) if args.annotations else None
    if args.inputs:
        images = batch.collect_images(args.inputs)
    elif annotations is not None:
        images = list(annotations)
    else:
        raise ValueError("no photos given: name files, folders or patterns (or rows of "
                         "--annotations)")
    if annotations is not None and args.inputs:
        missing = next((p for p in images if p not in annotations), None)
        if missing is not None:
            raise ValueError(f"'{missing}' has no row in --annotations '{args.annotations}'")
    params, models = _k_and_params(args)
    labels = cutout_labels(args)
    check_cutout_shape(args, params.k)
    outputs = batch.BatchOutputs(overlay=args.overlay, cutout=args.cutout, report=args.report,
                                 labels_palette=args.labels_palette,
                                 cutout_labels=tuple(labels), feather=args.feather or 0.0)
    annotation = (batch.Annotation(rect=args.rect, rect_fraction=args.rect_fraction)
                  if (args.rect or args.rect_fraction) else None)
    summary = batch.run(images, Path(args.out), params, annotation=annotation,
                        annotations=annotations, models=models, outputs=outputs,
                        resume=args.resume, overwrite=args.overwrite, workers=args.workers,
                        scheduler=args.scheduler, progress=_progress(args.quiet))
    if summary.interrupted:
        print(f"segapp: interrupted: {summary.count('done')} photos done, "
              f"{summary.count('cancelled')} not run (--resume goes on); summary in "
              f"{Path(args.out) / 'summary.csv'}", file=sys.stderr)
    elif not args.quiet:
        rate = len(summary.rows) / summary.time_s if summary.time_s > 0 else math.inf
        print(f"{summary.count('done')} done, {summary.count('skipped')} skipped, "
              f"{summary.count('failed')} failed of {len(summary.rows)} photos in "
              f"{summary.time_s:.1f} s ({rate:.2f} photos/s, {summary.workers} workers) -> "
              f"{Path(args.out) / 'summary.csv'}")
    for row in summary.rows:
        if row["status"] == "failed" and not args.quiet:
            print(f"segapp: failed: {Path(row['image']).name}: {row['error']}", file=sys.stderr)
    return summary.exit_status
