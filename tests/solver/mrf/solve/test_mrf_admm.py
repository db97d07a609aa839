"""ℓ2-box ADMM on segmentation MRFs, against the yardsticks and the ground truth."""

import gc

import numba
import numpy as np
import pytest
import scipy.sparse as sp

import solver.backend as backend_module
from solver.backend import Backend, GPUUnavailableError
from solver.backend.threads import threaded
from solver.mrf import MRFADMM, auto_backend, build_problem, solve_mrf
from solver.mrf.build.stencil import csr_arrays, graph_arrays
from solver.admm.params import FALLBACKS, ADMMParams
from solver.mrf.options import SolveOptions, TVOptions
from solver.mrf.polish.icm import icm
from tests.solver._mrf_helpers import (brute_force, perturbed_fixed_point, random_problem,
                                       shapes_image)


def _synthetic(seed, k, noise=0.15, size=48):
    """Shapes + strong noise, strokes inside each shape (a problem where smoothing matters)."""
    return shapes_image(seed=seed, k=k, size=size, noise=noise)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_k2_admm_within_a_tenth_of_a_percent_of_mincut(backend, seed):
    """Issue #3 asks for 0.5%, issue #5 for 0.1%; with level-set fusion these images end at 0%."""
    image, truth, strokes = _synthetic(seed, 2)
    p = build_problem(image, strokes, 2)
    ref = solve_mrf(p, "mincut")
    res = solve_mrf(p, "admm", backend=backend)
    assert res.energy >= ref.energy - 1e-6 * abs(ref.energy)  # min-cut is the global optimum
    assert res.energy <= ref.energy + 0.001 * abs(ref.energy)
    acc_ref = np.mean(ref.labels == truth)
    assert np.mean(res.labels == truth) >= acc_ref - 0.01
    assert res.iterations > 0 and len(res.history) == res.iterations


@pytest.mark.parametrize("seed", range(12))
def test_k3_admm_close_to_expansion(backend, seed):
    """Per image, K = 3 stays within 1% of alpha-expansion (issue #3); all twelve seeds give 0%.
    Seed 1 was 0.99% before the closing fusion, and seed 6 12% before the box completion (ADMM
    cuts a corner off the middle-grey square and the polish then dropped the square)."""
    image, truth, strokes = _synthetic(seed, 3, noise=0.12)
    p = build_problem(image, strokes, 3)
    ref = solve_mrf(p, "expansion")
    res = solve_mrf(p, "admm", backend=backend)
    assert res.energy <= ref.energy + 0.01 * abs(ref.energy)
    assert np.mean(res.labels == truth) >= np.mean(ref.labels == truth) - 0.01
    assert set(np.unique(res.labels)) <= {1, 2, 3}



@pytest.mark.slow
def test_k3_admm_median_gap_to_expansion_within_one_percent():
    gaps = []
    for seed in range(6):
        image, _, strokes = _synthetic(seed, 3, noise=0.12)
        p = build_problem(image, strokes, 3)
        ref = solve_mrf(p, "expansion").energy
        gaps.append((solve_mrf(p, "admm").energy - ref) / abs(ref))
    assert np.median(gaps) <= 0.01


def test_k_above_two_caps_the_cg_at_its_own_default_unless_told():
    """K > 2 runs at most MULTI_PCG_MAXITER CG iterations per x-update by default; an explicit
    ``pcg_maxiter`` wins (the soft early iterations do reach the generic cap of 7)."""
    from solver.mrf.solve import dispatch

    image, _, strokes = _synthetic(0, 3, noise=0.12)
    p = build_problem(image, strokes, 3)
    default = solve_mrf(p, "admm", polish=False)
    told = solve_mrf(p, "admm", polish=False, pcg_maxiter=7)
    assert max(r.pcg_iterations for r in default.history) <= dispatch.MULTI_PCG_MAXITER < 7
    assert max(r.pcg_iterations for r in told.history) > dispatch.MULTI_PCG_MAXITER
    k2 = build_problem(*_synthetic(0, 2, size=64)[::2], 2)  # K = 2 keeps the generic default
    assert max(r.pcg_iterations for r in solve_mrf(k2, "admm", polish=False).history) > 3


