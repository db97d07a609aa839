"""Region settling and colour-parallel ICM as whole-image array operations, for a GPU.

The host kernels (:mod:`solver.mrf.polish.region_kernels`, :mod:`solver.mrf.polish.icm_kernels`)
visit pixels one at a time and only those near the last changes. On a GPU the same moves are a
few dozen whole-image operations of the backend's array module:

* ICM moves all pixels of one colour class ``(row % 2, col % 2)`` at once (no two are
  8-neighbours), reading the eight neighbours as strided slices of the padded labels;
* a region move labels the connected components of a mask (``ndimage.label``, 8-connected),
  sums each component's unary differences and border weights by label with ``bincount``, and
  moves every component that gains at once (components of one mask never touch, so their
  moves do not interact).

The moves, their order and their tolerances are the host's, and every region is evaluated where
the host evaluates only those near a change (the others are the ones it rejected before, with
the same border), so the result is the host's up to the order of each region's sums (ICM's sums
are added in the host's order, bit for bit). The arrays are the backend's: with numpy (the
tests' host stand-in for CuPy) this runs on the CPU, much slower than the compiled kernels.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from solver.backend import Backend
from solver.mrf.polish.stencil import NO_EDGE

log = logging.getLogger(__name__)

#: The eight neighbour directions ``(row, column)``, in the order of the stencil
#: (:func:`solver.mrf.polish.stencil.grid_offsets`): the order the host adds a pixel's edges in.
DIRECTIONS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))

#: Rows of the Laplacian turned into the stencil per pass (bounds the transfer's scratch).
_CHUNK_ROWS = 1 << 22


@dataclass(eq=False)
class DeviceGrid:
    """A problem's grid on a backend: what the device moves read.

    Attributes
    ----------
    backend : Backend
    shape : tuple of int
        ``(H, W)``.
    k : int
        Labels.
    two_lam : float
        ``2 lam``: the Potts weight of an edge whose ends differ is ``two_lam * W_ij``.
    stencil : array
        ``(8, H, W)`` float64, the Laplacian's off-diagonal entry ``-W_ij`` in each direction
        (:data:`DIRECTIONS`), ``NO_EDGE`` across the image border.
    unary : array
        ``(K, H, W)`` float64 unary costs by label.
    movable : array
        ``(H, W)`` bool, the pixels without a hard constraint.
    hard : array
        ``(H W,)`` float64, 1 at a hard pixel (a region holding one stays).
    prefers : list of array
        ``(H, W)`` bool per label ``b``: the pixels whose data alone prefers ``b``.
    """

    backend: Backend
    shape: tuple[int, int]
    k: int
    two_lam: float
    stencil: Any
    unary: Any
    movable: Any
    hard: Any
    prefers: list


#: The grid of the last problem asked for, by the ids of its Laplacian and unaries (one at a
#: time: a 24-megapixel grid holds about 2 GB of the GPU).
_LAST: dict[tuple[int, int, str], DeviceGrid | None] = {}


def device_grid(problem: Any, backend: Backend) -> DeviceGrid | None:
    """The grid of ``problem`` on ``backend``, made once per problem (the last one is kept).

    Parameters
    ----------
    problem : MRFProblem
    backend : Backend

    Returns
    -------
    DeviceGrid or None
        None when the Laplacian is not the full 8-neighbour grid of ``problem.shape`` (an edge
        missing or off the grid, a positive off-diagonal entry) or the image is narrower than
        3 pixels: the host moves then apply.
    """
    L = problem.laplacian
    key = (id(L), id(problem.unary), backend.name)
    if key in _LAST:
        return _LAST[key]
    _LAST.clear()  # (the previous grid's arrays go before the new ones are made)
    grid = _make_grid(problem, backend)
    _LAST[key] = grid
    weakref.finalize(L, _LAST.pop, key, None)
    return grid


def _make_grid(problem: Any, backend: Backend) -> DeviceGrid | None:
    xp = backend.xp
    h, w = (int(s) for s in problem.shape)
    if w < 3 or h < 2:
        return None
    stencil = _stencil(problem.laplacian, h, w, backend)
    if stencil is None:
        log.debug("device moves: the Laplacian is not a full 8-neighbour grid; host moves")
        return None
    k = int(problem.k)
    unary = xp.asarray(np.asarray(problem.unary, dtype=np.float64))
    preferred = xp.argmin(unary, axis=1).reshape(h, w)
    unary = xp.ascontiguousarray(unary.T).reshape(k, h, w)
    hard = xp.asarray(np.asarray(problem.hard).ravel())
    return DeviceGrid(backend, (h, w), k, 2.0 * float(problem.lam), stencil, unary,
                      (hard == 0).reshape(h, w), (hard > 0).astype(xp.float64),
                      [preferred == b for b in range(k)])


def _stencil(L: Any, h: int, w: int, backend: Backend) -> Any:
    """``(8, H, W)`` off-diagonal entries of the CSR Laplacian ``L`` by direction, made on the
    backend in chunks of rows; None unless ``L`` is the full 8-neighbour grid."""
    xp = backend.xp
    n = h * w
    if L.shape != (n, n):
        return None
    out = xp.full((8, n), NO_EDGE)
    indptr = np.asarray(L.indptr, dtype=np.int64)
    for r0 in range(0, n, _CHUNK_ROWS):
        r1 = min(n, r0 + _CHUNK_ROWS)
        p0, p1 = int(indptr[r0]), int(indptr[r1])
        ptr = xp.asarray(indptr[r0:r1 + 1] - p0)
        cols = xp.asarray(L.indices[p0:p1]).astype(xp.int64)
        vals = xp.asarray(L.data[p0:p1])
        rows = xp.searchsorted(ptr, xp.arange(p1 - p0), side="right") - 1 + r0
        dr = cols // w - rows // w
        dc = cols % w - rows % w
        code = (dr + 1) * 3 + (dc + 1)  # 0..8 inside the 3 x 3 neighbourhood, 4 the diagonal
        inside = (xp.abs(dr) <= 1) & (xp.abs(dc) <= 1)
        off = code != 4
        if not bool(xp.all(inside)) or bool(xp.any(vals[off] > 0.0)):
            return None
        direction = xp.where(code > 4, code - 1, code)[off]
        out[direction, rows[off]] = vals[off]
    edges = h * (w - 1) + (h - 1) * w + 2 * (h - 1) * (w - 1)
    if int(xp.count_nonzero(out <= 0.0)) != 2 * edges:  # (a repeated entry leaves a slot out)
        return None
    return out.reshape(8, h, w)


def to_device(grid: DeviceGrid, lab: np.ndarray) -> Any:
    """``(H, W)`` int8 labels on the grid's backend from ``(n,)`` 0-based host labels."""
    return grid.backend.asarray(np.asarray(lab, dtype=np.int8).reshape(grid.shape))


