"""Eight-neighbour pixel grid, contrast-sensitive edge weights and the graph Laplacian.

Pixel ``(row, col)`` of an ``H x W`` image has index ``i = row * W + col``.
Every unordered 8-neighbour pair appears exactly once, as ``(i, j)`` with ``i < j``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from solver.backend.threads import threaded
from solver.mrf.build.colour_kernels import (_edge_count, contrast_to_weights,
                                             edge_squared_differences, grid_edge_list)
from solver.mrf.build.grid_kernels import _is_grid_edge_list, grid_laplacian_csr, laplacian_csr
from solver.mrf.build.pyramid_kernels import cell_laplacian_csr, is_cell_edge_list

__all__ = [
    "GridGraph",
    "NEIGHBOUR_OFFSETS",
    "build_grid_graph",
    "edge_contrast",
    "estimate_beta",
    "grid_edges",
    "image_to_float",
    "edge_ends",
    "laplacian",
    "own_grid",
]

logger = logging.getLogger(__name__)

#: The four "forward" neighbour offsets ``(drow, dcol)``; with their mirror images they form
#: the 8-neighbourhood.  Each unordered pair is produced by exactly one of them.
NEIGHBOUR_OFFSETS: tuple[tuple[int, int], ...] = ((0, 1), (1, 0), (1, 1), (1, -1))

#: Smallest mean squared contrast used by :func:`estimate_beta` (keeps beta finite).
_MIN_CONTRAST = 1e-6


def image_to_float(image: np.ndarray) -> np.ndarray:
    """Convert an image to ``(H, W, C)`` float64 colours in ``[0, 1]``.

    Parameters
    ----------
    image : numpy.ndarray
        Grey ``(H, W)`` or ``(H, W, 1)``, grey+alpha ``(H, W, 2)``, RGB ``(H, W, 3)`` or RGBA
        ``(H, W, 4)`` image of dtype bool, uint8 (divided by 255), uint16 (divided by 65535)
        or floating point (used as is).  An alpha channel is dropped.

    Returns
    -------
    numpy.ndarray
        Read-only array of shape ``(H, W, C)`` with ``C`` equal to 1 or 3, dtype float64: a new
        one, except that a read-only float64 image (such as one this function returned) is
        returned as is (or as a view without its alpha channel).

    Raises
    ------
    ValueError
        If the image is empty, has the wrong number of dimensions or channels, an unsupported
        dtype, or contains NaN or infinite values.
    """
    arr = np.asarray(image)
    if arr.ndim not in (2, 3):
        raise ValueError(f"image must be 2-D (grey) or 3-D (colour), got {arr.ndim} dimensions")
    if arr.size == 0:
        raise ValueError(f"image is empty (shape {arr.shape})")
    if arr.ndim == 2:
        arr = arr[:, :, None]
    channels = arr.shape[2]
    if channels not in (1, 2, 3, 4):
        raise ValueError(f"image must have 1, 2, 3 or 4 channels, got {channels}")
    if channels in (2, 4):
        arr = arr[:, :, : channels - 1]
    # (integer images are finite by construction: only float ones need the check, and the
    # scaling divides in place, so a 24 MP photo makes one float copy instead of two)
    if arr.dtype == np.uint8:
        out = arr.astype(np.float64)
        out /= 255.0
    elif arr.dtype == np.uint16:
        out = arr.astype(np.float64)
        out /= 65535.0
    elif arr.dtype == np.bool_:
        out = arr.astype(np.float64)
    elif np.issubdtype(arr.dtype, np.floating):
        # a read-only float64 array (this function's own output, passed on by build_problem to
        # the colour models, unaries and graph) is used as is: no 8-byte-a-channel copy each time
        keep = arr.dtype == np.float64 and not arr.flags.writeable
        out = arr if keep else arr.astype(np.float64)
        if not np.all(np.isfinite(out)):
            raise ValueError("image contains NaN or infinite values")
    else:
        raise ValueError(f"unsupported image dtype {arr.dtype} (use uint8, uint16 or float)")
    out.flags.writeable = False
    return out


def _check_shape(shape: tuple[int, int]) -> tuple[int, int]:
    """Validate a grid shape and return it as a tuple of two positive ints."""
    if len(shape) != 2:
        raise ValueError(f"grid shape must have two entries (H, W), got {tuple(shape)}")
    h, w = int(shape[0]), int(shape[1])
    if h < 1 or w < 1:
        raise ValueError(f"grid shape must be positive, got {(h, w)}")
    return h, w


def grid_edges(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """List each unordered 8-neighbour pixel pair of a grid once.

    Parameters
    ----------
    shape : tuple of int
        Grid size ``(H, W)``.

    Returns
    -------
    i, j : numpy.ndarray
        int32 flat pixel indices (``row * W + col``) of the two ends, ``i < j``.
    is_diagonal : numpy.ndarray
        bool, True for diagonal neighbours.
    """
    h, w = _check_shape(shape)
    if h * w >= 2**31:
        raise ValueError(f"image too large for 32-bit pixel indices: {h * w} pixels")
    # (for the (1, -1) direction the source index is still the smaller one: next row)
    return grid_edge_list(h, w, np.asarray(NEIGHBOUR_OFFSETS, dtype=np.int64))


def edge_contrast(colours: np.ndarray) -> np.ndarray:
    """``||c_i - c_j||^2`` of every 8-neighbour pair, in the order of :func:`grid_edges`.

    Parameters
    ----------
    colours : numpy.ndarray
        ``(H, W, C)`` float colours (see :func:`image_to_float`).

    Returns
    -------
    numpy.ndarray
        float64, one entry per edge.
    """
    return threaded(edge_squared_differences, np.ascontiguousarray(colours, dtype=np.float64),
                    np.asarray(NEIGHBOUR_OFFSETS, dtype=np.int64))


def _beta_from_contrast(contrast: np.ndarray) -> float:
    """``1 / (2 * mean)`` of the edges' squared contrasts, floored (see :func:`estimate_beta`)."""
    if contrast.size == 0:
        return 1.0 / (2.0 * _MIN_CONTRAST)
    mean = float(contrast.mean())
    beta = 1.0 / (2.0 * max(mean, _MIN_CONTRAST))
    logger.debug("estimate_beta: mean squared contrast %.3g -> beta %.3g", mean, beta)
    return beta


