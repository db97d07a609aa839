"""Area bounds and apart pairs: the checks, ADMM's answers against brute force, the yardsticks
against brute force, and the projection that keeps areas inside ADMM."""

import itertools

import numpy as np
import pytest

from solver.admm.sums import BoxWithSums, _project_xp, round_k2_sums, round_onehot_sums
from solver.backend import CPU
from solver.mrf import (AreaBound, Constraints, build_problem, problem_from_unary, solve_mrf,
                        with_constraints)
from solver.mrf.build.stencil import potts_of
from solver.mrf.polish.constrained import Labelling
from solver.reference.lagrangian import lagrangian_swap
from solver.reference.nested import nested_mincut
from solver.reference.parametric import parametric_mincut
from tests.solver._mrf_helpers import random_problem, shapes_image


def brute(problem):
    """Every feasible labelling's energy: ``(min energy, a minimiser)`` (inf, None if none)."""
    k, n = problem.k, problem.n
    L = np.array(list(itertools.product(range(k), repeat=n)), np.int8)  # (k^n, n) 0-based
    g = problem.graph
    e = problem.unary[np.arange(n), L].sum(axis=1)
    e += 2.0 * problem.lam * ((L[:, g.i] != L[:, g.j]) * g.weights).sum(axis=1)
    ok = np.all((problem.hard == 0) | (L == problem.hard - 1), axis=1)
    c = problem.constraints
    if c is not None:
        areas = np.stack([(L == a).sum(axis=1) for a in range(k)], axis=1)
        ok &= np.all((areas >= c.lo) & (areas <= c.hi), axis=1)
        for a, b in zip(*np.nonzero(np.triu(c.apart))):
            li, lj = L[:, g.i], L[:, g.j]
            ok &= ~np.any(((li == a) & (lj == b)) | ((li == b) & (lj == a)), axis=1)
    if not ok.any():
        return np.inf, None
    best = np.flatnonzero(ok)[np.argmin(e[ok])]
    return float(e[best]), (L[best] + 1).reshape(problem.shape)


def _tiny(shape, k, seed, constraints, hard_fraction=0.0):
    """A random problem with the constraints; with hard pixels, the first draw from ``seed`` on
    whose hard pixels the constraints accept (random seeds may put apart labels side by side)."""
    for draw in range(seed * 1000, seed * 1000 + 1000):
        p = random_problem(shape, k=k, seed=draw, hard_fraction=hard_fraction)
        try:
            return with_constraints(p, constraints)
        except ValueError:
            if not hard_fraction:
                raise
    raise AssertionError("no random draw met the constraints")


def _traced_run(p, start, movable, seed):
    """A copy of ``start`` to move, its Labelling and _Incremental, and the rng of the changes."""
    from solver.mrf.polish.constrained import _Incremental, level_state

    x = start.copy()
    args = Labelling(potts_of(p), x, movable, level_state(p, x))
    return x, args, _Incremental(args), np.random.default_rng(seed + 100)


# ---------------------------------------------------------------------------- the checks
@pytest.mark.parametrize("constraints, message", [
    (Constraints(area=(AreaBound(4, 0.1, 0.2),)), "label must be 1..3"),
    (Constraints(area=(AreaBound(1, -0.1, 0.2),)), "fractions in \\[0, 1\\]"),
    (Constraints(area=(AreaBound(1, 0.1, 1.5),)), "fractions in \\[0, 1\\]"),
    (Constraints(area=(AreaBound(1, 10, 500, "px"),)), "0..100 pixels"),
    (Constraints(area=(AreaBound(1, 0.5, 0.2),)), "lower bound is above"),
    (Constraints(area=(AreaBound(1, float("nan"), 0.2),)), "finite"),
    (Constraints(area=(AreaBound(1, 0.301, 0.309),)), "no whole number of pixels"),
    (Constraints(area=(AreaBound(1, 0.1, 0.2), AreaBound(1, 0.3, 0.4))), "contradicts"),
    (Constraints(area=(AreaBound(1, 0.6, 1), AreaBound(2, 0.6, 1))), "lower bounds add up"),
    (Constraints(area=(AreaBound(1, 0, 0.2), AreaBound(2, 0, 0.2), AreaBound(3, 0, 0.2))),
     "upper bounds add up"),
    (Constraints(apart=((2, 2),)), "apart from itself"),
    (Constraints(apart=((1, 4),)), "labels must be 1..3"),
    (Constraints(area=(AreaBound(1, 0.1, 0.2, "percent"),)), "unit must be"),
])
def test_bad_constraints_give_one_line_errors(constraints, message):
    with pytest.raises(ValueError, match=message) as err:
        constraints.validate(3, (10, 10))
    assert "\n" not in str(err.value)


