"""Early fixing inside an ADMM run: pixels whose iterate has settled on a label leave the system.

Most of ADMM's iterations are spent on a few undecided pixels: most pixels come within ``delta``
of their final value early in a run and stay there (measured: docs/decisions.md, Early fixing).
So the run pauses every few iterations (:func:`check_interval`); a pixel whose continuous iterate
is within ``delta`` of the same one-hot point now and at the previous pause is *settled*. Once
enough pixels are settled (and, from a cold start, the penalty has reached ``min_rho``), they are
fixed to that label: their coupling moves into the linear term, exactly as for user hard
constraints, and ADMM resumes on the smaller system with its iterate, copies, duals and penalty
carried over. The sphere of the sub-problem is its own (through its binary points). The energy
function never changes, and the polish afterwards still sees every pixel.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from solver.admm.loop import ADMMState
from solver.backend.jit import jit
from solver.mrf.options import EarlyFixingOptions


def check_interval(params: Any, window_growth: float = EarlyFixingOptions.window_growth) -> int:
    """Iterations between two settledness checks: those in which the penalty grows by
    ``window_growth``.

    Parameters
    ----------
    params : ADMMParams
    window_growth : float
        :attr:`solver.mrf.options.EarlyFixingOptions.window_growth`.

    Returns
    -------
    int
        10 for the default growth of 1.03 per iteration, 30 for 1.01; 10 when ρ does not grow.
    """
    params = params.resolved()  # (a growth left to the problem: the fallback's)
    growth = params.rho_growth ** (1.0 / params.rho_every)
    if growth <= 1.0:
        return 10
    return max(1, int(np.ceil(np.log(window_growth) / np.log(growth) - 1e-9)))


def one_hot_distance(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Label and sup-distance to its one-hot point of every pixel's iterate.

    Parameters
    ----------
    x : numpy.ndarray
        Free-variable vector: ``(m,)`` values of label 1 when ``k == 2``, else ``(m * k,)``
        pixel-major label weights.
    k : int
        Number of labels.

    Returns
    -------
    labels : numpy.ndarray
        ``(m,)`` int, 0-based label of the nearest one-hot point (largest weight; the first on
        ties).
    distance : numpy.ndarray
        ``(m,)`` largest absolute difference to that point (NaN where the iterate has a NaN).
    """
    if k == 2:
        lab = (x < 0.5).astype(np.int64)  # x is the weight of label 1 (index 0)
        return lab, np.abs(x - (1 - lab))
    return _group_vertices(np.ascontiguousarray(x, dtype=np.float64), k)


@jit
def _vertex(x, k, i):  # pragma: no cover
    """Pixel ``i``'s largest weight's label (the first on ties) and its sup-distance to that
    label's one-hot point, for groups of ``k > 2``; as numpy's ``argmax`` and ``max``, a NaN
    weight is the largest and makes the distance NaN."""
    t0 = i * k
    best, top = 0, x[t0]
    for c in range(1, k):
        v = x[t0 + c]
        if top == top and (v > top or v != v):
            best, top = c, v
    dist = 0.0
    for c in range(k):
        e = abs(1.0 - x[t0 + c]) if c == best else abs(x[t0 + c])
        if dist == dist and not e <= dist:
            dist = e
    return best, dist


@jit
def _group_vertices(x, k):  # pragma: no cover
    """:func:`one_hot_distance` for ``k > 2`` in one pass."""
    m = x.size // k
    lab, dist = np.empty(m, np.int64), np.empty(m)
    for i in range(m):
        lab[i], dist[i] = _vertex(x, k, i)
    return lab, dist


@jit
def _settled_groups(x, previous, k, delta):  # pragma: no cover
    """:func:`settled` for ``k > 2`` in one pass, with no temporaries."""
    m = x.size // k
    out = np.empty(m, np.bool_)
    for i in range(m):
        a, da = _vertex(x, k, i)
        b, db = _vertex(previous, k, i)
        out[i] = a == b and da < delta and db < delta
    return out


def settled(x: np.ndarray, previous: np.ndarray, k: int, delta: float = EarlyFixingOptions.delta) -> np.ndarray:
    """Pixels whose iterate is within ``delta`` of the same one-hot point in both vectors.

    For K > 2 a compiled pass with no temporaries, faster than the numpy of
    :func:`one_hot_distance` twice; K = 2's numpy is already faster than a loop.

    Parameters
    ----------
    x, previous : numpy.ndarray
        The free-variable vector now and at the previous check (same layout, host arrays).
    k : int
    delta : float

    Returns
    -------
    numpy.ndarray
        ``(m,)`` bool mask over the free pixels.
    """
    if k > 2:
        return _settled_groups(np.ascontiguousarray(x, dtype=np.float64),
                               np.ascontiguousarray(previous, dtype=np.float64), k, float(delta))
    lab, dist = one_hot_distance(x, k)
    lab0, dist0 = one_hot_distance(previous, k)
    return (lab == lab0) & (dist < delta) & (dist0 < delta)


def variable_rows(pixels: np.ndarray, k: int) -> np.ndarray:
    """Positions in the free-variable vector of the given free-pixel positions (pixel-major)."""
    return pixels if k == 2 else (pixels[:, None] * k + np.arange(k)).ravel()


def restrict_state(state: ADMMState, keep: np.ndarray, k: int, xp: Any) -> ADMMState:
    """The ADMM state over the pixels ``keep`` (positions among the free pixels).

    Parameters
    ----------
    state : ADMMState
    keep : numpy.ndarray
        Sorted int positions of the pixels that stay free.
    k : int
        Labels; for ``k > 2`` each pixel owns ``k`` consecutive variables and one row of the
        one-hot constraint.
    xp : module
        Array module of the state's backend.

    Returns
    -------
    ADMMState
    """
    rows = variable_rows(keep, k)
    rows_b, keep_b = xp.asarray(rows), xp.asarray(keep)

    def take(a: Any, idx: Any) -> Any:
        return None if a is None else a[idx]
    if state.z3 is not None or state.y4 is not None:
        raise ValueError("early fixing does not support inequality constraints")
    return replace(state, x=state.x[rows_b], z1=state.z1[rows_b], z2=state.z2[rows_b],
                   y1=state.y1[rows_b], y2=state.y2[rows_b], y3=take(state.y3, keep_b))
