"""Rasterising round-brush strokes into label arrays (numpy only)."""
from __future__ import annotations

import numpy as np

BBox = tuple[int, int, int, int]  # y0, y1, x0, x1 (half-open)


def paint_segment(arr: np.ndarray, p0: tuple[float, float], p1: tuple[float, float],
                  radius: float, value: int, mask: np.ndarray | None = None) -> BBox | None:
    """Paint a round-capped line segment of ``value`` into ``arr`` in place.

    Parameters
    ----------
    arr : numpy.ndarray
        (H, W) integer label array.
    p0, p1 : tuple of float
        End points as ``(x, y)`` in pixel coordinates (pixel centres at integers).
    radius : float
        Brush radius in pixels; a radius below 0.5 still paints the nearest pixel.
    value : int
        Label written (0 erases).
    mask : numpy.ndarray, optional
        (H, W) boolean array; only pixels where it is True are painted.

    Returns
    -------
    tuple of int or None
        The touched box ``(y0, y1, x0, x1)``, or None if it lies outside the array.
    """
    h, w = arr.shape
    r = max(float(radius), 0.5)
    (xa, ya), (xb, yb) = p0, p1
    x0 = max(int(np.floor(min(xa, xb) - r)), 0)
    x1 = min(int(np.ceil(max(xa, xb) + r)) + 1, w)
    y0 = max(int(np.floor(min(ya, yb) - r)), 0)
    y1 = min(int(np.ceil(max(ya, yb) + r)) + 1, h)
    if x0 >= x1 or y0 >= y1:
        return None
    yy, xx = np.mgrid[y0:y1, x0:x1].astype(np.float64)
    dx, dy = xb - xa, yb - ya
    seg2 = dx * dx + dy * dy
    if seg2 > 0:
        t = np.clip(((xx - xa) * dx + (yy - ya) * dy) / seg2, 0.0, 1.0)
    else:
        t = np.zeros_like(xx)
    dist2 = (xx - (xa + t * dx)) ** 2 + (yy - (ya + t * dy)) ** 2
    hit = dist2 <= r * r
    if not hit.any():
        # tiny brush between pixel centres: paint the nearest pixel
        ix = int(np.clip(round(xb), 0, w - 1))
        iy = int(np.clip(round(yb), 0, h - 1))
        if mask is None or mask[iy, ix]:
            arr[iy, ix] = value
        return iy, iy + 1, ix, ix + 1
    if mask is not None:
        hit &= mask[y0:y1, x0:x1]
    arr[y0:y1, x0:x1][hit] = value
    return y0, y1, x0, x1


def union_bbox(a: BBox | None, b: BBox | None) -> BBox | None:
    """Smallest box containing both boxes (either may be None)."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3])