def test_constraints_the_drawing_breaks_are_refused_before_anything_is_fitted():
    image, _, strokes = shapes_image(seed=0, k=3, size=40)
    few = int((strokes == 1).sum()) - 1
    with pytest.raises(ValueError, match="strokes and hard constraints cover"):
        build_problem(image, strokes, 3,
                      constraints=Constraints(area=(AreaBound(1, 0, few, "px"),)))
    touching = strokes.copy()
    touching[2, 2] = 1
    touching[3, 3] = 3
    with pytest.raises(ValueError, match="labels 1 and 3 are apart, but strokes"):
        build_problem(image, touching, 3, constraints=Constraints(apart=((1, 3),)))
    hard = np.zeros((40, 40), int)
    hard[:, :30] = 2
    with pytest.raises(ValueError, match="hard constraints of other labels leave it"):
        build_problem(image, strokes, 3, hard=hard,
                      constraints=Constraints(area=(AreaBound(1, 0.5, 1),)))
    with pytest.raises(ValueError, match="K >= 3"):
        Constraints(apart=((1, 2),)).validate(2, (10, 10))


def test_fractions_round_inwards_and_pixel_counts_are_taken_as_given():
    assert AreaBound(1, 0.2, 0.3).pixels(1001) == (201, 300)
    assert AreaBound(2, 5, 9, "px").pixels(100) == (5, 9)
    level = Constraints(area=(AreaBound(2, 0.2, 0.3), AreaBound(2, 25, 40, "px"))).validate(
        3, (10, 10))
    assert level.lo.tolist() == [0, 25, 0] and level.hi.tolist() == [100, 30, 100]


# ---------------------------------------------------------------------------- the projection
def test_the_box_with_bounded_sums_projection_is_the_closest_point():
    rng = np.random.default_rng(0)
    for trial in range(200):
        m, k = int(rng.integers(1, 30)), int(rng.integers(1, 4))
        v = rng.normal(0.5, 1.0, m * k)
        w = rng.integers(0, 4, m).astype(float)
        lo, hi = np.full(k, -np.inf), np.full(k, np.inf)
        for c in range(k):
            a, b = sorted(rng.uniform(0, w.sum(), 2))
            lo[c] = a if rng.random() < 0.7 else -np.inf
            hi[c] = b
        box = BoxWithSums(k, w, lo, hi)
        z = box.project(v, CPU)
        Z, V = z.reshape(m, k), v.reshape(m, k)
        sums = w @ Z
        assert np.all((Z >= 0) & (Z <= 1))
        assert np.all(sums >= lo - 1e-7) and np.all(sums <= hi + 1e-7)
        np.testing.assert_allclose(z, _project_xp(np, v, k, w, lo, hi), atol=1e-8)
        # optimality: z = clip(v - theta w) with one theta per column, 0 unless a bound is active
        for c in range(k):
            inside = (Z[:, c] > 1e-9) & (Z[:, c] < 1 - 1e-9) & (w > 0)
            if inside.any():
                theta = (V[inside, c] - Z[inside, c]) / w[inside]
                assert np.ptp(theta) < 1e-7
                active = (abs(sums[c] - lo[c]) < 1e-6) or (abs(sums[c] - hi[c]) < 1e-6)
                assert active or abs(theta[0]) < 1e-7


@pytest.mark.slow
def test_roundings_keep_the_sums_within_their_bounds():
    rng = np.random.default_rng(1)
    for _ in range(100):
        m = int(rng.integers(5, 40))
        w = rng.integers(1, 3, m).astype(float)
        v = rng.random(m)
        lo = float(rng.uniform(0, w.sum() / 2))
        hi = lo + float(rng.uniform(0, w.sum() / 2))
        x = round_k2_sums(v, w, lo, hi)
        assert set(np.unique(x)) <= {0.0, 1.0} and lo - 2 <= w @ x <= hi + 2
        if np.all(w == 1):
            assert np.ceil(lo) <= w @ x <= np.floor(hi) or np.ceil(lo) > np.floor(hi)
        k = 3
        X = rng.random((m, k))
        lo3, hi3 = np.array([m / 4, 0, 0]), np.array([m / 2, m, m * 0.4])
        r = round_onehot_sums(X.ravel(), k, np.ones(m), lo3, hi3).reshape(m, k)
        assert np.all(r.sum(axis=1) == 1)
        counts = r.sum(axis=0)
        assert np.all(counts >= np.ceil(lo3)) and np.all(counts <= np.floor(hi3))


