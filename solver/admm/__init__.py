"""ℓp-box ADMM (Wu & Ghanem): parameters, the iteration loop, its x-update systems, projections
and the compiled steps (:mod:`solver.admm.steps`).

The names below load on first use (as :mod:`solver`'s do), so importing
:mod:`solver.admm.params` for its defaults does not compile-load the loop's kernels.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "ADMMParams": "solver.admm.params", "ADMMResult": "solver.admm.records",
    "ADMMState": "solver.admm.loop", "IterationRecord": "solver.admm.records",
    "IterationState": "solver.admm.records", "LpBoxADMM": "solver.admm.loop",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'solver.admm' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
