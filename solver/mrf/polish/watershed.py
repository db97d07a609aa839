"""Edge-snapped proposals: the labels' boundaries moved onto the image's strongest edges nearby.

ADMM's quadratic relaxation is smooth, and where the data hardly prefers a label its rounding
puts a boundary a few pixels away from the image edge that min-cut follows (a notch of one label
cut a few columns short, a bulge that stops in a flat area). Each of those is a local optimum for
every pixel and region move: shifting the boundary by one pixel costs data, and only the whole
shift, which lands it on the edge, pays.

A proposal here forgets the labels within ``r`` pixels of a boundary and floods that zone again
from the labels around it, crossing the most similar neighbours first (Prim's order on the
Laplacian's edge weights: a watershed cut, whose boundaries fall on the weakest links, i.e. on
image edges). Where the flood differs from the labels, descent fusion takes each region that
lowers the energy (:func:`solver.mrf.polish.descent_kernels.fuse_descents`), so the energy
decides; the flood only proposes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from solver.backend.jit import jit
from solver.mrf.build.problem import MRFProblem
from solver.mrf.build.stencil import degree, graph_arrays, link_at, place, row_length
from solver.mrf.polish.fusion import Workspace, descent_fuser
from solver.mrf.polish.morphology import square_morphology
from solver.mrf.polish.moves import documented, on_copy

log = logging.getLogger(__name__)


#: Half-widths of the zones re-flooded, one proposal each, in this order (tuned:
#: docs/decisions.md, Edge-snapped proposals).
RADII: tuple[int, ...] = (1, 2, 4)


#: The flood sorts its edge weights into levels, :data:`STEPS` to an octave below the largest,
#: :data:`LEVELS` of them (the lightest share the last): a bucket queue, cheaper than a binary
#: heap. Within a level the last edge pushed goes first. The levels must be relative: image edges
#: are weights of 1e-3 and less, and equal steps would put them all in the lowest level (tuned:
#: docs/decisions.md, Edge-snapped proposals).
LEVELS = 128
STEPS = 4


@jit
def flood_zone(indptr, indices, data, gw, geom, lab, zone, out, levels,
               steps):  # pragma: no cover
    """Label the pixels of ``zone`` (a sorted index array) by flooding from the pixels around it.

    ``out`` must equal ``lab`` outside the zone and be -1 in it on entry. Each zone pixel takes
    the label of the neighbour through which the flood first reaches it; the flood crosses edges
    in order of their weight, the heaviest (most similar pixels) first, the weights sorted into
    ``levels`` levels of ``2 ** (1 / steps)`` below the largest (:data:`LEVELS`,
    :data:`STEPS`; the Laplacian's off-diagonal entries are minus the weights). A zone pixel no
    flood reaches keeps its label. Fills ``out`` in the zone.
    """
    cap, top = 1, 0.0
    for t in range(zone.size):
        i = zone[t]
        cap += row_length(indptr, gw, i)
        row_u, flags_u = place(gw, geom, i)
        for u in range(degree(indptr, gw, i)):
            j, v = link_at(indptr, indices, data, gw, geom, i, row_u, flags_u, u)
            if j >= 0:
                top = max(top, -v)
    log_top = np.log2(top) if top > 0 else 0.0
    head = np.full(levels, -1, np.int64)  # a stack of entries per level
    nxt = np.empty(cap, np.int32)  # (32-bit: half the fresh memory; cap < 2^31 entries)
    pix = np.empty(cap, np.int32)
    lab_of = np.empty(cap, np.int32)
    size, cur = 0, -1
    for t in range(zone.size + 1):
        if t < zone.size:  # first the edges from the labels around the zone into it
            j = zone[t]
        else:
            j = -1
        while True:
            if j < 0:  # take the heaviest edge left
                while cur >= 0 and head[cur] < 0:
                    cur -= 1
                if cur < 0:
                    break
                e = head[cur]
                head[cur] = nxt[e]
                q, c = pix[e], lab_of[e]
                if out[q] >= 0:
                    continue
                out[q] = c
                i, src = q, True
            else:
                i, src = j, False
            row_u, flags_u = place(gw, geom, i)
            for u in range(degree(indptr, gw, i)):
                q, v = link_at(indptr, indices, data, gw, geom, i, row_u, flags_u, u)
                if q < 0:
                    continue
                if src and out[q] < 0:  # from a pixel just flooded to an unlabelled one
                    a, c = q, out[i]
                elif not src and out[q] >= 0:  # into the zone pixel from a labelled one
                    a, c = i, out[q]
                else:
                    continue
                w = -v
                b = 0
                if w > 0:
                    b = max(0, levels - 1 - int((log_top - np.log2(w)) * steps))
                nxt[size], pix[size], lab_of[size] = head[b], a, c
                head[b] = size
                size += 1
                cur = max(cur, b)
            if j >= 0:
                break
    for t in range(zone.size):
        if out[zone[t]] < 0:
            out[zone[t]] = lab[zone[t]]


def boundary_zone(lab: np.ndarray, shape: tuple[int, int], radius: int) -> np.ndarray:
    """Sorted indices of the pixels within ``radius`` (chessboard) of a pixel with an
    8-neighbour of another label.

    Parameters
    ----------
    lab : numpy.ndarray
        ``(n,)`` labels.
    shape : tuple of int
        ``(H, W)``.
    radius : int

    Returns
    -------
    numpy.ndarray
        int64 pixel indices.
    """
    g = lab.reshape(shape)
    edge = np.zeros(shape, bool)
    for a, b in (((slice(None), slice(1, None)), (slice(None), slice(None, -1))),
                 ((slice(1, None), slice(None)), (slice(None, -1), slice(None))),
                 ((slice(1, None), slice(1, None)), (slice(None, -1), slice(None, -1))),
                 ((slice(1, None), slice(None, -1)), (slice(None, -1), slice(1, None)))):
        differ = g[a] != g[b]
        edge[a] |= differ
        edge[b] |= differ
    return np.flatnonzero(square_morphology(edge, radius, "dilation"))


def edge_snapped(problem: MRFProblem, lab: np.ndarray, radius: int) -> tuple[np.ndarray,
                                                                             np.ndarray]:
    """The labels re-flooded within ``radius`` of their boundaries (see the module docstring).

    Parameters
    ----------
    problem : MRFProblem
    lab : numpy.ndarray
        ``(n,)`` 0-based labels.
    radius : int

    Returns
    -------
    pixels : numpy.ndarray
        int64 indices of the pixels whose flooded label differs from ``lab``.
    labels : numpy.ndarray
        Their flooded labels (0-based).
    """
    zone = boundary_zone(lab, problem.shape, radius)
    out = lab.copy()
    out[zone] = -1
    flood_zone(*graph_arrays(problem), lab, zone, out, LEVELS, STEPS)
    changed = zone[out[zone] != lab[zone]]
    return changed, out[changed]


@documented
def fuse_edge_snapped(problem: MRFProblem, labels: np.ndarray,
                      radii: Sequence[int] | None = None,
                      workspace: Workspace | None = None) -> tuple[np.ndarray, int]:
    """Fuse the labels with their edge-snapped versions, one radius after the other; each
    proposal is carved by ICM and fused region by region (descent fusion), so the energy never
    rises and the result is an ICM fixed point if ``labels`` was one.

    Parameters
    ----------
    %(problem_labels)s
    radii : sequence of int, optional
        Half-widths of the re-flooded zones (default :data:`RADII`, read at call time).
    %(workspace)s

    Returns
    -------
    labels : numpy.ndarray
        ``(n,)`` int64 labels in 1..K.
    moved : int
        Regions taken.
    """
    return on_copy(fuse_edge_snapped_into, problem, labels, radii, workspace)


def fuse_edge_snapped_into(problem: MRFProblem, lab: np.ndarray,
                           radii: Sequence[int] | None = None,
                           workspace: Workspace | None = None) -> int:
    """:func:`fuse_edge_snapped` on ``(n,)`` int64 0-based labels, changed in place; returns
    the number of regions taken."""
    k = problem.k
    fuse_into = descent_fuser(problem, lab, workspace)
    none_fixed = np.zeros(problem.n, np.int8)  # (proposals only at the listed pixels)
    once = np.array([0.5])
    moved = 0
    for radius in RADII if radii is None else radii:
        pixels, flooded = edge_snapped(problem, lab, radius)
        if pixels.size == 0:
            continue
        weights = np.zeros((pixels.size, k), np.float32)
        weights[np.arange(pixels.size), flooded] = 1.0
        moved += fuse_into(pixels, weights, none_fixed, once, problem.n)
    log.debug("edge-snapped fusion: %d regions taken", moved)
    return moved