def _greedy_rounding(v, w, lo, hi):
    """The K = 2 rounding under an area bound as a plain loop over the full order: v > 1/2,
    then the weakest members leave (the strongest non-members join) while the sum stays
    within the other bound, until it is within both."""
    x = (v > 0.5).astype(float)
    s = float(w @ x)
    if s > hi:
        for i in np.argsort(v, kind="stable"):
            if x[i] == 1 and s - w[i] >= lo:
                x[i], s = 0.0, s - w[i]
                if s <= hi:
                    break
    elif s < lo:
        for i in np.argsort(-v, kind="stable"):
            if x[i] == 0 and s + w[i] <= hi:
                x[i], s = 1.0, s + w[i]
                if s >= lo:
                    break
    return x


@pytest.mark.parametrize("case", ["random", "heavy head"])
def test_the_k2_rounding_is_the_greedy_pass_over_the_whole_order(case):
    """The rounding orders only the weakest (strongest) pixels that can make up the excess,
    and the rest when those do not reach the bounds: the answer of the pass over the whole
    order, on random sizes, weights and bounds, and where every pixel of that head is too
    heavy to leave (the whole order is needed)."""
    rng = np.random.default_rng(7)
    for _ in range(60):
        m = int(rng.integers(1, 2000))
        v = rng.normal(0.5, 0.4, m)
        w = rng.uniform(0.5, 3.0, m) if rng.random() < 0.5 else np.ones(m)
        if case == "random":
            lo, hi = sorted(rng.uniform(0, w.sum(), 2))
        else:  # the weakest members are heavy and the excess small: only the light ones leave
            m = max(m, 400)
            v = rng.normal(0.8, 0.2, m)
            w = np.ones(m)
            w[np.argsort(v)[:300]] = 1000.0
            s = float(w @ (v > 0.5))
            lo, hi = s - 500.0, s - 3.0
            if rng.random() < 0.5:  # the mirror: heavy strongest non-members, joining
                v = 1.0 - v
                s = float(w @ (v > 0.5))
                lo, hi = s + 3.0, s + 500.0
        got = round_k2_sums(v, w, float(lo), float(hi))
        assert got.tolist() == _greedy_rounding(v, w, lo, hi).tolist()


# ---------------------------------------------------------------------------- ADMM
@pytest.mark.parametrize("seed", range(4))
def test_admm_with_area_bounds_is_feasible_and_near_the_optimum_k2(seed):
    p = random_problem((3, 4), k=2, seed=seed)
    free_best, free_lab = brute(p)
    area1 = int((free_lab == 1).sum())
    target = 3 if area1 > 6 else 9  # force the area away from the unconstrained optimum's
    p = with_constraints(p, Constraints(area=(AreaBound(1, target, target + 1, "px"),)))
    best, _ = brute(p)
    res = solve_mrf(p, "admm")
    assert p.feasible(res.labels) and res.feasible
    assert res.energy <= best + 0.02 * abs(best) + 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_admm_keeps_labels_apart_and_nests_k3(seed):
    p = _tiny((3, 4), 3, seed, Constraints(apart=((1, 3),)))
    best, _ = brute(p)
    res = solve_mrf(p, "admm")
    assert p.feasible(res.labels)
    assert res.energy <= best + 0.02 * abs(best) + 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_admm_with_area_bounds_and_apart_pairs_together_k3(seed):
    c = Constraints(area=(AreaBound(2, 3, 6, "px"),), apart=((1, 3),))
    p = _tiny((3, 4), 3, seed, c, hard_fraction=0.1)
    best, _ = brute(p)
    res = solve_mrf(p, "admm")
    if np.isfinite(best):
        assert p.feasible(res.labels)
        assert res.energy <= best + 0.05 * abs(best) + 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_constraints_hold_coarse_to_fine_on_a_photo_sized_problem(k):
    image, _, strokes = shapes_image(seed=4, k=k, size=200, noise=0.2)
    free = solve_mrf(build_problem(image, strokes, k), "admm")
    area = float((free.labels == 1).mean())
    bound = AreaBound(1, max(0.0, area - 0.08), max(0.0, area - 0.06))
    c = Constraints(area=(bound,), apart=((1, 3),) if k == 3 else ())
    p = build_problem(image, strokes, k, constraints=c)
    res = solve_mrf(p, "admm")
    assert res.iterations > 0
    assert p.feasible(res.labels) and res.feasible
    assert {r.kind for r in res.constraints} == ({"area", "apart"} if k == 3 else {"area"})
    assert res.energy >= free.energy - 1e-6  # a constraint never lowers the optimum


