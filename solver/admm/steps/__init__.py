"""The compiled iterations of ℓ2-box ADMM: the fused CPU steps (:mod:`solver.admm.steps.fused`)
and their kernels (:mod:`solver.admm.steps.cpu_kernels`, :mod:`solver.admm.steps.fused_kernels`),
the CUDA steps (:mod:`solver.admm.steps.cuda`) and the split's kernels.

The step classes load on first use: :mod:`solver.admm.systems` imports the CPU kernels from this
package, and the steps import the systems, so this file imports neither (an import of
``solver.admm.systems`` in a fresh interpreter would otherwise meet it half loaded).
"""

from __future__ import annotations

from solver.lazy import lazy_names

_WHERE = {name: "solver.admm.steps.fused"
          for name in ("OneHotStep", "PlainStep", "SumsStep", "fused_step")}

__all__, __getattr__, __dir__ = lazy_names(__name__, _WHERE)
