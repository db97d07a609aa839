"""Constraints on inputs shaped like real use: ADMM against the constrained yardsticks and
against its own unconstrained time (issue 67, deliverable 1).

    python benchmarks/constrained_inputs.py [--max-pixels 3e5] [--split both] [--seed 0]
                                            [--quick] [--out DIR] [--list] [--merge JSON]

The images, their tuning / held-out split (by image, fixed) and the drawn inputs are
``benchmarks/real_inputs.py``'s: a GrabCut rectangle where the image has one, else short
strokes. A person first runs without constraints, looks, then adds one; so each case is run
twice as the app runs it (:func:`segapp.core.pipeline.run_segmentation`, default settings):
unconstrained, and with a constraint set from that first answer:

- ``nest3``: K = 3 short strokes, labels 1 and 3 apart (a nesting; exact yardstick: the
  layered min-cut);
- ``nest4``: K = 4 short strokes, two pairs apart, (1, 3) and (2, 4) (yardstick: Lagrangian
  αβ-swap, best effort, no bound);
- ``area-low`` / ``area-high``: K = 2, label 1's area held to [1.15, 1.25] × / [0.75, 0.85] ×
  its unconstrained area (binding from below / above; yardstick: the parametric min-cut, with
  its Lagrangian lower bound);
- ``area-k3``: K = 3 short strokes, label 1's area held to [0.75, 0.85] × (yardstick:
  Lagrangian αβ-swap);
- ``area+apart``: K = 3 short strokes, 1 and 3 apart and label 2's area held to
  [0.8, 0.9] × (yardstick: Lagrangian αβ-swap).

Per case: the constrained run's energy E, the yardstick's feasible energy E_ref and lower bound
(where it proves one) on the same final model; gap = (E − E_ref)/|E_ref|; gap to the bound;
``best`` = (E − min(E, E_ref))/|E_ref| (0 where ADMM's labels are the best feasible ones
found); whether every constraint holds; and the time ratio: a cold constrained ADMM solve of
the final model over a cold unconstrained ADMM solve of the same model, side by side in this
process (taking turns, the least of three up to 1e5 pixels). The runs' own times (rounds
included, the constrained one warm-started by its rounds) are recorded too. Writes
``DIR/constrained_inputs.json`` and ``DIR/constrained_inputs.md``; progress goes to stderr.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # (run as a script from anywhere)
    sys.path.insert(0, str(ROOT))


def _real_inputs():
    """benchmarks/real_inputs.py as a module (the images, split and drawn inputs)."""
    if "real_inputs" in sys.modules:
        return sys.modules["real_inputs"]
    spec = importlib.util.spec_from_file_location("real_inputs",
                                                  Path(__file__).with_name("real_inputs.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["real_inputs"] = mod  # (its dataclasses look their module up)
    spec.loader.exec_module(mod)
    return mod


ri = _real_inputs()

#: kind -> K
KINDS = {"nest3": 3, "nest4": 4, "area-low": 2, "area-high": 2, "area-k3": 3, "area+apart": 3}
#: issue 67's targets: nestings within 0.5 % of the exact layered min-cut (median 0.1 %); area
#: bounds within 0.5 % of the Lagrangian bound or at/below the best feasible labelling; time at
#: most 2x the unconstrained solve
TARGET = {"nest_worst": 0.005, "nest_median": 0.001, "area_bound": 0.005, "time": 2.0}


@dataclass(frozen=True)
class Case:
    """One input: image, kind and size (pixels)."""

    image: str
    kind: str
    pixels: int
    split: str

    @property
    def k(self) -> int:
        return KINDS[self.kind]

    @property
    def key(self) -> str:
        return f"{self.image}/{self.kind}/{self.pixels}"


def cases(max_pixels: float = 3e5, split: str = "both", quick: bool = False) -> list[Case]:
    """Every kind for every image (the area cases of K = 2 only where the drawn input is not
    empty), each at a rung of :func:`real_inputs.rungs` spread over images and kinds. ``quick``:
    four small images at 1e4 pixels."""
    sizes = ri.rungs(min(max_pixels, 1e4) if quick else max_pixels)
    which = ri.split_of()
    out = []
    for i, spec in enumerate(ri.IMAGES):
        if quick and spec.name not in ri.QUICK_IMAGES:
            continue
        if split != "both" and which[spec.name] != split:
            continue
        for j, kind in enumerate(KINDS):
            out.append(Case(spec.name, kind, sizes[(i + 2 * j) % len(sizes)], which[spec.name]))
    return out


def make_input(case: Case, seed: int, native: dict | None = None):
    """``(image, strokes, rect)``: a rectangle for K = 2 where the image has one, else short
    strokes (real_inputs' drawing, seeded by the case)."""
    spec = next(s for s in ri.IMAGES if s.name == case.image)
    kind = "rect" if case.k == 2 and spec.rect else "short"
    return ri.make_input(ri.Case(case.image, kind, case.k, case.pixels, case.split), seed, native)


#: An area case whose label holds fewer pixels than this in the first answer is skipped (a
#: person does not bound the area of a label the answer barely has).
MIN_AREA_PIXELS = 50


def constraints_for(case: Case, labels: np.ndarray):
    """The constraint a person adds after seeing the unconstrained ``labels``; None for an area
    case whose label has fewer than :data:`MIN_AREA_PIXELS` pixels there."""
    from solver.mrf import AreaBound, Constraints  # noqa: PLC0415

    n = labels.size
    bounded = {"area-low": 1, "area-high": 1, "area-k3": 1, "area+apart": 2}.get(case.kind)
    if bounded is not None and np.count_nonzero(labels == bounded) < MIN_AREA_PIXELS:
        return None

    def area(label: int, lo: float, hi: float) -> AreaBound:
        a = float(np.count_nonzero(labels == label)) / n
        return AreaBound(label, min(lo * a, 1.0), min(hi * a, 1.0))

    return {"nest3": lambda: Constraints(apart=((1, 3),)),
            "nest4": lambda: Constraints(apart=((1, 3), (2, 4))),
            "area-low": lambda: Constraints(area=(area(1, 1.15, 1.25),)),
            "area-high": lambda: Constraints(area=(area(1, 0.75, 0.85),)),
            "area-k3": lambda: Constraints(area=(area(1, 0.75, 0.85),)),
            "area+apart": lambda: Constraints(area=(area(2, 0.8, 0.9),), apart=((1, 3),)),
            }[case.kind]()


def run_case(case: Case, seed: int, native: dict | None = None) -> dict:
    """The unconstrained run, the constrained run with its yardstick, and an unconstrained ADMM
    solve of the constrained run's final model (for the time ratio); the case's record."""
    from segapp.core.pipeline import SegmentParams, run_segmentation  # noqa: PLC0415
    from solver.mrf import solve_mrf, with_constraints  # noqa: PLC0415

    img, strokes, rect = make_input(case, seed, native)
    first = run_segmentation(img, strokes, SegmentParams(k=case.k), rect=rect, reference=False)
    cons = constraints_for(case, first.labels)
    h, w = img.shape[:2]
    head = {"image": case.image, "kind": case.kind, "k": case.k, "n": h * w,
            "split": case.split, "rect": rect is not None, "constraints": repr(cons)}
    if cons is None:
        return {**head, "skipped": f"label area under {MIN_AREA_PIXELS} pixels unconstrained"}
    try:
        res = run_segmentation(img, strokes, SegmentParams(k=case.k, constraints=cons),
                               rect=rect, reference=True)
    except ValueError as exc:  # (a constraint the drawing breaks: refused, as the app does)
        return {**head, "skipped": f"refused: {exc}"}
    plain = with_constraints(res.problem, None)
    con_s, free_s = [], []
    for _ in range(3 if res.problem.n <= 100_000 else 1):  # (taking turns; the least of each)
        con_s.append(solve_mrf(res.problem, "admm").time_s)
        free_s.append(solve_mrf(plain, "admm").time_s)
    e, ref, bound = res.energy, res.reference_energy, res.reference_bound
    scale = abs(ref) if ref else 1.0
    return {
        **head, "skipped": None,
        "reference": res.reference_detail or res.reference_method,
        "energy_admm": e, "energy_ref": ref, "bound": bound,
        "gap": None if ref is None else (e - ref) / scale,
        "gap_bound": None if bound is None else (e - bound) / max(abs(bound), 1e-12),
        "best": None if ref is None else (e - min(e, ref)) / scale,
        "feasible": bool(all(r.satisfied for r in res.constraints)),
        "run_s": res.time_s, "first_run_s": first.time_s, "ref_s": res.reference_time_s,
        "admm_s": min(con_s), "free_s": min(free_s),
        "time_ratio": min(con_s) / min(free_s) if min(free_s) > 0 else None,
        "run_ratio": res.time_s / first.time_s if first.time_s > 0 else None,
        "iterations": res.iterations, "status": res.status,
    }


# -- report ---------------------------------------------------------------------------------------

def _pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:+.3f}%"