def icm(grid: DeviceGrid, lab: Any, max_sweeps: int = 30) -> int:
    """Colour-parallel ICM on device labels, in place; returns the moves.

    Each sweep moves the four colour classes in turn, each pixel of a class to its cheapest
    label given its neighbours (keeping its own unless another is cheaper by more than a
    relative ``1e-12``), as :func:`solver.mrf.polish.icm_kernels.icm_sweeps`; sweeps until one
    moves nothing or ``max_sweeps``. One copy to the host per sweep (the count).

    Parameters
    ----------
    grid : DeviceGrid
    lab : array
        ``(H, W)`` int8 0-based labels on the grid's backend, changed in place.
    max_sweeps : int

    Returns
    -------
    int
    """
    xp = grid.backend.xp
    moves = 0
    for _ in range(max_sweeps):
        moved = xp.zeros((), dtype=xp.int64)
        for cls in range(4):
            moved = moved + _move_class(grid, lab, cls >> 1, cls & 1)
        count = int(moved)
        moves += count
        if count == 0:
            break
    return moves


def _move_class(grid: DeviceGrid, lab: Any, r0: int, c0: int) -> Any:
    """Move the colour class ``(r0, c0)`` of ``lab`` to its best labels; the count (on the
    backend)."""
    xp, k, two_lam = grid.backend.xp, grid.k, grid.two_lam
    padded = xp.pad(lab, 1, constant_values=-1)
    cur = lab[r0::2, c0::2]
    hc, wc = cur.shape
    total = xp.zeros((hc, wc))
    agree = [xp.zeros((hc, wc)) for _ in range(k)]
    for d, (dr, dc) in enumerate(DIRECTIONS):
        v = grid.stencil[d, r0::2, c0::2]
        e = xp.where(v <= 0.0, v, 0.0)
        nb = padded[1 + r0 + dr::2, 1 + c0 + dc::2][:hc, :wc]
        total = total - e  # (in the host's order: edge by edge, direction by direction)
        for c in range(k):
            agree[c] = agree[c] - xp.where(nb == c, e, 0.0)
    costs = [grid.unary[c, r0::2, c0::2] + two_lam * (total - agree[c]) for c in range(k)]
    cur_cost = costs[0]
    for c in range(1, k):
        cur_cost = xp.where(cur == c, costs[c], cur_cost)
    best, best_cost = cur, cur_cost
    for c in range(k):
        better = costs[c] < best_cost
        best = xp.where(better, xp.int8(c), best)
        best_cost = xp.where(better, costs[c], best_cost)
    take = ((best != cur) & (best_cost < cur_cost - 1e-12 * xp.maximum(1.0, xp.abs(cur_cost)))
            & grid.movable[r0::2, c0::2])
    lab[r0::2, c0::2] = xp.where(take, best, cur)
    return xp.count_nonzero(take)


