"""The GPU's fused iterations (solver.admm.steps.cuda) give the CPU's iterates, K = 2 and K > 2.

CUDA kernels cannot run without a GPU, so these tests skip where none is usable (CI); the
other solver tests' "gpu" backend runs every K = 2 solve through this step where one is.
"""

import numpy as np
import pytest

from solver import gpu_available
from solver.admm.steps import fused_step
from solver.admm.steps.cuda import GPUOneHotStep, GPUPlainStep, applies
from solver.mrf import MRFADMM, solve_mrf
from solver.mrf.solve.coarse_to_fine import slow_schedule
from tests.solver._mrf_helpers import random_problem

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="no CuPy/CUDA GPU")]


def _history(res):
    return np.array([[h.objective, h.objective_rounded, h.residual_box, h.residual_sphere,
                      h.rho, h.pcg_iterations] for h in res.history])


def _problem(k=2, seed=2):
    return random_problem((40, 44), k, seed=seed, hard_fraction=0.05)


@pytest.mark.parametrize("k", [2, 3])
def test_the_gpu_takes_the_fused_step(k):
    a = MRFADMM(_problem(k), "gpu").admm
    matrix = a.system._A if k == 2 else a.system._L
    assert applies(matrix, a.backend)
    step = fused_step(a.system, a.b, a.eq, None, a.backend, None, 1.0, 1e-4, 10)
    assert isinstance(step, GPUPlainStep if k == 2 else GPUOneHotStep)


@pytest.mark.parametrize(("k", "maxiter"), [(2, 1), (2, 7), (2, 30), (3, 7), (4, 1), (4, 30)])
def test_one_step_equals_the_cpu_step(k, maxiter):
    """From the same state: x, z1, z2, xr, the duals, the sums and the CG count."""
    p = _problem(k)
    cpu, gpu = MRFADMM(p, "cpu").admm, MRFADMM(p, "gpu").admm
    xp = gpu.backend.xp
    rng = np.random.default_rng(1)
    n, m = cpu.n, cpu.n // k if k > 2 else 0
    x, z1, z2 = rng.random(n), rng.random(n), rng.random(n)
    y1, y2, y3 = rng.normal(size=n), rng.normal(size=n), rng.normal(size=m)
    rho, rc = 0.7, 0.3
    steps = [fused_step(a.system, a.b, a.eq, None, a.backend, None, 1.0, 1e-6, maxiter)
             for a in (cpu, gpu)]
    dev = [xp.asarray(v) for v in (x, z1, z2, y1, y2, y3)]
    host = [v.copy() for v in (x, z1, z2, y1, y2, y3)]
    want = steps[0](*host, rho, rc)
    got = steps[1](*dev, rho, rc)
    assert got.cg_iterations == want.cg_iterations
    for name in ("x", "z1", "z2", "xr"):
        np.testing.assert_allclose(xp.asnumpy(getattr(got, name)), getattr(want, name),
                                   rtol=0, atol=1e-10, err_msg=name)
    for i in range(3, 6):  # the duals, updated in place
        np.testing.assert_allclose(xp.asnumpy(dev[i]), host[i], rtol=0, atol=1e-10)
    for name in ("quad", "bx", "bxr", "d1", "d2", "xx", "r3sq", "dsq", "violation"):
        assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-10, abs=1e-10), name
    xr = want.xr
    assert got.quad_r == pytest.approx(cpu.system.quad(xr), rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("k", [2, 3])
def test_a_whole_run_follows_the_cpu(k):
    """Many iterations (the CPU reuses its last residual; the GPU recomputes it, so the two
    differ in rounding only) and the same best labelling."""
    p = _problem(k, seed=3)
    runs = [MRFADMM(p, be, slow_schedule(None, k)).admm for be in ("cpu", "gpu")]
    res = [a.run(x0=np.full(a.n, 1.0 / k)) for a in runs]
    assert res[1].iterations == res[0].iterations > 50
    np.testing.assert_allclose(_history(res[1]), _history(res[0]), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(res[1].x, res[0].x)


@pytest.mark.parametrize("k", [2, 3])
def test_gpu_solve_matches_the_generic_gpu_loop(k):
    """The fused step and CuPy's generic loop reach the same energy on the whole pipeline."""
    p = _problem(k, seed=4)
    energies = []
    for fused in (True, False):
        energies.append(solve_mrf(p, "admm", backend="gpu", seed=0, fused=fused).energy)
    assert energies[0] == pytest.approx(energies[1], rel=1e-9)
