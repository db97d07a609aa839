"""segapp's numerical core: ℓp-box ADMM for binary quadratic programs, MRF models, yardsticks.

No Qt, no file formats, no GUI ideas live here.
"""

from .admm import ADMMParams, LpBoxADMM
from .backend import Backend, GPUUnavailableError, get_backend, gpu_available
from .bqp import solve_bqp
from .pcg import PCGResult, pcg
from .result import ADMMResult, IterationRecord, IterationState

__all__ = [
    "ADMMParams", "ADMMResult", "Backend", "GPUUnavailableError", "IterationRecord",
    "IterationState", "LpBoxADMM", "PCGResult", "get_backend", "gpu_available", "pcg", "solve_bqp",
]
