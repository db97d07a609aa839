"""Apart pairs held by a split (``z0 = C0 x`` projected on half-planes): the projection, the
rows against the constraint they stand for, the exact one-hot x-update with a per-label
diagonal, the margin moves of the polish, and the split against the exact rows end to end."""

import itertools
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from solver.admm.params import ADMMParams
from solver.admm.splits import PairSplit
from solver.admm.systems import OneHotKronSystem, onehot_operator, sparse_operator
from solver.backend import CPU
from solver.mrf import (
    AreaBound,
    Constraints,
    SolveOptions,
    build_problem,
    solve_mrf,
    with_constraints,
)
from solver.mrf.build.constraints import touching_pairs
from solver.mrf.build.stencil import graph_arrays, potts_of
from solver.mrf.polish import constrained_kernels as ck
from solver.mrf.polish import icm_kernels as kernels
from solver.mrf.polish import margin_kernels as mk
from solver.mrf.polish.constrained import Labelling, constrained_polish, level_state
from solver.mrf.solve.constraint_terms import apart_split, carry_split_state
from solver.mrf.solve.reduction import MRFADMM
from solver.reference.nested import nested_mincut
from tests.solver._mrf_helpers import random_problem, shapes_image
from tests.solver.mrf.build.test_constraints import _tiny, brute


def _split(second, bound, compiled):
    m = len(bound)
    rows = (np.zeros(m, np.int64), np.where(np.asarray(second) > 0, 1, -1)) if compiled else None
    op = sparse_operator(sp.csr_matrix((2 * m, 2)), np.zeros(2 * m), CPU)
    return PairSplit(op, np.asarray(second, float), np.asarray(bound, float), rows=rows)


@pytest.mark.parametrize("compiled", [False, True])
def test_the_pair_projection_is_the_closest_point_of_each_half_plane(compiled):
    rng = np.random.default_rng(0)
    second = (rng.random(400) < 0.7).astype(float)
    bound = rng.choice([0.0, 1.0], 400)
    split = _split(second, bound, compiled)
    v = rng.normal(0.5, 0.8, 800)
    z = split.prox(v, 1.0, np)
    V, Z = v.reshape(-1, 2), z.reshape(-1, 2)
    assert np.all(Z[:, 0] + second * Z[:, 1] <= bound + 1e-12)  # in the set
    assert np.array_equal(Z[second == 0, 1], V[second == 0, 1])  # no second entry: untouched
    # the closest point: any other point of the half-plane on a grid around it is farther
    for r in range(0, 400, 37):
        a = np.array([1.0, second[r]])
        d2 = ((Z[r] - V[r]) ** 2).sum()
        for dx, dy in itertools.product(np.linspace(-0.5, 0.5, 11), repeat=2):
            q = Z[r] + [dx, dy]
            if a @ q <= bound[r]:
                assert ((q - V[r]) ** 2).sum() >= d2 - 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("k, pairs", [(3, ((1, 3),)), (4, ((1, 3), (2, 4)))])
@pytest.mark.parametrize("hard_fraction", [0.0, 0.3])
def test_the_split_rows_hold_exactly_when_no_apart_labels_touch(hard_fraction, k, pairs):
    """On random labellings of a small grid, the rows' largest excess is 0 exactly when no two
    neighbours carry apart labels, and C0'C0 is the per-label diagonal the system is told."""
    p = _tiny((3, 3), k, 1, Constraints(apart=pairs), hard_fraction=hard_fraction)
    hard = np.asarray(p.hard).ravel()
    free = np.flatnonzero(hard == 0)
    split = apart_split(p, free, hard, 0.3, CPU)
    C = split.op  # (its matrix is checked through products)
    k, m = p.k, free.size
    eye = np.eye(m * k)
    CtC = np.stack([C.rmatvec(C.matvec(eye[:, c])) for c in range(m * k)], axis=1)
    assert np.array_equal(CtC, np.kron(np.eye(m), np.diag(split.op.label_diag)))
    rng = np.random.default_rng(3)
    for _ in range(300):
        lab = np.where(hard > 0, hard, rng.integers(1, k + 1, p.n))
        x = np.zeros((m, k))
        x[np.arange(m), lab[free] - 1] = 1.0
        touch = any(True for _ in touching_pairs(lab.reshape(p.shape), p.constraints.apart))
        for fast in (True, False):
            s = split if fast else replace(split, rows=None)
            assert (s.violation(x.ravel(), CPU) > 0) == touch