@pytest.mark.parametrize("onehot", ["penalty", "simplex"])
def test_both_one_hot_treatments_give_valid_labellings(onehot):
    image, truth, strokes = _synthetic(1, 3, noise=0.12)
    p = build_problem(image, strokes, 3)
    res = MRFADMM(p, onehot=onehot).run()
    assert res.labels.shape == p.shape
    assert res.energy == pytest.approx(p.energy(res.labels))
    assert np.mean(res.labels == truth) > 0.95
    with pytest.raises(ValueError, match="onehot must be"):
        MRFADMM(p, onehot="bogus")


def test_admm_energy_before_polish_is_reported_and_polish_never_hurts():
    image, _, strokes = _synthetic(3, 2, noise=0.35)
    p = build_problem(image, strokes, 2)
    res = solve_mrf(p, "admm")
    raw = solve_mrf(p, "admm", polish=False)
    assert res.energy <= res.energy_admm + 1e-9
    assert raw.energy == pytest.approx(raw.energy_admm)
    assert raw.energy == pytest.approx(res.energy_admm)


def test_icm_never_increases_energy_and_keeps_hard_pixels():
    p = random_problem((9, 11), k=3, seed=4, hard_fraction=0.2)
    rng = np.random.default_rng(0)
    start = rng.integers(1, 4, size=p.shape)
    hard = p.hard.reshape(p.shape)
    start[hard > 0] = hard[hard > 0]
    out = icm(p, start)
    assert p.energy(out) <= p.energy(start)
    np.testing.assert_array_equal(out[hard > 0], hard[hard > 0])



@pytest.mark.parametrize("k", [2, 3])
def test_icm_ends_where_no_single_pixel_move_helps(k):
    # the active-set ICM skips pixels it proves cannot move; check by trying every move
    p = random_problem((10, 13), k=k, seed=10 + k, hard_fraction=0.1)
    start = np.random.default_rng(k).integers(1, k + 1, size=p.shape)
    hard = p.hard.reshape(p.shape)
    start[hard > 0] = hard[hard > 0]
    out = icm(p, start, max_sweeps=1000)
    e = p.energy(out)
    for i in np.flatnonzero(hard.ravel() == 0):
        for c in range(1, k + 1):
            trial = out.copy().ravel()
            trial[i] = c
            assert p.energy(trial) >= e - 1e-9


def _reference_sweeps(p, lab, active, sweeps):
    """Colour-class ICM written plainly: each sweep scans the classes (row % 2, col % 2) in
    turn, row-major, moving each active pixel to its best label and activating its neighbours."""
    from solver.mrf.polish import icm_kernels as kernels

    indptr, indices, data = csr_arrays(p)
    h, w = p.shape
    movable = p.hard.ravel() == 0
    agree = np.zeros(p.k)
    for _ in range(sweeps):
        moved = 0
        for cls in range(4):
            for i in [r * w + c for r in range(cls >> 1, h, 2) for c in range(cls & 1, w, 2)]:
                if active[i]:
                    active[i] = False
                    best = kernels.best_label(indptr, indices, data, np.empty(0),
                                              np.zeros(13, np.int64), p.unary, 2.0 * p.lam, lab,
                                              i, agree)
                    if best != lab[i]:
                        lab[i], moved = best, moved + 1
                        for j in indices[indptr[i]:indptr[i + 1]]:
                            if j != i and movable[j]:
                                active[j] = True
        if moved == 0:
            break
    return lab


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(9, 11), (10, 12), (1, 7), (7, 1), (40, 37)])
@pytest.mark.parametrize("sweeps", [1, 2, 50])
@pytest.mark.parametrize("chunk", [1, 3, 4096])
def test_icm_sweeps_match_a_plain_scan_of_the_colour_classes(shape, sweeps, chunk):
    """The kernel keeps a list of active pixels per class instead of scanning, and evaluates a
    class's pixels on threads ``chunk`` at a time; after any number of sweeps (mid-way too,
    where the order of the classes matters) the labels are the same."""
    from solver.mrf.polish import icm_kernels as kernels
    p = random_problem(shape, k=3, seed=shape[0] + sweeps, hard_fraction=0.1)
    rng = np.random.default_rng(sweeps)
    lab = np.where(p.hard.ravel() > 0, p.hard.ravel(), rng.integers(1, 4, p.n)) - 1
    active = (p.hard.ravel() == 0) & (rng.random(p.n) < 0.6)
    expected = _reference_sweeps(p, lab.copy(), active.copy(), sweeps)
    assert not np.array_equal(expected, lab)  # ICM moved something
    # through the grid view where the image is wide enough for one, and through the CSR
    indptr, indices, data, gw, geom = graph_arrays(p)
    assert gw.size == (p.graph.weights.size if shape[1] >= 3 else 0)
    for arrays in ((indptr, indices, data, gw, geom),
                   (*csr_arrays(p), np.empty(0), geom)):
        got = lab.copy()
        threaded(kernels.icm_sweeps, (*arrays, p.unary, 2.0 * p.lam), got,
                 p.hard.ravel() == 0, active.copy(), shape[1], sweeps, chunk,
                 threads=min(2, numba.config.NUMBA_NUM_THREADS))
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("k", [2, 3])
def test_icm_since_a_fixed_point_looks_only_around_the_changes_and_ends_the_same(k):
    p = random_problem((40, 37), k=k, seed=20 + k, hard_fraction=0.1)
    base, moved = perturbed_fixed_point(p, k, 25)
    full = icm(p, moved, max_sweeps=1000)
    assert not np.array_equal(full.ravel(), moved)  # the test means something: ICM moves pixels
    np.testing.assert_array_equal(icm(p, moved, max_sweeps=1000, since=base), full)


