"""The Laplacian of an 8-neighbour grid read straight from the graph's edge weights: each
pixel's eight off-diagonal entries by direction, without a matrix.

The kernels take a graph as one :class:`Graph` of five arrays, ``indptr, indices, data, gw,
geom`` (and a Potts energy as one :class:`Potts`, the graph with the unary costs and ``2
lam``), unpacked once at a kernel's top, so no kernel carries them as loose parameters. On a
grid, ``gw`` holds the edge weights in the order of :func:`solver.mrf.build.graph.grid_edges`
(four blocks, one a direction: east, south, south-east, south-west) and ``geom`` the grid's
shape (:func:`grid_geometry`): a neighbour's index is ``i + offset`` and its weight sits at
``base + i - sub * row`` for its direction, so the CSR arrays are not needed (they are passed
empty) and a photo's polish holds no Laplacian: its CSR arrays were 108 bytes a pixel, and an
``(n, 8)`` stencil that the polish read instead on scattered pixels another 64
(docs/decisions.md, Memory, "The grid view"). A loop over a pixel's slots takes the pixel's row
and border flags once (:func:`place`), then each slot (:func:`link_at`, :func:`neighbour_at`).
Where ``gw`` is empty (a graph that is no complete grid, or narrower than three columns) the
kernels read the CSR arrays.

Every helper gives the neighbours in the CSR's own (increasing column) order, north-west,
north, north-east, west, (the pixel itself,) east, south-west, south, south-east, and the
CSR's values bit for bit (``-(0.0 + w)``), so every sum over a pixel's neighbours adds the same
terms in the same order either way and the kernels' results are identical. A coarse level's
graph (its edges in cell order) gets a block-ordered copy of its weights made from its CSR
arrays (:func:`grid_view`), so its moves read the grid too.
"""

from __future__ import annotations

import weakref
from typing import Any, NamedTuple

import numpy as np

from solver.backend.jit import inline_jit, jit


#: Value :func:`link_at` gives with ``j = -1`` (no edge in that slot).
NO_EDGE = 1.0

#: Entries of :func:`grid_geometry`: the eight offsets, then these, then per direction ``d``
#: (the offsets' order) ``BASE + d``, ``SUB + d`` and ``NEED + d``: the weight of the edge in
#: direction ``d`` of the pixel ``i`` on row ``r`` sits at ``geom[BASE + d] + i -
#: geom[SUB + d] * r``, and the edge is inside the image when the pixel's :func:`place` flags
#: hold every bit of ``geom[NEED + d]``.
HEIGHT, WIDTH, SOUTH_BLOCK, SOUTH_EAST_BLOCK, SOUTH_WEST_BLOCK = 8, 9, 10, 11, 12
BASE, SUB, NEED = 13, 21, 29

#: The :func:`place` flags: a row above, a row below, a column to the left, one to the right.
UP, DOWN, LEFT, RIGHT = 1, 2, 4, 8

#: Block-ordered weights of the graphs whose edges are not the grid's own list (coarse levels),
#: by ``id`` of their matrix (scipy's matrices cannot be weak dictionary keys); an entry goes
#: when its matrix does.
_CACHE: dict[int, np.ndarray] = {}


def grid_offsets(width: int) -> np.ndarray:
    """The index offsets of the eight neighbours of a pixel on a grid ``width`` columns wide, in
    increasing order: north-west, north, north-east, west, east, south-west, south, south-east.

    Parameters
    ----------
    width : int
        Columns of the grid (at least 3, so the offsets are distinct and ordered).

    Returns
    -------
    numpy.ndarray
        ``(8,)`` int64.
    """
    w = int(width)
    return np.array([-w - 1, -w, -w + 1, -1, 1, w - 1, w, w + 1], dtype=np.int64)