def test_a_restrictions_split_from_its_parents_pairs_is_the_split_made_afresh():
    """Early fixing's restrictions build their split from the neighbouring pairs their parent
    had (``parent``): the same rows, bounds, keys and label counts as a split made from every
    pair, through three rounds of fixing more pixels."""
    rng = np.random.default_rng(4)
    p = with_constraints(random_problem((13, 14), k=4, seed=4),
                         Constraints(apart=((1, 3), (2, 4))))
    hard = np.zeros(p.n, np.int64)
    parent = apart_split(p, np.arange(p.n), hard, 0.3, CPU)
    for _ in range(3):
        more = (rng.random(p.n) < 0.3) & (hard == 0)
        hard = hard.copy()
        hard[more] = rng.integers(1, 5, more.sum())
        free = np.flatnonzero(hard == 0)
        child = apart_split(replace(p, hard=hard), free, hard, 0.3, CPU, parent=parent)
        fresh = apart_split(replace(p, hard=hard), free, hard, 0.3, CPU)
        for got, want in ((child.keys, fresh.keys), (child.rows[0], fresh.rows[0]),
                          (child.rows[1], fresh.rows[1]), (child.bound, fresh.bound),
                          (child.op.label_diag, fresh.op.label_diag),
                          (child.with_free, fresh.with_free), (child.kinds, fresh.kinds),
                          (child.layout, fresh.layout)):
            np.testing.assert_array_equal(got, want)
        assert child.with_free.size < parent.with_free.size
        parent = child


def test_the_one_hot_system_solves_a_per_label_diagonal_exactly():
    p = random_problem((9, 11), k=4, seed=2)
    L = p.laplacian.tocsr()
    k, n = 4, p.n
    system = OneHotKronSystem(L, k, CPU)
    eq = onehot_operator(n, k, CPU)
    diag = np.array([8.0, 0.0, 16.0, 8.0])
    ineq = replace(eq, label_diag=diag)  # (only label_diag is read for the rows' part)
    rng = np.random.default_rng(1)
    rhs = rng.normal(size=n * k)
    rho, rho_eq, rho_in = 2.5, 0.7, 0.3
    sol = system.solve(rhs, None, rho, eq, rho_eq, ineq, rho_in, 1e-13, 500)
    M = rho * np.eye(k) + rho_eq * np.ones((k, k)) + rho_in * np.diag(diag)
    full = 2.0 * sp.kron(L, sp.identity(k)) + sp.kron(sp.identity(n), M)
    exact = spla.spsolve(full.tocsc(), rhs)
    assert np.abs(sol.x - exact).max() <= 1e-8 * np.abs(exact).max()
    # x'(L⊗I)x from the CG's residual (the loop's continuous objective, without a product)
    xx = sol.x.reshape(n, k)
    assert sol.quad == pytest.approx(float(np.einsum("ic,ic->", xx, L @ xx)), rel=1e-9)


def _nest_start(cost2=1.2, cost1=0.0):
    """A 9 x 9 nesting (labels 1 and 3 apart) whose hard centre is label 3, data everywhere
    for label 1, and a start that fills the middle 5 x 5 with label 3 inside a ring of 2."""
    p = random_problem((9, 9), k=3, seed=5)
    unary = np.zeros((81, 3))
    unary[:, 0] = cost1
    unary[:, 1] = cost2  # (no single pixel or whole region of 3 can move to a cheaper label)
    unary[:, 2] = 1.0
    hard = np.zeros((9, 9), np.int32)
    hard[4, 4] = 3
    p = replace(p, unary=unary, hard=hard.ravel(), lam=0.01)
    p = with_constraints(p, Constraints(apart=((1, 3),)))
    start = np.ones((9, 9), np.int32)
    start[1:8, 1:8] = 2
    start[2:7, 2:7] = 3
    return p, start


def test_a_margin_move_takes_a_region_across_a_label_it_must_not_touch():
    p, start = _nest_start()
    assert p.feasible(start)
    lab = kernels.zero_based(start)
    movable = np.asarray(p.hard).ravel() == 0
    args = Labelling(potts_of(p), lab, movable, level_state(p, lab))
    moves = mk.margin_moves(*args, p.n)
    out = kernels.one_based(lab, p.shape)
    assert moves >= 1
    assert p.feasible(out)
    assert p.energy(out) < p.energy(start)
    # the inner region is gone but for the hard centre, kept off label 1 by a ring of 2
    assert (out == 3).sum() == 1
    assert np.all(out[3:6, 3:6][np.array([[1, 1, 1], [1, 0, 1], [1, 1, 1]], bool)] == 2)


