"""Euclidean projections used by ℓp-box ADMM: box, shifted ℓp sphere, non-negative orthant.

All functions work on numpy and cupy arrays alike (they only use array methods and operators).
"""

from __future__ import annotations

import math
from typing import Any


def check_p(p: float) -> float:
    """Validate the sphere exponent ``p`` and return it as a float.

    Raises
    ------
    ValueError
        If ``p`` is not a finite number > 0, or is not 2: the exact Euclidean projection onto the
        ℓp sphere is implemented for ``p = 2`` only (for other ``p`` it is a non-convex problem
        whose exact solution we do not provide; a radial rescale would not be a projection).
    """
    try:
        p = float(p)
    except (TypeError, ValueError):
        raise ValueError(f"p must be a number, got {p!r}") from None
    if not math.isfinite(p) or p <= 0:
        raise ValueError(f"p must be a finite number > 0, got {p}")
    if p != 2.0:
        raise ValueError(
            f"the ℓp-sphere projection is supported for p = 2 only (got p = {p}); "
            "other p would need an exact non-convex projection, not a radial rescale"
        )
    return p


def project_box(x: Any, lower: float = 0.0, upper: float = 1.0) -> Any:
    """Project onto the box ``[lower, upper]^n`` (element-wise clipping); returns a new array."""
    return x.clip(lower, upper)


def project_nonneg(x: Any) -> Any:
    """Project onto the non-negative orthant (element-wise truncation at 0); returns a new array."""
    return x.clip(0.0, None)


def sphere_radius(n: int, p: float = 2.0) -> float:
    """Radius ``r`` of the shifted ℓp sphere ``{x: ||x - 1/2||_p^p = n / 2^p}``:
    ``n^(1/p) / 2``."""
    return n ** (1.0 / p) / 2.0


def project_lp_sphere(x: Any, p: float = 2.0) -> Any:
    """Project onto the shifted ℓp sphere ``{z: ||z - 1/2||_p^p = n / 2^p}``.

    For ``p = 2`` the projection is exact: ``1/2 + r (x - 1/2) / ||x - 1/2||`` with
    ``r = sqrt(n) / 2``. The sphere passes through every binary vector. At the centre itself every
    point of the sphere is equally close; the all-ones vector is returned.

    Parameters
    ----------
    x : array, shape (n,)
    p : float
        Must be 2 (see :func:`check_p`).

    Returns
    -------
    array, shape (n,)
    """
    check_p(p)
    n = x.size
    v = x - 0.5
    norm = float((v * v).sum()) ** 0.5
    r = sphere_radius(n, 2.0)
    if norm == 0.0:
        return v * 0.0 + 1.0
    return 0.5 + v * (r / norm)


def project_simplex_rows(v: Any, xp: Any) -> Any:
    """Project each row of ``v`` (shape ``(n, k)``) onto the probability simplex.

    Sort-based: with ``u`` the row sorted in decreasing order, ``theta`` is the largest
    ``(sum_{j<=r} u_j - 1) / r`` for which ``u_r`` stays above it; the result is
    ``max(v - theta, 0)``. ``xp`` is numpy or cupy.
    """
    n, k = v.shape
    u = -xp.sort(-v, axis=1)
    css = xp.cumsum(u, axis=1) - 1.0
    ind = xp.arange(1, k + 1, dtype=v.dtype)
    cond = u - css / ind > 0
    r = k - 1 - xp.argmax(cond[:, ::-1], axis=1)
    theta = css[xp.arange(n), r] / (r + 1)
    return xp.maximum(v - theta[:, None], 0.0)