def grid_geometry(height: int, width: int) -> np.ndarray:
    """What the kernels need to read a grid's weights: the eight offsets (:func:`grid_offsets`),
    the height, the width, where the south, south-east and south-west blocks of the weights
    start, and each direction's place of its weight and the flags it needs (:data:`BASE`).

    Parameters
    ----------
    height, width : int
        The grid's shape.

    Returns
    -------
    numpy.ndarray
        ``(37,)`` int64.
    """
    h, w = int(height), int(width)
    b_s = h * (w - 1)
    b_se = b_s + max(h - 1, 0) * w
    b_sw = b_se + max(h - 1, 0) * (w - 1)
    # the edge's weight is its forward end's: east, south, south-east or south-west of a pixel
    # on row r at column c lies at r (w - 1) + c (= i - r) or r w + c (= i) past its block
    base = [b_se - w, b_s - w, b_sw - w + 1, -1, 0, b_sw - 1, b_s, b_se]
    sub = [1, 0, 1, 1, 1, 1, 0, 1]
    need = [UP | LEFT, UP, UP | RIGHT, LEFT, RIGHT, DOWN | LEFT, DOWN, DOWN | RIGHT]
    return np.array([*grid_offsets(w), h, w, b_s, b_se, b_sw, *base, *sub, *need], np.int64)


@inline_jit
def place(gw, geom, i):  # pragma: no cover
    """Pixel ``i``'s row and flags (:data:`UP` ... :data:`RIGHT`: the sides it has neighbours
    on) on a grid; ``(0, 0)`` without one (``gw`` empty). Each loop over a pixel's slots takes
    them once for all its slots. The row comes from a floating-point product corrected by at
    most one (exact for any index below 2**52), not an integer division, which costs several
    times as much."""
    r = np.int64(0)
    flags = np.int64(0)
    if gw.shape[0]:
        width = geom[WIDTH]
        r = np.int64(np.float64(i) * (1.0 / np.float64(width)))
        c = i - r * width
        if c < 0:
            r -= 1
            c += width
        elif c >= width:
            r += 1
            c -= width
        flags = _flags(geom, r, c)
    return r, flags


@inline_jit
def _flags(geom, r, c):  # pragma: no cover
    """The :func:`place` flags of the pixel at row ``r``, column ``c``."""
    return np.int64((UP if r > 0 else 0) | (DOWN if r + 1 < geom[HEIGHT] else 0)
                    | (LEFT if c > 0 else 0) | (RIGHT if c + 1 < geom[WIDTH] else 0))


@inline_jit
def _inside(geom, flags, d):  # pragma: no cover
    """Whether direction ``d`` (0..7, the offsets' order) of a pixel with :func:`place` flags
    ``flags`` stays inside the image."""
    need = geom[NEED + d]
    return (flags & need) == need


@inline_jit
def _weight_at(gw, geom, i, r, d):  # pragma: no cover
    """The Laplacian's entry for direction ``d`` of pixel ``i`` on row ``r``, that edge inside
    the image: ``-(0.0 + w)``, the CSR's value bit for bit."""
    return -(0.0 + gw[geom[BASE + d] + i - geom[SUB + d] * r])


@inline_jit
def degree(indptr, gw, i):  # pragma: no cover
    """How many slots pixel ``i`` has for :func:`neighbour_at` and :func:`link_at`: 8 on a
    grid, else the entries of its CSR row."""
    return 8 if gw.shape[0] else indptr[i + 1] - indptr[i]


@inline_jit
def link_at(indptr, indices, data, gw, geom, i, r, flags, t):  # pragma: no cover
    """Pixel ``i``'s neighbour in slot ``t`` (``0 <= t < degree``) and the Laplacian's entry
    for it, ``(j, L_ij)``, or ``(-1, NO_EDGE)`` for none (no edge that way on a grid; the
    diagonal entry of a CSR row); ``r, flags`` from :func:`place`. In the CSR's order either
    way.

    Every helper here returns once, at its end: numba compiles a helper with a return in each
    branch, inlined into a loop, to code several times slower (measured: docs/decisions.md,
    Memory, "The grid view")."""
    if gw.shape[0]:
        ok = _inside(geom, flags, t)
        j = np.int64(i + geom[t]) if ok else np.int64(-1)
        v = _weight_at(gw, geom, i, r, t) if ok else NO_EDGE
    else:
        p = indptr[i] + t
        j = np.int64(indices[p])
        v = data[p]
        if j == i:
            j = np.int64(-1)
            v = NO_EDGE
    return j, v


