"""segapp.core.pipeline's choice of backend."""

import numpy as np
import scipy.sparse as sp

import solver.backend as backend_module
from segapp.core.pipeline import resolve_backend
from solver.backend import Backend


def test_auto_backend_of_a_small_image_is_the_cpu_even_with_a_gpu(monkeypatch):
    monkeypatch.setattr(backend_module, "_load_gpu", lambda: Backend("gpu", np, sp))
    warnings: list[str] = []
    assert resolve_backend("auto", warnings, n=10_000, k=2) == "cpu"
    assert resolve_backend("auto", warnings, n=2_000_000, k=2) == "gpu"
    assert warnings == []
