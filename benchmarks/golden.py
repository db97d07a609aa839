"""Record, or check against a record, the exact answers of a fixed set of solves.

    python benchmarks/golden.py record OUT.json
    python benchmarks/golden.py check OUT.json

For refactoring: a change that must not alter behaviour is recorded before and checked after, in
the same environment (numpy and numba versions, CPU), since a different machine may round a few
operations differently. Each case stores a SHA-256 of the labels, the energy (exact repr), the
energy before the polish, the iteration count and the length of the history, so "identical"
means bit for bit. The set: the bundled cameraman with its strokes at K = 2, 3, 4, solved whole
(1e4 pixels) and coarse to fine (1e5 and 2.5e5: three and four pyramid levels), from the centre
and from a seeded random start; a GrabCut rectangle; hard constraints; the yardsticks; and
``solve_bqp`` on random BQPs with equality, inequality and fixed variables.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _asset(name: str) -> Path:
    for folder in (ROOT / "segapp" / "assets", ROOT / "assets"):
        if (folder / name).exists():
            return folder / name
    raise FileNotFoundError(name)


def _sample(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The cameraman and its K-label strokes resized to about ``n`` pixels (as ``segapp bench``)."""
    import cv2  # noqa: PLC0415

    img = cv2.imread(str(_asset("cameraman.png")), cv2.IMREAD_GRAYSCALE)
    st = cv2.imread(str(_asset(f"cameraman_strokes_k{k}.png")), cv2.IMREAD_UNCHANGED)
    h, w = img.shape
    s = (n / (h * w)) ** 0.5
    size = (max(2, round(w * s)), max(2, round(h * s)))
    small_img = cv2.resize(img, size, interpolation=cv2.INTER_AREA)
    small = np.zeros(small_img.shape, np.int32)
    for lab in range(1, k + 1):
        m = cv2.resize((st == lab).astype(np.float32), size, interpolation=cv2.INTER_AREA)
        small[m > 0.25] = lab
    return small_img, small


def _digest(labels: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(labels, dtype=np.int32).tobytes()).hexdigest()[:16]


def _mrf_record(res) -> dict:
    return {"labels": _digest(res.labels), "energy": repr(float(res.energy)),
            "energy_admm": None if res.energy_admm is None else repr(float(res.energy_admm)),
            "iterations": int(res.iterations), "history": len(res.history)}


def cases() -> dict[str, dict]:
    """Every case's record."""
    from solver import solve_bqp  # noqa: PLC0415
    from solver.mrf import build_problem, solve_mrf  # noqa: PLC0415

    out: dict[str, dict] = {}
    for k in (2, 3, 4):
        for n in (10_000, 100_000, 250_000):
            img, strokes = _sample(n, k)
            problem = build_problem(img, strokes, k)
            out[f"k{k}_n{n}"] = _mrf_record(solve_mrf(problem, "admm"))
            if n == 10_000:
                out[f"k{k}_n{n}_seed3"] = _mrf_record(solve_mrf(problem, "admm", seed=3))
                out[f"k{k}_n{n}_nopolish"] = _mrf_record(solve_mrf(problem, "admm", polish=False))
                ref = "mincut" if k == 2 else "expansion"
                out[f"k{k}_n{n}_{ref}"] = _mrf_record(solve_mrf(problem, ref))
                if k == 2:
                    out[f"k{k}_n{n}_lp"] = _mrf_record(solve_mrf(problem, "lp"))
    img, _ = _sample(60_000, 2)
    h, w = img.shape
    problem = build_problem(img, None, 2, rect=(w // 5, h // 6, 3 * w // 5, 2 * h // 3))
    out["rect_n60000"] = _mrf_record(solve_mrf(problem, "admm"))
    img, strokes = _sample(40_000, 3)
    hard = np.zeros_like(strokes)
    hard[:10, :10] = 3
    hard[-12:, 40:60] = 1
    problem = build_problem(img, strokes, 3, hard=hard)
    out["hard_k3_n40000"] = _mrf_record(solve_mrf(problem, "admm"))
    rng = np.random.default_rng(7)
    for trial in range(3):
        n = 40
        M = sp.random(n, n, density=0.2, random_state=int(rng.integers(1 << 30)))
        A = (M + M.T).toarray()
        b = rng.normal(size=n)
        eq = (np.ones((1, n)), np.array([n // 3], float))
        ineq = (rng.random((3, n)), np.full(3, n / 4))
        fixed = (np.array([0, 5]), np.array([1.0, 0.0]))
        res = solve_bqp(A, b, eq=eq, ineq=ineq if trial else None, fixed=fixed, seed=trial)
        out[f"bqp_{trial}"] = {"x": _digest(res.x), "objective": repr(float(res.objective)),
                               "iterations": int(res.iterations), "history": len(res.history)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["record", "check"])
    ap.add_argument("path")
    args = ap.parse_args(argv)
    got = cases()
    if args.action == "record":
        Path(args.path).write_text(json.dumps(got, indent=1, sort_keys=True))
        print(f"recorded {len(got)} cases in {args.path}")
        return 0
    want = json.loads(Path(args.path).read_text())
    bad = [name for name in sorted(set(want) | set(got)) if want.get(name) != got.get(name)]
    for name in bad:
        print(f"DIFFERS {name}: recorded {want.get(name)}, now {got.get(name)}")
    print(f"{len(got) - len(bad)} of {len(want)} cases identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