@inline_jit
def neighbour_at(indptr, indices, gw, geom, i, flags, t):  # pragma: no cover
    """Pixel ``i``'s neighbour in slot ``t`` (``0 <= t < degree``), or -1 for none (as
    :func:`link_at`); ``flags`` from :func:`place`.

    A loop asks for the neighbours through this function and writes its own arrays: numba
    compiles a helper that only reads to the same code as the loop written out, while one that
    writes the caller's arrays (a queue push) makes such loops much slower (measured:
    docs/decisions.md, Helpers inside compiled loops)."""
    if gw.shape[0]:
        j = np.int64(i + geom[t]) if _inside(geom, flags, t) else np.int64(-1)
    else:
        j = np.int64(indices[indptr[i] + t])
        if j == i:
            j = np.int64(-1)
    return j


@inline_jit
def row_length(indptr, gw, i):  # pragma: no cover
    """How many slots pixel ``i``'s row has for :func:`column_at`, its diagonal included: 9 on
    a grid, else the entries of its CSR row."""
    return 9 if gw.shape[0] else indptr[i + 1] - indptr[i]


@inline_jit
def column_at(indptr, indices, gw, geom, i, flags, t):  # pragma: no cover
    """The column of slot ``t`` of pixel ``i``'s row (``0 <= t < row_length``), the diagonal
    included (``i`` itself, slot 4 on a grid), or -1 for a grid's missing edge; ``flags`` from
    :func:`place`: a CSR row's entries in its order, for the loops that visit the pixel with
    its neighbours."""
    if gw.shape[0]:
        d = t - (t > 4)
        j = np.int64(i)
        if t != 4:
            j = np.int64(i + geom[d]) if _inside(geom, flags, d) else np.int64(-1)
    else:
        j = np.int64(indices[indptr[i] + t])
    return j


@inline_jit
def _diagonal(gw, geom, i, r, flags):  # pragma: no cover
    """The Laplacian's diagonal entry of pixel ``i`` (row ``r``, :func:`place` flags), the
    weights of its edges added as :func:`solver.mrf.build.grid_kernels.grid_laplacian_csr` adds
    them (those to higher pixels, then to lower ones, each in edge order), so bit for bit the
    CSR's."""
    low = 0.0
    for d in (4, 6, 7, 5):
        if _inside(geom, flags, d):
            low -= _weight_at(gw, geom, i, r, d)  # (x - (-(0.0 + w)) is x + w exactly)
    high = 0.0
    for d in (3, 1, 0, 2):
        if _inside(geom, flags, d):
            high -= _weight_at(gw, geom, i, r, d)
    return low + high


@inline_jit
def row_value_at(indptr, data, gw, geom, i, r, flags, t):  # pragma: no cover
    """The entry in slot ``t`` of pixel ``i``'s row (as :func:`column_at`; a slot that is
    there), the diagonal included; ``r, flags`` from :func:`place`."""
    if gw.shape[0]:
        v = _diagonal(gw, geom, i, r, flags) if t == 4 else _weight_at(gw, geom, i, r, t - (t > 4))
    else:
        v = data[indptr[i] + t]
    return v


@inline_jit
def best_label_grid(gw, geom, unary, two_lam, lab, i, agree):  # pragma: no cover
    """:func:`solver.mrf.polish.icm_kernels.best_label` on a grid: pixel ``i``'s cheapest label
    given its neighbours', keeping its own unless another is cheaper by more than a relative
    ``1e-12``; the same arithmetic in the same order. ``agree`` is ``(K,)`` scratch."""
    k = unary.shape[1]
    total = 0.0
    for c in range(k):
        agree[c] = 0.0
    r, flags = place(gw, geom, i)
    for d in range(8):
        if _inside(geom, flags, d):
            v = _weight_at(gw, geom, i, r, d)
            total -= v
            agree[lab[i + geom[d]]] -= v
    return choose_label(unary, two_lam, i, lab[i], total, agree)


