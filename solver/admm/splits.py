"""Extra splits ``z0 = C0 x - d0`` of ℓp-box ADMM, beside the box and the sphere.

Each adds ``rho0 C0'C0`` to the x-update's system and ``C0'(rho0 (z0 + d0) - y0)`` to its
right-hand side; then ``z0 = prox(C0 x - d0 + y0 / rho0)`` and ``y0 += gamma rho0 (C0 x - d0 -
z0)``, with ``rho0 = ratio * rho1`` growing with the other penalties
(:meth:`solver.admm.loop.LpBoxADMM._generic_step`). Two kinds:

* :class:`L1Split`: an ℓ1 term ``sum_r w_r |(C0 x - d0)_r|`` of the objective (the paper's §5);
  its prox is the soft threshold.
* :class:`PairSplit`: linear rows ``x_u + x_v <= d`` (or ``x_u <= d``) held by a copy of each
  row's entries projected on its half-plane: the "apart" rows of a segmentation. Every variable
  of a label appears in the same number of rows, so ``C0'C0`` is a per-label diagonal and the
  one-hot x-update keeps its split along label directions
  (:meth:`solver.admm.systems.OneHotKronSystem.solve`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from solver.admm.steps import split_kernels
from solver.admm.systems import LinearOperatorPair
from solver.backend import Backend


def soft_threshold(v: Any, t: Any, xp: Any) -> Any:
    """``sign(v) max(|v| - t, 0)`` elementwise: the proximal operator of ``t |.|``."""
    return xp.sign(v) * xp.maximum(xp.abs(v) - t, 0.0)


class _Split:
    """What both splits share: the operator the x-update's system takes, the x-update's
    right-hand side term and the step after it."""

    op: LinearOperatorPair

    def add_rhs(self, rhs: Any, z0: Any, y0: Any, rho0: float) -> Any:
        """``rhs + C0'(rho0 (z0 + d0) - y0)``."""
        return rhs + self.op.rmatvec(rho0 * (z0 + self.op.d) - y0)

    def update(self, x: Any, z0: Any, y0: Any, rho0: float, gamma: float,
               backend: Backend) -> tuple[Any, float]:
        """After the x-update: ``z0 = prox(C0 x - d0 + y0 / rho0)`` and ``y0 += gamma rho0
        (C0 x - d0 - z0)`` (``y0`` in place). Returns ``(z0, |C0 x - d0 - z0| / max(|C0 x -
        d0|, 1))``."""
        u = self.op.matvec(x) - self.op.d
        z0 = self.prox(u + y0 / rho0, rho0, backend.xp)
        r = u - z0
        y0 += gamma * rho0 * r
        return z0, backend.norm(r) / max(backend.norm(u), 1.0)

    def system_operator(self, ineq: LinearOperatorPair | None, rho_ineq: float,
                        rho0: float) -> tuple[LinearOperatorPair, float]:
        """``(op, rho)`` such that ``rho op'op = rho_ineq C2'C2 + rho0 C0'C0``: what the
        x-update system takes in the place of the inequality rows."""
        op = self.op
        if ineq is None:
            return op, rho0
        ratio = rho0 / rho_ineq
        both = LinearOperatorPair(
            matvec=lambda v: (ineq.matvec(v), op.matvec(v)),
            rmatvec=lambda t: ineq.rmatvec(t[0]) + ratio * op.rmatvec(t[1]),
            d=ineq.d, col_sq=ineq.col_sq + ratio * op.col_sq)
        return both, rho_ineq


@dataclass
class L1Split(_Split):
    """An ℓ1 term ``sum_r w_r |(C0 x - d0)_r|`` of the objective, handled by the split
    ``C0 x - d0 = z0`` of the paper's §5 (ℓ1-regularised discrete problems).

    Its augmented Lagrangian part ``w ||z0||_1 + y0'(C0 x - d0 - z0) + rho0/2 ||C0 x - d0 - z0||^2``
    gives the updates of the module docstring with ``z0 = S_{w / rho0}(.)``, the soft threshold.

    Attributes
    ----------
    op : LinearOperatorPair
        ``C0`` (``matvec``/``rmatvec``/``col_sq``) with ``d = d0`` (zeros for ``w ||C0 x||_1``).
    weight : float or array
        ``w``: one non-negative weight, or one per row (on the backend).
    ratio : float
        ``rho0 / rho1`` (> 0).
    """

    op: LinearOperatorPair
    weight: Any
    ratio: float = 1.0

    def value(self, x: Any, backend: Backend) -> float:
        """``sum_r w_r |(C0 x - d0)_r|``."""
        a = backend.xp.abs(self.op.matvec(x) - self.op.d)
        if isinstance(self.weight, (int, float)):
            return float(self.weight) * float(backend.xp.sum(a))
        return backend.dot(self.weight, a)

    def prox(self, v: Any, rho0: float, xp: Any) -> Any:
        """``argmin_z w |z|_1 + rho0/2 |z - v|^2``: the soft threshold at ``w / rho0``."""
        return soft_threshold(v, self.weight / rho0, xp)

    def violation(self, x: Any, backend: Backend) -> float:
        """0: an ℓ1 term constrains nothing."""
        return 0.0