def on_target(r: dict) -> bool:
    """Whether a case meets issue 67's target for its kind (time apart)."""
    if not r["feasible"]:
        return False
    if r["kind"].startswith("nest") and r["bound"] is not None:  # exact: the layered min-cut
        return r["gap"] <= TARGET["nest_worst"]
    if r["gap_bound"] is not None and r["gap_bound"] <= TARGET["area_bound"]:
        return True
    return r["best"] is not None and r["best"] <= 0.0


def summary(records: list[dict]) -> str:
    """Markdown: per split and kind, the cases, median and worst gap to the yardstick, median
    gap to the bound, cases on target, infeasible cases, median and worst time ratio."""
    lines = ["| split | kind | cases | median gap | worst gap (case) | median gap to bound "
             "| on target | infeasible | median time ratio | worst time ratio | median run ratio |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for split in ("tuning", "heldout"):
        for kind in (*KINDS, "all"):
            rs = [r for r in records if r["split"] == split and (kind == "all"
                                                                  or r["kind"] == kind)]
            rs = [r for r in rs if not r.get("skipped") and r["gap"] is not None]
            if not rs:
                continue
            gaps = np.array([r["gap"] for r in rs])
            worst = rs[int(np.argmax(gaps))]
            bounds = [r["gap_bound"] for r in rs if r["gap_bound"] is not None]
            ratios = [r["time_ratio"] for r in rs if r["time_ratio"] is not None]
            runs = [r["run_ratio"] for r in rs if r["run_ratio"] is not None]
            lines.append(
                f"| {split} | {kind} | {len(rs)} | {_pct(float(np.median(gaps)))} | "
                f"{_pct(float(gaps.max()))} ({worst['image']}, n={worst['n']}) | "
                f"{_pct(float(np.median(bounds))) if bounds else '—'} | "
                f"{sum(on_target(r) for r in rs)} of {len(rs)} | "
                f"{sum(not r['feasible'] for r in rs)} | {np.median(ratios):.1f}× | "
                f"{max(ratios):.1f}× | {np.median(runs):.1f}× |")
    return "\n".join(lines) + "\n"


def table(records: list[dict]) -> str:
    """Markdown: a row per case."""
    lines = ["| split | image | kind | n | yardstick | gap | gap to bound | feasible "
             "| ADMM s | unconstrained s | ratio |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    order = {"tuning": 0, "heldout": 1}
    for r in sorted(records, key=lambda r: (order[r["split"]], r["image"],
                                            list(KINDS).index(r["kind"]))):
        if r.get("skipped"):
            lines.append(f"| {r['split']} | {r['image']} | {r['kind']} | {r['n']} | skipped: "
                         f"{r['skipped']} | | | | | | |")
            continue
        flag = "" if on_target(r) else " ⚠"
        lines.append(f"| {r['split']} | {r['image']} | {r['kind']} | {r['n']} | "
                     f"{r['reference']} | {_pct(r['gap'])}{flag} | {_pct(r['gap_bound'])} | "
                     f"{'yes' if r['feasible'] else 'NO'} | {r['admm_s']:.2f} | "
                     f"{r['free_s']:.2f} | {r['time_ratio']:.1f}× |")
    return "\n".join(lines) + "\n"


def report(records: list[dict], settings: dict) -> str:
    """The Markdown file: settings, the summary and the per-case table."""
    return ri.halves_report(
        "Constraints on real inputs: ADMM against the constrained yardsticks",
        "constrained_inputs.py", records, settings,
        "Gap = (E_admm − E_ref)/|E_ref| on the constrained run's final model; gap to bound "
        "= (E_admm − bound)/|bound| where the yardstick proves one; ratio = the constrained "
        "ADMM solve's time over an unconstrained ADMM solve of the same model (cold, side by "
        "side); run ratio = the constrained run's solve time (its rounds included) over the "
        "unconstrained run's; ⚠ = off issue 67's target (nestings within 0.5 % of the exact "
        "layered min-cut; area bounds within 0.5 % of the bound or at or below the best "
        "feasible energy found).",
        [("Summary", summary(records)), ("Cases", table(records))])


def main(argv: list[str] | None = None) -> int:
    """Build the cases, run each, write JSON and Markdown."""
    ap = ri.half_parser(__doc__, "constrained_inputs", 3e5, "3e5; 1e6 adds the 1 MP rung",
                        "four small images at 1e4 pixels")
    ap.add_argument("--merge", help="a constrained_inputs.json whose records of the other half "
                    "are kept beside this run's (each case's times are side by side anyway)")
    args = ap.parse_args(argv)
    todo = cases(args.max_pixels, args.split, args.quick)
    t_start = time.perf_counter()
    if (begun := ri.begin_run(args, todo)) is None:
        return 0
    out, native = begun
    records: list[dict] = []
    if args.merge and args.split != "both":
        records = [r for r in json.loads(Path(args.merge).read_text())["records"]
                   if r["split"] != args.split]
    which = ri.split_of()

    def write() -> dict:  # (after every case: a crash or a kill keeps the cases done)
        settings = {
            "argv": " ".join(argv if argv is not None else sys.argv[1:]),
            "date": time.strftime("%Y-%m-%d"), "max_pixels": args.max_pixels,
            "split_run": args.split, "seed": args.seed, "quick": args.quick,
            "wall_s": time.perf_counter() - t_start, "targets": TARGET,
            "cases_done": len(records), "cases": len(todo), "merged": args.merge,
            "split": {s: [n for n in which if which[n] == s] for s in ("tuning", "heldout")},
        }
        _write_atomic(out / "constrained_inputs.json",
                      json.dumps({"settings": settings, "records": records}, indent=1) + "\n")
        _write_atomic(out / "constrained_inputs.md", report(records, settings))
        return settings

    for i, case in enumerate(todo, 1):
        t0 = time.perf_counter()
        rec = run_case(case, args.seed, native)
        records.append(rec)
        write()
        said = (f"skipped ({rec['skipped']})" if rec.get("skipped") else
                f"gap {_pct(rec['gap'])}, to bound {_pct(rec['gap_bound'])}, feasible "
                f"{rec['feasible']}, ratio {rec['time_ratio']:.1f}x")
        print(f"[{i}/{len(todo)}] {case.split} {case.key}: {said} "
              f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
    write()
    print(summary(records))
    return 0


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in its folder (never half-written)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


if __name__ == "__main__":
    sys.exit(main())