@inline_jit
def choose_label(unary, two_lam, i, cur, total, agree):  # pragma: no cover
    """Pixel ``i``'s label given the weight ``total`` of its edges and ``-agree[c]``, the weight
    of those to neighbours labelled ``c``: the cheapest, but ``cur`` (its own) unless another is
    cheaper by more than a relative ``1e-12``. Shared by :func:`best_label_grid` and
    :func:`solver.mrf.polish.icm_kernels.best_label`, so both decide alike."""
    cur_cost = unary[i, cur] + two_lam * (total - agree[cur])
    best, best_cost = cur, cur_cost
    for c in range(unary.shape[1]):
        cost = unary[i, c] + two_lam * (total - agree[c])
        if cost < best_cost:
            best, best_cost = c, cost
    if best != cur and best_cost < cur_cost - 1e-12 * max(1.0, abs(cur_cost)):
        return best
    return cur


@jit
def weights_from_csr(indptr, indices, data, geom):  # pragma: no cover
    """The weights of a Laplacian's edges in the grid's own order (east, south, south-east,
    south-west blocks; each ``-L_ij``) and whether the matrix is exactly a complete
    8-neighbour grid's (every row the pixel and each neighbour inside the image once, in
    increasing columns, and symmetric bit for bit); on False the array is not to be used."""
    height, width = geom[HEIGHT], geom[WIDTH]
    we = width - 1
    m = geom[SOUTH_WEST_BLOCK] + max(height - 1, 0) * we
    out = np.zeros(m)
    for r in range(height):
        for c in range(width):
            i = r * width + c
            flags = _flags(geom, r, c)
            p = indptr[i]
            for t in range(9):
                if t == 4:
                    j, ok = i, True
                else:
                    d = t - (t > 4)
                    j = i + geom[d]
                    ok = _inside(geom, flags, d)
                if not ok:
                    continue
                if p >= indptr[i + 1] or indices[p] != j:
                    return out, False
                if t != 4:
                    v = data[p]
                    d = t - (t > 4)
                    e = geom[BASE + d] + i - geom[SUB + d] * r
                    if d >= 4:
                        out[e] = -v
                    elif out[e] != -v:  # (its forward end, already read: a symmetric matrix)
                        return out, False
                p += 1
            if p != indptr[i + 1]:
                return out, False
    return out, True


@jit
def forward_costs(gw, geom, two_lam):  # pragma: no cover
    """Each pixel's forward edges' costs ``2 lam w`` as float32 ``(4, n)`` in the order east,
    south-west, south, south-east (0 where the edge leaves the image), and its edge count
    ``(n,)``: what the TV relaxation's grid kernel reads."""
    return box_forward_costs(gw, geom, two_lam, 0, geom[HEIGHT], 0, geom[WIDTH])


@jit
def box_forward_costs(gw, geom, two_lam, y0, y1, x0, x1):  # pragma: no cover
    """:func:`forward_costs` of the pixels of the box ``[y0, y1) x [x0, x1)`` as a grid of its
    own (pixel ``(r, c)`` of the image at ``(r - y0) (x1 - x0) + c - x0``): 0 where the edge
    leaves the box; the edge counts are the image's."""
    width = geom[WIDTH]
    bw = x1 - x0
    nb = (y1 - y0) * bw
    cost = np.zeros((4, nb), np.float32)
    deg = np.zeros(nb, np.int64)
    for r in range(y0, y1):
        for c in range(x0, x1):
            i = r * width + c
            b = (r - y0) * bw + c - x0
            flags = _flags(geom, r, c)
            for d in range(8):
                if _inside(geom, flags, d):
                    deg[b] += 1
                    if d >= 4:  # (east on the row, the other forward edges on the next)
                        down = 0 if d == 4 else 1
                        c2 = c + geom[d] - down * width
                        if r + down < y1 and x0 <= c2 < x1:
                            e = geom[BASE + d] + i - geom[SUB + d] * r
                            cost[d - 4, b] = np.float32(two_lam * (0.0 + gw[e]))
    return cost, deg


