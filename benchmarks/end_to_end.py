"""Time a photo segmented end to end, phase by phase, at sizes up to 24 megapixels.

    python benchmarks/end_to_end.py [--megapixels 1,3,12,24] [--backends cpu,gpu] [--out DIR]

The photo is the bundled coffee scene resized (bicubic) to each size, with a GrabCut rectangle
over its middle (K = 2), which is what ``segapp segment photo --rect ...`` does. Each size and
backend runs in a fresh process (so the peak memory is that run's), after a small warm-up solve
(numba's compiled kernels load once per process). Phases: reading the PNG, building the MRF
(colour models, unaries, graph, Laplacian), the ADMM solve with its polish, and writing the
label PNG; no min-cut reference. Writes ``DIR/end_to_end.json`` and ``DIR/end_to_end.md``;
progress goes to stderr. The GPU rows need CuPy and a GPU (``gpu`` is skipped otherwise).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, resource, sys, time
import numpy as np
from segapp.core.io import load_image, save_labels
from segapp.core.pipeline import SegmentParams, run_segmentation

path, out, backend = sys.argv[1], sys.argv[2], sys.argv[3]
small = np.ascontiguousarray(load_image(path)[:64, :64])
run_segmentation(small, None, SegmentParams(backend=backend), rect=(8, 8, 48, 48), reference=False)
t0 = time.perf_counter()
image = load_image(path)
t1 = time.perf_counter()
h, w = image.shape[:2]
rect = (w // 5, h // 6, 3 * w // 5, 2 * h // 3)
res = run_segmentation(image, None, SegmentParams(backend=backend), rect=rect, reference=False)
t2 = time.perf_counter()
save_labels(out, res.labels)
t3 = time.perf_counter()
print(json.dumps({
    "pixels": h * w, "backend": res.backend, "read_s": t1 - t0, "build_s": res.build_time_s,
    "solve_s": res.time_s, "write_s": t3 - t2, "total_s": (t1 - t0) + (t2 - t1) + (t3 - t2),
    "iterations": res.iterations, "energy": res.energy, "warnings": res.warnings,
    "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def make_photo(megapixels: float, path: Path) -> None:
    """The coffee scene resized to about ``megapixels`` (4:3), written as PNG."""
    import cv2  # noqa: PLC0415

    from segapp.core.io import ASSETS_DIR  # noqa: PLC0415

    src = cv2.imread(str(ASSETS_DIR / "coffee.png"), cv2.IMREAD_COLOR)
    w = int(round((megapixels * 1e6 * 4 / 3) ** 0.5))
    h = int(round(w * 3 / 4))
    cv2.imwrite(str(path), cv2.resize(src, (w, h), interpolation=cv2.INTER_CUBIC))


def run_one(photo: Path, backend: str) -> dict:
    """One end-to-end segmentation of ``photo`` in a fresh process; its JSON record."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(photo), f"{tmp}/labels.png",
                               backend], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"end-to-end run failed on {photo.name} ({backend}): "
                           f"{proc.stderr.strip().splitlines()[-1] if proc.stderr else proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(records: list[dict]) -> str:
    """Markdown table, a row per size and backend."""
    lines = ["| pixels | backend | read s | build s | solve s | write s | total s | peak MiB |",
             "|---|---|---|---|---|---|---|---|"]
    for r in records:
        lines.append(f"| {r['pixels'] / 1e6:.1f}M | {r['backend']} | {r['read_s']:.2f} | "
                     f"{r['build_s']:.2f} | {r['solve_s']:.2f} | {r['write_s']:.2f} | "
                     f"{r['total_s']:.2f} | {r['peak_rss_mib']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the end-to-end benchmark; see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--megapixels", default="1,3,12,24", help="sizes, comma-separated")
    ap.add_argument("--backends", default="cpu,gpu", help="cpu and/or gpu")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from solver import gpu_available  # noqa: PLC0415

    backends = [b for b in args.backends.split(",") if b != "gpu" or gpu_available()]
    if "gpu" in args.backends.split(",") and "gpu" not in backends:
        print("no GPU: the gpu rows are skipped", file=sys.stderr)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for mp in (float(s) for s in args.megapixels.split(",")):
            photo = Path(tmp) / f"coffee_{mp:g}mp.png"
            make_photo(mp, photo)
            for backend in backends:
                t = time.perf_counter()
                rec = run_one(photo, backend)
                records.append(rec)
                print(f"{mp:g} MP {backend}: total {rec['total_s']:.2f} s (build "
                      f"{rec['build_s']:.2f}, solve {rec['solve_s']:.2f}), peak "
                      f"{rec['peak_rss_mib']:.0f} MiB [{time.perf_counter() - t:.0f} s]",
                      file=sys.stderr, flush=True)
    (out / "end_to_end.json").write_text(json.dumps(records, indent=1))
    (out / "end_to_end.md").write_text(table(records))
    print(table(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
