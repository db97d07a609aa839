"""Peak resident memory of a photo's ADMM segmentation, in bytes a pixel.

    python benchmarks/memory.py [--megapixels 1,3] [--k 2] [--code DIR[,DIR...]] [--sample]

Each case is the bundled coffee scene resized (bicubic, 4:3) to the given size with a GrabCut
rectangle over its middle (as ``benchmarks/profile_solve.py``'s ``photoN`` cases; strokes over
the rectangle's middle for K > 2, which a rectangle cannot take), segmented by
``segapp.core.pipeline.run_segmentation`` with ADMM and its polish, no reference. Every case runs
in a fresh process, which first warms the kernels up on a 64 x 64 crop, then reads its resident
size (the baseline: interpreter, libraries, compiled kernels), then makes the photo and segments
it. Reported: the peak resident size (``getrusage``'s ``ru_maxrss``) less the baseline, per
pixel, with the labels' hash (SHA-256 of the int32 labels) and the energy, so that a change can
be checked for the same answer.

``--code`` runs the cases against other copies of the repository (e.g. a copy of the code
before a change), each its own column set, one case at a time; the table then says for each
case whether every copy gave the same labels and energy. ``--sample`` also samples the resident
size every 2 ms in a thread and names the function the main thread was in at the largest sample
(a hint of where the peak is; the kernels that hold the GIL hide from it).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import hashlib, json, os, resource, sys, threading, time
import numpy as np

mp, k, sample = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
PAGE = os.sysconf("SC_PAGE_SIZE")

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE

import cv2
from segapp.core.io import ASSETS_DIR, load_image
from segapp.core.pipeline import SegmentParams, run_segmentation

def photo(mp):
    src = load_image(ASSETS_DIR / "coffee.png")
    w = int(round((mp * 1e6 * 4 / 3) ** 0.5))
    h = int(round(w * 3 / 4))
    img = cv2.resize(src, (w, h), interpolation=cv2.INTER_CUBIC)
    rect = (w // 5, h // 6, 3 * w // 5, 2 * h // 3)
    strokes = None
    if k > 2:  # bands across the rectangle's middle, one a label, the last one outside
        strokes = np.zeros((h, w), np.int32)
        x, y, rw, rh = rect
        for c in range(k - 1):
            r = y + (c + 1) * rh // k
            strokes[r: r + max(2, h // 200), x + rw // 4: x + 3 * rw // 4] = c + 1
        strokes[: max(2, h // 100), :] = k
        rect = None
    return img, strokes, rect

small, small_strokes, small_rect = photo(64 * 64 / 1e6)
run_segmentation(np.ascontiguousarray(small), small_strokes, SegmentParams(k=k),
                 rect=small_rect, reference=False)
base = rss()
peak_at = [0, ""]
stop = threading.Event()
main_id = threading.main_thread().ident

def sampler():
    while not stop.is_set():
        now = rss()
        if now > peak_at[0]:
            frame = sys._current_frames().get(main_id)
            where = []
            while frame is not None and len(where) < 4:
                co = frame.f_code
                where.append(f"{os.path.basename(co.co_filename)}:{co.co_name}:{frame.f_lineno}")
                frame = frame.f_back
            peak_at[:] = [now, " < ".join(where)]
        time.sleep(0.002)

if sample:
    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()
t0 = time.perf_counter()
img, strokes, rect = photo(mp)
h, w = img.shape[:2]
res = run_segmentation(img, strokes, SegmentParams(k=k), rect=rect, reference=False)
elapsed = time.perf_counter() - t0
if sample:
    stop.set()
    thread.join()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
labels = np.ascontiguousarray(res.labels, dtype=np.int32)
print(json.dumps({
    "pixels": h * w, "k": k, "baseline": base, "peak": peak, "seconds": elapsed,
    "bytes_per_pixel": (peak - base) / (h * w), "energy": repr(float(res.energy)),
    "labels": hashlib.sha256(labels.tobytes()).hexdigest()[:16],
    "sampled_peak": peak_at[0], "sampled_at": peak_at[1],
}))
"""


def run_case(code: Path, megapixels: float, k: int, sample: bool) -> dict:
    """One case in a fresh process importing the repository copy at ``code``; its record."""
    env = {**__import__("os").environ, "PYTHONPATH": str(code)}
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(megapixels), str(k),
                           "1" if sample else "0"], capture_output=True, text=True,
                          check=False, cwd=str(code), env=env)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode
        raise RuntimeError(f"{megapixels:g} MP, K = {k} failed with {code}: {tail}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(codes: list[Path], rows: list[tuple[float, list[dict]]]) -> str:
    """Markdown table: a row per case, bytes a pixel and peak per code copy."""
    names = [c.name if c != ROOT else "this tree" for c in codes]
    head = ["MP", "pixels", "K", "baseline MiB"]
    for name in names:
        head += [f"peak MiB ({name})", f"B/px ({name})"]
    head += ["energy", "labels"] + (["same answer"] if len(codes) > 1 else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for mp, recs in rows:
        first = recs[0]
        cells = [f"{mp:g}", str(first["pixels"]), str(first["k"]),
                 f"{first['baseline'] / 2**20:.0f}"]
        for r in recs:
            cells += [f"{r['peak'] / 2**20:.0f}", f"{r['bytes_per_pixel']:.0f}"]
        cells += [first["energy"], first["labels"]]
        if len(codes) > 1:
            same = all((r["energy"], r["labels"]) == (first["energy"], first["labels"])
                       for r in recs)
            cells.append("yes" if same else "NO")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the memory benchmark; see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--megapixels", default="1,3", help="sizes, comma-separated")
    ap.add_argument("--k", type=int, default=2, help="number of labels")
    ap.add_argument("--code", default=str(ROOT),
                    help="repository copies to measure, comma-separated (default: this one)")
    ap.add_argument("--sample", action="store_true",
                    help="also name where the main thread was at the largest sampled size")
    args = ap.parse_args(argv)
    codes = [Path(c).resolve() for c in args.code.split(",")]
    rows = []
    for mp in (float(s) for s in args.megapixels.split(",")):
        recs = []
        for code in codes:  # (one at a time: each case alone on the machine)
            r = run_case(code, mp, args.k, args.sample)
            recs.append(r)
            print(f"{mp:g} MP K={args.k} [{code}]: peak {r['peak'] / 2**20:.0f} MiB, baseline "
                  f"{r['baseline'] / 2**20:.0f} MiB, {r['bytes_per_pixel']:.0f} B/px, "
                  f"{r['seconds']:.1f} s, energy {r['energy']}, labels {r['labels']}"
                  + (f"; sampled peak {r['sampled_peak'] / 2**20:.0f} MiB at {r['sampled_at']}"
                     if args.sample else ""), file=sys.stderr, flush=True)
        rows.append((mp, recs))
    print(table(codes, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
