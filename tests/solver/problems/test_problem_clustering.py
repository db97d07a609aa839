"""Information-theoretic clustering (:mod:`solver.problems.clustering`): the model's
construction, its measures against hand and brute-force computations, and ADMM's answers
(feasible, optimal on tiny instances, at or below K-means') on synthetic blobs. No scikit-learn:
the example script is run on blobs in place of its data sets."""

import functools
import importlib.util
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from solver.problems import clustering as clu

ROOT = Path(__file__).resolve().parents[3]


def _blobs(seed, sizes=(20, 20, 20), spread=0.25):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 1.7]])[:len(sizes)]
    X = np.vstack([rng.normal(c, spread, size=(m, 2)) for c, m in zip(centres, sizes)])
    return X, np.repeat(np.arange(len(sizes)), sizes)


def _tiny(n, k, sizes, seed):
    """A small instance: blobs of the given sizes, 3-NN graph."""
    X, _ = _blobs(seed, sizes, spread=0.5)
    assert X.shape[0] == n
    return clu.build_problem(X, k, n_neighbors=3)


def _brute(problem):
    """Least tr(Y'WY) over every assignment with sizes in the bounds, and one minimiser."""
    n, k = problem.n_points, problem.k
    lo, hi = problem.sizes
    labs = np.array(list(itertools.product(range(k), repeat=n)))
    counts = np.stack([(labs == c).sum(axis=1) for c in range(k)], axis=1)
    labs = labs[np.all((counts >= lo) & (counts <= hi), axis=1)]
    same = (labs[:, :, None] == labs[:, None, :]).astype(np.float64)
    objs = np.einsum("mij,ij->m", same, problem.weights.toarray())
    return float(objs.min()), labs[int(np.argmin(objs))]


# --------------------------------------------------------------------------- construction
def test_scale_features_maps_each_column_onto_minus_one_one():
    X = np.array([[0.0, 5.0, 3.0], [2.0, 7.0, 3.0], [1.0, 6.0, 3.0]])
    S = clu.scale_features(X)
    np.testing.assert_allclose(S[:, 0], [-1.0, 1.0, 0.0])
    np.testing.assert_allclose(S[:, 1], [-1.0, 1.0, 0.0])
    np.testing.assert_array_equal(S[:, 2], 0.0)  # a constant feature
    with pytest.raises(ValueError, match="non-finite"):
        clu.scale_features([[0.0, np.nan]])


def test_weights_are_log2_squared_distances_averaged_over_directions():
    # nearest neighbours on a line: 0 <-> 1 both ways (d^2 = 0.25), 2 -> 1 one way (0.5625)
    X = np.array([[0.0], [0.5], [1.25]])
    W = clu.knn_log_weights(X, n_neighbors=1).toarray()
    assert W[0, 1] == W[1, 0] == pytest.approx(np.log2(0.25))
    assert W[1, 2] == W[2, 1] == pytest.approx(0.5 * np.log2(0.5625))
    assert W[0, 2] == 0.0 and np.all(np.diag(W) == 0.0)
    # a duplicate pair (distance 0) gets weight 0, as in the authors' code
    Wd = clu.knn_log_weights(np.array([[0.0], [0.0], [3.0]]), n_neighbors=1).toarray()
    assert Wd[0, 1] == 0.0 and np.all(np.isfinite(Wd))
    # all pairs
    Wall = clu.knn_log_weights(X, n_neighbors=None).toarray()
    assert Wall[0, 2] == pytest.approx(np.log2(1.25 ** 2))
    with pytest.raises(ValueError, match="n_neighbors"):
        clu.knn_log_weights(X, n_neighbors=3)


