"""The ℓ1 option of ``solve_bqp`` (the paper's §5 split ``z0 = C x``) and binary TV denoising
(:mod:`solver.problems.tv`) against brute force and the graph cut."""

import importlib.util
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from solver import solve_bqp
from solver.admm.loop import L1Split, LpBoxADMM
from solver.admm.params import ADMMParams
from solver.admm.systems import GenericSystem, sparse_operator
from solver.backend import get_backend
from solver.problems import tv

ROOT = Path(__file__).resolve().parents[3]


def _objective(A, b, C, w, x):
    x = np.asarray(x, dtype=np.float64)
    return float(x @ A @ x + b @ x + np.sum(w * np.abs(C @ x)))


def _brute(A, b, C, w, eq=None, fixed=None):
    """Minimum of x'Ax + b'x + sum_r w_r |(C x)_r| over all binary x (n <= 12)."""
    n = len(b)
    X = np.array(list(itertools.product([0.0, 1.0], repeat=n)))
    vals = np.einsum("ki,ij,kj->k", X, A, X) + X @ b + np.abs(X @ C.T) @ np.broadcast_to(
        np.asarray(w, dtype=np.float64), (C.shape[0],))
    ok = np.ones(len(X), dtype=bool)
    if eq is not None:
        ok &= np.all(np.abs(X @ eq[0].T - eq[1]) <= 1e-9, axis=1)
    if fixed is not None:
        ok &= np.all(X[:, fixed[0]] == fixed[1], axis=1)
    return float(vals[ok].min())


def _random_l1(seed, n=10, m=8, per_row=False):
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(n, n)) * (rng.random((n, n)) < 0.4)
    A = (M + M.T) / 2  # indefinite in general: solve_bqp shifts it
    b = 2.0 * rng.normal(size=n)
    C = sp.random(m, n, density=0.3, random_state=seed).toarray() * np.sign(rng.normal(size=(m, n)))
    w = rng.uniform(0.2, 2.0, size=m) if per_row else float(rng.uniform(0.2, 2.0))
    return A, b, C, w


# ------------------------------------------------------------------ the ℓ1 option
SEEDS = range(8)


def test_l1_at_brute_force_optimum():
    """With the (ℓ1-aware) polish every instance reaches the optimum; ADMM alone (no polish)
    on all but at most one of them, and its answer is never more than 1 (absolute) above."""
    alone = 0
    for seed in SEEDS:
        A, b, C, w = _random_l1(seed, n=4 + seed % 7)
        opt = _brute(A, b, C, w)
        res = solve_bqp(A, b, l1=(C, w))
        assert res.objective == pytest.approx(_objective(A, b, C, w, res.x), abs=1e-9)
        assert res.objective == pytest.approx(opt, abs=1e-9), seed
        raw = solve_bqp(A, b, l1=(sp.csr_matrix(C), w), polish=False)
        assert raw.objective == pytest.approx(_objective(A, b, C, w, raw.x), abs=1e-9)
        assert raw.objective <= opt + 1.0
        alone += raw.objective <= opt + 1e-9
    assert alone >= len(SEEDS) - 1


def test_l1_on_every_backend(backend):
    """The ℓ1 split on each backend (the GPU code paths also on the host): at the optimum, with
    a weight per row and an inequality row beside it (the combined x-update operator)."""
    A, b, C, w = _random_l1(6, n=9, per_row=True)
    res = solve_bqp(A, b, l1=(C, w), backend=backend)
    assert res.objective == pytest.approx(_brute(A, b, C, w), abs=1e-9)
    G = np.ones((1, 9))
    r_in = solve_bqp(A, b, l1=(C, w), ineq=(G, np.array([3.0])), backend=backend)
    assert r_in.feasible and r_in.x.sum() <= 3
    assert r_in.objective == pytest.approx(_objective(A, b, C, w, r_in.x), abs=1e-9)


