"""ℓp-box ADMM (Wu & Ghanem): parameters, the iteration loop, its x-update systems, projections
and the compiled steps (:mod:`solver.admm.steps`).

The names below load on first use (as :mod:`solver`'s do), so importing
:mod:`solver.admm.params` for its defaults does not compile-load the loop's kernels.
"""

from __future__ import annotations

from solver.lazy import lazy_names

_WHERE = {
    "ADMMParams": "solver.admm.params", "ADMMResult": "solver.admm.records",
    "ADMMState": "solver.admm.loop", "IterationRecord": "solver.admm.records",
    "IterationState": "solver.admm.records", "LpBoxADMM": "solver.admm.loop",
}

__all__, __getattr__, __dir__ = lazy_names(__name__, _WHERE)
