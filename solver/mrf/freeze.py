"""Early fixing inside an ADMM run: pixels whose iterate has settled on a label leave the system.

Most of ADMM's iterations are spent on a few undecided pixels. On the cameraman K = 2 at
n = 5e5, 86% of the level-0 band's pixels are within 0.05 of their final binary value by iteration
30 of 225, and stay there. So the run pauses every few iterations (:func:`check_interval`); a
pixel whose continuous iterate is within :data:`DELTA` of the same one-hot point now and at the
previous pause is *settled*. Once enough pixels are settled (and, from a cold start, the
penalty has reached :data:`MIN_RHO`), they are fixed to that label: their coupling moves into the
linear term, exactly as for user hard constraints, and ADMM resumes on the smaller system with
its iterate, copies, duals and penalty carried over. The sphere of the sub-problem is its own
(through its binary points). The energy function never changes, and the polish afterwards still
sees every pixel.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numba
import numpy as np

from ..admm import ADMMState

_jit = numba.njit(cache=True, nogil=True)

#: Whether :class:`solver.mrf.MRFADMM` fixes settled pixels unless told otherwise.
ENABLED = True
#: A pixel must stay settled while the penalty grows by this factor (10 iterations at the default
#: growth of 1.03, 30 at the slow schedule's 1.01).
WINDOW_GROWTH = 1.34
#: A pixel is settled when every entry of its iterate is within this of its one-hot point.
DELTA = 0.05
#: From a cold start, no pixel is fixed while the penalty is below this multiple of the problem
#: scale: the relaxation is still soft, and the slow schedule's early iterates can look settled
#: before they are. Session 6 measured 1.0 against 0.3 and 0.5 with the polish of the time
#: (cameraman K = 4 at n = 5e4: 2.05% above alpha-expansion from 0.3 or 0.5, 0.99% from 1). With
#: session 11's polish, 0.3 (the slow schedule's first 110 iterations instead of 231) gives mean
#: gaps over the 14-problem set of 0.109% against 0.107% (K = 4 at 5e4 0.618% -> 0.640%, no other
#: change), over 14 held-out ones 0.131% against 0.181% (K = 4 at 3e4 0.881% -> 0.227%), 0.84x
#: the time over each set; 0.1 and 0.2 gave the same gaps. A warm start (a band level starting
#: from the coarser answer) has no soft phase to wait for: it fixes from its first check (see
#: :data:`WARM_START_CHECK`).
MIN_RHO = 0.3
#: Fix the settled pixels only when they are at least this fraction of the free ones
#: (rebuilding the system costs about as much as a few iterations).
MIN_FRACTION = 0.1
#: A warm start counts as a check: pixels within :data:`DELTA` of their warm-start label at the
#: first pause are settled then (a start that is not one-hot settles nothing). The coarse-to-fine
#: bands start from the coarser answer, and most of a band keeps it: at n = 5e5 (K = 2) 78k of
#: level 0's 112k free pixels leave the system at iteration 10 instead of 20. Cameraman, side by
#: side: K = 2 at 5e5 0.91x the time (median of 10 alternating solves), gaps over the 14-problem
#: set 0.119% both ways (K = 2 at 5e5 0.117% -> 0.109%), over 14 held-out ones 0.230% -> 0.229%.
#: (Session 6 had measured 0.316% -> 0.324% with the polish of the time.)
WARM_START_CHECK = True
#: K > 2: a run ends at the pause where fixing the settled pixels would leave at most this
#: fraction of its free pixels free; the polish that follows decides those (its weights are
#: the iterate's). The last tenth of a K > 2 band or small image took most of the iterations
#: (the coarsest level of K = 4 at 5e4: 329 iterations, 270 with this; its band levels 103 and
#: 154, 60 and 50) and the polish takes them in stride. Over 28 cameraman K = 3/4 problems
#: (3e3 ... 3e5) the mean gap to alpha-expansion is unchanged (0.095% / 0.226% on the two
#: halves, either way); in-process alternation (10 solves each): K = 4 at 5e4 0.93x the time,
#: K = 3 at 5e4 0.89x, K = 4 at 1e5 0.91x. K = 2 runs on: its band tails are cheap and a
#: polish with more left to it took longer (5e5: 1.03-1.06x the time). 0.2 lost K = 4 at 5e4
#: (+0.15 points). 0: never.
TAIL_FRACTION = 0.1


def check_interval(params: Any) -> int:
    """Iterations between two settledness checks: those in which the penalty grows by
    :data:`WINDOW_GROWTH`.

    Parameters
    ----------
    params : ADMMParams

    Returns
    -------
    int
        10 for the default growth of 1.03 per iteration, 30 for 1.01; 10 when ρ does not grow.
    """
    growth = params.rho_growth ** (1.0 / params.rho_every)
    if growth <= 1.0:
        return 10
    return max(1, int(np.ceil(np.log(WINDOW_GROWTH) / np.log(growth) - 1e-9)))


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


@_jit
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


@_jit
def _group_vertices(x, k):  # pragma: no cover
    """:func:`one_hot_distance` for ``k > 2`` in one pass."""
    m = x.size // k
    lab, dist = np.empty(m, np.int64), np.empty(m)
    for i in range(m):
        lab[i], dist[i] = _vertex(x, k, i)
    return lab, dist


@_jit
def _settled_groups(x, previous, k, delta):  # pragma: no cover
    """:func:`settled` for ``k > 2`` in one pass, with no temporaries."""
    m = x.size // k
    out = np.empty(m, np.bool_)
    for i in range(m):
        a, da = _vertex(x, k, i)
        b, db = _vertex(previous, k, i)
        out[i] = a == b and da < delta and db < delta
    return out


def settled(x: np.ndarray, previous: np.ndarray, k: int, delta: float = DELTA) -> np.ndarray:
    """Pixels whose iterate is within ``delta`` of the same one-hot point in both vectors.

    For K > 2 a compiled pass (cameraman K = 4, 2.3e4 free pixels: 0.8 ms against 4.1 ms for
    the numpy of :func:`one_hot_distance` twice); K = 2's numpy is already faster than a loop.

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
