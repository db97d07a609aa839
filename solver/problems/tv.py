"""Binary total-variation denoising: an ℓ1-regularised BQP (the paper's §5), with its exact
optimum by a graph cut.

The problem: given a noisy grey image ``f`` (``H x W``, values around 0 and 1), find the binary
image

    minimise  E(x) = sum_i (x_i - f_i)^2 + lam sum_{i~j} |x_i - x_j|   over x in {0,1}^(H W),

where ``i~j`` runs over the 4-neighbour pairs (each unordered pair once). Pixel ``(row, col)``
has index ``row * W + col``.

**The ℓ1-regularised BQP that ADMM solves.** ``sum_i (x_i - f_i)^2 = x'Ix - 2 f'x + f'f`` (exactly,
for any real ``x``), and the pairwise sum is ``lam ||C x||_1`` with ``C`` the sparse difference
operator (:func:`difference_operator`: one row ``e_j - e_i`` per neighbour pair, horizontal pairs
first). So :func:`solve_admm` calls :func:`solver.bqp.solve_bqp` with ``A = I``, ``b = -2 f`` and
``l1=(C, lam)``, the extra split ``z0 = C x`` of the paper's §5; the energy is its objective plus
the constant ``f'f``. (For binary ``x``, ``|x_i - x_j| = (x_i - x_j)^2`` too, so the problem is
also an ordinary BQP with a graph Laplacian; the point here is to exercise the ℓ1 split, which
also applies where no such identity exists.)

**The exact optimum.** ``E`` is submodular (its pairwise terms are ``lam [x_i != x_j]``), so an
s-t minimum cut gives a global minimiser (:func:`mincut`, PyMaxflow, as
:mod:`solver.reference.mincut` uses it): a pixel on the sink side takes value 1 and pays
``(1 - f_i)^2`` on its source edge, one on the source side value 0 and pays ``f_i^2``; each
neighbour pair has an edge of capacity ``lam`` both ways.

**Data.** :func:`make_problem` draws a clean binary image of a few discs and rectangles (seeded)
and adds Gaussian noise of standard deviation ``noise``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import maxflow
import numpy as np
import scipy.sparse as sp

from solver.bqp import solve_bqp

log = logging.getLogger(__name__)

#: Names of the methods, as the benchmark records them.
METHODS = ("admm", "mincut")


def difference_operator(h: int, w: int) -> sp.csr_matrix:
    """The 4-neighbour difference operator of an ``h x w`` grid.

    Parameters
    ----------
    h, w : int
        Image height and width.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (h (w - 1) + (h - 1) w, h w)
        One row ``x_j - x_i`` per neighbour pair: first the horizontal pairs ``(r, c), (r, c + 1)``
        row by row, then the vertical ones ``(r, c), (r + 1, c)``.
    """
    idx = np.arange(h * w).reshape(h, w)
    i = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    j = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    m = i.size
    rows = np.repeat(np.arange(m), 2)
    cols = np.column_stack([i, j]).ravel()
    vals = np.tile([-1.0, 1.0], m)
    return sp.csr_matrix((vals, (rows, cols)), shape=(m, h * w))


def clean_image(size: int, seed: int = 0) -> np.ndarray:
    """A ``size x size`` binary image of a few discs and rectangles (uint8, 0/1), seeded."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / max(size - 1, 1)
    img = np.zeros((size, size), dtype=bool)
    for _ in range(4):
        cy, cx, r = rng.uniform(0.2, 0.8), rng.uniform(0.2, 0.8), rng.uniform(0.08, 0.22)
        img |= (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
    for _ in range(2):
        y0, x0 = rng.uniform(0.05, 0.7, size=2)
        hh, ww = rng.uniform(0.1, 0.3, size=2)
        img ^= (yy >= y0) & (yy <= y0 + hh) & (xx >= x0) & (xx <= x0 + ww)
    return img.astype(np.uint8)


@dataclass
class TVProblem:
    """A binary TV denoising instance.

    Attributes
    ----------
    f : numpy.ndarray, shape (H, W)
        The noisy image (float64).
    lam : float
        Weight of the total variation (> 0).
    clean : numpy.ndarray or None
        The clean binary image ``f`` was made from, if known.
    """

    f: np.ndarray
    lam: float
    clean: np.ndarray | None = field(default=None, repr=False)

    @property
    def shape(self) -> tuple[int, int]:
        """``(H, W)``."""
        return self.f.shape

    @property
    def n(self) -> int:
        """Number of pixels (variables)."""
        return int(self.f.size)

    def energy(self, x: Any) -> float:
        """``E(x) = sum (x - f)^2 + lam * (sum of |differences| over 4-neighbour pairs)``,
        computed directly on the image (not through the BQP)."""
        x = np.asarray(x, dtype=np.float64).reshape(self.shape)
        data = float(np.sum((x - self.f) ** 2))
        tv = float(np.abs(np.diff(x, axis=1)).sum() + np.abs(np.diff(x, axis=0)).sum())
        return data + self.lam * tv

    def bqp(self) -> tuple[sp.csr_matrix, np.ndarray, float, sp.csr_matrix, float]:
        """``(A, b, constant, C, lam)`` with ``E(x) = x'Ax + b'x + constant + lam ||C x||_1``."""
        f = self.f.ravel().astype(np.float64)
        A = sp.identity(self.n, format="csr", dtype=np.float64)
        return A, -2.0 * f, float(f @ f), difference_operator(*self.shape), float(self.lam)


def make_problem(size: int, noise: float = 0.6, lam: float = 0.8, seed: int = 0) -> TVProblem:
    """A ``size x size`` instance: :func:`clean_image` plus Gaussian noise.

    Parameters
    ----------
    size : int
        Image side (``size**2`` pixels).
    noise : float
        Standard deviation of the noise added to the 0/1 image.
    lam : float
        TV weight.
    seed : int
        Seeds the image and the noise.
    """
    if size < 2:
        raise ValueError(f"size must be at least 2, got {size}")
    clean = clean_image(size, seed)
    rng = np.random.default_rng(seed + 1_000_003)
    f = clean + noise * rng.standard_normal(clean.shape)
    return TVProblem(f=f, lam=float(lam), clean=clean)


def mincut(problem: TVProblem) -> np.ndarray:
    """A global minimiser of ``problem.energy`` by an s-t minimum cut (PyMaxflow).

    Returns
    -------
    numpy.ndarray, shape (H, W), uint8
        The optimal binary image.
    """
    h, w = problem.shape
    f = problem.f.astype(np.float64)
    cost0, cost1 = f ** 2, (1.0 - f) ** 2
    lo = np.minimum(cost0, cost1)
    g = maxflow.Graph[float]()
    nodes = g.add_grid_nodes((h, w))
    for off in ((0, 1), (1, 0)):  # right and down neighbours; symmetric: lam both ways
        struct = np.zeros((3, 3))
        struct[1 + off[0], 1 + off[1]] = 1.0
        g.add_grid_edges(nodes, weights=problem.lam, structure=struct, symmetric=True)
    g.add_grid_tedges(nodes, cost1 - lo, cost0 - lo)
    g.maxflow()
    return np.asarray(g.get_grid_segments(nodes)).astype(np.uint8)


def solve_admm(problem: TVProblem, **kwargs: Any) -> tuple[np.ndarray, Any]:
    """Minimise ``problem.energy`` by ℓ2-box ADMM with the ℓ1 split (``solve_bqp(..., l1=...)``).

    Parameters
    ----------
    problem : TVProblem
    **kwargs
        Passed to :func:`solver.bqp.solve_bqp` (``polish``, ``rho_l1``, ADMM parameters).

    Returns
    -------
    x : numpy.ndarray, shape (H, W), uint8
    result : ADMMResult
        ``result.objective`` plus ``f'f`` is the energy of ``x``.
    """
    A, b, const, C, lam = problem.bqp()
    res = solve_bqp(A, b, l1=(C, lam), **kwargs)
    return res.x.reshape(problem.shape).astype(np.uint8), res


def run_methods(problem: TVProblem, **kwargs: Any) -> list[dict]:
    """Run ADMM and the graph cut; one record per method ``{method, size, pixels, energy,
    time_s, ...}`` (``size`` is the image side)."""
    records = []
    t0 = time.perf_counter()
    x, res = solve_admm(problem, **kwargs)
    t_admm = time.perf_counter() - t0
    t0 = time.perf_counter()
    xc = mincut(problem)
    t_cut = time.perf_counter() - t0
    e_cut = problem.energy(xc)
    base = {"size": int(problem.shape[0]), "pixels": problem.n, "lam": problem.lam}
    for method, xm, t, extra in (
            ("admm", x, t_admm, {"iterations": res.iterations, "status": res.status}),
            ("mincut", xc, t_cut, {})):
        e = problem.energy(xm)
        rec = {"method": method, **base, "energy": e, "time_s": t,
               "gap": (e - e_cut) / abs(e_cut), **extra}
        if problem.clean is not None:
            rec["pixel_error"] = float(np.mean(xm != problem.clean))
        records.append(rec)
    return records
