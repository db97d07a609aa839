"""The fused iterations (solver.admm.steps) give the generic loop's iterates."""

from dataclasses import replace

import numpy as np
import pytest

from solver.admm.params import ADMMParams
from solver.admm.steps import OneHotStep, PlainStep, fused_step
from solver.mrf import MRFADMM, build_problem, solve_mrf
from solver.mrf.solve.coarse_to_fine import slow_schedule
from tests.solver._mrf_helpers import random_problem, shapes_image


def _history(res):
    return np.array([[h.objective, h.objective_rounded, h.residual_box, h.residual_sphere,
                      h.rho, h.pcg_iterations] for h in res.history])


def _problem(k, seed=2):
    if k != 3:
        return random_problem((40, 44), k, seed=seed, hard_fraction=0.05)
    image, _, strokes = shapes_image(seed=seed, k=k, noise=0.12)
    return build_problem(image, strokes, k)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_fused_iterates_match_the_generic_loop(k):
    p = _problem(k)
    runs = {}
    for fused in (False, True):
        solver = MRFADMM(p, "cpu", replace(slow_schedule(None, k), fused=fused))
        a = solver.admm
        step = fused_step(a.system, a.b, a.eq, None, a.backend, None, 1.0, 1e-4, 10)
        assert isinstance(step, OneHotStep if k > 2 else PlainStep)
        runs[fused] = solver.admm.run(x0=np.full(solver.admm.n, 1.0 / k))
    generic, fused = runs[False], runs[True]
    assert fused.iterations == generic.iterations > 50
    np.testing.assert_array_equal(fused.x, generic.x)
    # same arithmetic; only the dot products are summed in another order
    np.testing.assert_allclose(_history(fused), _history(generic), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(fused.x_continuous, generic.x_continuous, rtol=0, atol=1e-9)


@pytest.mark.parametrize("k", [2, 3])
def test_paused_and_resumed_run_equals_one_run(k):
    """The warm start and the reused CG residual carry over a pause (same x object)."""
    p = _problem(k)
    admm = MRFADMM(p, "cpu").admm
    start = np.full(admm.n, 1 / k)
    whole = MRFADMM(p, "cpu").admm.run(x0=start)
    first = admm.run(x0=start, pause_at=7)
    assert first.status == "paused"
    rest = admm.run(resume=first.state)
    joined, one = np.vstack([_history(first), _history(rest)]), _history(whole)
    exact = [0, 2, 3, 4, 5]  # the rounded objective's tracker restarts with each run (1e-13)
    np.testing.assert_array_equal(joined[:, exact], one[:, exact])
    np.testing.assert_allclose(joined[:, 1], one[:, 1], rtol=1e-12)
    np.testing.assert_array_equal(rest.x_continuous, whole.x_continuous)


@pytest.mark.parametrize("k", [2, 3])
def test_another_iterate_is_not_taken_for_the_last_one(k):
    """Resuming from a state whose x is another vector (a new object) must not reuse the
    last solve's warm start and residual: it goes as the generic loop from that state."""
    p = _problem(k)
    size = MRFADMM(p, "cpu").admm.n
    rng = np.random.default_rng(0)
    bump = 0.2 * rng.random(size)
    runs = {}
    for fused in (False, True):
        admm = MRFADMM(p, "cpu", ADMMParams(fused=fused)).admm
        state = admm.run(x0=np.full(size, 1 / k), pause_at=7).state
        state.x = state.x + bump
        runs[fused] = admm.run(resume=state)
    assert runs[True].iterations == runs[False].iterations
    np.testing.assert_allclose(_history(runs[True]), _history(runs[False]), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("k", [2, 3])
def test_whole_mrf_solve_is_unchanged(k):
    p = _problem(k, seed=4)
    energies = []
    for fused in (False, True):
        res = solve_mrf(p, "admm", seed=0, fused=fused)
        energies.append((res.energy, res.iterations))
    assert energies[0] == energies[1]


@pytest.mark.slow
@pytest.mark.parametrize("bound", [(0.55, 0.6), (0.2, 0.25)])
def test_the_area_step_matches_the_generic_loop(bound):
    """K = 2 with label 2's area bounded (above and below where the plain solve lands): the
    fused step with the box-with-a-sum projection and the rounding within the bounds
    (:class:`solver.admm.steps.SumsStep`) gives the generic loop's iterates, and the whole
    solve its labels."""
    from solver.admm.steps import SumsStep
    from solver.mrf import AreaBound, Constraints, with_constraints

    p = with_constraints(_problem(2, seed=3), Constraints(area=(AreaBound(2, *bound),)))
    runs = {}
    for fused in (False, True):
        solver = MRFADMM(p, "cpu", replace(slow_schedule(None, 2), fused=fused))
        a = solver.admm
        step = fused_step(a.system, a.b, a.eq, None, a.backend, None, 1.0, 1e-4, 10,
                          area=a.z1_set)
        assert isinstance(step, SumsStep)
        runs[fused] = a.run(x0=np.full(a.n, 0.5))
    generic, fused = runs[False], runs[True]
    assert fused.iterations == generic.iterations > 50
    np.testing.assert_array_equal(fused.x, generic.x)
    np.testing.assert_allclose(_history(fused), _history(generic), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(fused.x_continuous, generic.x_continuous, rtol=0, atol=1e-9)
    labels = [solve_mrf(p, "admm", seed=0, fused=f).labels for f in (False, True)]
    np.testing.assert_array_equal(labels[0], labels[1])
    assert p.feasible(labels[1])