@pytest.mark.parametrize("k", [2, 3])
def test_hard_constraints_honoured_by_admm(backend, k):
    p = random_problem((6, 7), k=k, seed=k, hard_fraction=0.3)
    res = solve_mrf(p, "admm", backend=backend)
    p.check_hard(res.labels)
    hard = p.hard.reshape(p.shape)
    np.testing.assert_array_equal(res.labels[hard > 0], hard[hard > 0])


def test_admm_matches_brute_force_on_tiny_problems():
    hits = 0
    for seed in range(8):
        p = random_problem((3, 4), k=2, seed=seed, hard_fraction=0.1)
        best, _ = brute_force(p)
        hits += solve_mrf(p, "admm").energy <= best + 1e-9
    assert hits >= 7


def test_reported_objective_is_the_mrf_energy():
    """The reduced K = 2 BQP and the label-direction K > 2 system report MRF energies."""
    for k in (2, 3):
        p = random_problem((5, 6), k=k, seed=10 + k, hard_fraction=0.2)
        res = solve_mrf(p, "admm", polish=False)
        assert res.admm.objective == pytest.approx(p.energy(res.labels))
        assert min(r.energy_rounded for r in res.history) == pytest.approx(res.admm.objective)


def test_callback_gets_probabilities_and_can_stop():
    image, _, strokes = _synthetic(0, 3)
    p = build_problem(image, strokes, 3)
    seen = []

    def cb(state):
        probs = state.probabilities()
        assert probs.shape == (*p.shape, 3) and probs.dtype == np.float32
        np.testing.assert_allclose(probs.sum(axis=2), 1.0, atol=1e-5)
        seen.append((state.iteration, state.energy_rounded))
        return state.iteration >= 4

    res = solve_mrf(p, "admm", callback=cb)
    assert [s[0] for s in seen] == [1, 2, 3, 4]
    assert res.iterations == 4 and not res.converged
    assert res.labels.shape == p.shape


def test_warm_start_reuses_setup():
    image, _, strokes = _synthetic(1, 2)
    p = build_problem(image, strokes, 2)
    solver = MRFADMM(p)
    inner = solver.admm
    cold = solver.run()
    warm = solver.run(x0=cold.x_continuous)
    assert solver.admm is inner
    assert warm.history[0].energy_rounded <= cold.history[0].energy_rounded
    assert warm.energy <= cold.energy + 0.002 * abs(cold.energy)
    with pytest.raises(ValueError, match="x0 must have"):
        solver.run(x0=np.zeros(3))


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_a_solve_leaves_no_reference_cycles(k):
    """The solver and the pieces early fixing makes of it must be freed as soon as the result is
    dropped, not when the cyclic collector next runs: a cycle through them held about 75 MB a
    solve at 5e5 pixels, and an app that solves again and again grew by that much each time."""
    p = build_problem(*_synthetic(0, k, size=64)[::2], k)
    solver = MRFADMM(p)
    solver.run(seed=0)
    # the path under test: snapshots taken by the pieces early fixing made, as well as the whole
    assert min(free.size for free, _, _ in solver.snapshots) < solver.free.size
    del solver
    gc.collect()
    gc.disable()
    try:
        solver = MRFADMM(p)
        res = solver.run(seed=0)
        whole = solve_mrf(p, "admm", seed=0, coarse_to_fine=True)
        del solver, res, whole
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_seeded_random_starts_are_reproducible():
    image, _, strokes = _synthetic(2, 2)
    p = build_problem(image, strokes, 2)
    a = solve_mrf(p, "admm", seed=3)
    b = solve_mrf(p, "admm", seed=3)
    np.testing.assert_array_equal(a.labels, b.labels)