@dataclass
class PairSplit(_Split):
    """Rows ``x_u + x_v <= d_r`` (``x_u <= d_r`` where a row has one entry), held by the split
    ``z0 = C0 x`` with ``z0`` projected on each row's half-plane.

    ``C0`` has two rows per constraint row ``r``: row ``2r`` picks ``x_u`` and row ``2r + 1``
    picks ``x_v`` (empty for a one-entry row). The projection of a pair ``(s, t)`` on
    ``s + t <= d`` lowers both by half the excess; of ``s`` on ``s <= d``, to ``d``. The term
    adds nothing to the objective (it is the indicator of the rows, zero where they hold).

    Attributes
    ----------
    op : LinearOperatorPair
        ``C0`` with ``d`` zeros; its ``label_diag`` (when every variable of a label is in the
        same number of rows) lets the one-hot system solve exactly.
    second : array, shape (m,)
        1.0 where row ``r`` has a second entry, else 0.0 (on the backend).
    bound : array, shape (m,)
        ``d_r`` (on the backend).
    ratio : float
        ``rho0 / rho1`` (> 0).
    rows : tuple of numpy.ndarray, optional
        ``(first, second)`` host indices of each row's entries (``second < 0`` for none): on
        the CPU the projection and the violation then run compiled
        (:mod:`solver.admm.steps.split_kernels`).
    keys : numpy.ndarray, optional
        A caller's name for each entry of ``z0`` (``-1`` for none), to carry copies and duals
        over to the split of a restricted problem.
    """

    op: LinearOperatorPair
    second: Any
    bound: Any
    ratio: float = 1.0
    rows: tuple | None = None
    keys: Any = None

    def value(self, x: Any, backend: Backend) -> float:
        """0: the rows enter as constraints, not as cost."""
        return 0.0

    def add_rhs(self, rhs: Any, z0: Any, y0: Any, rho0: float) -> Any:
        """``rhs + C0'(rho0 z0 - y0)`` (compiled on the CPU)."""
        if self.rows is None or not isinstance(rhs, np.ndarray):
            return super().add_rhs(rhs, z0, y0, rho0)
        split_kernels.pair_rhs(*self.rows, z0, y0, float(rho0), rhs)
        return rhs

    def update(self, x: Any, z0: Any, y0: Any, rho0: float, gamma: float,
               backend: Backend) -> tuple[Any, float]:
        """:meth:`_Split.update`, in one compiled pass on the CPU (``z0`` and ``y0`` in
        place)."""
        if self.rows is None or not isinstance(x, np.ndarray):
            return super().update(x, z0, y0, rho0, gamma, backend)
        res, unorm = split_kernels.pair_update(x, *self.rows, self.second, self.bound, z0, y0,
                                               float(rho0), float(gamma))
        return z0, float(np.sqrt(res)) / max(float(np.sqrt(unorm)), 1.0)

    def excess(self, v: Any, xp: Any) -> Any:
        """``max(s + t - d, 0)`` per row of the stacked pairs ``v`` (``(2m,)``)."""
        V = v.reshape(-1, 2)
        return xp.maximum(V[:, 0] + self.second * V[:, 1] - self.bound, 0.0)

    def prox(self, v: Any, rho0: float, xp: Any) -> Any:
        """The projection of each pair of ``v`` on its half-plane (``rho0`` plays no part)."""
        if self.rows is not None and isinstance(v, np.ndarray):
            return split_kernels.pair_prox(v, self.second, self.bound, np.empty_like(v))
        V = v.reshape(-1, 2)
        cut = self.excess(v, xp) / (1.0 + self.second)
        out = xp.empty_like(V)
        out[:, 0] = V[:, 0] - cut
        out[:, 1] = V[:, 1] - self.second * cut
        return out.ravel()

    def violation(self, x: Any, backend: Backend) -> float:
        """The largest excess ``x_u + x_v - d`` over the rows (0 when every row holds)."""
        if self.rows is not None and isinstance(x, np.ndarray):
            return float(split_kernels.pair_excess(x, *self.rows, self.bound))
        e = self.excess(self.op.matvec(x), backend.xp)
        return float(e.max()) if e.size else 0.0
