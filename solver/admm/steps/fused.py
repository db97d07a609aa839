"""One fused CPU iteration of ℓ2-box ADMM for the two forms the segmentation solver uses.

:meth:`solver.admm.loop.LpBoxADMM.run` takes :func:`fused_step` when the problem is on the CPU
and either the MRF's K > 2 form (:class:`solver.admm.systems.OneHotKronSystem` with
:func:`solver.admm.systems.onehot_operator`) or a plain one
(:class:`solver.admm.systems.GenericSystem` on a sparse matrix, no constraints: K = 2). An
iteration is then a right-hand-side pass, the CG and one pass after it
(:mod:`solver.admm.steps.fused_kernels`) instead of a dozen numpy and kernel calls, with the same
iterates as the generic loop (measured: docs/decisions.md, Compiled CPU kernels). On a GPU the same
two forms take :mod:`solver.admm.steps.cuda`'s CUDA kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solver.admm.records import StepResult
from solver.admm.steps import cpu_kernels, fused_kernels
from solver.admm.steps import cuda as gpu_step
from solver.admm.systems import (
    RESIDUAL_REFRESH,
    GenericSystem,
    LinearOperatorPair,
    OneHotKronSystem,
)


class _Step:
    """The CG state both forms share.

    The CG warm start (the last solution's columns) and the last solve's residual are kept on
    the system's compiled matrix with the iterate they belong to, so a run resumed from a paused
    state (same ``x`` object) goes on exactly as one run would; any other ``x`` starts afresh.
    ADMM never changes an iterate in place, which is what makes the identity test sound.
    """

    def __init__(self, csr: Any, b: np.ndarray, gamma: float, tol: float,
                 maxiter: int) -> None:
        self.csr = csr
        self.b = np.ascontiguousarray(b, dtype=np.float64)
        self.gamma, self.tol, self.maxiter = float(gamma), float(tol), int(maxiter)

    def _columns(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _state(self, x: np.ndarray, shift: np.ndarray, m: int, n: int) -> tuple:
        """``(X, B, R, B_prev, R_prev, dshift, have_r, reused)`` for a solve from ``x``."""
        state = self.csr._fused
        B, R = np.empty((m, n)), np.empty((m, n))
        if state is not None and state[0] is x:
            _, X, B_prev, R_prev, shift_prev, reused = state
            have_r = reused < RESIDUAL_REFRESH
            return X, B, R, B_prev, R_prev, shift - shift_prev, have_r, (reused + 1 if have_r
                                                                         else 0)
        return self._columns(x), B, R, B, B, shift, False, 0

    def _cg(self, shift: np.ndarray, B: np.ndarray, X: np.ndarray, R: np.ndarray,
            have_r: bool) -> int:
        csr = self.csr
        P, AP = np.empty_like(B), np.empty_like(B)
        its, _ = cpu_kernels.block_pcg(csr.operator, 2.0, shift, B, X, self.tol, self.maxiter,
                                       (R, P, AP), have_r)
        return int(its)


class OneHotStep(_Step):
    """The fused iteration of the K > 2 form (see the module docstring)."""

    def __init__(self, system: OneHotKronSystem, eq: LinearOperatorPair, b: np.ndarray,
                 gamma: float, tol: float, maxiter: int) -> None:
        super().__init__(system._compiled, b, gamma, tol, maxiter)
        self.k = int(eq.group_size)
        self.d = np.ascontiguousarray(eq.d, dtype=np.float64)

    def _columns(self, x: np.ndarray) -> np.ndarray:
        return cpu_kernels.onehot_split(np.ascontiguousarray(x, dtype=np.float64), self.k)

    def __call__(self, x: np.ndarray, z1: np.ndarray, z2: np.ndarray, y1: np.ndarray,
                 y2: np.ndarray, y3: np.ndarray, rho: float, rc: float) -> StepResult:
        """One iteration from ``(x, z1, z2)``; updates the duals ``y1, y2, y3`` in place."""
        k = self.k
        shift = np.full(k, 2.0 * rho)  # (2 L ⊗ I + 2 rho I + rc C1'C1), as the generic loop
        shift[0] += k * rc
        X, B, R, B_prev, R_prev, dshift, have_r, reused = self._state(x, shift, k, self.d.size)
        fused_kernels.onehot_rhs(z1, z2, (y1, y2, y3), self.b, self.d, float(rho), float(rc), k,
                                 (B, R, B_prev, R_prev, X, dshift, have_r))
        its = self._cg(shift, B, X, R, have_r)
        (x_new, z1, z2, xr, quad, d1, d2, xx, r3sq, dsq, viol, bx,
         bxr) = fused_kernels.onehot_post((B, X, R, shift), (y1, y2, y3), self.d, self.b,
                                          float(rho), self.gamma, self.gamma * rc, k)
        self.csr._fused = (x_new, X, B, R, shift, reused)
        return StepResult(x_new, z1, z2, xr, quad, bx, bxr, d1, d2, xx, r3sq, dsq, viol, its)


class PlainStep(_Step):
    """The fused iteration of an unconstrained problem on a sparse matrix (K = 2)."""

    def _columns(self, x: np.ndarray) -> np.ndarray:
        return np.array(x, dtype=np.float64).reshape(1, -1)

    def _x_update(self, x: np.ndarray, z1: np.ndarray, z2: np.ndarray, y1: np.ndarray,
                  y2: np.ndarray, rho: float) -> tuple:
        """The right-hand side and the CG from ``x``: ``(B, X, R, shift, reused, its)``."""
        shift = np.array([2.0 * rho])
        X, B, R, B_prev, R_prev, dshift, have_r, reused = self._state(x, shift, 1, self.b.size)
        fused_kernels.plain_rhs(z1, z2, y1, y2, self.b, float(rho),
                                (B, R, B_prev, R_prev, X, dshift, have_r))
        return B, X, R, shift, reused, self._cg(shift, B, X, R, have_r)

    def __call__(self, x: np.ndarray, z1: np.ndarray, z2: np.ndarray, y1: np.ndarray,
                 y2: np.ndarray, y3: Any, rho: float, rc: float) -> StepResult:
        """One iteration from ``(x, z1, z2)``; updates the duals ``y1, y2`` in place."""
        B, X, R, shift, reused, its = self._x_update(x, z1, z2, y1, y2, rho)
        (x_new, z1, z2, xr, quad, d1, d2, xx, bx,
         bxr) = fused_kernels.plain_post((B, X, R, 2.0, float(shift[0])), y1, y2, self.b,
                                         float(rho), self.gamma)
        self.csr._fused = (x_new, X, B, R, shift, reused)
        return StepResult(x_new, z1, z2, xr, quad, bx, bxr, d1, d2, xx, 0.0, 0.0, 0.0, its)


class SumsStep(PlainStep):
    """The fused iteration of the K = 2 form with a bound on label 2's weighted area: ``z1`` in
    the box with the bounded sum (a :class:`solver.admm.sums.BoxWithSums` over one column) and
    the rounding within the bounds, both as the generic loop takes them."""

    def __init__(self, csr: Any, b: np.ndarray, area: Any, gamma: float, tol: float,
                 maxiter: int) -> None:
        super().__init__(csr, b, gamma, tol, maxiter)
        self.area = area

    def __call__(self, x: np.ndarray, z1: np.ndarray, z2: np.ndarray, y1: np.ndarray,
                 y2: np.ndarray, y3: Any, rho: float, rc: float) -> StepResult:
        """One iteration from ``(x, z1, z2)``; updates the duals ``y1, y2`` in place."""
        B, X, R, shift, reused, its = self._x_update(x, z1, z2, y1, y2, rho)
        area = self.area
        (x_new, z1, z2, xr, quad, d1, d2, xx, bx, bxr,
         viol) = fused_kernels.sums_post((B, X, R, 2.0, float(shift[0])), y1, y2, self.b,
                                         float(rho), self.gamma,
                                         (area.weights, float(area.lo[0]), float(area.hi[0]),
                                          area._theta))
        self.csr._fused = (x_new, X, B, R, shift, reused)
        return StepResult(x_new, z1, z2, xr, quad, bx, bxr, d1, d2, xx, 0.0, 0.0, viol, its)


def fused_step(system: Any, b: Any, eq: LinearOperatorPair | None, ineq: Any, backend: Any,
               simplex_groups: int | None, gamma: float, tol: float,
               maxiter: int, area: Any = None) -> _Step | None:
    """The fused iteration for a run with these parts, or None where only the generic loop
    applies (inequality constraints, simplex groups, other systems; on a GPU, CuPy's own arrays).

    Parameters
    ----------
    system, b, eq, ineq, backend, simplex_groups
        Those of the :class:`solver.admm.loop.LpBoxADMM`.
    gamma, tol, maxiter
        ADMM's dual step, and the CG's tolerance and iteration cap.
    area : BoxWithSums, optional
        ``z1``'s set where it bounds the one column's weighted sum (K = 2 with an area bound;
        the run then rounds within the bounds): :class:`SumsStep`, on the CPU only.

    Returns
    -------
    OneHotStep, PlainStep, SumsStep, GPUPlainStep, GPUOneHotStep or None
        The GPU steps are those of :mod:`solver.admm.steps.cuda`.
    """
    if ineq is not None or simplex_groups is not None or (area is not None and backend.is_gpu):
        return None
    if backend.is_gpu:
        if isinstance(system, GenericSystem) and eq is None and gpu_step.applies(system._A,
                                                                                 backend):
            return gpu_step.GPUPlainStep(system._A, system._diag2, b, backend, gamma, tol,
                                         maxiter)
        if (isinstance(system, OneHotKronSystem) and eq is not None
                and eq.group_size == system.k and system.k <= gpu_step.KMAX
                and gpu_step.applies(system._L, backend)):
            return gpu_step.GPUOneHotStep(system._L, system._diag2, b, eq.d, system.k, backend,
                                          gamma, tol, maxiter)
        return None
    if (isinstance(system, OneHotKronSystem) and system._compiled is not None
            and eq is not None and eq.group_size and system.k == eq.group_size):
        return OneHotStep(system, eq, b, gamma, tol, maxiter)
    if isinstance(system, GenericSystem) and system._compiled is not None and eq is None:
        if area is not None:
            return SumsStep(system._compiled, b, area, gamma, tol, maxiter)
        return PlainStep(system._compiled, b, gamma, tol, maxiter)
    return None
