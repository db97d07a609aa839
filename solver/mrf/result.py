"""The answer of a segmentation solve, whichever method gave it (:class:`MRFResult`).

It sits below the solver's layers so that every one of them (the yardsticks of
:mod:`solver.reference` too) answers in this one type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solver.admm.records import ADMMResult, IterationRecord, converged

__all__ = ["MRFResult", "Verdicts"]


class Verdicts:
    """What an answer's ``constraints`` and ``status`` say: shared by :class:`MRFResult` and
    the application's segmentation result, which hold both."""

    constraints: list
    status: str

    @property
    def feasible(self) -> bool:
        """Whether every area bound and apart pair holds for ``labels``."""
        return all(r.satisfied for r in self.constraints)

    @property
    def converged(self) -> bool:
        """Whether the solve ended on its own terms (status converged or settled)."""
        return converged(self.status)


@dataclass
class MRFResult(Verdicts):
    """Outcome of :func:`solver.mrf.solve_mrf`.

    Attributes
    ----------
    labels : numpy.ndarray
        ``(H, W)`` int32 labels in 1..K.
    energy : float
        ``problem.energy(labels)``.
    method, backend : str
    iterations : int
        ADMM iterations (0 for the discrete yardsticks).
    time_s : float
        Wall-clock seconds of the solve: the reduction's set-up, ADMM and the polish (building
        the problem is not in it).
    status : str
        How ADMM ended (:data:`solver.admm.records.STATUSES`; ``"converged"`` for the
        yardsticks); ``converged`` says whether that was on its own terms.
    history : list of IterationRecord
        ADMM's per-iteration record (energies in MRF units); empty for other methods.
    x_continuous : numpy.ndarray or None
        ``(n, K)`` last continuous iterate, for warm starts.
    admm : ADMMResult or None
        The raw solver result (ADMM only).
    energy_admm : float or None
        Energy of ADMM's own answer, before the polish (ADMM only).
    constraints : list of ConstraintReport
        Whether each area bound and apart pair holds for ``labels`` (empty without any).
    bound : float or None
        A lower bound on the optimum, where the method proves one (the constrained yardsticks).
    detail : str
        The method's variant where it matters (e.g. "parametric min-cut").
    stages : tuple of StageReport
        The final polish stage by stage (:data:`solver.mrf.polish.stages.STAGES`): each
        stage's time and the energy it took off, in the order they ran; their gains add up to
        ``energy_admm - energy``. Empty without a polish and for the yardsticks.
    """

    labels: np.ndarray
    energy: float
    method: str
    backend: str
    iterations: int
    time_s: float
    status: str
    history: list[IterationRecord] = field(default_factory=list)
    x_continuous: np.ndarray | None = None
    admm: ADMMResult | None = None
    energy_admm: float | None = None
    constraints: list = field(default_factory=list)
    bound: float | None = None
    detail: str = ""
    stages: tuple = ()

    @property
    def polish_s(self) -> float:
        """Seconds of the final polish, every stage together (0 without one)."""
        return float(sum(s.time_s for s in self.stages))

    def as_dict(self) -> dict[str, Any]:
        """The result's figures as plain JSON values (no arrays): method, backend, status,
        iterations, time, the energies, the bound, the constraints and the polish's stages.

        Returns
        -------
        dict
        """
        return {
            "method": self.method,
            "backend": self.backend,
            "detail": self.detail,
            "status": self.status,
            "converged": self.converged,
            "iterations": int(self.iterations),
            "time_s": round(float(self.time_s), 6),
            "energy": float(self.energy),
            "energy_admm": None if self.energy_admm is None else float(self.energy_admm),
            "bound": None if self.bound is None else float(self.bound),
            "feasible": self.feasible,
            "constraints": [r.as_dict() for r in self.constraints],
            "polish_s": round(self.polish_s, 6),
            "stages": [s.as_dict() for s in self.stages],
        }

    @property
    def optimal(self) -> bool:
        """Whether ``labels`` is proven optimal: its energy meets the lower ``bound`` (to
        1e-9 relative)."""
        return self.bound is not None and abs(self.energy - self.bound) <= 1e-9 * max(
            1.0, abs(self.energy))



