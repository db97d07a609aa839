"""Graph matching (solver.problems.matching): the construction, the BQP, the baselines against
brute force on tiny instances, ADMM's answers, and the example script's records."""

import importlib.util
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from solver.problems import matching as gm

ROOT = Path(__file__).resolve().parents[3]


def matchings(n1, n2):
    """Every matching that matches all nodes of the smaller side, as 0/1 vectors."""
    if n1 <= n2:
        for cols in itertools.permutations(range(n2), n1):
            X = np.zeros((n1, n2))
            X[np.arange(n1), cols] = 1
            yield X.ravel()
    else:
        for rows in itertools.permutations(range(n1), n2):
            X = np.zeros((n1, n2))
            X[rows, np.arange(n2)] = 1
            yield X.ravel()


def brute_force(problem):
    """The best score over all matchings (M >= 0, so a full matching of the smaller side is
    among the maximisers)."""
    return max(problem.score(x) for x in matchings(problem.n1, problem.n2))


def tiny(seed, nodes=4, outliers=0, noise=0.02):
    return gm.make_problem(nodes, noise=noise, outliers=outliers, seed=seed)


# --------------------------------------------------------------------------- construction
@pytest.mark.parametrize("outliers", [0, 3])
def test_affinity_matrix_is_symmetric_non_negative_and_has_no_same_node_terms(outliers):
    p = gm.make_problem(6, noise=0.02, outliers=outliers, seed=1)
    n1, n2 = p.n1, p.n2
    assert p.M.shape == (n1 * n2, n1 * n2) and sp.issparse(p.M)
    assert abs(p.M - p.M.T).max() < 1e-15
    assert p.M.data.min() > 0 and p.M.data.max() <= 1.0
    rows, cols = p.M.nonzero()
    i, a, j, b = rows // n2, rows % n2, cols // n2, cols % n2
    assert np.all(i != j) and np.all(a != b)
    # the entries are the Gaussian of the edge-length difference, cut at 3 sigma
    d1 = np.linalg.norm(p.points1[i] - p.points1[j], axis=1)
    d2 = np.linalg.norm(p.points2[a] - p.points2[b], axis=1)
    np.testing.assert_allclose(np.asarray(p.M[rows, cols]).ravel(),
                               np.exp(-((d1 - d2) / 0.05) ** 2), rtol=1e-12)
    assert np.all(np.abs(d1 - d2) < 3 * 0.05)


def test_truth_is_a_matching_into_the_inliers():
    p = gm.make_problem(7, outliers=4, seed=2)
    assert p.n1 == 7 and p.n2 == 11
    assert len(set(p.truth.tolist())) == 7 and p.truth.min() >= 0 and p.truth.max() < 11
    assert gm.is_partial_permutation(p.truth_vector(), p.n1, p.n2)
    assert p.accuracy(p.truth_vector()) == 1.0
    # without noise and deformation the true partners are rigid copies
    q = gm.make_problem(7, outliers=4, deformation=0.0, seed=2)
    d1 = np.linalg.norm(q.points1[:, None] - q.points1[None], axis=2)
    d2 = np.linalg.norm(q.points2[q.truth][:, None] - q.points2[q.truth][None], axis=2)
    np.testing.assert_allclose(d1, d2, atol=1e-12)


@pytest.mark.parametrize("nodes,outliers", [(5, 0), (4, 2)])
def test_ground_truth_scores_highest_on_a_noiseless_instance(nodes, outliers):
    for seed in range(3):
        p = gm.make_problem(nodes, outliers=outliers, deformation=0.0, seed=seed)
        best = brute_force(p)
        assert p.score(p.truth_vector()) == pytest.approx(best, rel=1e-12)


def test_same_seed_same_instance_and_bad_arguments():
    a, b = gm.make_problem(5, noise=0.01, outliers=2, seed=7), gm.make_problem(
        5, noise=0.01, outliers=2, seed=7)
    assert (a.M != b.M).nnz == 0 and np.array_equal(a.truth, b.truth)
    for kwargs in ({"nodes": 0}, {"nodes": 3, "outliers": -1}, {"nodes": 3, "noise": -0.1}):
        with pytest.raises(ValueError):
            gm.make_problem(**kwargs)
    with pytest.raises(ValueError, match="sigma"):
        gm.affinity_matrix(np.zeros((2, 2)), np.zeros((2, 2)), sigma=0.0)


