"""Where a segmentation's time goes: the build and the solve of named cases under cProfile.

    python benchmarks/profile_solve.py [--cases photo24,k2_5e5,k4_5e5] [--backend gpu]
                                       [--top 25] [--out DIR]

Cases: ``photoN`` is the bundled coffee scene resized to N megapixels with a GrabCut rectangle
over its middle (as ``benchmarks/end_to_end.py``); ``kK_N`` is the cameraman at about N pixels
with its bundled K-label strokes (as ``segapp bench``). Each case is warmed up, then built and
solved twice: once plain (the times reported) and once under cProfile (the hot spots). Prints,
per case, the build and solve seconds, the energy, the peak GPU memory (GPU backend) and the
``--top`` functions by own time and by cumulative time; writes ``DIR/profile_CASE.pstats``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def case_inputs(name: str):
    """``(image, strokes, k, rect)`` of a named case."""
    import cv2  # noqa: PLC0415

    from segapp.cli.bench import sample  # noqa: PLC0415
    from segapp.core.io import ASSETS_DIR, load_image  # noqa: PLC0415

    if name.startswith("photo"):
        mp = float(name[5:])
        src = load_image(ASSETS_DIR / "coffee.png")
        w = int(round((mp * 1e6 * 4 / 3) ** 0.5))
        h = int(round(w * 3 / 4))
        img = cv2.resize(src, (w, h), interpolation=cv2.INTER_CUBIC)
        return img, None, 2, (w // 5, h // 6, 3 * w // 5, 2 * h // 3)
    k_text, n_text = name[1:].split("_")
    k = int(k_text)
    img, strokes = sample(int(float(n_text)), k)
    return img, strokes, k, None


class PeakGPU:
    """Peak bytes in CuPy's memory pool while installed (None without CuPy)."""

    def __init__(self) -> None:
        self.peak = 0
        try:
            import cupy  # noqa: PLC0415
        except Exception:  # noqa: BLE001 - no CuPy, no GPU figure
            self.pool = None
            return
        self.pool = cupy.get_default_memory_pool()

        def alloc(size: int):
            mem = self.pool.malloc(size)
            self.peak = max(self.peak, self.pool.used_bytes())
            return mem

        cupy.cuda.set_allocator(alloc)

    def reset(self) -> None:
        if self.pool is not None:
            self.pool.free_all_blocks()
            self.peak = self.pool.used_bytes()


def run_case(name: str, backend: str, top: int, out: Path, gpu: PeakGPU) -> dict:
    from segapp.core.pipeline import SegmentParams, run_segmentation  # noqa: PLC0415

    img, strokes, k, rect = case_inputs(name)
    params = SegmentParams(k=k, backend=backend)
    # warm-up: every kernel compiled, then a coarse-to-fine solve of a 200 x 200 crop
    from solver.mrf import warm_up  # noqa: PLC0415

    warm_up(k, gpu=backend != "cpu")
    small = np.ascontiguousarray(img[:200, :200])  # (the whole image when it is smaller)
    hs, ws = small.shape[:2]
    small_rect = None if rect is None else (ws // 10, hs // 10, 3 * ws // 4, 3 * hs // 4)
    small_strokes = None
    if strokes is not None:
        small_strokes = np.zeros((hs, ws), np.int32)
        for c in range(k):
            row = hs * (c + 1) // (k + 1)
            small_strokes[row:row + 4, ws // 10:9 * ws // 10] = c + 1
    run_segmentation(small, small_strokes, params, rect=small_rect, reference=False)
    gpu.reset()
    t0 = time.perf_counter()
    res = run_segmentation(img, strokes, params, rect=rect, reference=False)
    total = time.perf_counter() - t0
    record = {"case": name, "pixels": int(img.shape[0] * img.shape[1]), "k": k,
              "backend": res.backend, "build_s": res.build_time_s, "solve_s": res.time_s,
              "total_s": total, "energy": res.energy, "iterations": res.iterations,
              "gpu_peak_mib": gpu.peak / 2**20}
    prof = cProfile.Profile()
    prof.enable()
    run_segmentation(img, strokes, params, rect=rect, reference=False)
    prof.disable()
    prof.dump_stats(str(out / f"profile_{name}.pstats"))
    for key in ("tottime", "cumulative"):
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats(key).print_stats(top)
        lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
        start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls"))
        print(f"--- {name}: top {top} by {key}")
        print("\n".join(lines[start:start + top + 1]))
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="photo24,k2_5e5,k4_5e5")
    ap.add_argument("--backend", default="gpu")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.backend != "cpu":
        from solver.backend import gpu_available  # noqa: PLC0415

        if not gpu_available():
            print(f"no usable GPU for --backend {args.backend}: profiling on the CPU",
                  file=sys.stderr)
            args.backend = "cpu"
    gpu = PeakGPU() if args.backend != "cpu" else PeakGPU.__new__(PeakGPU)
    if args.backend == "cpu":
        gpu.pool, gpu.peak = None, 0
    records = [run_case(c, args.backend, args.top, out, gpu) for c in args.cases.split(",")]
    print("| case | pixels | K | backend | build s | solve s | total s | energy | GPU peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in records:
        print(f"| {r['case']} | {r['pixels']} | {r['k']} | {r['backend']} | {r['build_s']:.3f} | "
              f"{r['solve_s']:.3f} | {r['total_s']:.3f} | {r['energy']:.8g} | "
              f"{r['gpu_peak_mib']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