def test_method_errors():
    image, _, strokes = _synthetic(0, 3)
    p = build_problem(image, strokes, 3)
    with pytest.raises(ValueError, match="min-cut needs K = 2"):
        solve_mrf(p, "mincut")
    with pytest.raises(ValueError, match="unknown method"):
        solve_mrf(p, "qpbo")
    with pytest.raises(ValueError, match="rho0 must be a finite"):
        solve_mrf(p, "admm", rho0=float("nan"))
    with pytest.raises(ValueError, match="ADMM parameters given"):
        solve_mrf(p, "expansion", rho0=1.0)
    with pytest.raises(ValueError, match="ADMM parameters given to method 'expansion': max_iter"):
        solve_mrf(p, "expansion", admm=ADMMParams(max_iter=5))


def test_parameters_as_one_object_or_as_keywords_solve_the_same():
    """``admm=ADMMParams(...)`` and the keyword shorthand are one input: the same iterates,
    keywords replacing the object's fields; the fields left None take the problem's choice, so
    a small problem given nothing follows the slow schedule and one given ρ₀ does not."""
    from solver.mrf.options import CoarseToFineOptions

    image, _, strokes = _synthetic(1, 3)
    p = build_problem(image, strokes, 3)
    kw = solve_mrf(p, "admm", polish=False, max_iter=40, gamma=1.2)
    obj = solve_mrf(p, "admm", polish=False, admm=ADMMParams(max_iter=40, gamma=1.2))
    both = solve_mrf(p, "admm", polish=False, admm=ADMMParams(max_iter=7, gamma=1.2),
                     max_iter=40)
    for other in (obj, both):
        np.testing.assert_array_equal(other.labels, kw.labels)
        assert [r.rho for r in other.history] == [r.rho for r in kw.history]
    growth = [b.rho / a.rho for a, b in zip(kw.history, kw.history[1:])]
    assert growth[0] == pytest.approx(CoarseToFineOptions().small_growth)
    set_rho0 = solve_mrf(p, "admm", polish=False, admm=ADMMParams(rho0=0.5, max_iter=5))
    assert set_rho0.history[1].rho / set_rho0.history[0].rho == pytest.approx(
        FALLBACKS["rho_growth"])


def test_polish_is_an_option_and_the_keyword_its_shorthand():
    """``options.polish.enabled = False`` and ``polish=False`` both leave ADMM's own answer."""
    image, _, strokes = _synthetic(2, 3, noise=0.2)
    p = build_problem(image, strokes, 3)
    off = SolveOptions().with_polish(False)
    by_option = solve_mrf(p, "admm", options=off)
    by_keyword = solve_mrf(p, "admm", polish=False)
    polished = solve_mrf(p, "admm", options=off, polish=True)
    for r in (by_option, by_keyword):
        assert r.stages == () and r.energy == pytest.approx(r.energy_admm)
        np.testing.assert_array_equal(r.labels, by_keyword.labels)
    assert polished.stages and polished.energy <= by_option.energy
    assert SolveOptions().with_polish(True) == SolveOptions()


@pytest.mark.parametrize("method", ["mincut", "expansion", "lp"])
def test_every_method_returns_a_valid_labelling(method):
    image, _, strokes = _synthetic(1, 2)
    p = build_problem(image, strokes, 2)
    res = solve_mrf(p, method)
    assert res.labels.shape == p.shape and res.method == method
    assert res.energy == pytest.approx(p.energy(res.labels))