# --------------------------------------------------------------------------- the BQP
def test_laplacian_form_is_psd_and_equals_minus_the_score_on_binary_points():
    p = tiny(3, nodes=4, outliers=1)
    L, b = gm.laplacian_bqp(p.M)
    assert np.linalg.eigvalsh(L.toarray())[0] > -1e-10
    assert L.nnz <= p.M.nnz + p.n
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = (rng.random(p.n) < 0.3).astype(float)
        assert x @ (L @ x) + b @ x == pytest.approx(-p.score(x), abs=1e-9)


@pytest.mark.parametrize("n1,n2", [(2, 4), (3, 3), (4, 2)])
@pytest.mark.parametrize("equality", [True, False])
def test_assignment_constraints_admit_exactly_the_matchings(n1, n2, equality):
    eq, ineq = gm.assignment_constraints(n1, n2, equality=equality)

    def meets(x):
        ok = True
        if eq is not None:
            ok &= bool(np.all(np.abs(eq[0] @ x - eq[1]) < 1e-12))
        if ineq is not None:
            ok &= bool(np.all(ineq[0] @ x <= ineq[1] + 1e-12))
        return ok

    for x in itertools.product([0, 1], repeat=n1 * n2):
        x = np.array(x, dtype=float)
        X = x.reshape(n1, n2)
        valid = gm.is_partial_permutation(x, n1, n2)
        full = valid and X.sum() == min(n1, n2)
        assert meets(x) == (full if equality else valid)


def test_is_partial_permutation():
    assert gm.is_partial_permutation(np.eye(3).ravel(), 3, 3)
    assert gm.is_partial_permutation(np.zeros(6), 2, 3)
    assert not gm.is_partial_permutation(np.ones(4), 2, 2)
    assert not gm.is_partial_permutation(np.array([0.5, 0, 0, 1]), 2, 2)
    assert not gm.is_partial_permutation(np.zeros(5), 2, 3)


# --------------------------------------------------------------------------- baselines
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3)])
def test_hungarian_against_brute_force(shape):
    rng = np.random.default_rng(sum(shape))
    for _ in range(5):
        S = rng.random(shape)
        x = gm.hungarian(S)
        assert gm.is_partial_permutation(x, *shape) and x.sum() == min(shape)
        best = max(float(S.ravel() @ y) for y in matchings(*shape))
        assert float(S.ravel() @ x) == pytest.approx(best)


def test_spectral_matching_rounds_the_leading_eigenvector():
    for seed in range(3):
        p = tiny(seed, nodes=4, outliers=1)
        r = gm.spectral_matching(p)
        w, V = np.linalg.eigh(p.M.toarray())
        v = r.info["eigenvector"]
        assert np.all(v >= 0)
        assert v @ (p.M @ v) == pytest.approx(w[-1], rel=1e-9)
        assert r.feasible and r.x.sum() == p.n1
        best = max(float(v @ y) for y in matchings(p.n1, p.n2))
        assert float(v @ r.x) == pytest.approx(best)
        assert r.objective <= brute_force(p) + 1e-9
    # the sparse (ARPACK) path agrees with the dense one
    p = gm.make_problem(9, noise=0.01, seed=4)
    v = gm.leading_eigenvector(p.M)
    assert v @ (p.M @ v) == pytest.approx(np.linalg.eigvalsh(p.M.toarray())[-1], rel=1e-7)


@pytest.mark.parametrize("outliers", [0, 1])
def test_ipfp_against_brute_force(outliers):
    for seed in range(4):
        p = tiny(seed, nodes=4, outliers=outliers, noise=0.03)
        best = brute_force(p)
        sm = gm.spectral_matching(p)
        for x0 in (sm.x, None):
            r = gm.ipfp(p, x0)
            assert r.feasible and r.x.sum() == p.n1
            assert r.objective == pytest.approx(p.score(r.x))
            assert r.objective <= best + 1e-9
        assert gm.ipfp(p, sm.x).objective >= sm.objective - 1e-9
    clean = gm.make_problem(5, outliers=1, deformation=0.0, seed=0)
    assert gm.ipfp(clean).objective == pytest.approx(brute_force(clean))


