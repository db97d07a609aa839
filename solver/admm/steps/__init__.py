"""The compiled iterations of ℓ2-box ADMM: the fused CPU steps (:mod:`solver.admm.steps.fused`)
and their kernels (:mod:`solver.admm.steps.cpu_kernels`, :mod:`solver.admm.steps.fused_kernels`),
the CUDA steps (:mod:`solver.admm.steps.cuda`) and the split's kernels.

The step classes load on first use: :mod:`solver.admm.systems` imports the CPU kernels from this
package, and the steps import the systems, so this file imports neither (an import of
``solver.admm.systems`` in a fresh interpreter would otherwise meet it half loaded).
"""

from __future__ import annotations

import importlib
from typing import Any

_FUSED = ("OneHotStep", "PlainStep", "SumsStep", "fused_step")

__all__ = sorted(_FUSED)


def __getattr__(name: str) -> Any:
    if name in _FUSED:
        return getattr(importlib.import_module("solver.admm.steps.fused"), name)
    raise AttributeError(f"module 'solver.admm.steps' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
