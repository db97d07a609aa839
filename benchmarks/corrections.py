"""How fast a correction is: the robot user's strokes on the 1 MP composites of
benchmarks/accuracy.py, each re-run both ways in the app's pipeline, side by side.

    python benchmarks/corrections.py [--split tuning|held-out|both] [--strokes 5]
                                     [--pixels 1e6] [--out DIR] [--max-cases N]

For each K = 2 composite of the chosen size: the rectangle alone (a cold run, as the app's
first Run), then up to ``--strokes`` corrections, each the robot user's next disk stroke
(:func:`accuracy.next_click`) on the answer so far. Every correction is solved twice in turn
by ``run_segmentation`` (no reference, as the app's Follow the brush): ``cold`` (from the drawing
alone: the colour models fitted and re-estimated, three rounds) and ``correction`` (the app's
default after a stroke: the models fitted once to the last answer with the strokes, the solve
started from that answer). The user follows the correction's answer. Reported per way: the
wall time of each re-run (median, mean), the IoU after the last stroke, the ratio of the two
times stroke by stroke, and each run's energy gap to the exact min-cut of its own final model
(solved after the clock stops). Writes ``DIR/corrections.json`` and ``DIR/corrections.md``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return sys.modules[name]


data = _load("accuracy_data")
acc = _load("accuracy")


def timed(image, strokes, rect, previous):
    """One run as the app makes it: its labels, wall time, and the gap of its energy to the
    exact min-cut of its own final model (solved after the clock stops)."""
    from segapp.core.pipeline import SegmentParams, run_segmentation  # noqa: PLC0415
    from solver.mrf import solve_mrf  # noqa: PLC0415
    t0 = time.perf_counter()
    out = run_segmentation(image, strokes, SegmentParams(k=2), rect=rect, reference=False,
                           previous=previous)
    elapsed = time.perf_counter() - t0
    best = solve_mrf(out.problem, "mincut").energy
    return out.labels, elapsed, (out.energy - best) / max(1.0, abs(best))


def session(case: data.Case, n_strokes: int, seed: int) -> dict:
    comp = data.composite(case)
    rect = next(inp.rect for inp in data.make_inputs(case, comp, seed) if inp.kind == "rect")
    truth_fg = comp.truth == 1
    image = comp.image
    labels, first_s, first_gap = timed(image, None, rect, None)
    strokes = np.zeros(truth_fg.shape, np.int32)
    radius = acc.click_radius(truth_fg.shape)
    rows = []
    for _ in range(n_strokes):
        click = acc.next_click(labels == 1, truth_fg)
        if click is None:
            break
        x, y, label = click
        strokes[acc.disk(truth_fg.shape, x, y, radius)] = label
        cold, cold_s, cold_gap = timed(image, strokes, rect, None)
        warm, warm_s, warm_gap = timed(image, strokes, rect, labels)
        rows.append({"cold_s": cold_s, "correction_s": warm_s,
                     "gap_cold": cold_gap, "gap_correction": warm_gap,
                     "iou_cold": acc.iou(cold, comp.truth, 2),
                     "iou_correction": acc.iou(warm, comp.truth, 2)})
        labels = warm
    return {"case": case.name, "split": case.split, "pixels": int(truth_fg.size),
            "first_run_s": first_s, "first_run_gap": first_gap, "strokes": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="both", choices=("tuning", "held-out", "both"))
    ap.add_argument("--strokes", type=int, default=5)
    ap.add_argument("--pixels", type=float, default=1e6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--max-cases", type=int, help="at most this many composites (a smoke run)")
    args = ap.parse_args(argv)
    cases = [c for c in data.cases(args.split, 3e6)
             if c.k == 2 and abs(c.pixels - args.pixels) <= 0.01 * args.pixels]
    cases = cases[:args.max_cases] if args.max_cases else cases
    if not cases:
        ap.error(f"no K = 2 composite of {args.pixels:g} pixels")
    from solver.mrf import warm_up  # noqa: PLC0415
    warm_up()
    t0 = time.perf_counter()
    sessions = []
    for case in cases:
        s = session(case, args.strokes, args.seed)
        sessions.append(s)
        print(f"{case.name}: {len(s['strokes'])} corrections", file=sys.stderr, flush=True)
    rows = [r for s in sessions for r in s["strokes"]]
    if not rows:
        ap.error("no correction was needed: every rectangle alone was exact")
    summary = {
        "corrections": len(rows),
        "cold_median_s": statistics.median(r["cold_s"] for r in rows),
        "correction_median_s": statistics.median(r["correction_s"] for r in rows),
        "cold_mean_s": statistics.fmean(r["cold_s"] for r in rows),
        "correction_mean_s": statistics.fmean(r["correction_s"] for r in rows),
        "ratio_median": statistics.median(r["correction_s"] / r["cold_s"] for r in rows),
        "iou_cold_mean": statistics.fmean(r["iou_cold"] for r in rows),
        "iou_correction_mean": statistics.fmean(r["iou_correction"] for r in rows),
        "gap_cold_worst": max(r["gap_cold"] for r in rows),
        "gap_correction_worst": max(r["gap_correction"] for r in rows),
        "gap_correction_median": statistics.median(r["gap_correction"] for r in rows),
        "corrections_at_min_cut": sum(r["gap_correction"] <= 1e-6 for r in rows),
    }
    settings = {"argv": sys.argv[1:] if argv is None else argv, "wall_s": time.perf_counter() - t0,
                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load "
                           f"{os.getloadavg()[0]:.1f}",
                "date": time.strftime("%Y-%m-%d %H:%M"), "product": acc.product_version()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "corrections.json").write_text(json.dumps(
        {"settings": settings, "summary": summary, "sessions": sessions}, indent=1))
    md = [f"# Corrections: cold re-run against the app's correction\n",
          f"`python benchmarks/corrections.py {' '.join(settings['argv'])}` — {settings['date']}, "
          f"{len(sessions)} composites of {args.pixels / 1e6:g} MP, {len(rows)} corrections, "
          f"{settings['machine']}; commit {(settings['product']['commit'] or '?')[:10]}.\n",
          "Each correction re-run both ways in turn, in `run_segmentation` (no reference). "
          "IoU: mean over the corrections, of each way's answer after that stroke.\n",
          "Energy gap: to the exact min-cut of the run's own final model, relative.\n",
          "| way | median s | mean s | mean IoU | worst energy gap |", "|---|---|---|---|---|",
          f"| cold (rounds from the drawing) | {summary['cold_median_s']:.2f} | "
          f"{summary['cold_mean_s']:.2f} | {summary['iou_cold_mean']:.3f} | "
          f"{100 * summary['gap_cold_worst']:+.4f}% |",
          f"| correction (from the last answer) | {summary['correction_median_s']:.2f} | "
          f"{summary['correction_mean_s']:.2f} | {summary['iou_correction_mean']:.3f} | "
          f"{100 * summary['gap_correction_worst']:+.4f}% |",
          "", f"Correction / cold, median of the per-stroke ratios: "
          f"{summary['ratio_median']:.2f}. Corrections within 1e-6 of the min-cut: "
          f"{summary['corrections_at_min_cut']} of {len(rows)} (median gap "
          f"{100 * summary['gap_correction_median']:+.5f}%).\n"]
    (args.out / "corrections.md").write_text("\n".join(md) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