def estimate_beta(image: np.ndarray) -> float:
    """Contrast parameter ``beta = 1 / (2 * mean ||c_i - c_j||^2)`` over 8-neighbour pairs.

    Colours are scaled to ``[0, 1]`` first (see :func:`image_to_float`).  For an image with
    (almost) no contrast the mean is floored at ``1e-6`` so the result stays finite.

    Parameters
    ----------
    image : numpy.ndarray
        Grey, RGB or RGBA image.

    Returns
    -------
    float
        The positive, finite beta.
    """
    return _beta_from_contrast(edge_contrast(image_to_float(image)))


class _Ends:
    """:attr:`GridGraph.i` and :attr:`GridGraph.j`: the array stored, or where none is (a graph of
    the grid's own edge list), that list made afresh."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.slot = name, "_" + name

    def __get__(self, obj: GridGraph | None, owner: type | None = None) -> np.ndarray | None:
        if obj is None:
            return None  # (the dataclass's default: no ends stored)
        got = obj.__dict__[self.slot]
        return obj.edge_ends()[0 if self.name == "i" else 1] if got is None else got

    def __set__(self, obj: GridGraph, value: np.ndarray | None) -> None:
        obj.__dict__[self.slot] = value


@dataclass(frozen=True, eq=False, repr=False)
class GridGraph:
    """Weighted 8-neighbour grid graph.

    Attributes
    ----------
    shape : tuple of int
        Image size ``(H, W)``; the graph has ``H * W`` nodes.
    i, j : numpy.ndarray
        int32 flat indices of the ends of each undirected edge (``i < j``); half the memory of
        int64 (a 24 MP photo has 96M edges), and enough: the Laplacian's 32-bit CSR indices
        already limit an image to under 2**31 / 9 pixels. A graph made without them (both
        None; :attr:`is_grid`), as :func:`build_grid_graph` makes every graph, has the grid's
        own edge list (:func:`grid_edges`, the weights in its order), made at the first access
        of ``i`` or ``j`` and kept until :meth:`forget_ends` (which an ADMM solve calls: its
        path never reads them, and kept they are 32 bytes a pixel at its memory peak;
        docs/decisions.md, Memory). They are not pickled. ``dataclasses.replace`` on such a
        graph stores them.
    weights : numpy.ndarray
        float64 edge weights ``W_ij``.
    beta : float
        Contrast parameter used for the weights.
    """

    shape: tuple[int, int]
    i: np.ndarray | None = _Ends()
    j: np.ndarray | None = _Ends()
    weights: np.ndarray = None  # type: ignore[assignment]  # (required: checked below)
    beta: float = 1.0

    def __post_init__(self) -> None:
        if self.weights is None:
            raise TypeError("GridGraph needs its edge weights")
        if (self.__dict__["_i"] is None) != (self.__dict__["_j"] is None):
            raise ValueError("give both edge ends i and j, or neither (the grid's own edges)")
        if self.is_grid:
            h, w = _check_shape(self.shape)
            m = _edge_count(h, w, np.asarray(NEIGHBOUR_OFFSETS, dtype=np.int64))
            if np.shape(self.weights) != (m,):
                raise ValueError(f"a {h} x {w} grid has {m} edges, got weights of shape "
                                 f"{np.shape(self.weights)}")

    def __repr__(self) -> str:
        ends = "the grid's own edges" if self.is_grid else "its own edge ends"
        return (f"GridGraph(shape={tuple(self.shape)}, {np.size(self.weights)} edges, "
                f"beta={self.beta!r}, {ends})")

    @property
    def is_grid(self) -> bool:
        """Whether the edges are the grid's own list, :func:`grid_edges` (no ends stored)."""
        return self.__dict__["_i"] is None

    def edge_ends(self, keep: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``(i, j)``: the ends stored, or the grid's own (one pass for both), kept with the
        graph unless ``keep`` is false (a caller that needs them once)."""
        if not self.is_grid:
            return self.__dict__["_i"], self.__dict__["_j"]
        made = self.__dict__.get("_made")
        if made is None:
            i, j, _ = grid_edges(self.shape)
            made = (i, j)
            if keep:
                self.__dict__["_made"] = made
        return made

    def forget_ends(self) -> None:
        """Drop the grid's edge ends made for an access of ``i`` or ``j`` (made again when
        asked for); nothing for a graph that stores its own."""
        self.__dict__.pop("_made", None)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_made", None)  # (made again where needed: the grid's own list)
        return state

    @property
    def n(self) -> int:
        """Number of nodes (pixels)."""
        return self.shape[0] * self.shape[1]


def own_grid(graph: Any) -> bool:
    """Whether ``graph`` is a :class:`GridGraph` of the grid's own edge list with no ends stored
    (any other object with ``shape``, ``i``, ``j`` and ``weights`` is not)."""
    return isinstance(graph, GridGraph) and graph.is_grid


def edge_ends(graph: Any, keep: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(i, j)`` of a :class:`GridGraph` (:meth:`GridGraph.edge_ends`; by default not kept
    with it) or of any object with ``i`` and ``j``."""
    return graph.edge_ends(keep) if isinstance(graph, GridGraph) else (graph.i, graph.j)