# ---------------------------------------------------------------------------- yardsticks
@pytest.mark.parametrize("seed", range(5))
def test_the_parametric_min_cut_bounds_and_meets_the_constrained_optimum(seed):
    p = random_problem((3, 4), k=2, seed=10 + seed)
    for lo, hi in ((2, 3), (5, 5), (8, 10)):
        q = with_constraints(p, Constraints(area=(AreaBound(1, lo, hi, "px"),)))
        best, _ = brute(q)
        ref = parametric_mincut(q)
        assert q.feasible(ref.labels) and ref.feasible
        assert ref.bound <= best + 1e-9
        assert best <= ref.energy + 1e-9
        if ref.optimal:
            assert ref.energy == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("method, k, constraints, detail", [
    ("mincut", 2, Constraints(area=(AreaBound(1, 4, 6, "px"),)), "parametric min-cut"),
    ("lp", 2, Constraints(area=(AreaBound(1, 4, 6, "px"),)), "LP relaxation with area bounds"),
    ("mincut", 3, Constraints(apart=((1, 3),)), "layered min-cut"),
    ("expansion", 3, Constraints(apart=((1, 3),)), "Lagrangian αβ-swap (best effort)"),
])
def test_a_constrained_yardstick_answers_in_the_one_result_type(method, k, constraints, detail):
    """The constrained yardsticks return an MRFResult, as ADMM does: the front door's method,
    what ran in ``detail``, the bound and each constraint's report (``feasible``), ``optimal``
    only where the energy meets a bound."""
    from solver.mrf import MRFResult

    p = _tiny((3, 4), k, 1, constraints)
    best, _ = brute(p)
    res = solve_mrf(p, method)
    assert type(res) is MRFResult and res.method == method and res.detail == detail
    assert res.labels.shape == p.shape and res.labels.dtype == np.int32
    assert res.energy == pytest.approx(p.energy(res.labels))
    assert res.feasible == p.feasible(res.labels) and len(res.constraints) >= 1
    if res.bound is not None:
        assert res.bound <= best + 1e-6
    assert res.optimal == (res.bound is not None
                           and abs(res.energy - res.bound) <= 1e-9 * max(1.0, abs(res.energy)))
    if res.optimal:
        assert res.energy == pytest.approx(best, abs=1e-9)
    report = res.as_dict()
    assert report["method"] == method and report["detail"] == detail
    assert report["bound"] == res.bound and report["feasible"] == res.feasible


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_the_layered_min_cut_is_the_nesting_optimum(seed):
    p = _tiny((3, 4), 3, seed, Constraints(apart=((1, 3),)), hard_fraction=0.15)
    best, _ = brute(p)
    ref = nested_mincut(p)
    assert p.feasible(ref.labels)
    assert ref.energy == pytest.approx(best, abs=1e-9) and ref.optimal
    q = _tiny((3, 3), 3, seed, Constraints(apart=((2, 1),)))  # the pair's order is immaterial
    assert nested_mincut(q).energy == pytest.approx(brute(q)[0], abs=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_the_lagrangian_swap_is_feasible_and_never_below_the_optimum(seed):
    c = Constraints(area=(AreaBound(1, 2, 5, "px"),), apart=((2, 3),))
    p = _tiny((3, 4), 3, seed, c)
    best, _ = brute(p)
    ref = lagrangian_swap(p)
    assert ref.bound is None and not ref.optimal
    if ref.feasible:
        assert p.feasible(ref.labels) and ref.energy >= best - 1e-9


def test_solve_mrf_picks_the_constrained_yardstick_or_says_which_can():
    area = Constraints(area=(AreaBound(1, 4, 6, "px"),))
    p2 = with_constraints(random_problem((3, 4), k=2, seed=1), area)
    assert solve_mrf(p2, "mincut").detail == "parametric min-cut"
    assert solve_mrf(p2, "lp").bound is not None
    nest = with_constraints(random_problem((3, 4), k=3, seed=1), Constraints(apart=((1, 3),)))
    assert solve_mrf(nest, "mincut").detail.startswith("layered min-cut")
    assert "best effort" in solve_mrf(nest, "expansion").detail
    both = with_constraints(random_problem((3, 4), k=3, seed=1),
                            Constraints(area=(AreaBound(1, 4, 6, "px"),), apart=((1, 3),)))
    with pytest.raises(ValueError, match="mincut cannot take these constraints.*admm take any"):
        solve_mrf(both, "mincut")
    with pytest.raises(ValueError, match="lp cannot take"):
        solve_mrf(nest, "lp")


def test_problem_from_unary_takes_constraints_and_checks_them_against_hard_pixels():
    rng = np.random.default_rng(0)
    hard = np.zeros((4, 5), int)
    hard[0, 0], hard[0, 1] = 1, 3
    with pytest.raises(ValueError, match="apart"):
        problem_from_unary(rng.random((4, 5)), rng.normal(size=(20, 3)), hard=hard,
                           constraints=Constraints(apart=((1, 3),)))


# ---------------------------------------------------------------------------- the polish
def _block_problem(hi_px):
    """8×8, label 2 preferred on the 3×3 block at rows/cols 2..4 (most on its 2×2 corner),
    label 1 everywhere else; label 2's area capped at ``hi_px``."""
    n = 64
    unary = np.zeros((n, 2))
    unary[:, 1] = 1.0
    block = np.zeros((8, 8), bool)
    block[2:5, 2:5] = True
    unary[block.ravel(), 1] = -3.0
    corner = np.zeros((8, 8), bool)
    corner[2:4, 2:4] = True
    unary[corner.ravel(), 1] = -30.0
    image = np.full((8, 8, 3), 0.5)
    p = problem_from_unary(image, unary, lam=0.5)
    return with_constraints(p, Constraints(area=(AreaBound(2, 0, hi_px, "px"),))), block, corner


@pytest.mark.slow
@pytest.mark.parametrize("hi_px, expect", [(9, "block"), (4, "corner"), (3, "none")])
def test_level_set_fusion_takes_a_region_only_when_it_fits_the_bounds(hi_px, expect):
    from solver.mrf.polish.constrained import _level_set_fusions, level_state

    p, block, corner = _block_problem(hi_px)
    lab = np.zeros(p.n, np.int64)
    movable = np.ones(p.n, bool)
    state = level_state(p, lab)
    before = p.energy(lab + 1)
    x_block = np.stack([~block.ravel(), block.ravel()], axis=1).astype(float)
    x_corner = np.stack([~corner.ravel(), corner.ravel()], axis=1).astype(float)
    taken = _level_set_fusions(p, lab, movable, state, [x_block, x_corner], (0.5,))
    want = {"block": block, "corner": corner, "none": np.zeros((8, 8), bool)}[expect]
    np.testing.assert_array_equal(lab.reshape(8, 8) == 1, want)
    assert taken == (0 if expect == "none" else 1)
    assert state[1][1] == want.sum() and state[1].sum() == 64  # the counts follow the moves
    assert p.feasible(lab + 1) and p.energy(lab + 1) <= before


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_level_set_fusion_from_the_seeds_is_the_fusion_from_every_pixel(seed):
    """Regions started only from :func:`level_set_seeds` (found once a snapshot) give the
    labels, counts and regions taken that starting from every pixel gives, over a run of
    thresholds and labels on one snapshot, with area bounds that refuse some regions."""
    from solver.mrf.polish import constrained_kernels as ck
    from solver.mrf.polish.constrained import level_state

    rng = np.random.default_rng(seed)
    k = 2 + seed % 2
    p = random_problem((9, 11), k=k, seed=seed, hard_fraction=0.1)
    p = with_constraints(p, Constraints(area=(AreaBound(1, 20, 60, "px"),)))
    start = np.where(p.hard > 0, p.hard, rng.integers(1, k + 1, p.n)) - 1
    movable = np.asarray(p.hard).ravel() == 0
    x = rng.dirichlet(np.full(k, 0.4), p.n).astype(np.float32)
    ends = []
    for seeds in (np.arange(p.n, dtype=np.int64),
                  ck.level_set_seeds(x, start, movable, 0.2)):
        lab = start.astype(np.int64)
        w, counts, lo, hi, apart = level_state(p, lab)
        comp, queue = np.full(p.n, -1, np.int64), np.empty(p.n, np.int64)
        areas = ck.Areas(w, counts, lo, hi, apart)
        taken = [ck.fuse_level_set(potts_of(p), lab, movable, areas, x, c, t, seeds, comp, queue)
                 for t in (0.2, 0.5, 0.8) for c in range(k)]
        assert (comp == -1).all()  # the scratch is left as it was found
        ends.append((lab, counts, taken))
    assert sum(ends[0][2]) > 0 and ends[1][0].tolist() == ends[0][0].tolist()
    assert ends[1][1].tolist() == ends[0][1].tolist() and ends[1][2] == ends[0][2]
    assert ck.level_set_seeds(x, start, movable, 0.2).size < p.n


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_constrained_icm_from_the_changed_pixels_is_icm_from_every_pixel(seed):
    """Constrained ICM that visits only the pixels pending from its last call and those beside
    a change (:class:`solver.mrf.polish.constrained._Incremental`) takes the moves of one that
    sweeps every pixel first, call after call, while other moves change regions in between, on
    a grid with apart pairs and area bounds (also on a labelling forked from another). A
    change left unmarked or a pixel wrongly let go would show as a different labelling."""
    from solver.mrf.polish import constrained_kernels as ck
    from solver.mrf.polish.constrained import MAX_SWEEPS, level_state, repair

    rng = np.random.default_rng(seed)
    k = 3
    area = (AreaBound(2, 40, 90, "px"),) if seed % 2 else ()
    p = _tiny((12, 14), k, seed, Constraints(area=area, apart=((1, 3),)), hard_fraction=0.05)
    hard = np.asarray(p.hard).ravel()
    movable = hard == 0
    lab = np.asarray(repair(p, rng.integers(1, k + 1, p.shape))).ravel().astype(np.int64) - 1
    runs = []
    for incremental in (False, True):
        x, args, since, r = _traced_run(p, lab, movable, seed)
        trace = []
        for step in range(8):
            if incremental:
                trace.append(since.icm(args))
            else:
                trace.append(ck.constrained_icm(*args, MAX_SWEEPS, movable.copy(),
                                                np.empty(p.n, bool)))
            trace.append(x.tolist())
            # a feasible change elsewhere: a small block to a label, kept only if feasible
            r0, c0 = r.integers(0, 10), r.integers(0, 12)
            y = x.reshape(p.shape).copy()
            y[r0:r0 + 3, c0:c0 + 3] = r.integers(0, k)
            y = np.where(hard > 0, hard - 1, y.ravel())
            if p.feasible(y + 1):
                x[:] = y
                args = Labelling(potts_of(p), x, movable, level_state(p, x))
            if step == 4:  # another labelling, from the state of this one
                since = since.fork() if incremental else since
                x = np.asarray(repair(p, np.roll(x, 7) + 1)).ravel().astype(np.int64) - 1
                args = Labelling(potts_of(p), x, movable, level_state(p, x))
        runs.append(trace)
    assert sum(runs[0][0::2]) > 0
    assert runs[1] == runs[0]


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(40))
def test_fusion_rounds_from_the_changes_are_fusion_rounds_from_every_pixel(seed):
    """Rounds of level-set fusions on a nesting that start regions only beside a change since
    the round before (:meth:`solver.mrf.polish.constrained._Incremental.fusion_starts`) take
    the regions that rounds from every pixel take, round after round, with other changes in
    between, on snapshots that propose many regions; a change left unmarked, or a region
    beside one taken earlier in the round left out, shows as a different labelling."""
    from solver.mrf.polish.constrained import _level_set_fusions, repair

    rng = np.random.default_rng(seed)
    truth = np.ones((16, 18), int)
    truth[3:13, 3:15] = 2
    truth[6:10, 7:11] = 3
    unary = -1.5 * np.eye(3)[truth.ravel() - 1] + rng.normal(0, 1, (truth.size, 3))
    p = with_constraints(problem_from_unary(rng.random((16, 18, 3)), unary, lam=0.4),
                         Constraints(apart=((1, 3),)))
    # snapshots near the optimum, blocks of it swapped for noise: their level sets propose
    # regions that help, and others that do not
    best = np.asarray(nested_mincut(p).labels).ravel() - 1
    snaps = []
    for _ in range(4):
        noise = rng.dirichlet(np.full(3, 0.3), (8, 9)).repeat(2, 0).repeat(2, 1).reshape(-1, 3)
        keep = rng.random((8, 9)).repeat(2, 0).repeat(2, 1).ravel() < 0.6
        x = np.where(keep[:, None], np.eye(3)[best], noise)
        snaps.append(np.ascontiguousarray(x, dtype=np.float32))
    start = np.asarray(repair(p, rng.integers(1, 4, p.shape))).ravel().astype(np.int64) - 1
    movable = np.ones(p.n, bool)
    runs = []
    for incremental in (False, True):
        lab, args, since, r = _traced_run(p, start, movable, seed)
        trace = []
        for _ in range(5):
            starts = since.fusion_starts(p, args) if incremental else None
            trace.append(_level_set_fusions(p, lab, movable, args.areas, snaps, (0.2, 0.5, 0.8),
                                            starts=starts))
            trace.append(lab.tolist())
            # another move between the rounds: a block to a label, where that is feasible
            r0, c0 = r.integers(0, 13), r.integers(0, 15)
            y = lab.reshape(p.shape).copy()
            y[r0:r0 + 3, c0:c0 + 3] = r.integers(0, 3)
            if p.feasible(y + 1):
                lab[:] = y.ravel()
                args.areas.counts[:] = np.bincount(lab, minlength=3)
        runs.append(trace)
    assert sum(runs[0][2::2]) > 0  # the rounds after the first take regions too
    assert runs[1] == runs[0]