@pytest.mark.slow
def test_swap_descent_ends_in_a_local_optimum_on_any_symmetric_matrix():
    rng = np.random.default_rng(5)
    for n1, n2 in ((4, 4), (3, 5), (5, 3)):
        n = n1 * n2
        R = sp.random(n, n, density=0.5, random_state=rng, data_rvs=rng.random)
        M = sp.csr_matrix(R + R.T)  # with diagonal and same-node entries, to test every term
        x0 = gm.hungarian(rng.random((n1, n2)))
        x, moves = gm.swap_descent(M, x0, n1, n2)
        f = float(x @ (M @ x))
        assert gm.is_partial_permutation(x, n1, n2)
        assert f >= float(x0 @ (M @ x0)) - 1e-12
        X = x.reshape(n1, n2).astype(float)
        T = (lambda Z: Z) if n1 <= n2 else (lambda Z: Z.T)  # rows: the smaller side
        # no swap of two partners and no move to a free node improves it
        for y in matchings(n1, n2):
            Y = y.reshape(n1, n2)
            changed = np.flatnonzero(np.any(T(Y) != T(X), axis=1))
            same_used = np.array_equal(T(Y).sum(axis=0), T(X).sum(axis=0))
            if len(changed) == 1 or (len(changed) == 2 and same_used):
                assert float(y @ (M @ y)) <= f + 1e-9
    with pytest.raises(ValueError):
        gm.swap_descent(sp.identity(4, format="csr"), np.ones(4), 2, 2)


def reference_swap_descent(M, x, n1, n2, *, max_moves=None):
    """The swap descent written plainly with numpy and scipy's indexing: every gain from
    ``g = Mx`` and the entries of ``M``, ``g`` updated by a sparse product; the compiled
    descent must take the same steps."""
    M = sp.csr_matrix(M, dtype=np.float64)
    X = np.asarray(x, dtype=np.float64).reshape(n1, n2)
    if n1 > n2:
        idx = np.arange(n1 * n2).reshape(n1, n2).T.ravel()
        xt, moves = reference_swap_descent(M[idx][:, idx], X.T.ravel(), n2, n1,
                                           max_moves=max_moves)
        return xt.reshape(n2, n1).T.ravel().astype(np.int8), moves
    var = np.arange(n1 * n2).reshape(n1, n2)
    diag = M.diagonal()

    def entries(u, v):
        return np.asarray(M[u.ravel(), v.ravel()]).reshape(u.shape)

    g = M @ X.ravel()
    tol = 1e-12 * max(float(np.abs(M.data).max(initial=0.0)), 1e-300) * max(n1, 1)
    moves = 0
    while max_moves is None or moves < max_moves:
        rows = np.flatnonzero(X.sum(axis=1) > 0.5)
        part = np.argmax(X[rows], axis=1)
        free_cols = np.flatnonzero(X.sum(axis=0) < 0.5)
        free_rows = np.flatnonzero(X.sum(axis=1) < 0.5)
        G = g.reshape(n1, n2)
        best, kind, arg = tol, None, None
        if rows.size >= 2:
            own = G[rows, part]
            cross = G[rows[:, None], part[None, :]]
            vi = var[rows, part]
            vx = var[rows[:, None], part[None, :]]
            VI, VJ = np.meshgrid(vi, vi, indexing="ij")
            gain = 2.0 * (cross + cross.T - own[:, None] - own[None, :])
            quad = (diag[vx] + diag[vx.T] + diag[vi][:, None] + diag[vi][None, :]
                    + 2.0 * entries(vx, vx.T) + 2.0 * entries(VI, VJ)
                    - 2.0 * entries(vx, VI) - 2.0 * entries(vx, VJ)
                    - 2.0 * entries(vx.T, VI) - 2.0 * entries(vx.T, VJ))
            total = gain + quad
            np.fill_diagonal(total, -np.inf)
            k = int(np.argmax(total))
            if total.flat[k] > best:
                best, kind, arg = float(total.flat[k]), "swap", np.unravel_index(k, total.shape)
        if rows.size and free_cols.size:
            vi = var[rows, part]
            vc = var[rows[:, None], free_cols[None, :]]
            VI = np.repeat(vi[:, None], free_cols.size, axis=1)
            total = (2.0 * (G[rows[:, None], free_cols[None, :]] - G[rows, part][:, None])
                     + diag[vc] + diag[vi][:, None] - 2.0 * entries(vc, VI))
            k = int(np.argmax(total))
            if total.flat[k] > best:
                best, kind, arg = float(total.flat[k]), "move", np.unravel_index(k, total.shape)
        if free_rows.size and free_cols.size:
            total = (2.0 * G[free_rows[:, None], free_cols[None, :]]
                     + diag[var[free_rows[:, None], free_cols[None, :]]])
            k = int(np.argmax(total))
            if total.flat[k] > best:
                best, kind, arg = float(total.flat[k]), "add", np.unravel_index(k, total.shape)
        if kind is None:
            break
        if kind == "swap":
            i, j = rows[arg[0]], rows[arg[1]]
            a, b = part[arg[0]], part[arg[1]]
            on, off = [var[i, b], var[j, a]], [var[i, a], var[j, b]]
        elif kind == "move":
            i, a, c = rows[arg[0]], part[arg[0]], free_cols[arg[1]]
            on, off = [var[i, c]], [var[i, a]]
        else:
            on, off = [var[free_rows[arg[0]], free_cols[arg[1]]]], []
        delta = np.zeros(n1 * n2)
        delta[on], delta[off] = 1.0, -1.0
        X.ravel()[on], X.ravel()[off] = 1.0, 0.0
        g = g + M @ delta
        moves += 1
    return X.ravel().astype(np.int8), moves