def test_pair_moves_never_raise_energy_and_end_where_no_pair_helps():
    from solver.mrf.polish.icm import pair_moves

    for seed in range(4):
        p = random_problem((7, 9), k=3, seed=20 + seed, hard_fraction=0.15)
        hard = np.asarray(p.hard).ravel()
        start = np.where(hard > 0, hard, np.random.default_rng(seed).integers(1, 4, p.n))
        start = icm(p, start)
        out = pair_moves(p, start)
        assert p.energy(out) <= p.energy(start) + 1e-9
        p.check_hard(out)
        # no boundary pair of one label can lower the energy by moving together
        lab = out.ravel()
        g = p.graph
        for i, j in zip(g.i, g.j):
            if lab[i] != lab[j] or p.hard.ravel()[i] or p.hard.ravel()[j]:
                continue
            for c in range(1, 4):
                alt = lab.copy()
                alt[[i, j]] = c
                assert p.energy(alt) >= p.energy(lab) - 1e-9 or not _on_boundary(p, lab, i, j)


def _on_boundary(p, lab, i, j):
    g = p.graph
    nb = np.concatenate([g.j[g.i == i], g.i[g.j == i], g.j[g.i == j], g.i[g.j == j]])
    return bool(np.any(lab[nb] != lab[i]))


def test_pair_moves_take_a_two_pixel_sliver_icm_keeps():
    """Noise 0.25, seed 10: the polish without pair moves, descent fusion, edge-snapped or TV
    proposals ends 2.75% above min-cut, on a two-pixel sliver; pair moves alone reach min-cut,
    and so does the default K = 2 polish, which leaves pair moves out."""
    from dataclasses import replace

    from solver.mrf import PolishOptions, SolveOptions

    image, _, strokes = _synthetic(10, 2, noise=0.25)
    # λ = 10: the λ this input was built and measured at (the default until 2026-12-02)
    p = build_problem(image, strokes, 2, lam=10.0)
    best = solve_mrf(p, "mincut").energy
    assert solve_mrf(p, "admm").energy <= best + 1e-6 * abs(best)
    bare = PolishOptions(descents=False, edge_snap=False, tv=TVOptions(iterations=0))
    pairs = SolveOptions(polish=replace(bare, pair_moves_binary=True))
    assert solve_mrf(p, "admm", options=pairs).energy <= best + 1e-6 * abs(best)
    assert solve_mrf(p, "admm", options=SolveOptions(polish=bare)).energy > best + 0.01 * abs(best)


def test_polish_tries_pair_moves_for_more_than_two_labels_only(monkeypatch):
    from solver.mrf.polish import pipeline

    calls = []
    real = pipeline.pair_moves_into  # (what the polish calls: 0-based, in place)

    def counted(problem, lab, *args, **kw):
        calls.append(problem.k)
        return real(problem, lab, *args, **kw)
    monkeypatch.setattr(pipeline, "pair_moves_into", counted)
    for k in (2, 3):
        image, _, strokes = _synthetic(0, k)
        p = build_problem(image, strokes, k)
        pipeline.polish_labels(p, solve_mrf(p, "admm", polish=False).labels)
    assert calls == [3]


def test_split_moves_share_a_third_label_region_between_its_neighbours():
    """A band of label 3 between regions of 1 and 2, whose data prefer 3 pixel by pixel but
    whose left part is nearly as cheap as 1 and right part as 2: splitting it saves a boundary.
    No single-pixel, pair, whole-region, closing or box move does it."""
    from solver.mrf import problem_from_unary
    from solver.mrf.polish.fusion import fuse_boxes, fuse_closings
    from solver.mrf.polish.icm import pair_moves
    from solver.mrf.polish.pipeline import polish_labels
    from solver.mrf.polish.regions import component_flips, split_moves

    unary = np.zeros((20, 20, 3))
    unary[:, :10] = (0.0, 5.0, 5.0)
    unary[:, 10:] = (5.0, 0.0, 5.0)
    unary[:, 7:10] = (0.2, 3.0, 0.0)
    unary[:, 10:13] = (3.0, 0.2, 0.0)
    p = problem_from_unary(np.zeros((20, 20)), unary, lam=1.0)
    start = np.ones((20, 20), np.int32)
    start[:, 13:] = 2
    start[:, 7:13] = 3
    for move in (icm, pair_moves, component_flips):
        np.testing.assert_array_equal(move(p, start), start)
    for fusion in (fuse_closings, fuse_boxes):
        np.testing.assert_array_equal(fusion(p, start)[0].reshape(20, 20), start)
    split, moved = split_moves(p, start)
    assert moved == 1
    assert np.all(split[:, :10] == 1) and np.all(split[:, 10:] == 2)
    assert p.energy(split) < p.energy(start) - 50
    assert p.energy(polish_labels(p, start, split=False)) == pytest.approx(p.energy(start))
    assert p.energy(polish_labels(p, start)) == pytest.approx(p.energy(split))