def test_the_constrained_polish_leaves_that_start_at_the_layered_optimum():
    p, start = _nest_start()
    out = constrained_polish(p, start)
    ref = nested_mincut(p)
    assert p.feasible(out)
    assert p.energy(out) <= ref.energy + 1e-9 * abs(ref.energy)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_the_split_and_the_exact_rows_both_keep_labels_apart(seed):
    p = _tiny((3, 4), 3, seed, Constraints(apart=((1, 3),)), hard_fraction=0.1 * (seed % 2))
    best, _ = brute(p)
    for how in ("split", "rows"):
        res = solve_mrf(p, "admm", options=SolveOptions(apart=how))
        assert p.feasible(res.labels) and res.feasible
        assert res.energy <= best + 0.02 * abs(best) + 1e-6


def test_an_unknown_apart_mode_is_refused():
    p = _tiny((3, 4), 3, 0, Constraints(apart=((1, 3),)))
    with pytest.raises(ValueError, match="options.apart must be 'split' or 'rows'"):
        solve_mrf(p, "admm", options=SolveOptions(apart="both"))


def test_a_restricted_split_carries_each_copy_and_dual_to_the_same_entry():
    p = _tiny((6, 7), 3, 2, Constraints(apart=((1, 3),)))
    k, hard = p.k, np.asarray(p.hard).ravel()
    free = np.flatnonzero(hard == 0)
    parent = apart_split(p, free, hard, 0.3, CPU)
    rng = np.random.default_rng(4)
    z0, y0 = rng.normal(size=parent.keys.size), rng.normal(size=parent.keys.size)
    # fix a third of the pixels to random labels, as early fixing would
    fixed = rng.random(p.n) < 0.33
    hard2 = np.where(fixed, rng.integers(1, k + 1, p.n), hard).astype(np.int32)
    free2 = np.flatnonzero(hard2 == 0)
    child = apart_split(replace(p, hard=hard2), free2, hard2, 0.3, CPU)
    x = rng.random(free2.size * k)
    cz, cy = carry_split_state(parent, child, z0, y0, x, CPU)

    def entries(split, fr):  # (pixel, label) of each z0 entry, (-1, -1) for none
        first, second = split.rows
        idx = np.stack([first, second], 1).ravel()
        return np.where(idx >= 0, fr[idx // k], -1), np.where(idx >= 0, idx % k, -1)

    pp, pl = entries(parent, free)
    cp, cl = entries(child, free2)
    where = {key: s for s, key in enumerate(parent.keys) if key >= 0}
    carried = 0
    for s, key in enumerate(child.keys):
        if key in where:
            t = where[key]
            assert (cp[s], cl[s]) == (pp[t], pl[t])
            assert cz[s] == z0[t] and cy[s] == y0[t]
            carried += 1
        else:  # a new entry starts at C0 x with a zero dual
            assert cy[s] == 0.0
    assert carried > 0.5 * child.keys.size
    fresh = child.op.matvec(x)
    new = np.array([key not in where for key in child.keys])
    assert np.array_equal(cz[new], fresh[new])


@pytest.mark.slow
def test_early_fixing_with_apart_pairs_fixes_no_conflict_and_ends_feasible():
    image, _, strokes = shapes_image(seed=0, k=3, size=90, noise=0.25)
    p = build_problem(image, strokes, 3, constraints=Constraints(apart=((1, 3),)))
    solver = MRFADMM(p, "cpu", ADMMParams(), options=SolveOptions())
    assert solver.early_fixing
    seen = []
    real = MRFADMM._restricted

    def spy(self, keep, x):
        child = real(self, keep, x)
        lab = child._fixed_labels
        newly = (lab > 0) & (self._fixed_labels == 0)
        touching = np.zeros(p.n, bool)
        touching[self.free] = self._touching_apart(x)
        seen.append(int(newly.sum()))
        assert not (newly & touching).any()  # no pixel in a conflict is fixed
        return child

    MRFADMM._restricted = spy
    try:
        res = solver.run(polish=True)
    finally:
        MRFADMM._restricted = real
    assert seen and sum(seen) > 0
    assert p.feasible(res.labels)
    ref = nested_mincut(p)
    assert res.energy <= ref.energy + 0.005 * abs(ref.energy)  # (measured: +0.00%)


@pytest.mark.slow
@pytest.mark.parametrize("seed, size", [(3, 60), (4, 60), (4, 90)])
def test_admms_own_labels_keep_apart_labels_apart_with_early_fixing(seed, size):
    """Early fixing hands the last few pixels to the polish only when none touches a label
    apart from its own (on these three, ADMM's own labels broke the pair before it did)."""
    image, _, strokes = shapes_image(seed=seed, k=3, size=size, noise=0.25)
    p = build_problem(image, strokes, 3, constraints=Constraints(apart=((1, 3),)))
    res = solve_mrf(p, "admm", polish=False)
    assert p.feasible(res.labels) and res.feasible


@pytest.mark.slow
def test_fusion_with_a_margin_takes_a_proposal_the_plain_fusion_must_refuse():
    p, start = _nest_start()
    proposal = np.where(np.asarray(p.hard).reshape(p.shape) > 0, 3, 1)  # 1 beside the hard 3
    movable = np.asarray(p.hard).ravel() == 0
    plain = kernels.zero_based(start)
    x = np.eye(3)[kernels.zero_based(proposal)]
    state = level_state(p, plain)
    comp, queue = np.full(p.n, -1, np.int64), np.empty(p.n, np.int64)
    seeds = ck.level_set_seeds(x, plain, movable, 0.5)
    assert seeds.size and ck.fuse_level_set(potts_of(p), plain, movable, state, x, 0, 0.5, seeds,
                                            comp, queue) == 0  # touches the hard 3
    lab = kernels.zero_based(start)
    taken = mk.fuse_with_margin(potts_of(p), lab, movable, level_state(p, lab), x, 0, 0.5, seeds,
                                (lab.copy(), np.full(p.n, -1, np.int64), queue), 0)
    out = kernels.one_based(lab, p.shape)
    assert taken == 1 and p.feasible(out)
    assert p.energy(out) <= nested_mincut(p).energy + 1e-9  # the proposal with its margin


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_margin_bound_is_below_every_margin_move_of_the_region(seed):
    """The bound that lets margin moves pass over a region is at most the exact energy change
    of each of its margin moves (built as the kernel builds them: the region, its ring, the
    proposal with its margin, the ring settled), on random nestings and labellings."""
    rng = np.random.default_rng(seed)
    p = random_problem((14, 15), k=3, seed=seed)
    p = with_constraints(replace(p, lam=float(rng.uniform(0.05, 0.5))),
                         Constraints(apart=((1, 3),)))
    lab = kernels.zero_based(nested_mincut(p).labels).astype(np.int64)
    flip = (rng.random(p.n) < 0.2) & p.movable
    lab[flip] = 1  # (the middle label never breaks the pair)
    indptr, indices, data, gw, geom = graph_arrays(p)
    assert gw.size  # (the kernels read the grid)
    L = p.laplacian
    apart = np.ascontiguousarray(p.constraints.apart)
    seen, mark = np.zeros(p.n, bool), np.full(p.n, -1, np.int64)
    queue, cost = np.empty(p.n, np.int64), np.empty(3)
    checked = 0
    for s in range(p.n):
        if seen[s] or not p.movable[s]:
            continue
        size = mk._region(indptr, indices, gw, geom, lab, p.movable, seen, queue, s, p.n)
        a = lab[s]
        mark[queue[:size]] = s
        end = size
        for i in queue[:size].tolist():
            for j in L.indices[L.indptr[i]:L.indptr[i + 1]].tolist():
                if mark[j] != s and p.movable[j]:
                    mark[j] = s
                    queue[end] = j
                    end += 1
        bound = mk._margin_bound(potts_of(p), lab, mark, s, queue, size, end)
        for c in range(3):
            prop = lab.copy()
            if c == a or not mk._propose(potts_of(p), lab, prop, apart, queue, size, c):
                continue
            mk._settle_ring(potts_of(p), prop, apart, queue, size, end, cost)
            d = mk._change(potts_of(p), lab, prop, apart, mark, s, queue, end)
            if np.isfinite(d):
                assert d == pytest.approx(p.energy(prop + 1) - p.energy(lab + 1), abs=1e-9)
                assert bound <= d + 1e-9
                checked += 1
    assert checked > 20


def test_a_margin_move_lets_the_ring_the_old_region_needed_go():
    """With label 2 dear and label 1 barely cheaper than 3, the inner region's move to 1 pays
    only when the ring of 2 around it (now between 1 and 1) goes too."""
    p, start = _nest_start(cost2=5.0, cost1=0.95)
    lab = kernels.zero_based(start)
    movable = np.asarray(p.hard).ravel() == 0
    args = Labelling(potts_of(p), lab, movable, level_state(p, lab))
    assert mk.margin_moves(*args, p.n) >= 1
    out = kernels.one_based(lab, p.shape)
    assert p.feasible(out)
    assert p.energy(out) <= nested_mincut(p).energy + 1e-9


@pytest.mark.parametrize("seed, area", [(0, False), (1, False), (2, False), (2, True),
                                        (3, True), (5, True)])
def test_fusion_from_the_seeds_is_the_fusion_from_every_pixel_with_margins(seed, area):
    """The constrained polish's level-set fusion, which starts regions only from the pixels
    where a snapshot's level sets differ from the labels (found once a snapshot), gives the
    labels and counts of the fusion that starts from every pixel, with apart pairs alone
    (margin fusion) and with an area bound too (plain, then margin)."""
    from solver.mrf.polish.constrained import _level_set_fusions, repair

    rng = np.random.default_rng(seed)
    c = Constraints(apart=((1, 3),), area=(AreaBound(2, 10, 90, "px"),) if area else ())
    p = with_constraints(random_problem((10, 12), k=3, seed=seed), c)
    start = kernels.zero_based(repair(p, rng.integers(1, 4, p.shape)))
    movable = np.asarray(p.hard).ravel() == 0
    snaps = [rng.dirichlet(np.full(3, 0.3), p.n) for _ in range(2)]
    thresholds = (0.2, 0.5, 0.8)
    lab = start.copy()
    state = level_state(p, lab)
    taken = _level_set_fusions(p, lab, movable, state, snaps, thresholds)
    # the same sequence of calls, every pixel a seed
    ref = start.copy()
    w, counts, lo, hi, apart = level_state(p, ref)
    every = np.arange(p.n, dtype=np.int64)
    comp, queue, mark = (np.full(p.n, -1, np.int64), np.empty(p.n, np.int64),
                         np.full(p.n, -1, np.int64))
    ref_taken, base = 0, 0
    for x in snaps:
        for t in thresholds:
            for lbl in range(3):
                if area:
                    ref_taken += ck.fuse_level_set(potts_of(p), ref, movable,
                                                   ck.Areas(w, counts, lo, hi, apart), x, lbl, t,
                                                   every, comp, queue)
                ref_taken += mk.fuse_with_margin(potts_of(p), ref, movable,
                                                 ck.Areas(w, counts, lo, hi, apart), x, lbl, t,
                                                 every, (ref.copy(), mark, queue), base)
                base += p.n
    assert ref_taken > 0 and taken == ref_taken
    assert lab.tolist() == ref.tolist() and state[1].tolist() == counts.tolist()
    assert p.feasible(lab + 1)


def test_the_pixels_touching_a_label_apart_are_those_at_an_edge_between_such_labels():
    from solver.mrf.build.graph import edge_ends
    from solver.mrf.build.stencil import graph_arrays
    from solver.mrf.solve import reduction_kernels

    rng = np.random.default_rng(4)
    p = with_constraints(random_problem((9, 11), k=4, seed=4),
                         Constraints(apart=((1, 3), (2, 4))))
    apart = np.ascontiguousarray(p.constraints.apart)
    i, j = (np.asarray(e, np.int64) for e in edge_ends(p.graph))
    for _ in range(5):
        lab = rng.integers(1, 5, p.n)
        want = np.zeros(p.n, bool)
        bad = apart[lab[i] - 1, lab[j] - 1]
        want[i[bad]] = want[j[bad]] = True
        indptr, indices, _, gw, geom = graph_arrays(p)
        L = p.laplacian  # (through the grid's weights and through the matrix)
        for arrays in ((indptr, indices, gw, geom), (L.indptr, L.indices, np.empty(0), geom)):
            got = reduction_kernels.touching_apart(*arrays, lab - 1, apart, np.arange(p.n))
            assert want.any() and got.tolist() == want.tolist()
            some = np.flatnonzero(rng.random(p.n) < 0.3)  # (only the pixels asked for)
            got = reduction_kernels.touching_apart(*arrays, lab - 1, apart, some)
            assert got.tolist() == want[some].tolist()
