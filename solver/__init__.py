"""segapp's numerical core: ℓp-box ADMM for binary quadratic programs, MRF models, yardsticks.

No Qt, no file formats, no GUI ideas live here. Layers, top to bottom: :mod:`solver.mrf`
(segmentation: build, solve, polish) and :mod:`solver.bqp` (general BQPs) over
:mod:`solver.reference` (yardsticks), over :mod:`solver.admm` (the method), over
:mod:`solver.backend` (numpy/numba or CuPy).

The names below load on first use, so ``import solver.names`` (the CLI's choices) stays cheap.
"""

from __future__ import annotations

from solver.lazy import lazy_names

_WHERE = {
    "ADMMParams": "solver.admm.params", "ADMMResult": "solver.admm.records",
    "IterationRecord": "solver.admm.records", "IterationState": "solver.admm.records",
    "LpBoxADMM": "solver.admm.loop", "PCGResult": "solver.admm.pcg", "pcg": "solver.admm.pcg",
    "BACKENDS": "solver.names", "Backend": "solver.backend",
    "GPUUnavailableError": "solver.backend", "get_backend": "solver.backend",
    "gpu_available": "solver.backend", "solve_bqp": "solver.bqp.solve",
}

__all__, __getattr__, __dir__ = lazy_names(__name__, _WHERE)