def random_partial_matching(rng, n1, n2, drop):
    """A random matching of the smaller side with ``drop`` of its matches removed."""
    X = gm.hungarian(rng.random((n1, n2))).reshape(n1, n2).copy()
    ones = np.argwhere(X)
    for r, c in ones[rng.choice(len(ones), size=drop, replace=False)]:
        X[r, c] = 0
    return X.ravel()


def test_swap_descent_takes_the_steps_of_the_plain_reference():
    """The compiled descent against the plain one, step for step (the same matching after any
    number of steps, hence the same choices and tie-breaking): on random symmetric matrices
    with diagonal and same-node entries (float, signed, and small integers, whose sums tie
    exactly), on instances of make_problem with and without a non-zero same-node entry, with
    unmatched nodes to add, and on a matrix whose CSR indices are unsorted."""
    rng = np.random.default_rng(11)
    cases = []
    for n1, n2 in ((4, 4), (3, 6), (6, 4), (5, 7), (7, 7), (8, 5)):
        n = n1 * n2
        for values in ("float", "signed", "int"):
            R = sp.random(n, n, density=0.4, random_state=rng, data_rvs=rng.random).tocsr()
            if values == "signed":
                R.data -= 0.5
            elif values == "int":
                R.data = np.floor(3.0 * R.data)
            cases.append((sp.csr_matrix(R + R.T), n1, n2))
    for seed in range(4):
        p = gm.make_problem(6 + seed, noise=0.03, outliers=seed, seed=seed)
        cases.append((p.M, p.n1, p.n2))
        same = p.M.tolil()  # (0, 0) and (0, 1) share node 0: no affinity in make_problem
        assert same[0, 1] == 0 and same[0, p.n2] == 0
        same[0, 1] = same[1, 0] = 5.0
        same[p.n2, 0] = same[0, p.n2] = 3.0  # (1, 0) and (0, 0) share node 0 of the second
        cases.append((same.tocsr(), p.n1, p.n2))
        cases.append((same.tocsr(), p.n2, p.n1))  # the same matrix read with rows the larger
    M, n1, n2 = cases[3]
    unsorted = M.copy()
    for r in range(unsorted.shape[0]):  # reverse each row's storage
        lo, hi = unsorted.indptr[r], unsorted.indptr[r + 1]
        unsorted.indices[lo:hi] = unsorted.indices[lo:hi][::-1].copy()
        unsorted.data[lo:hi] = unsorted.data[lo:hi][::-1].copy()
    unsorted.has_sorted_indices = False
    assert not unsorted.has_canonical_format
    cases.append((unsorted, n1, n2))
    steps = 0
    for M, n1, n2 in cases:
        for drop in (0, 1, min(n1, n2) // 2):
            x0 = random_partial_matching(rng, n1, n2, drop)
            want, moves = reference_swap_descent(M, x0, n1, n2)
            # one step more allowed than the reference takes: a diverged descent that cycles
            # stops there and fails rather than hangs
            got, got_moves = gm.swap_descent(M, x0, n1, n2, max_moves=moves + 1)
            assert got.dtype == np.int8 and gm.is_partial_permutation(got, n1, n2)
            assert np.array_equal(got, want) and got_moves == moves
            for limit in (1, moves // 2):
                assert np.array_equal(gm.swap_descent(M, x0, n1, n2, max_moves=limit)[0],
                                      reference_swap_descent(M, x0, n1, n2, max_moves=limit)[0])
            steps += moves
    assert steps > 3 * len(cases)


def test_local_ascent_ends_where_neither_ipfp_nor_the_swap_descent_gains():
    """From poor starts (random matchings) on noisy instances with outliers, the local ascent
    never lowers the score, ends at a point neither IPFP's steps nor the swap descent raise,
    and on some instance IPFP's steps raise what the swap descent alone left."""
    rng = np.random.default_rng(2)
    climbed = 0
    for seed in range(6):
        p = gm.make_problem(12, noise=0.03, outliers=3, seed=seed)
        x0 = gm.hungarian(rng.random((p.n1, p.n2)))
        x, moves, ascents = gm.local_ascent(p, x0)
        f = p.score(x)
        assert gm.is_partial_permutation(x, p.n1, p.n2)
        assert f >= p.score(x0) - 1e-9
        assert p.score(gm.ipfp(p, x).x) <= f + 1e-9
        assert p.score(gm.swap_descent(p.M, x, p.n1, p.n2)[0]) <= f + 1e-9
        climbed += ascents > 0
    assert climbed > 0


# --------------------------------------------------------------------------- ADMM
@pytest.mark.parametrize("form", gm.ADMM_FORMS)
def test_admm_answers_are_matchings_at_most_the_optimum(form):
    for seed in range(3):
        p = tiny(seed, nodes=4, outliers=seed % 2, noise=0.03)
        best = brute_force(p)
        sm = gm.spectral_matching(p)
        r = gm.admm_matching(p, sm.x, form=form)
        assert r.feasible and r.info["admm_feasible"] and r.x.sum() == p.n1
        assert r.objective == pytest.approx(p.score(r.x))
        assert r.info["admm_objective"] <= r.objective + 1e-9 <= best + 2e-9
    clean = gm.make_problem(5, outliers=1, deformation=0.0, seed=1)
    r = gm.admm_matching(clean, gm.spectral_matching(clean).x, form=form)
    assert r.objective == pytest.approx(brute_force(clean)) and r.accuracy == 1.0


def test_admm_at_least_spectral_matching_on_a_few_seeds():
    for seed in range(4):
        p = gm.make_problem(8, noise=0.02, outliers=2, seed=seed)
        res = gm.solve_all(p)
        assert all(r.feasible for r in res.values())
        assert res["admm"].objective >= res["sm"].objective - 1e-9
        assert res["admm"].info["admm_objective"] >= res["sm"].objective - 1e-9
        assert res["admm"].time_s >= res["sm"].time_s


@pytest.mark.parametrize("stuck", ["answer", "iterate"])
def test_admm_ascends_from_its_answer_and_its_best_rounded_iterate_and_keeps_the_higher(
        stuck, monkeypatch):
    """An instance whose ADMM answer and best rounded iterate differ: both are ascended, and
    whichever ends higher is kept (a stand-in ascent leaves one at the lower start)."""
    p = gm.make_problem(10, noise=0.03, outliers=3, seed=4)
    x0 = gm.spectral_matching(p).x
    real = gm.local_ascent
    plain = gm.admm_matching(p, x0, polish=False)
    answer = gm.admm_matching(p, x0, polish=False, round_iterates=False).x
    assert plain.info["rounded_iterate"] is not None  # (the iterate is ADMM's own point here)
    assert plain.objective > p.score(answer)
    starts = []

    def ascent(problem, x, **kw):
        name = "iterate" if np.isclose(problem.score(x), plain.objective) else "answer"
        starts.append(name)
        if name == stuck:
            return np.asarray(answer).astype(np.int8), 0, 0
        return real(problem, x, **kw)

    monkeypatch.setattr(gm, "local_ascent", ascent)
    r = gm.admm_matching(p, x0, ascent_starts=1)
    assert sorted(starts) == ["answer", "iterate"]
    kept = "iterate" if stuck == "answer" else "answer"
    assert r.info["ascended_from"] == ("iterate 1" if kept == "iterate" else "answer")
    want = real(p, plain.x if kept == "iterate" else answer)[0]
    assert r.objective == pytest.approx(p.score(want))
    assert r.objective > p.score(answer)
    assert r.info["admm_objective"] == pytest.approx(plain.objective)


@pytest.mark.parametrize("seed", [2, 8])
def test_the_ascent_starts_from_every_distinct_rounded_iterate_best_first(seed, monkeypatch):
    """By default every distinct matching the iterates round to is ascended, best first, and
    the highest end is kept; ``ascent_starts=k`` takes the k best besides ADMM's answer."""
    p = gm.make_problem(10, noise=0.03, outliers=3, seed=seed)
    x0 = gm.spectral_matching(p).x
    rounded = []

    def collect(state):
        y = gm.hungarian(state.x_host().reshape(p.n1, p.n2))
        if not any(np.array_equal(y, z) for z in rounded):
            rounded.append(y)

    answer = gm.solve_bqp(*gm.laplacian_bqp(p.M), x0=x0, callback=collect,
                          eq=gm.assignment_constraints(p.n1, p.n2)[0],
                          ineq=gm.assignment_constraints(p.n1, p.n2)[1]).x.astype(np.int8)
    distinct = rounded + ([] if any(np.array_equal(answer, z) for z in rounded) else [answer])
    assert len(distinct) >= 3            # the instance has something to choose among
    real = gm.local_ascent
    starts, ends = [], []

    def ascent(problem, x, **kw):
        starts.append(np.asarray(x).copy())
        y = real(problem, x, **kw)
        ends.append(problem.score(y[0]))
        return y

    monkeypatch.setattr(gm, "local_ascent", ascent)
    r = gm.admm_matching(p, x0)
    assert len(starts) == len(distinct)
    for z in distinct:
        assert sum(np.array_equal(z, s) for s in starts) == 1
    scores = [p.score(s) for s in starts]
    assert scores == sorted(scores, reverse=True)
    assert r.objective == pytest.approx(max(ends))
    for k in (0, 1):
        starts.clear()
        ends.clear()
        rk = gm.admm_matching(p, x0, ascent_starts=k)
        assert len(starts) == k + 1
        assert any(np.array_equal(s, answer) for s in starts)
        assert rk.objective <= r.objective + 1e-9


def test_admm_variants_and_arguments():
    p = tiny(2, nodes=4, outliers=2)
    r = gm.admm_matching(p, equality=False, polish=False, max_iter=300)  # the paper's C2 x <= 1
    assert r.feasible and r.info["moves"] == 0
    assert r.objective == pytest.approx(r.info["admm_objective"])
    with pytest.raises(ValueError, match="form"):
        gm.admm_matching(p, form="dense")
    with pytest.raises(ValueError, match="max_iter"):
        gm.admm_matching(p, max_iter=0)


# --------------------------------------------------------------------------- the example
def test_example_writes_the_pinned_records(tmp_path):
    spec = importlib.util.spec_from_file_location("graph_matching_example",
                                                  ROOT / "examples" / "graph_matching.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    out = tmp_path / "gm.json"
    assert ex.main(["--nodes", "4", "--runs", "2", "--noise", "0,0.02", "--outliers", "0,50%",
                    "--json", str(out)]) == 0
    records = json.loads(out.read_text())
    assert len(records) == 3 * 2 * 2 * 2
    pinned = {"method", "nodes", "noise", "outliers", "run", "objective", "accuracy", "time_s",
              "feasible"}
    assert all(pinned <= set(r) for r in records)
    assert {r["method"] for r in records} == {"admm", "ipfp", "sm"}
    assert {r["outliers"] for r in records} == {0, 2}
    assert all(r["feasible"] for r in records)
    md = out.with_suffix(".md").read_text()
    assert "| 4 | 0.02 | 2 | IPFP |" in md and "Met in" in md
    again = tmp_path / "again.json"
    ex.main(["--nodes", "4", "--runs", "2", "--noise", "0,0.02", "--outliers", "0,50%",
             "--json", str(again)])
    strip = [{k: v for k, v in r.items() if k != "time_s"} for r in records]
    assert strip == [{k: v for k, v in r.items() if k != "time_s"}
                     for r in json.loads(again.read_text())]