@pytest.mark.parametrize("k", [3, 4])
def test_split_moves_never_raise_the_energy_and_keep_hard_pixels(k):
    from solver.mrf.polish.regions import split_moves

    for seed in range(4):
        p = random_problem((14, 15), k=k, seed=seed, hard_fraction=0.1)
        rng = np.random.default_rng(seed)
        start = np.repeat(rng.integers(1, k + 1, size=(14, 3)), 5, axis=1)  # wide regions
        hard = p.hard.reshape(p.shape)
        start[hard > 0] = hard[hard > 0]
        out, _ = split_moves(p, start, min_size=4)
        assert p.energy(out) <= p.energy(start) + 1e-9
        np.testing.assert_array_equal(out[hard > 0], hard[hard > 0])


@pytest.mark.parametrize("k", [3, 4])
def test_split_bound_is_below_every_split_of_the_region(k):
    """The bound that lets split moves pass over a region is at most the exact energy change
    of any relabelling of it with the labels around it (random relabellings, ICM's included),
    so skipping a region whose bound is at least 0 loses no move."""
    from solver.mrf.polish import region_kernels as rk

    checked = 0
    for seed in range(6):
        p = random_problem((12, 13), k=k, seed=seed)
        rng = np.random.default_rng(seed)
        lab = np.repeat(rng.integers(0, k, size=(12, 3)), 5, axis=1)[:, :13].ravel()
        graph = graph_arrays(p)
        two_lam = 2.0 * p.lam
        for a in range(k):
            region, order, starts, nc = rk._mask_components(*graph[:2], *graph[3:], lab == a)
            for r in range(nc):
                s0, s1 = starts[r], starts[r + 1]
                others = [b for b in range(k) if b != a]
                near = np.zeros(k, bool)
                near[others] = True
                bound = rk._split_bound((*graph, p.unary, two_lam), (region, r, order, s0, s1), a,
                                        near)
                prop = np.empty(p.n, np.int64)
                for trial in range(5):
                    prop[order[s0:s1]] = rng.choice(others, size=s1 - s0)
                    delta = rk._split_delta((*graph, p.unary, two_lam), lab,
                                            (region, r, order, s0, s1), a, prop)
                    new = lab.copy()
                    new[order[s0:s1]] = prop[order[s0:s1]]
                    assert delta == pytest.approx(p.energy(new + 1) - p.energy(lab + 1))
                    assert bound <= delta + 1e-9
                    checked += 1
    assert checked > 100


@pytest.mark.parametrize("split, rounds", [(True, 1), (False, 3)])
def test_plain_level_set_fusion_rounds_final_and_coarse(monkeypatch, split, rounds):
    """A final polish fuses the plain level sets once (descents came first), a coarser level's
    up to three times; an explicit ``max_rounds`` wins."""
    from solver.mrf.polish import pipeline

    calls = []

    def busy(problem, lab, snapshots, *args, **kw):  # claims a move every time
        calls.append(1)
        return 1
    monkeypatch.setattr(pipeline, "fuse_level_sets_into", busy)
    image, _, strokes = _synthetic(0, 3)
    p = build_problem(image, strokes, 3)
    res = solve_mrf(p, "admm", polish=False)
    snaps = [np.full((p.n, 3), 1 / 3)]
    pipeline.polish_labels(p, res.labels, snaps, split=split)
    assert len(calls) == rounds
    calls.clear()
    pipeline.polish_labels(p, res.labels, snaps, max_rounds=2, split=split)
    assert len(calls) == 2


