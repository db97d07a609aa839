"""ℓp-box ADMM (Wu & Ghanem): parameters, the iteration loop, its x-update systems, projections
and the compiled steps (:mod:`solver.admm.steps`)."""

from solver.admm.loop import ADMMState, LpBoxADMM
from solver.admm.params import ADMMParams
from solver.admm.records import ADMMResult, IterationRecord, IterationState

__all__ = ["ADMMParams", "ADMMResult", "ADMMState", "IterationRecord", "IterationState",
           "LpBoxADMM"]
