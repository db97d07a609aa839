"""Result and per-iteration records of the ℓp-box ADMM solver."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class IterationRecord:
    """What one ADMM iteration reports (numbers only; safe to keep for every iteration).

    Attributes
    ----------
    iteration : int
        1-based iteration number.
    objective : float
        Objective ``x'Ax + b'x`` (+ constant of fixed variables) of the continuous iterate ``x``.
    objective_rounded : float
        Objective of the rounded (binary) iterate.
    feasible_rounded : bool
        Whether the rounded iterate satisfies the equality and inequality constraints.
    residual_box : float
        Primal residual ``||x - z1|| / max(||x||, 1)``.
    residual_sphere : float
        Primal residual ``||x - z2|| / max(||x||, 1)``.
    rho : float
        Penalty ``rho1 (= rho2)`` used in this iteration.
    pcg_iterations : int
        Conjugate-gradient iterations spent on this iteration's x-update.
    residual_constraints : float
        How far the continuous iterate is from the linear constraints and bounded sums (relative;
        0 without any).
    """

    iteration: int
    objective: float
    objective_rounded: float
    feasible_rounded: bool
    residual_box: float
    residual_sphere: float
    rho: float
    pcg_iterations: int
    residual_constraints: float = 0.0

    def renumbered(self, offset: int) -> IterationRecord:
        """This record with its iteration number moved by ``offset`` (a coarse-to-fine level's
        records in the whole solve's numbering): built directly, at a fifth of the cost of
        :func:`dataclasses.replace`, which a 1e5-pixel solve would call 760 times.

        Parameters
        ----------
        offset : int
            Added to ``iteration``.

        Returns
        -------
        IterationRecord
        """
        return IterationRecord(self.iteration + offset, self.objective, self.objective_rounded,
                               self.feasible_rounded, self.residual_box, self.residual_sphere,
                               self.rho, self.pcg_iterations, self.residual_constraints)

    @property
    def energy_continuous(self) -> float:
        """Alias of ``objective`` (the MRF energy of the continuous iterate, for MRF solves)."""
        return self.objective

    @property
    def energy_rounded(self) -> float:
        """Alias of ``objective_rounded``."""
        return self.objective_rounded


@dataclass
class IterationState:
    """Passed to ``callback(state)`` after every iteration.

    The arrays live on the solver's backend (numpy or cupy) and are the solver's own buffers over
    the free variables: copy them if you keep them. Use :meth:`x_host` for a numpy copy. Return
    True from the callback to end the solve after this iteration (the one way to stop it).

    Attributes
    ----------
    record : IterationRecord
        The numbers of this iteration.
    x, z1, z2 : array
        Continuous iterate and its box / sphere splits (free variables only).
    max_iter : int
        The iteration limit, for progress displays.
    """

    record: IterationRecord
    x: Any
    z1: Any
    z2: Any
    max_iter: int
    _to_numpy: Any = None
    _expand: Any = None

    def __getattr__(self, name: str) -> Any:
        # Expose the record's fields directly: state.iteration, state.objective, state.rho, ...
        record = self.__dict__.get("record")
        if record is not None and name in IterationRecord.__dataclass_fields__:
            return getattr(record, name)
        raise AttributeError(name)

    def x_host(self) -> np.ndarray:
        """The continuous iterate over all variables (fixed ones at their values), as numpy."""
        x = self._to_numpy(self.x) if self._to_numpy is not None else np.asarray(self.x)
        return self._expand(x) if self._expand is not None else x


#: How a run ended (``status`` of :class:`ADMMResult` and of the segmentation results):
#: the stopping test held ...
CONVERGED = "converged"
#: ... early fixing fixed every pixel, or for K > 2 all but the last few, which the polish
#: decides (segmentation only) ...
SETTLED = "settled"
#: ... the iteration limit came first ...
MAX_ITER = "max_iter"
#: ... a callback asked to stop ...
CANCELLED = "cancelled"
#: ... or the run reached its ``pause_at`` iteration and can resume from ``state``.
PAUSED = "paused"
STATUSES = (CONVERGED, SETTLED, MAX_ITER, CANCELLED, PAUSED)


def converged(status: str) -> bool:
    """Whether a run with this status ended on its own terms (converged or settled)."""
    return status in (CONVERGED, SETTLED)


@dataclass
class ADMMResult:
    """Outcome of an ℓp-box ADMM solve.

    Attributes
    ----------
    x : numpy.ndarray of {0, 1}
        Best binary solution seen (feasible ones preferred), over all variables.
    objective : float
        Its objective ``x'Ax + b'x``.
    feasible : bool
        Whether ``x`` satisfies the equality and inequality constraints.
    iterations : int
        Iterations performed.
    status : str
        How the run ended: one of :data:`STATUSES` (``"converged"``, ``"settled"``,
        ``"max_iter"``, ``"cancelled"``, ``"paused"``).
    time_s : float
        Wall-clock seconds of the solve, its set-up included (as every result's ``time_s``).
    setup_time_s : float
        The part of ``time_s`` spent on set-up (matrices, preconditioner, transfers).
    history : list of IterationRecord
        One record per iteration.
    x_continuous : numpy.ndarray
        The last continuous iterate (all variables), for warm starts.
    best_iteration : int
        Iteration at which ``x`` was found.
    backend : str
        ``"cpu"`` or ``"gpu"``.
    state : ADMMState or None
        For a run that stopped at its ``pause_at`` iteration (``status == "paused"``): the
        iterate, splitting variables, duals and penalty (on the backend), from which
        :meth:`solver.admm.loop.LpBoxADMM.run` can resume. None otherwise.
    """

    x: np.ndarray
    objective: float
    feasible: bool
    iterations: int
    status: str
    time_s: float
    setup_time_s: float
    history: list[IterationRecord] = field(default_factory=list)
    x_continuous: np.ndarray | None = None
    best_iteration: int = 0
    backend: str = "cpu"
    state: Any = None

    @property
    def converged(self) -> bool:
        """True when the run ended on its own terms (``status`` converged or settled), False at
        the iteration limit, on a cancel or at a pause."""
        return converged(self.status)

    @property
    def pcg_iterations(self) -> int:
        """Total conjugate-gradient iterations over the solve."""
        return sum(r.pcg_iterations for r in self.history)


@dataclass
class StepResult:
    """What one fused iteration gives the ADMM loop.

    Attributes
    ----------
    x, z1, z2, xr : array
        The new iterate, its box and sphere projections, and its rounding (one-hot per group, or
        at 1/2).
    quad, bx, bxr : float
        ``x' A x``, ``b'x`` and ``b'xr``.
    d1, d2, xx, r3sq, dsq : float
        ``||x - z1||^2``, ``||x - z2||^2``, ``||x||^2``, ``||C1 x - d||^2`` and ``||d||^2`` (the
        last two 0 without constraints).
    violation : float
        ``max |C1 xr - d|`` (0 without constraints).
    cg_iterations : int
    quad_r : float or None
        ``xr' A xr`` where the step computed it (the GPU step, which has no host copy of ``xr``
        to update the CPU's running value from); None: the loop takes it from ``xr``.
    """

    x: np.ndarray
    z1: np.ndarray
    z2: np.ndarray
    xr: np.ndarray
    quad: float
    bx: float
    bxr: float
    d1: float
    d2: float
    xx: float
    r3sq: float
    dsq: float
    violation: float
    cg_iterations: int
    quad_r: float | None = None

    def residuals(self, fixed_norm_sq: float) -> tuple[float, float, float]:
        """``(r1, r2, r3)``: the box and sphere residuals relative to ``max(||x||, 1)``
        (counting eliminated variables' ``fixed_norm_sq``) and the constraint residual relative
        to ``max(||d||, 1)``, as the generic loop measures them."""
        xnorm = max(math.sqrt(self.xx + fixed_norm_sq), 1.0)
        return (math.sqrt(self.d1) / xnorm, math.sqrt(self.d2) / xnorm,
                math.sqrt(self.r3sq) / max(math.sqrt(self.dsq), 1.0))