def test_l1_with_constraints_fixed_and_row_weights():
    """Equality rows, fixed variables and one weight per row of C, against brute force: with
    fixed variables always at the optimum; under the equality row always feasible, within 1
    (absolute) of the optimum and at it on at least 8 of 10 instances."""
    n = 10
    E = np.zeros((1, n))
    E[0, :5] = 1.0
    eq = (E, np.array([2.0]))
    fixed = (np.array([7, 8]), np.array([1.0, 0.0]))
    at_opt = 0
    for seed in range(100, 110):
        A, b, C, w = _random_l1(seed, n=n, per_row=True)
        r_eq = solve_bqp(A, b, l1=(C, w), eq=eq)
        assert r_eq.feasible and r_eq.x[:5].sum() == 2
        assert r_eq.objective == pytest.approx(_objective(A, b, C, w, r_eq.x), abs=1e-9)
        opt = _brute(A, b, C, w, eq=eq)
        assert r_eq.objective <= opt + 1.0
        at_opt += r_eq.objective <= opt + 1e-9
        r_fix = solve_bqp(A, b, l1=(C, w), fixed=fixed)
        assert list(r_fix.x[[7, 8]]) == [1, 0]
        assert r_fix.objective == pytest.approx(_objective(A, b, C, w, r_fix.x), abs=1e-9)
        assert r_fix.objective == pytest.approx(_brute(A, b, C, w, fixed=fixed), abs=1e-9)
    assert at_opt >= 8


def test_records_include_the_l1_term():
    """Every record's objectives (continuous and rounded) and the callback's count the ℓ1 term."""
    A, b, C, w = _random_l1(3, n=9)
    # positive definite, so solve_bqp does not shift A and the continuous iterates' objectives
    # are x'Ax + b'x + the ℓ1 term exactly
    A = A + (1e-3 - np.linalg.eigvalsh(A)[0]) * np.eye(9)
    seen = []

    def callback(state):
        seen.append((state.x_host().copy(), state.record.objective))

    res = solve_bqp(A, b, l1=(C, w), polish=False, callback=callback)
    assert len(seen) == res.iterations
    for x, obj in seen:
        assert obj == pytest.approx(_objective(A, b, C, w, x), rel=1e-12, abs=1e-12)
    best = res.history[res.best_iteration - 1]
    assert best.objective_rounded == pytest.approx(res.objective, abs=1e-12)
    assert res.objective == pytest.approx(_objective(A, b, C, w, res.x), abs=1e-9)
    # the ℓ1 term is not zero at the answer here, so the test would see it missing
    assert np.abs(C @ res.x).sum() > 0


def test_l1_scale_invariant_and_off_by_default():
    A, b, C, w = _random_l1(5, n=10)
    r1 = solve_bqp(A, b, l1=(C, w))
    r2 = solve_bqp(1e6 * A, 1e6 * b, l1=(C, 1e6 * w))
    assert np.array_equal(r1.x, r2.x)
    assert r2.objective == pytest.approx(1e6 * r1.objective, rel=1e-12)
    plain, none = solve_bqp(A, b), solve_bqp(A, b, l1=None)
    assert np.array_equal(plain.x, none.x) and plain.objective == none.objective
    assert [h.objective for h in plain.history] == [h.objective for h in none.history]


def test_l1_validation():
    A, b, C, w = _random_l1(1, n=6, m=4)
    with pytest.raises(ValueError, match="l1 must be a pair"):
        solve_bqp(A, b, l1=C)
    with pytest.raises(ValueError, match="columns"):
        solve_bqp(A, b, l1=(C[:, :5], w))
    with pytest.raises(ValueError, match="non-negative"):
        solve_bqp(A, b, l1=(C, -1.0))
    with pytest.raises(ValueError, match="one per row"):
        solve_bqp(A, b, l1=(C, np.ones(3)))
    with pytest.raises(ValueError, match="rho_l1"):
        solve_bqp(A, b, l1=(C, w), rho_l1=0.0)


