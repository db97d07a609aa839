"""Fixtures for the solver tests: every backend test runs on the CPU, and on the GPU when present."""

import itertools
import types

import numpy as np
import pytest
import scipy.sparse as sp

from solver import gpu_available
from solver.backend import Backend


def _host_gpu() -> Backend:
    """A backend that takes the GPU code paths (``is_gpu``) with numpy and scipy arrays.

    CI has no GPU, so the GPU branches (numpy PCG instead of the compiled kernels, unfused ADMM
    steps, transfers) would otherwise never run there; this runs their logic on the host. CuPy's
    own API and the CUDA kernels of solver.admm.steps.cuda are covered only by the real "gpu"
    backend, where a GPU is present (the whole solver suite passed on an H100, 2026-11-25).
    """
    xp = types.ModuleType("numpy_as_cupy")
    xp.__dict__.update({k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    xp.asnumpy = np.asarray
    return Backend("gpu", xp, sp)


BACKENDS = [
    "cpu",
    pytest.param(_host_gpu(), id="gpu-paths-on-host"),
    pytest.param("gpu", marks=[pytest.mark.gpu,
                               pytest.mark.skipif(not gpu_available(), reason="no CuPy/CUDA GPU")]),
]


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Name of an available backend."""
    return request.param


def brute_force(A, b, feasible=None):
    """Exact minimum of x'Ax + b'x over {0,1}^n (n <= 16), optionally over a feasible subset."""
    n = len(b)
    X = np.array(list(itertools.product([0.0, 1.0], repeat=n)))
    if feasible is not None:
        X = X[feasible(X)]
    values = np.einsum("ij,jk,ik->i", X, A, X) + X @ b
    return float(values.min())


def random_psd_bqp(seed, n_range=(8, 15)):
    """A seeded random BQP with a PSD quadratic term."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(*n_range))
    M = rng.normal(size=(n, n))
    return M.T @ M / n, 2.0 * rng.normal(size=n)