def move_regions(grid: DeviceGrid, lab: Any, a: int, prefer: Any, cap: int) -> int:
    """Move each 8-connected region of the pixels labelled ``a`` (and ``prefer``, when given)
    with at most ``cap`` pixels and no hard pixel to its best label, if that lowers the energy
    by more than a relative ``1e-9``, as :func:`solver.mrf.polish.region_kernels.move_regions`.

    Moving region ``R`` from ``a`` to ``c`` changes the energy by its unary difference plus
    ``2 lam`` times (its border weight to label ``a`` minus that to label ``c``).

    Parameters
    ----------
    grid : DeviceGrid
    lab : array
        ``(H, W)`` int8 0-based labels on the grid's backend, changed in place.
    a : int
    prefer : array or None
        ``(H, W)`` bool.
    cap : int

    Returns
    -------
    int
        Regions moved.
    """
    be = grid.backend
    xp = be.xp
    h, w = grid.shape
    mask = lab == a
    if prefer is not None:
        mask &= prefer
    comp, nc = be.ndimage.label(mask, structure=np.ones((3, 3), dtype=bool))
    nc = int(nc)
    if nc == 0:
        return 0
    flat = comp.ravel()
    size = xp.bincount(flat, minlength=nc + 1)
    pinned = xp.bincount(flat, weights=grid.hard, minlength=nc + 1) > 0
    ok = (size <= cap) & ~pinned
    ok[0] = False
    idx = xp.flatnonzero(ok[flat])
    if idx.size == 0:
        return 0
    rid = flat[idx]
    row, col = idx // w, idx % w
    lab_flat, mask_flat = lab.ravel(), mask.ravel()
    k = grid.k
    border = [xp.zeros(idx.size) for _ in range(k)]
    for d, (dr, dc) in enumerate(DIRECTIONS):
        v = grid.stencil[d].ravel()[idx]
        j = xp.clip(row + dr, 0, h - 1) * w + xp.clip(col + dc, 0, w - 1)
        weight = xp.where((v <= 0.0) & ~mask_flat[j], -v, 0.0)
        lj = lab_flat[j]
        for c in range(k):
            border[c] = border[c] + xp.where(lj == c, weight, 0.0)
    sums = [xp.bincount(rid, weights=border[c], minlength=nc + 1) for c in range(k)]
    unary_a = grid.unary[a].ravel()[idx]
    delta = xp.zeros((k, nc + 1))
    for c in range(k):
        if c != a:
            delta[c] = (xp.bincount(rid, weights=grid.unary[c].ravel()[idx] - unary_a,
                                    minlength=nc + 1)
                        + grid.two_lam * (sums[a] - sums[c]))
    scale = xp.maximum(1.0, xp.abs(delta).max(axis=0))
    best = xp.argmin(delta, axis=0)
    gain = xp.take_along_axis(delta, best[None, :], axis=0)[0]
    move = ok & (best != a) & (gain < -1e-9 * scale)
    target = xp.where(move, best, -1).astype(xp.int8)[comp]
    lab[...] = xp.where(target >= 0, target, lab)
    return int(xp.count_nonzero(move))


def settle(grid: DeviceGrid, lab: np.ndarray, max_rounds: int, cap: int) -> bool:
    """:func:`solver.mrf.polish.regions.settle_regions`'s rounds on the device: label by label
    the regions of ``a`` and then those of ``a`` whose data prefers each other label ``b``,
    then ICM; until a round moves nothing.

    Parameters
    ----------
    grid : DeviceGrid
    lab : numpy.ndarray
        ``(n,)`` int64 0-based host labels, changed in place (one copy each way).
    max_rounds, cap : int

    Returns
    -------
    bool
        The last round moved nothing.
    """
    dev = to_device(grid, lab)
    settled, moved_total = False, 0
    for _ in range(max_rounds):
        moved = 0
        for a in range(grid.k):
            moved += move_regions(grid, dev, a, None, cap)
            for b in range(grid.k):
                if b != a:
                    moved += move_regions(grid, dev, a, grid.prefers[b], cap)
        moved_total += moved
        if moved == 0:
            settled = True
            break
        icm(grid, dev)
    lab[:] = grid.backend.to_numpy(dev).ravel()
    log.debug("device region moves: %d regions moved", moved_total)
    return settled
