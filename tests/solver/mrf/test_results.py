"""Results say honestly how a run ended, and time_s means the same thing at every layer."""

import numpy as np
import pytest

from solver import ADMMParams, LpBoxADMM, solve_bqp
from solver.admm.records import STATUSES
from solver.admm.systems import GenericSystem
from solver.backend import CPU
from solver.mrf import MRFADMM, EarlyFixingOptions, SolveOptions, build_problem, solve_mrf
from tests.solver._mrf_helpers import shapes_image


def _problem(k=2, size=48):
    image, _, strokes = shapes_image(seed=2, k=k, size=size, noise=0.15)
    return build_problem(image, strokes, k)


def test_a_bqp_run_reports_each_way_it_can_end():
    rng = np.random.default_rng(0)
    M = rng.normal(size=(30, 30))
    A, b = M @ M.T / 30, rng.normal(size=30)
    assert solve_bqp(A, b, seed=0).status == "converged"
    capped = solve_bqp(A, b, seed=0, max_iter=3)
    assert capped.status == "max_iter" and not capped.converged and capped.iterations == 3
    cancelled = solve_bqp(A, b, seed=0, callback=lambda s: s.iteration >= 2)
    assert cancelled.status == "cancelled" and not cancelled.converged
    admm = LpBoxADMM(GenericSystem(A, CPU), b, params=ADMMParams())
    paused = admm.run(seed=0, pause_at=4)
    assert paused.status == "paused" and not paused.converged and paused.state is not None
    assert {r.status for r in (capped, cancelled, paused)} <= set(STATUSES)


def test_an_early_fixed_run_that_meets_its_stopping_test_says_converged():
    p = _problem()
    fixed = MRFADMM(p, early_fixing=True).run(seed=0, polish=False)
    whole = MRFADMM(p, early_fixing=False).run(seed=0, polish=False)
    assert fixed.status == whole.status == "converged" and fixed.converged
    assert fixed.admm.status == "converged"


def test_a_k3_run_left_to_the_polish_says_settled():
    """K > 2 stops once early fixing would leave only the last tenth of the pixels free, for
    the polish to decide: that is not ADMM's stopping test, and the status says so."""
    p = _problem(k=3, size=64)
    settled = solve_mrf(p, "admm", seed=0)
    assert settled.status == "settled" and settled.converged
    alone = solve_mrf(p, "admm", seed=0, options=SolveOptions(
        early_fixing=EarlyFixingOptions(enabled=False)))
    assert alone.status == "converged"


def test_cancelled_and_capped_segmentations():
    p = _problem()
    cancelled = solve_mrf(p, "admm", seed=0, callback=lambda s: s.iteration >= 5)
    assert cancelled.status == "cancelled" and not cancelled.converged
    capped = solve_mrf(p, "admm", seed=0, max_iter=4, options=SolveOptions(
        early_fixing=EarlyFixingOptions(enabled=False)))
    assert capped.status == "max_iter" and capped.iterations == 4


@pytest.mark.parametrize("coarse_to_fine", [False, True])
def test_time_s_is_the_whole_solve_with_its_set_up(coarse_to_fine):
    p = _problem(size=200 if coarse_to_fine else 48)
    res = solve_mrf(p, "admm", seed=0, coarse_to_fine=coarse_to_fine)
    assert res.admm.setup_time_s > 0 and res.admm.time_s >= res.admm.setup_time_s
    assert res.time_s >= res.admm.time_s  # the segmentation's time also covers the polish
    rng = np.random.default_rng(1)
    M = rng.normal(size=(20, 20))
    bqp = solve_bqp(M @ M.T, rng.normal(size=20), seed=0)
    assert bqp.time_s >= bqp.setup_time_s > 0


def test_a_renumbered_record_keeps_every_other_field():
    """A coarse-to-fine level's records are renumbered into the whole solve's count: only the
    iteration number moves (every field, so one added later cannot be dropped silently)."""
    import dataclasses

    from solver.admm.records import IterationRecord

    fields = dataclasses.fields(IterationRecord)
    values = {f.name: (i + 1) * 1.5 for i, f in enumerate(fields)}
    values.update(iteration=7, pcg_iterations=3, feasible_rounded=True)
    record = IterationRecord(**values)
    moved = record.renumbered(40)
    assert moved.iteration == 47
    for f in fields:
        if f.name != "iteration":
            assert getattr(moved, f.name) == getattr(record, f.name), f.name
    levels = solve_mrf(_problem(size=200), "admm", seed=0).history  # (pyramid levels)
    assert [r.iteration for r in levels] == list(range(1, len(levels) + 1))