def grid_view(problem: Any) -> tuple[np.ndarray, np.ndarray]:
    """The grid weights and geometry the kernels read a problem's Laplacian from.

    Parameters
    ----------
    problem : MRFProblem
        Any object with ``shape`` ``(H, W)``, a ``graph`` and, unless the graph is the grid's own
        edge list (:func:`solver.mrf.build.graph.own_grid`), a CSR ``laplacian``.

    Returns
    -------
    gw : numpy.ndarray
        The graph's own weights when its edges are the grid's own list; for another graph whose
        Laplacian is a complete 8-neighbour grid, its weights in that order made from the
        matrix once (kept as long as the matrix); else (that is no such grid, or narrower than
        three columns) empty, and the kernels read the CSR arrays.
    geom : numpy.ndarray
        ``(37,)`` int64 from :func:`grid_geometry`.
    """
    from solver.mrf.build.graph import own_grid  # noqa: PLC0415  (no cycle at import)

    height, width = (int(s) for s in problem.shape)
    geom = grid_geometry(height, width)
    if width < 3:
        return np.empty(0), geom
    graph = getattr(problem, "graph", None)
    if graph is not None and own_grid(graph) and tuple(graph.shape) == (height, width):
        return np.asarray(graph.weights, np.float64), geom
    L = problem.laplacian
    got = _CACHE.get(id(L))
    if got is None:
        n = height * width
        got = np.empty(0)
        if L.shape == (n, n):
            out, ok = weights_from_csr(L.indptr, L.indices, L.data, geom)
            got = out if ok else got
        _CACHE[id(L)] = got
        weakref.finalize(L, _CACHE.pop, id(L), None)
    return got, geom


class Graph(NamedTuple):
    """A graph's Laplacian ``L = D - W`` as the compiled kernels take it (one argument): the grid
    view ``gw, geom`` (:func:`grid_view`) and, only where that view is empty, the CSR arrays
    ``indptr, indices, data`` (else empty ones, never read). Build it with
    :func:`graph_arrays`."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    gw: np.ndarray
    geom: np.ndarray


class Potts(NamedTuple):
    """A Potts energy as the compiled kernels take it (one argument): the
    :class:`Graph`'s five arrays, the ``(n, K)`` unary costs and the pairwise weight ``2 lam``,
    so ``E = 2 lam sum_{edges} W_ij [l_i != l_j] + sum_i unary[i, l_i]``. Build it with
    :func:`potts_of`."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    gw: np.ndarray
    geom: np.ndarray
    unary: np.ndarray
    two_lam: float


def csr_arrays(problem: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data)`` of ``problem.laplacian`` (CSR)."""
    L = problem.laplacian
    return L.indptr, L.indices, L.data


#: The CSR arrays passed with a grid view (never read).
_NO_CSR = (np.zeros(1, np.int32), np.zeros(0, np.int32), np.zeros(0))


def graph_arrays(problem: Any) -> Graph:
    """The Laplacian of ``problem`` as the kernels take it: its grid view (:func:`grid_view`)
    and, only where that view is empty, its CSR arrays (:func:`csr_arrays`; else empty ones, so
    a photo's polish never makes the matrix).

    Parameters
    ----------
    problem : MRFProblem
        The problem (its ``laplacian`` is read only where it has no grid view).

    Returns
    -------
    Graph
    """
    gw, geom = grid_view(problem)
    csr = _NO_CSR if gw.shape[0] else csr_arrays(problem)
    return Graph(*csr, gw, geom)


def potts_of(problem: Any, unary: np.ndarray | None = None) -> Potts:
    """The Potts energy of ``problem`` as the kernels take it: its :func:`graph_arrays`, its
    unary costs (or ``unary`` in their place) and ``2 lam``.

    Parameters
    ----------
    problem : MRFProblem
        The problem.
    unary : numpy.ndarray, optional
        ``(n, K)`` costs to use instead of ``problem.unary``.

    Returns
    -------
    Potts
    """
    return Potts(*graph_arrays(problem), problem.unary if unary is None else unary,
                 2.0 * problem.lam)
