"""Throughput of ``segapp batch``: photos a second with 1 and 2 local Dask workers, against a
plain loop of the same per-photo work in one process, and each worker's peak memory.

    python benchmarks/batch.py                      # 200 photos of 0.25-1 MP, 2 rounds
    python benchmarks/batch.py --photos 24 --rounds 1

The photos are made from the bundled ones (cameraman, coffee, cells, washer): each a random
crop of one of them, flipped at random and resized to between 0.25 and 1 megapixels (seeded, so
every run gets the same set). Every photo is segmented with the GrabCut-style rectangle
``--rect-fraction 0.1,0.1,0.8,0.8`` (K = 2, the default parameters), and its labels written.

Each configuration runs in a fresh Python process, as a user's command would, and its wall time
counts everything from the first import to the last file (the cluster's start and close for the
batches, the compiled kernels' loading for all): ``loop`` calls :func:`segapp.batch.segment_one`
(what ``segapp segment`` does for one photo: read, segment, write atomically) photo after photo;
``workers=N`` is :func:`segapp.batch.run` on a local cluster of N processes. The configurations
take turns (loop, 1, 2, loop, 1, 2, ...), so a busy machine slows them alike; the overhead is
the ratio of the batch's wall time to the loop's in the same round. Peak memory is the largest
resident set of a worker process (or the loop's process), from ``getrusage``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

ASSETS = Path(__file__).resolve().parent.parent / "segapp" / "assets"
SOURCES = ("cameraman.png", "coffee.png", "cells.png", "washer.png")
RECT = (0.1, 0.1, 0.8, 0.8)


def make_photos(folder: Path, n: int, seed: int = 0, low: float = 0.25e6,
                high: float = 1e6) -> list[Path]:
    """``n`` photos of ``low``..``high`` pixels cut from the bundled ones, written to
    ``folder``."""
    rng = np.random.default_rng(seed)
    sources = [cv2.imread(str(ASSETS / s), cv2.IMREAD_COLOR) for s in SOURCES]
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        src = sources[i % len(sources)]
        h, w = src.shape[:2]
        ch, cw = int(h * rng.uniform(0.7, 1.0)), int(w * rng.uniform(0.7, 1.0))
        y, x = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
        crop = src[y:y + ch, x:x + cw]
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        scale = np.sqrt(rng.uniform(low, high) / (ch * cw))
        size = (max(8, round(cw * scale)), max(8, round(ch * scale)))
        photo = cv2.resize(np.ascontiguousarray(crop), size, interpolation=cv2.INTER_CUBIC)
        path = folder / f"photo{i:03d}.png"
        cv2.imwrite(str(path), photo)
        out.append(path)
    return out


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child(mode: str, folder: Path, out: Path) -> dict:
    """One configuration, in this (fresh) process; returns its figures."""
    t0 = time.perf_counter()
    from segapp import batch  # noqa: PLC0415 - the import is part of what is timed
    from segapp.core.pipeline import SegmentParams  # noqa: PLC0415

    images = sorted(folder.glob("*.png"))
    params = SegmentParams()
    annotation = batch.Annotation(rect_fraction=RECT)
    if mode == "loop":
        outputs = batch.BatchOutputs()
        out.mkdir(parents=True, exist_ok=True)
        rows = [batch.segment_one(batch.Task(p, outputs.paths(out, p.stem), annotation, params))
                for p in images]
        peaks = [_peak_rss_mb()]
    else:
        from distributed import Client  # noqa: PLC0415

        with batch.local_cluster(int(mode)) as cluster, Client(cluster) as client:
            client.wait_for_workers(int(mode), timeout=120)
            summary = batch.run(images, out, params, annotation=annotation, scheduler=client)
            peaks = sorted(client.run(_peak_rss_mb).values())
        rows = summary.rows
    wall = time.perf_counter() - t0
    return {"mode": mode, "photos": len(images), "done": sum(r["status"] == "done" for r in rows),
            "wall_s": wall, "photos_per_s": len(images) / wall,
            "pixels": sum(int(r["width"] or 0) * int(r["height"] or 0) for r in rows),
            "work_s": sum(float(r["time_s"] or 0) for r in rows),
            "peak_rss_mb": peaks}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--photos", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    ap.add_argument("--child", nargs=3, metavar=("MODE", "PHOTOS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        mode, folder, out = args.child
        print(json.dumps(child(mode, Path(folder), Path(out))))
        return 0

    with tempfile.TemporaryDirectory(prefix="segapp-batch-bench-") as tmp:
        folder = Path(tmp) / "photos"
        photos = make_photos(folder, args.photos)
        mp = [cv2.imread(str(p)).shape[:2] for p in photos]
        mp = [h * w / 1e6 for h, w in mp]
        print(f"{len(photos)} photos, {min(mp):.2f}-{max(mp):.2f} MP (total {sum(mp):.1f} MP), "
              f"{os.cpu_count()} cores")
        runs = []
        for r in range(args.rounds):
            for mode in ("loop", "1", "2"):
                out = Path(tmp) / f"out-{mode}-{r}"
                res = subprocess.run([sys.executable, __file__, "--child", mode, str(folder),
                                      str(out)], capture_output=True, text=True, check=True)
                fig = json.loads(res.stdout.strip().splitlines()[-1])
                fig["round"] = r
                runs.append(fig)
                print(f"round {r} {'loop' if mode == 'loop' else 'workers=' + mode:>9}: "
                      f"{fig['wall_s']:7.1f} s, {fig['photos_per_s']:.3f} photos/s, "
                      f"{fig['done']}/{fig['photos']} done, {fig['work_s']:.1f} s in the photos, "
                      f"peak RSS "
                      f"{', '.join(f'{m:.0f}' for m in fig['peak_rss_mb'])} MB", flush=True)
        for mode in ("1", "2"):
            ratios = [b["wall_s"] / a["wall_s"] for a in runs if a["mode"] == "loop"
                      for b in runs if b["mode"] == mode and b["round"] == a["round"]]
            print(f"workers={mode}: wall time / loop's, round by round: "
                  f"{', '.join(f'{x:.3f}' for x in ratios)}")
        if args.json:
            args.json.write_text(json.dumps({"photos": len(photos), "megapixels": mp,
                                             "cores": os.cpu_count(), "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