def test_l1_pause_and_resume_match_one_run():
    A, b, C, w = _random_l1(2, n=8)
    A = A + 3.0 * np.eye(8)  # positive definite, as LpBoxADMM expects
    be = get_backend("cpu")

    def admm():
        return LpBoxADMM(GenericSystem(sp.csr_matrix(A), be), b, params=ADMMParams(),
                         l1=L1Split(sparse_operator(sp.csr_matrix(C), np.zeros(C.shape[0]), be),
                                    w, 1.0))

    whole = admm().run()
    part = admm().run(pause_at=7)
    assert part.state.z0 is not None and part.state.y0 is not None
    rest = admm().run(resume=part.state)
    assert [h.objective for h in part.history + rest.history] == [h.objective
                                                                 for h in whole.history]
    assert np.array_equal(rest.x, whole.x)


# ------------------------------------------------------------------ TV denoising
def test_difference_operator():
    C = tv.difference_operator(3, 4)
    assert C.shape == (3 * 3 + 2 * 4, 12)
    assert np.all(np.asarray(C.sum(axis=1)).ravel() == 0)
    assert np.all(np.diff(C.indptr) == 2)
    img = np.arange(12.0).reshape(3, 4) ** 2
    d = C @ img.ravel()
    assert np.array_equal(d, np.concatenate([np.diff(img, axis=1).ravel(),
                                             np.diff(img, axis=0).ravel()]))


def test_tv_energy_formula():
    """E(x) directly (loops over pixels and 4-neighbours) = the BQP's pieces = problem.energy."""
    p = tv.make_problem(7, noise=0.7, lam=0.9, seed=4)
    A, b, const, C, lam = p.bqp()
    h, w = p.shape
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = (rng.random((h, w)) < 0.5).astype(float)
        direct = sum((x[r, c] - p.f[r, c]) ** 2 for r in range(h) for c in range(w))
        direct += lam * sum(abs(x[r, c] - x[r2, c2]) for r in range(h) for c in range(w)
                            for r2, c2 in ((r, c + 1), (r + 1, c)) if r2 < h and c2 < w)
        v = x.ravel()
        assert p.energy(x) == pytest.approx(direct, rel=1e-12)
        assert v @ (A @ v) + b @ v + const + lam * np.abs(C @ v).sum() == pytest.approx(
            direct, rel=1e-12)


def test_mincut_is_optimal_on_a_tiny_image():
    rng = np.random.default_rng(2)
    q = tv.TVProblem(f=(rng.random((4, 3)) < 0.5) + 0.8 * rng.standard_normal((4, 3)), lam=0.5)
    X = np.array(list(itertools.product([0, 1], repeat=12)))
    best = min(q.energy(x) for x in X)
    assert q.energy(tv.mincut(q)) == pytest.approx(best, abs=1e-12)


def test_admm_within_one_percent_of_mincut_32():
    p = tv.make_problem(32, noise=0.6, lam=0.8, seed=0)
    x, res = tv.solve_admm(p)
    e_admm, e_cut = p.energy(x), p.energy(tv.mincut(p))
    const = float(p.f.ravel() @ p.f.ravel())
    assert res.objective + const == pytest.approx(e_admm, rel=1e-12)
    assert e_cut <= e_admm + 1e-9
    assert e_admm <= e_cut + 0.01 * abs(e_cut)


def test_example_writes_records(tmp_path):
    spec = importlib.util.spec_from_file_location("tv_denoise", ROOT / "examples" / "tv_denoise.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "tv.json"
    assert mod.main(["--size", "6", "--json", str(out)]) == 0
    records = json.loads(out.read_text())
    assert {r["method"] for r in records} == {"admm", "mincut"}
    for r in records:
        assert {"method", "size", "energy", "time_s"} <= set(r) and r["size"] == 6
    assert "| admm |" in out.with_suffix(".md").read_text()