@pytest.mark.parametrize("seed", range(4))
def test_expansion_moves_run_with_apart_pairs_and_an_area_bound_together(seed):
    """K = 3 with an apart pair and an area bound at once gets the TV-relaxed expansion moves
    too: from a poor feasible start they take regions, and every labelling stays feasible
    with its energy lowered."""
    from solver.mrf.options import PolishOptions
    from solver.mrf.polish.constrained import _expansion_fusions, level_state, repair

    rng = np.random.default_rng(seed)
    truth = np.ones((24, 26), int)
    truth[4:20, 4:22] = 2
    truth[9:15, 10:16] = 3
    unary = -1.5 * np.eye(3)[truth.ravel() - 1] + rng.normal(0, 1, (truth.size, 3))
    area = truth.size * (truth == 2).mean()
    p = with_constraints(problem_from_unary(rng.random((24, 26, 3)), unary, lam=0.4),
                         Constraints(apart=((1, 3),),
                                     area=(AreaBound(2, int(0.8 * area), int(1.1 * area), "px"),)))
    start = np.asarray(repair(p, np.full(p.shape, 1))).ravel().astype(np.int64) - 1
    assert p.feasible(start + 1)
    lab = start.copy()
    args = Labelling(potts_of(p), lab, np.ones(p.n, bool), level_state(p, lab))
    taken = _expansion_fusions(p, args, PolishOptions())
    assert taken > 0 and p.feasible(lab + 1)
    assert p.energy(lab + 1) < p.energy(start + 1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_swap_rounds_leave_no_exchange_that_lowers_the_energy(seed):
    """After :func:`swap_rounds` stops on its own, no pixel of label a anywhere on the a/c
    boundary and pixel of c on it make an exchange that lowers the energy, neighbours or not (a
    scan of every pixel, where the kernel looks only at the boundary it started from and around
    its moves); the areas are unchanged and the energy is lower. (Exchanges of two neighbours
    once counted their common edge as mended twice, raised the energy and went round in
    circles until the round limit.)"""
    from solver.mrf.polish import constrained_kernels as ck
    from solver.mrf.polish.constrained import level_state

    rng = np.random.default_rng(seed)
    k = 2 + seed % 2
    p = random_problem((10, 12), k=k, seed=seed)
    p = with_constraints(p, Constraints(area=(AreaBound(1, 30, 30, "px"),)))
    # blobs, so there are boundaries to move, with the area of label 1 pinned at 30
    lab = np.minimum(rng.integers(0, k, (5, 6)).repeat(2, 0).repeat(2, 1).ravel(), k - 1)
    lab[np.flatnonzero(lab == 0)[30:]] = 1
    lab[np.flatnonzero(lab != 0)[: max(0, 30 - int((lab == 0).sum()))]] = 0
    lab = lab.astype(np.int64)
    assert (lab == 0).sum() == 30
    movable = np.ones(p.n, bool)
    w, counts, lo, hi, apart = level_state(p, lab)
    before, areas = p.energy(lab + 1), np.bincount(lab, minlength=k)
    made = ck.swap_rounds(potts_of(p), lab, movable, ck.Areas(w, counts, lo, hi, apart), 1000)
    assert 0 < made < 1000 and p.energy(lab + 1) < before
    assert np.bincount(lab, minlength=k).tolist() == areas.tolist()
    cost = np.empty(k)
    csr = p.laplacian
    L = csr.toarray()
    for a in range(k):
        for c in range(a + 1, k):
            moves = {a: [], c: []}  # (change, pixel) of each boundary pixel's move across
            for i in range(p.n):
                li = lab[i]
                if li not in (a, c):
                    continue
                other = c if li == a else a
                if not any(lab[j] == other for j in csr.indices[csr.indptr[i]:csr.indptr[i + 1]]
                           if j != i):
                    continue
                ck.pixel_costs(potts_of(p), lab, i, cost)
                moves[li].append((cost[other] - cost[li], i))
            for d1, i in moves[a]:
                for d2, j in moves[c]:
                    # both moves at once; the edge between neighbours stays cut
                    change = d1 + d2 - 2.0 * (2 * p.lam) * L[i, j]
                    assert change >= -1e-9 * max(1.0, abs(d1) + abs(d2)), (i, j, change)


@pytest.mark.parametrize("seed", range(4))
def test_the_constrained_polish_keeps_a_feasible_start_feasible_and_never_worse(seed):
    from solver.mrf.polish.constrained import constrained_polish, repair

    c = Constraints(area=(AreaBound(1, 3, 6, "px"),), apart=((1, 3),))
    p = _tiny((4, 4), 3, seed, c)
    rng = np.random.default_rng(seed)
    start = repair(p, rng.integers(1, 4, p.shape))
    assert p.feasible(start)
    snaps = [rng.dirichlet(np.ones(3), p.n) for _ in range(3)]
    out = constrained_polish(p, start, snaps)
    assert p.feasible(out) and p.energy(out) <= p.energy(start) + 1e-9


@pytest.mark.parametrize("fraction", [0.125, 0.25, 0.375])
def test_the_parametric_min_cut_keeps_the_best_repaired_cut_when_no_cut_lands_inside(fraction):
    """An exact area that no cut meets (the cameraman at 96², the man pinned): the answer is at
    least as good as the plain min-cut brought to the pin and settled (once, every cut missed,
    the search read "no feasible cut" as optimal and kept the repaired all-background cut)."""
    import cv2

    from segapp.core.io import ASSETS_DIR, load_image, load_label_image
    from solver.mrf.polish.constrained import settle_feasible
    from solver.reference.parametric import _cut

    image = load_image(f"{ASSETS_DIR}/cameraman.png")
    strokes = load_label_image(f"{ASSETS_DIR}/cameraman_strokes_k2.png", image.shape[:2])
    image = cv2.resize(image, (96, 96), interpolation=cv2.INTER_AREA)
    strokes = cv2.resize(strokes, (96, 96), interpolation=cv2.INTER_NEAREST)
    p = build_problem(image, strokes, 2,
                      constraints=Constraints(area=(AreaBound(1, fraction, fraction),)))
    ref = parametric_mincut(p)
    assert ref.feasible and p.feasible(ref.labels)
    assert ref.energy <= p.energy(settle_feasible(p, _cut(p, 0.0))) + 1e-9
    assert ref.bound <= ref.energy + 1e-9


def _seeded(shape, points):
    seeds = np.zeros(shape, np.int32)
    for (r, c), lab in points.items():
        seeds[r, c] = lab
    return seeds


def test_every_label_apart_from_every_other_is_refused():
    with pytest.raises(ValueError, match="only one label could appear"):
        Constraints(apart=((1, 2), (1, 3), (2, 3))).validate(3, (10, 10))
    Constraints(apart=((1, 2), (1, 3))).validate(3, (10, 10))  # 2 and 3 may still touch


def test_seeded_labels_no_chain_joins_are_refused():
    seeds = _seeded((12, 12), {(0, 0): 1, (11, 11): 2})
    with pytest.raises(ValueError, match="labels 1 and 2 both have strokes"):
        Constraints(apart=((1, 2), (1, 3))).validate(3, (12, 12), seeds=seeds)
    # with label 4 allowed beside both, 1 and 2 are joined through it
    Constraints(apart=((1, 2), (1, 3))).validate(4, (12, 12), seeds=np.where(seeds == 2, 4, seeds))


@pytest.mark.parametrize("gap, ok", [(2, False), (3, True)])
def test_seeds_closer_than_the_shortest_chain_are_refused(gap, ok):
    """1 may touch only 2, 2 only 3, 3 only 4: a 1 and a 4 need two pixels between them
    (Chebyshev distance at least 3)."""
    from solver.mrf.build.constraints import label_distances
    c = Constraints(apart=((1, 3), (1, 4), (2, 4)))
    apart = np.zeros((4, 4), bool)
    for a, b in c.apart:
        apart[a - 1, b - 1] = apart[b - 1, a - 1] = True
    assert label_distances(apart)[0, 3] == 3
    seeds = _seeded((10, 10), {(4, 1): 1, (4 + gap, 1 + gap): 4})
    if ok:
        c.validate(4, (10, 10), seeds=seeds)
    else:
        with pytest.raises(ValueError, match="labels 1 and 4 need 2 pixels"):
            c.validate(4, (10, 10), seeds=seeds)