@pytest.mark.parametrize("k", [3, 4, 8])
def test_label_weights_are_the_clipped_iterate_over_its_sum_in_float32(k):
    from solver.mrf.solve.reduction_kernels import label_weights

    rng = np.random.default_rng(k)
    x = rng.normal(0.3, 0.5, 400 * k)
    x[:k] = 0.0  # sum 0: uniform
    x[k:2 * k] = -1.0  # clipped to 0: uniform
    x[2 * k + 1] = np.nan  # a NaN sum: uniform
    x[3 * k:4 * k] = [5.0] + [0.0] * (k - 1)  # clipped to 1: one-hot
    X = np.clip(x.astype(np.float32), 0, 1).reshape(-1, k)
    s = X[:, 0].copy()
    for c in range(1, k):  # float32, in label order
        s = s + X[:, c]
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.where((s > 0)[:, None], X / s[:, None], np.float32(1.0 / k))
    got = label_weights(x, k)
    assert got.dtype == np.float32 and got.shape == (400, k)
    assert got.tobytes() == expected.astype(np.float32).tobytes()
    for i in range(3):
        np.testing.assert_array_equal(got[i], np.full(k, np.float32(1 / k)))
    np.testing.assert_array_equal(got[3], np.eye(k, dtype=np.float32)[0])
    np.testing.assert_allclose(got[4:].sum(axis=1), 1.0, rtol=1e-5)


def _fake_gpu(monkeypatch, usable=True):
    """Make solver.backend see a usable GPU (numpy standing in for CuPy), or none."""
    def load():
        if not usable:
            raise GPUUnavailableError("no usable GPU: none in this test")
        return Backend("gpu", np, sp)
    monkeypatch.setattr(backend_module, "_load_gpu", load)


def test_auto_backend_takes_the_gpu_only_where_it_pays(monkeypatch):
    _fake_gpu(monkeypatch)
    assert auto_backend(10_000, 2) == "cpu"  # K = 2 is launch-bound on a GPU
    assert auto_backend(100_000, 2) == "cpu"  # (1.3x the CPU's time there, 2026-11-27)
    assert auto_backend(500_000, 2) == "gpu"  # (0.6x)
    assert auto_backend(2_000_000, 2) == "gpu"
    assert auto_backend(1_000, 3) == "cpu"
    assert auto_backend(50_000, 4) == "gpu"
    _fake_gpu(monkeypatch, usable=False)
    assert auto_backend(2_000_000, 2) == "cpu"


def test_auto_solve_of_a_small_problem_runs_on_the_cpu_even_with_a_gpu(monkeypatch):
    _fake_gpu(monkeypatch)
    res = solve_mrf(random_problem((12, 12), 3, seed=1), "admm", backend="auto", seed=0)
    assert res.backend == "cpu"


def test_polish_takes_dense_iterates_as_it_takes_snapshots():
    """Level-set fusion proposals from (n, K) weights are those of the same weights as a
    Snapshot: the same labels either way, and no worse than the start."""
    from solver.mrf.polish.fusion import Snapshot
    from solver.mrf.polish.pipeline import polish_labels
    image, _, strokes = _synthetic(1, 3)
    p = build_problem(image, strokes, 3)
    res = solve_mrf(p, "admm", polish=False, max_iter=15)
    dense = np.asarray(res.x_continuous).reshape(p.n, 3)
    a = polish_labels(p, res.labels, [dense])
    b = polish_labels(p, res.labels, [Snapshot.from_dense(dense)])
    np.testing.assert_array_equal(a, b)
    assert p.energy(a) <= p.energy(res.labels)


def test_grid_values_are_the_iterates_on_a_coarse_grid_for_any_k():
    """A probe's view of a live state (MRFIterationState.grid_values): x, z1, z2 per label on
    every s-th row and column, the box copy inside the box, a hard pixel its one-hot label."""
    image, _, strokes = shapes_image(seed=2, k=3, size=40, noise=0.2)
    hard = np.zeros_like(strokes)
    hard[0, 0] = 3
    problem = build_problem(image, strokes, 3, hard=hard)
    seen = []
    solve_mrf(problem, "admm", seed=0, polish=False,
              callback=lambda state: seen.append(state.grid_values(20)))
    assert len(seen) > 3
    for v in seen:
        assert v["step"] == 2 and set(v) == {"step", "x", "z1", "z2"}
        assert all(v[n].shape == (20, 20, 3) and v[n].dtype == np.float32 for n in ("x", "z1", "z2"))
        assert np.all((v["z1"] >= -1e-6) & (v["z1"] <= 1 + 1e-6))
        np.testing.assert_array_equal(v["x"][0, 0], [0, 0, 1])  # (the hard pixel)
    assert any(np.any((v["x"] < -1e-3) | (v["x"] > 1 + 1e-3)) for v in seen)  # unclipped