def build_grid_graph(
    image: np.ndarray, beta: float | None = None, diagonal_distance: bool = True
) -> GridGraph:
    """Build the contrast-sensitive 8-neighbour graph of an image.

    ``W_ij = exp(-beta * ||c_i - c_j||^2)``, divided by ``sqrt(2)`` on diagonal edges when
    ``diagonal_distance`` is true.

    Parameters
    ----------
    image : numpy.ndarray
        Grey, RGB or RGBA image (see :func:`image_to_float`).
    beta : float, optional
        Contrast parameter; estimated with :func:`estimate_beta` when None.
    diagonal_distance : bool, default True
        Divide diagonal weights by the pixel distance ``sqrt(2)``.

    Returns
    -------
    GridGraph
        The graph.

    Raises
    ------
    ValueError
        If the image is invalid or beta is negative or not finite.
    """
    colours = image_to_float(image)
    h, w, _ = colours.shape
    contrast = edge_contrast(colours)  # (computed once for beta and the weights)
    if beta is None:
        beta = _beta_from_contrast(contrast)
    beta = float(beta)
    if not np.isfinite(beta) or beta < 0:
        raise ValueError(f"beta must be finite and non-negative, got {beta}")
    if h * w >= 2**31:
        raise ValueError(f"image too large for 32-bit pixel indices: {h * w} pixels")
    # (in place: the contrasts become the weights)
    threaded(contrast_to_weights, contrast, h, w, np.asarray(NEIGHBOUR_OFFSETS, dtype=np.int64),
             beta, bool(diagonal_distance))
    # (the edges are the grid's own list, in the weights' order: not stored, see GridGraph)
    return GridGraph(shape=(h, w), weights=contrast, beta=beta)


def laplacian(graph: GridGraph) -> sp.csr_matrix:
    """Graph Laplacian ``L = D - W`` as an ``n x n`` symmetric CSR matrix with zero row sums.

    Parameters
    ----------
    graph : GridGraph
        The weighted grid graph.

    Returns
    -------
    scipy.sparse.csr_matrix
        The Laplacian, float64, with sorted columns; repeated edges are summed.

    Raises
    ------
    ValueError
        If an edge does not join two 8-neighbour pixels.
    """
    n = graph.n
    if 9 * n >= 2**31:
        raise ValueError(f"image too large for a 32-bit sparse index: {n} pixels")
    h, w = (int(s) for s in graph.shape)
    weights = np.asarray(graph.weights, np.float64)
    grid = own_grid(graph)
    gi = gj = None
    if not grid:
        gi, gj = (np.asarray(e) for e in edge_ends(graph))
    if grid or _is_grid_edge_list(gi, gj, h, w):
        # (every built grid graph: read the matrix straight from the weights, same values)
        indptr, indices, data = threaded(grid_laplacian_csr, weights, h, w)
    elif is_cell_edge_list(gi, gj, h, w):  # (every coarse level, likewise)
        indptr, indices, data = threaded(cell_laplacian_csr, weights, h, w)
    else:
        indptr, indices, data, bad = laplacian_csr(np.asarray(gi, np.int32),
                                                   np.asarray(gj, np.int32), weights, (h, w))
        if bad:
            raise ValueError(f"{bad} edges of the graph are not 8-neighbour pixel pairs")
    return sp.csr_matrix((data, indices, indptr), shape=(n, n))
