"""Compiled (numba) binary morphology by a square: the closing of the polish's closing fusion and
the dilation of the coarse-to-fine band.

:func:`solver.mrf.polish.fusion.fuse_closings` closes every label's mask, and
:func:`solver.mrf.solve.pyramid.undecided_band` dilates its seeds, at every level of every solve.
``scipy.ndimage`` with a 3 x 3 structure iterated ``r`` times does the same, one pass per
iteration; a square is separable, and a sliding count along rows then columns does each pass in
one sweep over the mask (measured: docs/decisions.md, Less set-up and fewer fresh arrays).
"""

from __future__ import annotations

import numpy as np

from solver.backend.jit import jit


@jit
def _rows(src, r, full, out):  # pragma: no cover
    """Along each row: ``out = 1`` where the window of half-width ``r`` holds any 1 (``full``
    False: dilation) or only 1s inside the image (``full`` True: erosion, the outside counting
    as 0)."""
    h, w = src.shape
    need = 2 * r + 1 if full else 1
    for i in range(h):
        s = 0
        for q in range(min(r, w)):
            s += src[i, q]
        for j in range(w):
            if j + r < w:
                s += src[i, j + r]
            out[i, j] = 1 if s >= need else 0
            if j - r >= 0:
                s -= src[i, j - r]


@jit
def _columns(src, r, full, out, s):  # pragma: no cover
    """:func:`_rows` along the columns, a row at a time (``s`` holds each column's count)."""
    h, w = src.shape
    need = 2 * r + 1 if full else 1
    s[:] = 0
    for q in range(min(r, h)):
        for j in range(w):
            s[j] += src[q, j]
    for i in range(h):
        if i + r < h:
            for j in range(w):
                s[j] += src[i + r, j]
        for j in range(w):
            out[i, j] = 1 if s[j] >= need else 0
        if i - r >= 0:
            for j in range(w):
                s[j] -= src[i - r, j]


@jit
def _square(mask, r, close):  # pragma: no cover
    """Dilation of ``mask`` by the ``(2 r + 1)``-square, then (``close``) erosion by it."""
    h, w = mask.shape
    a = np.empty((h, w), np.uint8)
    b = np.empty((h, w), np.uint8)
    s = np.empty(w, np.int64)
    _rows(mask, r, False, a)
    _columns(a, r, False, b, s)
    if close:
        _rows(b, r, True, a)
        _columns(a, r, True, b, s)
    return b


#: The operations of :func:`square_morphology`, and whether each erodes after dilating.
OPERATIONS = {"dilation": False, "closing": True}


def square_morphology(mask: np.ndarray, radius: int, operation: str) -> np.ndarray:
    """Dilation or closing of a 2-D mask by the ``(2 radius + 1)``-square.

    The same as ``scipy.ndimage.binary_dilation`` / ``binary_closing`` with
    ``np.ones((3, 3))`` and ``iterations=radius`` for ``radius >= 1``: the outside of the image
    counts as 0 (it adds nothing to a dilation, and erodes the border in a closing).

    Parameters
    ----------
    mask : numpy.ndarray
        ``(H, W)`` bool.
    radius : int
        Half-width of the square, >= 1.
    operation : {"dilation", "closing"}

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` bool.
    """
    if operation not in OPERATIONS:
        raise ValueError(f"operation must be one of {sorted(OPERATIONS)}, got {operation!r}")
    if radius < 1:
        raise ValueError(f"{operation} radius must be >= 1, got {radius}")
    m = np.ascontiguousarray(mask, dtype=bool).view(np.uint8)
    return _square(m, int(radius), OPERATIONS[operation]).view(bool)
