"""``segapp segment``: segment a photo headless, from the command line."""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any


from solver.mrf.options import DEFAULT_LAMBDA
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


def _int_at_least(least: int):
    """An argparse type: an integer of at least ``least`` (argparse names the option)."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if v < least:
            raise argparse.ArgumentTypeError(
                f"expected an integer of at least {least}, got {v}" if least
                else f"expected a non-negative integer, got {v}")
        return v
    return parse


def _area(text: str):
    from segapp.core.constraint_text import parse_area  # noqa: PLC0415
    try:
        return parse_area(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _apart(text: str) -> tuple[int, int]:
    from segapp.core.constraint_text import parse_apart  # noqa: PLC0415
    try:
        return parse_apart(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _labels_list(text: str) -> list[int]:
    """An argparse type: one label or a comma list of them (``1`` or ``1,3``); checked against
    K once all arguments are read."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a label number or a comma list of them (1 or 1,3), got {text!r}") from None
    if any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"labels are numbered from 1, got {text!r}")
    return values


def _feather(text: str) -> float:
    """An argparse type: the cut-out's soft edge in pixels, 0 to MAX_FEATHER_PX."""
    from segapp.core.io import MAX_FEATHER_PX  # noqa: PLC0415
    v = _finite(text)
    if v < 0 or v > MAX_FEATHER_PX:
        raise argparse.ArgumentTypeError(
            f"expected a width in pixels from 0 to {MAX_FEATHER_PX:g}, got {text!r}")
    return v


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the model and its solve that ``segment`` and ``batch`` share: the
    constraints, the solver and its parameters, the colour model (:func:`segment_params`
    reads them)."""
    p.add_argument("--area", type=_area, action="append", default=[], metavar="K:LO-HI",
                   help="bound label K's area: fractions of the image (1:0.2-0.3) or pixels "
                        "(2:5000px-9000px); repeatable")
    p.add_argument("--apart", type=_apart, action="append", default=[], metavar="A,B",
                   help="labels A and B must not touch (8-neighbours); repeatable")
    p.add_argument("--solver", default="admm", choices=METHODS,
                   help="admm (default); mincut, expansion and lp are the yardsticks (under "
                        "--area/--apart: parametric or layered min-cut, Lagrangian swap, LP); "
                        "gco is gco-v3's α-expansion (needs gco-wrapper; no --area/--apart)")
    p.add_argument("--backend", default="cpu", choices=BACKENDS)
    p.add_argument("--lam", type=_finite, help=f"smoothness weight λ (default {DEFAULT_LAMBDA:g})")
    p.add_argument("--beta", type=_finite, help="contrast β (default: from the image)")
    p.add_argument("--colour-model", default="gmm", choices=COLOUR_MODELS)
    p.add_argument("--seed", type=_int_at_least(0),
                   help="seed of ADMM's random start (default: start at 1/2)")
    p.add_argument("--max-iter", type=_int_at_least(1), help="ADMM iteration limit")
    p.add_argument("--rho0", type=_finite, help="ADMM starting penalty (relative)")
    p.add_argument("--rho-growth", type=_finite, help="ADMM penalty growth per iteration")
    p.add_argument("--no-polish", action="store_true", help="skip the ICM polish after ADMM")
    p.add_argument("--rounds", type=_int_at_least(0),
                   help="GrabCut-style re-estimation rounds of the colour models (default 3; "
                        "0: the models fitted once)")
    p.add_argument("--soft-strokes", action="store_true",
                   help="strokes only train the colour models (by default their pixels also "
                        "keep their label)")
    p.add_argument("--one-shot-model", action="store_true",
                   help="the MRF as build_problem makes it: colour models fitted once, each to "
                        "its own strokes, which only train them (to study the solver on a "
                        "fixed model)")


def add_parser(sub: Any) -> None:
    """Register the ``segment`` sub-command."""
    p = sub.add_parser("segment", help="segment an image headless",
                       description="Segment IMAGE into K labels from strokes (and a rectangle / "
                                   "hard constraints) and write the label PNG.")
    p.add_argument("image", help="photo to segment (PNG, JPEG, TIFF, ...)")
    p.add_argument("--strokes", help="single-channel PNG: 0 = none, k = label k (1..K)")
    p.add_argument("--k", type=int, default=2, help="number of labels K (default 2)")
    p.add_argument("--rect", type=_rect, help="GrabCut-style rectangle X,Y,W,H: outside is "
                   "label 2, label 1 takes the inside (labels 3..K compete there from strokes)")
    p.add_argument("--hard", help="single-channel PNG of hard constraints: k = fixed to label k")
    add_model_arguments(p)
    p.add_argument("--out", required=True,
                   help="label image to write, .png, .tif or .tiff (values 1..K)")
    p.add_argument("--labels-palette", action="store_true",
                   help="write --out as a colour-coded label PNG: a palette PNG whose index is "
                        "the label (viewers show the colours; --out must be .png)")
    p.add_argument("--overlay", help="colour overlay to write (.png, .jpg, ...)")
    p.add_argument("--cutout", metavar="OUT.png",
                   help="cut-out to write: the photo's pixels on the kept labels, transparent "
                        "elsewhere (.png, .tif, .tiff or .webp: formats with transparency)")
    add_cutout_shape_arguments(p)
    p.add_argument("--report", help="JSON report to write")
    p.add_argument("--allow-infeasible", action="store_true",
                   help="write the labels even when they break a constraint (by default such "
                        "a run exits 1 and writes nothing)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no summary line (nor the first-run compiling note)")


def _check_outputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """Every output's format and path checked before anything is loaded or solved; returns
    ``(option, path)`` of each output asked for."""
    from segapp.core.formats import check_image_path, check_label_path  # noqa: PLC0415
    from segapp.core.paths import check_outputs  # noqa: PLC0415

    check_label_path(args.out, "--out")
    if args.labels_palette and Path(args.out).suffix.lower() != ".png":
        raise ValueError(f"cannot write --out '{args.out}': --labels-palette writes a palette "
                         "PNG, so name a .png file")
    if args.overlay:
        check_image_path(args.overlay, "--overlay")
    _check_cutout(args)
    named = [(opt, path) for opt, path in
             (("--out", args.out), ("--overlay", args.overlay), ("--cutout", args.cutout),
              ("--report", args.report))
             if path]
    paths = check_outputs(named, (("image", args.image), ("--strokes", args.strokes),
                                  ("--hard", args.hard)))
    return [(opt, p) for (opt, _), p in zip(named, paths)]


def cutout_labels(args: argparse.Namespace) -> list[int]:
    """The labels ``--cutout`` keeps: every ``--cutout-label`` given, in order, once each;
    label 1 (the object, also a rectangle's) where none is given."""
    chosen = [v for group in args.cutout_label for v in group]
    return list(dict.fromkeys(chosen)) or [1]


def add_cutout_shape_arguments(p: argparse.ArgumentParser) -> None:
    """``--cutout-label`` and ``--feather``: which labels a cut-out keeps and how soft its edge
    is (for every command that writes cut-outs; :func:`check_cutout_shape` checks them)."""
    p.add_argument("--cutout-label", type=_labels_list, action="append", default=[],
                   metavar="K", help="label the cut-out keeps (default 1, the object); "
                                     "repeatable or a comma list (1,3)")
    p.add_argument("--feather", type=_feather, metavar="PX",
                   help="with --cutout: a soft edge PX pixels wide across the labels' boundary "
                        "(default 0, a hard edge)")


def check_cutout_shape(args: argparse.Namespace, k: int, cutout: str = "--cutout") -> None:
    """``--cutout-label`` and ``--feather`` only with a cut-out (``cutout``: how the option
    that asks for one reads) and the labels within K, refused in one sentence."""
    if not args.cutout:
        given = [opt for opt, used in (("--cutout-label", args.cutout_label),
                                       ("--feather", args.feather is not None)) if used]
        if given:
            one = len(given) == 1
            raise ValueError(f"{' and '.join(given)} {'needs' if one else 'need'} {cutout}: "
                             f"{'it shapes' if one else 'they shape'} a cut-out, and none "
                             "was asked for")
        return
    bad = [v for v in cutout_labels(args) if v > k]
    if bad:
        span = "1 and 2" if k == 2 else f"1 to {k}"
        raise ValueError(f"cannot keep --cutout-label {bad[0]}: with K = {k} the labels "
                         f"are {span}")


def _check_cutout(args: argparse.Namespace) -> None:
    """``--cutout``'s format and :func:`check_cutout_shape`, before any work."""
    from segapp.core.formats import check_cutout_path  # noqa: PLC0415

    if args.cutout:
        check_cutout_path(args.cutout, "--cutout")
    check_cutout_shape(args, args.k, "--cutout OUT.png")


def segment_params(args: argparse.Namespace, k: int) -> Any:
    """The :class:`segapp.core.pipeline.SegmentParams` of :func:`add_model_arguments`'
    options, for ``k`` labels."""
    from segapp.core.pipeline import SegmentParams  # noqa: PLC0415
    from solver.mrf import Constraints  # noqa: PLC0415
    from solver.mrf.options import DEFAULT_OPTIONS  # noqa: PLC0415

    admm = {name: v for name, v in (("max_iter", args.max_iter), ("rho0", args.rho0),
                                    ("rho_growth", args.rho_growth)) if v is not None}
    return SegmentParams(k=k, lam=args.lam, beta=args.beta, colour_model=args.colour_model,
                         solver=args.solver, backend=args.backend, seed=args.seed, admm=admm,
                         options=DEFAULT_OPTIONS.with_polish(not args.no_polish),
                         rounds=args.rounds, model=_model(args),
                         constraints=Constraints(area=tuple(args.area),
                                                 apart=tuple(args.apart)) or None)


def _model(args: argparse.Namespace) -> Any:
    """The :class:`solver.mrf.ModelOptions` that --one-shot-model and --soft-strokes ask for."""
    from solver.mrf import DEFAULT_MODEL, ONE_SHOT_MODEL  # noqa: PLC0415
    if args.one_shot_model:
        return ONE_SHOT_MODEL
    return replace(DEFAULT_MODEL, fix_strokes=False) if args.soft_strokes else DEFAULT_MODEL


def run(args: argparse.Namespace) -> int:
    """Run ``segapp segment``; returns the exit status (errors raise, see
    :func:`segapp.cli.main`).

    Every output path and format is checked before the image is read; the outputs are rendered
    in memory and written only once all of them are ready
    (:func:`segapp.core.io.write_files_atomic`): the labels (``--labels-palette``: as a
    colour-coded palette PNG, :func:`segapp.core.io.palette_png`), the overlay, the cut-out
    (:func:`segapp.core.io.cutout` of ``--cutout-label``'s labels, ``--feather`` its soft
    edge) and the report.
    """
    from segapp.core.io import load_image, load_label_image, write_files_atomic  # noqa: PLC0415
    from segapp.core.outputs import OutputPaths, render_outputs  # noqa: PLC0415
    from segapp.core.pipeline import run_segmentation  # noqa: PLC0415
    from solver.backend.compile_notice import COMPILE_MESSAGE, first_compile_notice  # noqa: PLC0415

    _check_outputs(args)
    image = load_image(args.image)
    shape = image.shape[:2]
    strokes = load_label_image(args.strokes, shape, what="strokes") if args.strokes else None
    hard = load_label_image(args.hard, shape, what="hard constraints") if args.hard else None
    params = segment_params(args, args.k)
    def note() -> None:  # the first run on a machine compiles for about a minute
        if not args.quiet:
            print(f"segapp: note: {COMPILE_MESSAGE}", file=sys.stderr, flush=True)

    with first_compile_notice(note):
        out = run_segmentation(image, strokes, params, rect=args.rect, hard=hard,
                               reference=args.report is not None)
    for w in out.warnings:
        print(f"segapp: warning: {w}", file=sys.stderr)
    if not out.feasible and not args.allow_infeasible:
        broken = "; ".join(_describe(r).strip() for r in out.constraints if not r.satisfied)
        print(f"segapp: error: the labels found break a constraint ({broken}); nothing was "
              "written (--allow-infeasible writes them)", file=sys.stderr)
        return 1
    report = {**out.as_dict(), "colour_model": args.colour_model, "seed": args.seed,
              "image": str(args.image)}
    # everything rendered in memory first, then written all together
    paths = OutputPaths(Path(args.out), *(Path(p) if p else None for p in
                                          (args.overlay, args.cutout, args.report)),
                        labels_palette=args.labels_palette,
                        cutout_labels=tuple(cutout_labels(args)), feather=args.feather or 0.0)
    write_files_atomic(render_outputs(image, out.labels, args.k, paths, report))
    if not args.quiet:
        gap = "" if out.gap is None else f", {100 * out.gap:+.3f}% vs {report['reference_method']}"
        print(f"{out.method} ({out.backend}): energy {out.energy:.6g}{gap}, "
              f"{out.iterations} iterations, {out.time_s:.3f} s, {out.labels.size} pixels, "
              f"K = {args.k} -> {args.out}")
        for r in out.constraints:
            print(_describe(r))
    return 0


def _describe(r) -> str:
    """One line per constraint for the summary."""
    state = "holds" if r.satisfied else "VIOLATED"
    if r.kind == "area":
        return (f"  area of label {r.labels[0]}: {r.value:.0f} px in [{r.lo:.0f}, {r.hi:.0f}] "
                f"{state}")
    return f"  labels {r.labels[0]} and {r.labels[1]} apart: {r.value:.0f} touching pairs, {state}"