@pytest.mark.parametrize("sizes", [(20, 20, 20), (21, 20, 20)])
def test_problem_construction(sizes):
    X, _ = _blobs(0, sizes)
    p = clu.build_problem(X, 3)
    n, k = p.n_points, p.k
    W, L = p.weights.toarray(), p.laplacian.toarray()
    assert np.abs(W - W.T).max() == 0.0 and np.all(np.diag(W) == 0.0)
    # each point keeps its 5 neighbours (the union of directions joins at least 5 each)
    assert np.all((W != 0).sum(axis=1) >= 5)
    # tight blobs: every edge shorter than 1, weights <= 0, L a PSD Laplacian
    assert W.max() <= 0.0
    np.testing.assert_allclose(L, L.T, atol=0)
    np.testing.assert_allclose(L.sum(axis=1), 0.0, atol=1e-9)
    assert np.linalg.eigvalsh(L)[0] >= -1e-9 * np.abs(L).max()
    assert p.psd and abs(p.lambda_min) < 1e-9 * np.abs(L).max()
    A = p.quadratic()
    assert A.shape == (n * k, n * k) and np.linalg.eigvalsh(A.toarray())[0] > 0
    eq, ineq = p.constraints()
    if n % k == 0:
        assert p.sizes == (n // k, n // k) and ineq is None
        assert eq[0].shape == (n + k, n * k)
        np.testing.assert_array_equal(eq[1], np.r_[np.ones(n), np.full(k, n // k)])
    else:
        assert p.sizes == (n // k, n // k + 1)
        assert eq[0].shape == (n, n * k) and np.all(eq[1] == 1.0)
        assert ineq[0].shape == (2 * k, n * k)
        np.testing.assert_array_equal(ineq[1], np.r_[np.full(k, n // k + 1), np.full(k, -(n // k))])
    # a feasible point meets the rows; the BQP's objective is tr(Y'WY) up to the offset
    rng = np.random.default_rng(1)
    lab = clu.balanced_assignment(rng.random((n, k)), *p.sizes)
    y = clu.one_hot(lab, k).ravel()
    np.testing.assert_allclose(eq[0] @ y, eq[1])
    if ineq is not None:
        assert np.all(ineq[0] @ y <= ineq[1])
    Y = clu.one_hot(lab, k)
    assert y @ (A @ y) + p.offset == pytest.approx(np.trace(Y.T @ W @ Y), rel=1e-12, abs=1e-9)
    assert clu.objective(p.weights, lab) == pytest.approx(np.trace(Y.T @ W @ Y), rel=1e-12)


def test_wide_spread_gives_an_indefinite_laplacian_and_a_shift_that_makes_it_definite():
    X = np.random.default_rng(0).uniform(size=(40, 12))  # 12 features: 5-NN pairs beyond 1
    p = clu.build_problem(X, 3)
    assert p.weights.max() > 0 and not p.psd and p.lambda_min < 0
    assert np.linalg.eigvalsh(p.quadratic().toarray())[0] > 0


def test_bad_arguments():
    X, _ = _blobs(0)
    with pytest.raises(ValueError, match="k must"):
        clu.build_problem(X, 1)
    with pytest.raises(ValueError, match="k must"):
        clu.build_problem(X, 61)
    p = clu.build_problem(X, 3)
    with pytest.raises(ValueError, match="labels"):
        clu.objective(p.weights, np.zeros(5, dtype=int))
    with pytest.raises(ValueError, match="no assignment"):
        clu.balanced_assignment(np.zeros((7, 2)), 2, 3)
    with pytest.raises(ValueError, match="settings"):
        clu.solve_admm(p, settings=())


# --------------------------------------------------------------------------- measures
def test_rand_index_by_hand_and_against_pair_counting():
    # pairs of 4 points: (0,1) same/diff, (2,3) same/same, (1,2), (1,3) diff/same: 3 of 6 agree
    assert clu.rand_index([0, 0, 1, 1], [0, 1, 1, 1]) == pytest.approx(0.5)
    assert clu.rand_index([0, 0, 1, 1], [5, 5, 2, 2]) == 1.0  # names do not matter
    assert clu.rand_index([0, 0, 0, 0], [0, 1, 2, 3]) == 0.0
    rng = np.random.default_rng(0)
    for _ in range(5):
        a, b = rng.integers(0, 3, 30), rng.integers(0, 4, 30)
        agree = [(a[i] == a[j]) == (b[i] == b[j]) for i, j in itertools.combinations(range(30), 2)]
        assert clu.rand_index(a, b) == pytest.approx(np.mean(agree), abs=1e-15)


def test_objective_by_hand():
    W = sp.csr_matrix(np.array([[0.0, -2.0, 1.0], [-2.0, 0.0, -3.0], [1.0, -3.0, 0.0]]))
    assert clu.objective(W, [0, 0, 1]) == pytest.approx(-4.0)  # 2 W_01
    assert clu.objective(W, [0, 1, 1]) == pytest.approx(-6.0)  # 2 W_12
    assert clu.objective(W, [7, 7, 7]) == pytest.approx(-8.0)  # every pair
    assert clu.objective(W, [0, 1, 2]) == 0.0


def test_balanced_assignment_against_brute_force():
    rng = np.random.default_rng(0)
    for n, k, lo, hi in [(5, 2, 2, 3), (6, 3, 2, 2), (7, 3, 2, 3)]:
        S = rng.normal(size=(n, k))
        lab = clu.balanced_assignment(S, lo, hi)
        sizes = clu.cluster_sizes(lab, k)
        assert np.all((sizes >= lo) & (sizes <= hi))
        best = max(S[np.arange(n), list(c)].sum()
                   for c in itertools.product(range(k), repeat=n)
                   if all(lo <= c.count(j) <= hi for j in range(k)))
        assert S[np.arange(n), lab].sum() == pytest.approx(best)


def test_swap_descent_keeps_sizes_and_ends_at_a_local_minimum():
    X, _ = _blobs(2, (7, 7, 6), spread=0.6)
    p = clu.build_problem(X, 3, n_neighbors=3)
    lo, hi = p.sizes
    start = clu.balanced_assignment(np.random.default_rng(0).random((20, 3)), lo, hi)
    lab, steps = clu.swap_descent(p.weights, start, 3, lo, hi)
    assert steps > 0 and clu.is_feasible(p, lab)
    f = clu.objective(p.weights, lab)
    assert f < clu.objective(p.weights, start)
    for i in range(20):  # no move or swap within the bounds lowers it
        for c in range(3):
            m = lab.copy()
            m[i] = c
            if clu.is_feasible(p, m):
                assert clu.objective(p.weights, m) >= f - 1e-9
        for j in range(i + 1, 20):
            s = lab.copy()
            s[i], s[j] = lab[j], lab[i]
            assert clu.objective(p.weights, s) >= f - 1e-9


def test_kmeans_recovers_separated_blobs_and_is_seeded():
    X, truth = _blobs(0)
    lab = clu.kmeans(X, 3, seed=3)
    assert clu.rand_index(truth, lab) == 1.0
    np.testing.assert_array_equal(lab, clu.kmeans(X, 3, seed=3))
    assert set(clu.kmeans(X, 3, seed=0, n_init=1).tolist()) == {0, 1, 2}


# --------------------------------------------------------------------------- ADMM
TINY = [(9, 3, (4, 3, 2)), (10, 3, (5, 3, 2)), (8, 2, (5, 3))]


@functools.lru_cache(maxsize=None)
def _tiny_case(n, k, sizes, seed):
    """(problem, brute-force optimum, K-means labels, ADMM's answer, ADMM's without descent)."""
    p = _tiny(n, k, sizes, seed)
    best, _ = _brute(p)
    km = clu.kmeans(p.features, k, seed=seed)
    return p, best, km, clu.solve_admm(p, km), clu.solve_admm(p, km, descent=False)


@pytest.mark.slow
@pytest.mark.parametrize("n,k,sizes", TINY)
def test_admm_reaches_the_brute_force_optimum_on_tiny_instances(n, k, sizes):
    """ADMM from K-means (with the swap descent) reaches the exact optimum on all 15 instances,
    and ADMM's own point (no descent) on at least 4 of the 5 of each kind: it does on all 15
    here; on a sixth seed (5) it stops, on each kind, at a feasible point above the optimum
    (-20.485 for -27.033, -36.459 for -36.526, -15.206 for -17.672), which the descent closes."""
    own_optimal = 0
    for seed in range(5):
        p, best, km, res, raw = _tiny_case(n, k, sizes, seed)
        assert res.feasible and clu.is_feasible(p, res.labels)
        assert res.objective == pytest.approx(best, abs=1e-9)
        assert raw.feasible and raw.admm_feasible and not raw.repaired
        assert raw.objective >= best - 1e-9
        own_optimal += raw.objective <= best + 1e-9
    assert own_optimal >= 4


@pytest.mark.slow
def test_admm_at_or_below_kmeans_where_kmeans_is_feasible_and_why_not_elsewhere():
    """Where K-means' partition meets the size bounds ADMM's answer is at or below it; where it
    does not, K-means' objective can lie below the balanced optimum itself (no feasible answer
    can reach it), and ADMM's answer is that optimum."""
    feasible_km = below_opt = 0
    for n, k, sizes in TINY:
        for seed in range(5):
            p, best, km, res, _ = _tiny_case(n, k, sizes, seed)
            f_km = clu.objective(p.weights, km)
            if clu.is_feasible(p, km):
                feasible_km += 1
                assert res.objective <= f_km + 1e-9
            elif f_km < best - 1e-9:
                below_opt += 1
                assert res.objective == pytest.approx(best, abs=1e-9)
    assert feasible_km >= 4 and below_opt >= 4


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_admm_on_blobs_is_feasible_and_at_or_below_kmeans(seed):
    X, truth = _blobs(seed)
    p = clu.build_problem(X, 3)
    km = clu.kmeans(p.features, 3, seed=seed)
    res = clu.solve_admm(p, km)
    assert res.feasible and np.all(clu.cluster_sizes(res.labels, 3) == 20)
    assert res.objective <= clu.objective(p.weights, km) + 1e-9
    assert clu.rand_index(truth, res.labels) == 1.0


@pytest.mark.parametrize("sizes", [(30, 15, 15), (24, 19, 18)])
def test_every_answer_is_feasible_on_unbalanced_data(sizes):
    """Blobs of unequal sizes: ADMM's answer still has sizes within [floor, ceil] of N/K,
    whether or not ADMM's own point met them (then it is repaired), from K-means or at random."""
    X, _ = _blobs(1, sizes, spread=0.5)
    p = clu.build_problem(X, 3)
    lo, hi = p.sizes
    km = clu.kmeans(p.features, 3, seed=0)
    repaired = []
    # the defaults from K-means; a short run from a random start, which misses the rows
    for init, seed, settings in ((km, None, clu.DEFAULT_SETTINGS),
                                 (None, 0, ({"rho0": 0.05, "max_iter": 30},))):
        res = clu.solve_admm(p, init, seed=seed, settings=settings)
        s = clu.cluster_sizes(res.labels, 3)
        assert res.feasible and np.all((s >= lo) & (s <= hi)) and s.sum() == p.n_points
        assert res.objective == pytest.approx(clu.objective(p.weights, res.labels))
        assert res.objective <= res.admm_objective + 1e-9 or res.repaired
        repaired.append(res.repaired)
    if sizes == (30, 15, 15):  # the short run's own point missed a row; the repair fixed it
        assert repaired[1]


# --------------------------------------------------------------------------- the example
def _example():
    spec = importlib.util.spec_from_file_location("clustering_example",
                                                  ROOT / "examples" / "clustering.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_example_writes_records(tmp_path, monkeypatch):
    mod = _example()
    X, truth = _blobs(0, (10, 10, 10), spread=0.4)
    monkeypatch.setattr(mod, "load", lambda name: (X, truth))
    out = tmp_path / "clu.json"
    assert mod.main(["--dataset", "iris", "--runs", "2", "--json", str(out)]) == 0
    records = json.loads(out.read_text())
    assert len(records) == 4 and {r["method"] for r in records} == {"admm", "kmeans"}
    for r in records:
        assert {"method", "dataset", "run", "objective", "rand_index", "time_s",
                "feasible"} <= set(r)
        assert r["dataset"] == "iris" and r["run"] in (0, 1) and 0 <= r["rand_index"] <= 1
    assert all(r["feasible"] for r in records if r["method"] == "admm")
    md = out.with_suffix(".md").read_text()
    assert "| ℓ2-box ADMM |" in md and "94.95" in md and "Targets:" in md


def test_example_names_the_extra_when_scikit_learn_is_missing(tmp_path, monkeypatch, capsys):
    mod = _example()
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(SystemExit) as exc:
        mod.main(["--dataset", "wine", "--runs", "1", "--json", str(tmp_path / "x.json")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "scikit-learn" in err and "examples" in err
    assert not (tmp_path / "x.json").exists()
