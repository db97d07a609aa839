"""The generic ℓ2-box ADMM loop (solver.admm.loop.LpBoxADMM) against a plain transcription of
its updates: one iteration's x-, z- and dual updates and residuals, its rounding in every form a
problem can ask for, and its constraint violation. These are what the compiled MRF steps do not
cover: general BQPs with equality and inequality rows, on the CPU and on the GPU code paths."""

import numpy as np
import pytest
import scipy.sparse as sp

from solver.admm.loop import LpBoxADMM
from solver.admm.params import FALLBACKS, ADMMParams
from solver.admm.splits import L1Split, PairSplit
from solver.admm.sums import BoxWithSums
from solver.admm.systems import GenericSystem, LinearOperatorPair, sparse_operator
from solver.backend import get_backend


def _problem(seed, n=12):
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(n, n))
    A = M.T @ M / n
    b = rng.normal(size=n)
    # three one-hot groups of sizes 4, 3, 3 (variables 10 and 11 in none)
    C1 = np.zeros((3, n))
    C1[0, 0:4] = C1[1, 4:7] = C1[2, 7:10] = 1.0
    d1 = np.ones(3)
    C2 = rng.normal(size=(2, n))
    d2 = np.array([0.5, -0.25])
    return A, b, C1, d1, C2, d2


def _sphere(v):
    n = v.size
    w = v - 0.5
    return 0.5 + w * (np.sqrt(n) / 2 / np.linalg.norm(w))


def _reference_step(A, b, C1, d1, C2, d2, s, rho, rc, gamma, fixed_norm_sq=0.0, seen=None,
                    l1=None):
    """One iteration as docs/algorithm.md writes it, with the x-system solved exactly. With
    ``l1 = (C0, d0, w, ratio)``, also the split ``w |C0 x - d0|`` (penalty ``ratio * rho``),
    whose ``z0`` and ``y0`` ``s`` then holds too."""
    n = b.size
    z1, z2, z3, y1, y2, y3, y4 = (s[k] for k in ("z1", "z2", "z3", "y1", "y2", "y3", "y4"))
    rhs = rho * (z1 + z2) - b - y1 - y2 + C1.T @ (rc * d1 - y3) + C2.T @ (rc * (d2 - z3) - y4)
    K = 2 * A + 2 * rho * np.eye(n) + rc * C1.T @ C1 + rc * C2.T @ C2
    if l1 is not None:
        C0, d0, w, ratio = l1
        r0 = ratio * rho
        rhs = rhs + C0.T @ (r0 * (s["z0"] + d0) - s["y0"])
        K = K + r0 * C0.T @ C0
    x = np.linalg.solve(K, rhs)
    z1 = np.clip(x + y1 / rho, 0.0, 1.0)
    z2 = _sphere(x + y2 / rho)
    y1 = y1 + gamma * rho * (x - z1)
    y2 = y2 + gamma * rho * (x - z2)
    xnorm = max(np.sqrt(x @ x + fixed_norm_sq), 1.0)
    if seen is not None:
        seen.append(xnorm)
    r1, r2 = np.linalg.norm(x - z1) / xnorm, np.linalg.norm(x - z2) / xnorm
    r3 = C1 @ x - d1
    y3 = y3 + gamma * rc * r3
    c2x = C2 @ x
    z3 = np.maximum(d2 - c2x - y4 / rc, 0.0)
    r4 = c2x + z3 - d2
    y4 = y4 + gamma * rc * r4
    cres = max(np.linalg.norm(r3) / max(np.linalg.norm(d1), 1.0),
               np.linalg.norm(r4) / max(np.linalg.norm(d2), 1.0))
    out = dict(x=x, z1=z1, z2=z2, z3=z3, y1=y1, y2=y2, y3=y3, y4=y4)
    if l1 is not None:
        u = C0 @ x - d0
        v = u + s["y0"] / r0
        z0 = np.sign(v) * np.maximum(np.abs(v) - w / r0, 0.0)
        out.update(z0=z0, y0=s["y0"] + gamma * r0 * (u - z0))
        cres = max(cres, np.linalg.norm(u - z0) / max(np.linalg.norm(u), 1.0))
    return out, r1, r2, cres


@pytest.mark.parametrize("sparse,fixed", [(False, 3.0), (True, 3.0), (False, 0.0)])
def test_generic_step_is_the_written_update(backend, sparse, fixed):
    """Five iterations from a random state with growing penalties: every iterate, slack, dual
    and residual as the transcription gives them (the CG solved to 1e-13), with numpy's
    updates. The iterates' norms pass through (1, 2), where the residuals' normaliser
    max(||x||, 1) matters."""
    _check_generic_step(get_backend(backend), sparse, False, fixed)


@pytest.mark.parametrize("fixed", [3.0, 0.0])
def test_the_compiled_box_and_sphere_updates_are_the_written_update(fixed):
    """The same with the compiled updates the CPU uses for a plain box (``fused``)."""
    _check_generic_step(get_backend("cpu"), True, True, fixed)


def _check_generic_step(be, sparse, fused, fixed):
    A, b, C1, d1, C2, d2 = _problem(1)
    n = b.size
    gamma = 0.7
    norms = []
    adm = LpBoxADMM(GenericSystem(sp.csr_matrix(A) if sparse else A, be), b,
                    eq=sparse_operator(sp.csr_matrix(C1), d1, be),
                    ineq=sparse_operator(sp.csr_matrix(C2), d2, be),
                    params=ADMMParams(gamma=gamma, pcg_tol=1e-13, pcg_maxiter=500),
                    backend=be, fixed_norm_sq=fixed)
    rng = np.random.default_rng(5)
    s = {"x": 0.3 * rng.random(n), "z1": rng.random(n), "z2": rng.random(n),
         "z3": rng.random(2),
         "y1": rng.normal(size=n), "y2": rng.normal(size=n), "y3": rng.normal(size=3),
         "y4": rng.normal(size=2)}
    dev = {k: be.asarray(v.copy()) for k, v in s.items()}
    rho, rc = 0.8, 1.3
    for _ in range(5):
        want, r1, r2, cres = _reference_step(A, b, C1, d1, C2, d2, s, rho, rc, gamma, fixed,
                                             norms)
        x, z1, z2, z3, g1, g2, gres, cg_its, _ = adm._generic_step(
            dev["x"], dev["z1"], dev["z2"], dev["z3"], dev["y1"], dev["y2"], dev["y3"],
            dev["y4"], rho, rc, fused)
        dev.update(x=x, z1=z1, z2=z2, z3=z3)
        for key, value in want.items():
            np.testing.assert_allclose(be.to_numpy(dev[key]), value, rtol=1e-8, atol=1e-9,
                                       err_msg=key)
        assert (g1, g2, gres) == pytest.approx((r1, r2, cres), rel=1e-8)
        assert cg_its >= 1
        s = want
        rho, rc = rho * 1.5, rc * 1.2
    if fixed == 0.0:
        assert any(1.0 < v < 2.0 for v in norms), norms


def test_the_x_update_starts_from_the_last_iterate(backend):
    """The CG is warm-started at the current x: from the exact solution of the step's system it
    has nothing left to do."""
    be = get_backend(backend)
    A, b, C1, d1, C2, d2 = _problem(6)
    n = b.size
    adm = LpBoxADMM(GenericSystem(A, be), b, eq=sparse_operator(sp.csr_matrix(C1), d1, be),
                    ineq=sparse_operator(sp.csr_matrix(C2), d2, be),
                    params=ADMMParams(pcg_tol=1e-6, pcg_maxiter=50), backend=be)
    rng = np.random.default_rng(2)
    s = {"z1": rng.random(n), "z2": rng.random(n), "z3": rng.random(2),
         "y1": rng.normal(size=n), "y2": rng.normal(size=n), "y3": rng.normal(size=3),
         "y4": rng.normal(size=2)}
    rho, rc = 1.1, 0.9
    s["x"] = _reference_step(A, b, C1, d1, C2, d2, {**s, "x": np.zeros(n)}, rho, rc, 1.0)[0]["x"]
    dev = {k: be.asarray(v.copy()) for k, v in s.items()}
    its = adm._generic_step(dev["x"], dev["z1"], dev["z2"], dev["z3"], dev["y1"], dev["y2"],
                            dev["y3"], dev["y4"], rho, rc, False)[7]
    assert its == 0


def test_a_run_starts_at_the_penalty_and_reports_its_own_time(backend):
    """Without ``scale`` the penalty starts at ``rho0``; without ``setup_time_s`` none is added."""
    be = get_backend(backend)
    A, b, _, _, _, _ = _problem(7)
    params = ADMMParams(rho0=0.37, max_iter=3)
    res = LpBoxADMM(GenericSystem(A, be), b, params=params, backend=be).run()
    assert res.history[0].rho == pytest.approx(0.37)
    assert res.setup_time_s == 0.0
    assert 0.0 <= res.time_s < 60.0
    assert res.history[1].rho == pytest.approx(0.37 * FALLBACKS["rho_growth"])


def _numpy_round(x, groups=None, k=None):
    if k is not None:
        X = x.reshape(-1, k)
        out = np.zeros_like(X)
        out[np.arange(X.shape[0]), np.argmax(X, axis=1)] = 1.0
        return out.ravel()
    xr = (x > 0.5).astype(float)
    for g in groups or ():
        xr[g] = 0.0
        xr[g[int(np.argmax(x[g]))]] = 1.0
    return xr


def test_rounding_in_each_form(backend):
    """Plain threshold, one-hot groups of mixed sizes (and variables in none), consecutive
    groups, simplex rows and a caller's rounding: each the binary point written out."""
    be = get_backend(backend)
    A, b, C1, d1, _, _ = _problem(2)
    n = b.size
    rng = np.random.default_rng(9)
    x = rng.random(n)
    x[[1, 5]] = x[[0, 4]]  # ties inside groups: the first largest wins
    x[[2, 11]] = 0.5  # exactly one half rounds down
    sysm = GenericSystem(A, be)
    plain = LpBoxADMM(sysm, b, backend=be)
    np.testing.assert_array_equal(be.to_numpy(plain.round(be.asarray(x))), _numpy_round(x))
    grouped = LpBoxADMM(sysm, b, eq=sparse_operator(sp.csr_matrix(C1), d1, be), backend=be)
    want = _numpy_round(x, groups=[list(range(0, 4)), [4, 5, 6], [7, 8, 9]])
    got = be.to_numpy(grouped.round(be.asarray(x)))
    np.testing.assert_array_equal(got, want)
    assert got[10] == (x[10] > 0.5) and got[11] == (x[11] > 0.5)
    # consecutive groups of 3 covering every variable
    C3 = sp.kron(sp.eye(n // 3), np.ones((1, 3))).tocsr()
    op = sparse_operator(C3, np.ones(n // 3), be)
    op3 = LinearOperatorPair(op.matvec, op.rmatvec, op.d, op.col_sq, op.groups, group_size=3)
    got = be.to_numpy(LpBoxADMM(sysm, b, eq=op3, backend=be).round(be.asarray(x)))
    np.testing.assert_array_equal(got, _numpy_round(x, k=3))
    got = be.to_numpy(LpBoxADMM(sysm, b, simplex_groups=4, backend=be).round(be.asarray(x)))
    np.testing.assert_array_equal(got, _numpy_round(x, k=4))
    seen = []

    def rounding(v):
        seen.append(be.to_numpy(v).copy())
        return v * 0.0 + 1.0

    custom = LpBoxADMM(sysm, b, rounding=rounding, backend=be)
    np.testing.assert_array_equal(be.to_numpy(custom.round(be.asarray(x))), np.ones(n))
    np.testing.assert_array_equal(seen[0], x)


def test_violation_is_the_largest_breach(backend):
    be = get_backend(backend)
    A, b, C1, d1, C2, d2 = _problem(3)
    adm = LpBoxADMM(GenericSystem(A, be), b, eq=sparse_operator(sp.csr_matrix(C1), d1, be),
                    ineq=sparse_operator(sp.csr_matrix(C2), d2, be), backend=be)
    rng = np.random.default_rng(4)
    for _ in range(20):
        x = (rng.random(b.size) < 0.4).astype(float)
        want = max(0.0, np.abs(C1 @ x - d1).max(), (C2 @ x - d2).max())
        assert adm.violation(be.asarray(x)) == pytest.approx(want, abs=1e-12)
    x = np.zeros(b.size)
    x[[0, 4, 7]] = 1.0  # every group met; the inequalities decide
    assert adm.violation(be.asarray(x)) == pytest.approx(max(0.0, (C2 @ x - d2).max()))


def test_violation_counts_the_bounded_sums(backend):
    """With z1's set a box with bounded column sums, a binary point's violation includes how far
    each label's count is outside its bounds."""
    be = get_backend(backend)
    k, m = 2, 6
    rng = np.random.default_rng(8)
    M = rng.normal(size=(m * k, m * k))
    sums = BoxWithSums(k, np.ones(m), lo=[2.0, -np.inf], hi=[3.0, 4.0])
    adm = LpBoxADMM(GenericSystem(M.T @ M, be), rng.normal(size=m * k), z1_set=sums, backend=be)
    for count0, want in [(2, 0.0), (3, 0.0), (1, 1.0), (0, 2.0), (5, 2.0)]:
        X = np.zeros((m, k))
        X[:count0, 0] = 1.0
        X[count0:, 1] = 1.0
        # label 1's count m - count0 is above 4 when count0 < 2
        expected = max(want, (m - count0) - 4.0)
        assert adm.violation(be.asarray(X.ravel())) == pytest.approx(expected)


def _start(x0, C1, C2, d2):
    """A run's first state as docs/algorithm.md writes it: z1 and z2 the projections of x0,
    z3 its slack, the duals zero."""
    n = x0.size
    return {"x": x0, "z1": np.clip(x0, 0, 1), "z2": _sphere(x0),
            "z3": np.maximum(d2 - C2 @ x0, 0.0), "y1": np.zeros(n), "y2": np.zeros(n),
            "y3": np.zeros(C1.shape[0]), "y4": np.zeros(C2.shape[0])}


def test_a_run_is_the_written_loop(backend):
    """Seven iterations of ``run`` against the transcription: the start (z1 and z2 the
    projections of x0, z3 the slack of x0, duals zero), the penalty's schedule (growth every
    ``rho_every`` iterations from ``rho0 * scale``, the rows' penalty a fixed multiple), each
    record's objectives, feasibility and residuals, the callback's iterates, and the result
    kept from the first iteration whose rounded point is best (least violation, then least
    objective)."""
    be = get_backend(backend)
    A, b, C1, d1, C2, d2 = _problem(13)
    C2 = 0.3 * C2  # fractional rows: rounded points breach them by less than 1
    n = b.size
    params = ADMMParams(rho0=0.4, rho_growth=1.3, rho_every=2, rho_constraints=0.7, gamma=0.9,
                        max_iter=7, tol=1e-14, pcg_tol=1e-13, pcg_maxiter=500)
    scale, constant = 1.7, 2.5
    adm = LpBoxADMM(GenericSystem(A, be), b, eq=sparse_operator(sp.csr_matrix(C1), d1, be),
                    ineq=sparse_operator(sp.csr_matrix(C2), d2, be), scale=scale,
                    constant=constant, params=params, backend=be)
    x0 = np.random.default_rng(6).random(n)
    seen = []
    res = adm.run(x0=x0, callback=lambda st: seen.append(
        (st.iteration, st.x_host().copy(), be.to_numpy(st.z1).copy(),
         be.to_numpy(st.z2).copy())))
    groups = [list(range(0, 4)), [4, 5, 6], [7, 8, 9]]
    s = _start(x0, C1, C2, d2)
    rho = 0.4 * scale
    best, trail = None, []
    for it in range(1, 8):
        s, r1, r2, cres = _reference_step(A, b, C1, d1, C2, d2, s, rho, 0.7 * rho, 0.9)
        xr = _numpy_round(s["x"], groups=groups)
        viol = max(0.0, np.abs(C1 @ xr - d1).max(), (C2 @ xr - d2).max())
        obj_r = xr @ A @ xr + b @ xr + constant
        rec = res.history[it - 1]
        assert rec.iteration == it and rec.rho == pytest.approx(rho, rel=1e-12)
        assert rec.objective == pytest.approx(s["x"] @ A @ s["x"] + b @ s["x"] + constant,
                                              rel=1e-8)
        assert rec.objective_rounded == pytest.approx(obj_r, rel=1e-10)
        assert rec.feasible_rounded == (viol <= 1e-9)
        assert (rec.residual_box, rec.residual_sphere, rec.residual_constraints) == \
            pytest.approx((r1, r2, cres), rel=1e-7)
        it_seen, x_seen, z1_seen, z2_seen = seen[it - 1]
        assert it_seen == it
        for got, key in ((x_seen, "x"), (z1_seen, "z1"), (z2_seen, "z2")):
            np.testing.assert_allclose(got, s[key], rtol=1e-8, atol=1e-9, err_msg=key)
        trail.append((round(viol, 12), round(obj_r, 9)))
        if best is None or trail[-1] < best[0]:
            best = (trail[-1], it, xr)
        if it % 2 == 0:
            rho *= 1.3
    # the premises: some iterates breach a row by a fraction, a feasible point beats a lower
    # infeasible objective, and the best point recurs later
    assert any(0.0 < v < 1.0 for v, _ in trail), trail
    assert min(o for v, o in trail if v > 0) < best[0][1] and best[0][0] == 0.0, trail
    assert trail.count(best[0]) >= 2 and trail.index(best[0]) == best[1] - 1, trail
    assert res.status == "max_iter" and res.iterations == 7
    assert res.best_iteration == best[1]
    np.testing.assert_array_equal(res.x, best[2].astype(np.int8))
    assert res.objective == pytest.approx(best[0][1], rel=1e-8)
    assert res.feasible == (best[0][0] <= 1e-9)
    np.testing.assert_allclose(res.x_continuous, s["x"], rtol=1e-8, atol=1e-9)


def test_bad_starts_are_named(backend):
    """A start point or a resumed state that does not fit the problem is refused with a
    sentence that says what is wrong; a start point of another dtype is taken as the same point in float64."""
    be = get_backend(backend)
    A, b, _, _, _, _ = _problem(4)
    adm = LpBoxADMM(GenericSystem(A, be), b, params=ADMMParams(max_iter=3), backend=be)
    with pytest.raises(ValueError, match=r"^x0 must have shape \(12,\), got \(5,\)$"):
        adm.run(x0=np.ones(5))
    bad = np.full(12, 0.5)
    bad[3] = np.nan
    with pytest.raises(ValueError, match="^x0 has non-finite entries$"):
        adm.run(x0=bad)
    # a start point of another dtype is the same start point in float64
    for other in (np.array([0, 1] * 6), np.linspace(0.1, 0.9, 12).astype(np.float32)):
        a, f = adm.run(x0=other), adm.run(x0=other.astype(np.float64))
        np.testing.assert_array_equal(a.x_continuous, f.x_continuous)
    paused = adm.run(pause_at=1)
    other = LpBoxADMM(GenericSystem(np.eye(5), be), np.ones(5), backend=be)
    with pytest.raises(ValueError, match="^resume state has 12 variables, the problem 5$"):
        other.run(resume=paused.state)
    C0 = sp.csr_matrix(np.eye(12)[:4])
    with_l1 = LpBoxADMM(GenericSystem(A, be), b, backend=be,
                        l1=L1Split(sparse_operator(C0, np.zeros(4), be), 0.3))
    with pytest.raises(ValueError, match=r"^resume state has no split \(z0, y0\) for this split$"):
        with_l1.run(resume=paused.state)


def test_violation_counts_the_split_rows(backend):
    """With pair rows ``x_u + x_v <= 1`` held by a split, a binary point that sets both ends of
    a row breaches it by 1, with the split's compiled row lists and without them."""
    be = get_backend(backend)
    A, b, _, _, _, _ = _problem(5)
    pairs = [(0, 1), (2, 7), (5, 11)]
    C0 = np.zeros((2 * len(pairs), b.size))
    for r, (u, v) in enumerate(pairs):
        C0[2 * r, u] = C0[2 * r + 1, v] = 1.0
    op = sparse_operator(sp.csr_matrix(C0), np.zeros(2 * len(pairs)), be)
    rows = (np.array([u for u, _ in pairs]), np.array([v for _, v in pairs]))
    for listed in (rows, None):
        split = PairSplit(op, be.asarray(np.ones(3)), be.asarray(np.ones(3)), rows=listed)
        adm = LpBoxADMM(GenericSystem(A, be), b, split=split, backend=be)
        for on, want in (([0, 2, 5], 0.0), ([0, 1, 5], 1.0), ([5, 11, 2, 7], 1.0)):
            x = np.zeros(b.size)
            x[on] = 1.0
            assert adm.violation(be.asarray(x)) == want


def _l1_problem(be, gamma, sparse=False, **params):
    A, b, C1, d1, C2, d2 = _problem(9)
    rng = np.random.default_rng(12)
    C0, d0, w, ratio = rng.normal(size=(4, b.size)), rng.normal(size=4), 0.6, 2.5
    adm = LpBoxADMM(GenericSystem(sp.csr_matrix(A) if sparse else A, be), b,
                    eq=sparse_operator(sp.csr_matrix(C1), d1, be),
                    ineq=sparse_operator(sp.csr_matrix(C2), d2, be),
                    params=ADMMParams(gamma=gamma, pcg_tol=1e-13, pcg_maxiter=500, **params),
                    backend=be, l1=L1Split(sparse_operator(sp.csr_matrix(C0), d0, be), w, ratio))
    return adm, (A, b, C1, d1, C2, d2, C0, d0, w, ratio)


def test_a_step_with_an_l1_split_is_the_written_update(backend):
    """Five iterations with an ℓ1 split ``w |C0 x - d0|`` beside the equality and inequality
    rows, its penalty ``rho0 = ratio * rho`` (ratio 2.5): the x-update's system and right-hand
    side gain the split's terms, then the soft threshold and the split's dual step, and the
    constraint residual counts the split's."""
    be = get_backend(backend)
    adm, prob = _l1_problem(be, 0.8)
    n = prob[1].size
    rng = np.random.default_rng(13)
    s = {"x": 0.3 * rng.random(n), "z1": rng.random(n), "z2": rng.random(n),
         "z3": rng.random(2), "y1": rng.normal(size=n), "y2": rng.normal(size=n),
         "y3": rng.normal(size=3), "y4": rng.normal(size=2), "z0": rng.normal(size=4),
         "y0": rng.normal(size=4)}
    dev = {k: be.asarray(v.copy()) for k, v in s.items()}
    extra = [dev["z0"], dev["y0"]]
    rho, rc = 0.8, 1.3
    for _ in range(5):
        s, _, _, cres = _reference_step(*prob[:6], s, rho, rc, 0.8, l1=prob[6:])
        got = adm._generic_step(dev["x"], dev["z1"], dev["z2"], dev["z3"], dev["y1"],
                                dev["y2"], dev["y3"], dev["y4"], rho, rc, False, extra)
        dev.update(x=got[0], z1=got[1], z2=got[2], z3=got[3], z0=extra[0], y0=extra[1])
        for key, value in s.items():
            np.testing.assert_allclose(be.to_numpy(dev[key]), value, rtol=1e-8, atol=1e-9,
                                       err_msg=key)
        assert got[6] == pytest.approx(cres, rel=1e-8)
        rho, rc = rho * 1.5, rc * 1.2


@pytest.mark.parametrize("sparse", [False, True])
def test_a_run_with_an_l1_split_reports_the_term(backend, sparse):
    """A run with an ℓ1 split starts it at ``z0 = C0 x0 - d0``, ``y0 = 0``, and every record's
    objectives, of the iterate and of its rounded point, include ``w |C0 x - d0|_1``, whether
    the system's solve hands back ``x'Ax`` (sparse, compiled) or the loop computes it."""
    be = get_backend(backend)
    adm, prob = _l1_problem(be, 1.0, sparse, rho0=0.6, rho_growth=1.2, max_iter=4, tol=1e-14)
    A, b, C1, d1, C2, d2, C0, d0, w, _ = prob
    n = b.size
    x0 = np.random.default_rng(14).random(n)
    seen = []
    res = adm.run(x0=x0, callback=lambda st: seen.append(st.x_host().copy()))
    s = {**_start(x0, C1, C2, d2), "z0": C0 @ x0 - d0, "y0": np.zeros(4)}
    rho = 0.6 * adm.scale
    for it in range(4):
        s = _reference_step(*prob[:6], s, rho, rho, 1.0, l1=prob[6:])[0]
        x = s["x"]
        xr = _numpy_round(x, groups=[list(range(0, 4)), [4, 5, 6], [7, 8, 9]])
        np.testing.assert_allclose(seen[it], x, rtol=1e-8, atol=1e-9)
        rec = res.history[it]
        assert rec.objective == pytest.approx(
            x @ A @ x + b @ x + w * np.abs(C0 @ x - d0).sum(), rel=1e-8)
        assert rec.objective_rounded == pytest.approx(
            xr @ A @ xr + b @ xr + w * np.abs(C0 @ xr - d0).sum(), rel=1e-10)
        rho *= 1.2


def test_the_rows_residual_is_relative_to_their_bound(backend):
    """With inequality rows alone, the constraint residual is ``|C2 x + z3 - d2| /
    max(|d2|, 1)``: here ``|d2|`` lies between 1 and 2, where both the division and the floor
    of 1 show."""
    be = get_backend(backend)
    A, b, _, _, C2, _ = _problem(10)
    d2 = np.array([1.5, -0.5])
    adm = LpBoxADMM(GenericSystem(A, be), b, ineq=sparse_operator(sp.csr_matrix(C2), d2, be),
                    params=ADMMParams(pcg_tol=1e-13, pcg_maxiter=500), backend=be)
    n = b.size
    rng = np.random.default_rng(15)
    x, y4 = rng.random(n), rng.normal(size=2)
    out = adm._generic_step(be.asarray(x), be.asarray(rng.random(n)), be.asarray(rng.random(n)),
                            be.asarray(rng.random(2)), be.asarray(np.zeros(n)),
                            be.asarray(np.zeros(n)), None, be.asarray(y4.copy()), 0.9, 1.1,
                            False)
    xn, z3 = be.to_numpy(out[0]), be.to_numpy(out[3])
    r4 = C2 @ xn + z3 - d2
    assert np.linalg.norm(r4) > 1e-3
    assert out[6] == pytest.approx(np.linalg.norm(r4) / np.linalg.norm(d2), rel=1e-10)


def test_a_seeded_run_starts_at_its_random_point(backend):
    """``seed`` draws the start point uniformly in [0, 1] (numpy's default generator), the
    same run as that point given as ``x0``; without either the start is 1/2 everywhere."""
    be = get_backend(backend)
    A, b, _, _, _, _ = _problem(8)
    adm = LpBoxADMM(GenericSystem(A, be), b, params=ADMMParams(max_iter=3), backend=be)
    seeded = adm.run(seed=21).x_continuous
    np.testing.assert_array_equal(
        seeded, adm.run(x0=np.random.default_rng(21).random(b.size)).x_continuous)
    np.testing.assert_array_equal(adm.run().x_continuous,
                                  adm.run(x0=np.full(b.size, 0.5)).x_continuous)
    assert not np.array_equal(seeded, adm.run().x_continuous)


def test_resuming_at_the_limit_runs_nothing(backend):
    """A run paused at its last iteration and resumed has no iteration left: the result has no
    record and no best iteration, and its labels are the paused iterate rounded."""
    be = get_backend(backend)
    A, b, _, _, _, _ = _problem(6)
    adm = LpBoxADMM(GenericSystem(A, be), b, params=ADMMParams(max_iter=4), backend=be)
    paused = adm.run(pause_at=4)
    assert paused.status == "paused" and paused.iterations == 4
    rest = adm.run(resume=paused.state)
    assert rest.iterations == 0 and rest.best_iteration == 0 and rest.history == []
    np.testing.assert_array_equal(rest.x, (paused.x_continuous > 0.5).astype(np.int8))


@pytest.mark.parametrize("form", ["simplex", "sums"])
def test_z1_stays_in_its_set(backend, form):
    """Every iterate's z1 lies in the set the problem names: each row of k on the simplex
    (``simplex_groups``), or the box with its columns' sums within their bounds (``z1_set``),
    where a plain box clip would leave it."""
    be = get_backend(backend)
    k, m = 3, 8
    rng = np.random.default_rng(16)
    M = rng.normal(size=(m * k, m * k))
    b = 3.0 * rng.normal(size=m * k)
    sums = BoxWithSums(k, np.ones(m), lo=[3.0, -np.inf, 1.0], hi=[4.0, 2.0, np.inf])
    extra = {"simplex_groups": k} if form == "simplex" else {"z1_set": sums}
    adm = LpBoxADMM(GenericSystem(M.T @ M / m, be), b, params=ADMMParams(max_iter=6),
                    backend=be, **extra)
    z1s = []
    adm.run(x0=rng.random(m * k), callback=lambda st: z1s.append(be.to_numpy(st.z1).copy()))
    for z1 in z1s:
        Z = z1.reshape(m, k)
        assert Z.min() >= -1e-12 and Z.max() <= 1 + 1e-12
        if form == "simplex":
            np.testing.assert_allclose(Z.sum(axis=1), 1.0, atol=1e-9)
        else:
            col = Z.sum(axis=0)
            assert np.all(col >= sums.lo - 1e-6) and np.all(col <= sums.hi + 1e-6), col


def test_the_callback_sees_the_limit_and_every_variable(backend):
    """The callback's state carries the iteration limit, and ``x_host()`` the iterate over all
    variables, the eliminated ones at their values through ``expand``."""
    be = get_backend(backend)
    A, b, _, _, _, _ = _problem(7)
    n = b.size

    def expand(v):
        full = np.full(n + 3, 7.0)
        full[3:] = v
        return full

    adm = LpBoxADMM(GenericSystem(A, be), b, expand=expand, params=ADMMParams(max_iter=3),
                    backend=be)
    seen = []
    res = adm.run(callback=lambda st: seen.append((st.max_iter, st.x_host().copy(),
                                                   be.to_numpy(st.x).copy())))
    assert [s[0] for s in seen] == [3, 3, 3]
    for _, full, free in seen:
        np.testing.assert_array_equal(full, expand(free))
    assert res.x_continuous.shape == (n + 3,) and res.x.shape == (n + 3,)


@pytest.mark.parametrize("part", ["eq", "ineq", "rounding"])
def test_the_compiled_step_is_taken_only_where_it_keeps_the_problem(backend, part):
    """With a sparse system the CPU may take the compiled iteration; equality or inequality
    rows or a caller's rounding must still act, so the run gives the generic loop's iterates and
    labels (``fused=False``), which differ from those of the problem without that part (its
    iterates; for the rounding, its labels)."""
    be = get_backend(backend)
    A, b, C1, d1, C2, d2 = _problem(17)
    extra = {"eq": {"eq": sparse_operator(sp.csr_matrix(C1), d1, be)},
             "ineq": {"ineq": sparse_operator(sp.csr_matrix(3.0 * C2), d2 - 2.0, be)},
             "rounding": {"rounding": lambda v: (v < 0.5).astype(v.dtype)}}[part]

    def run(fused, **kw):
        params = ADMMParams(max_iter=12, fused=fused, pcg_tol=1e-12, pcg_maxiter=300)
        return LpBoxADMM(GenericSystem(sp.csr_matrix(A), be), b, params=params, backend=be,
                         **kw).run(seed=4)

    generic, fused, plain = run(False, **extra), run(True, **extra), run(False)
    np.testing.assert_allclose(fused.x_continuous, generic.x_continuous, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(fused.x, generic.x)
    if part == "rounding":  # the rounding changes the labels, not the iterates
        assert not np.array_equal(generic.x, plain.x)
    else:
        assert not np.allclose(generic.x_continuous, plain.x_continuous, atol=1e-3)


def test_a_run_stops_when_the_rounded_objective_has_stagnated(backend):
    """With the residuals' tolerance met at once (tol 10), the run stops at the first
    iteration whose last ``stagnation_window`` rounded objectives lie within
    ``stagnation_tol * max(1, |objective|)`` of each other, and says it converged; the log
    line names the outcome, the iterations and the objective."""
    import logging
    be = get_backend(backend)
    A, b, _, _, _, _ = _problem(12)
    params = ADMMParams(tol=10.0, stagnation_window=3, stagnation_tol=1e-9, max_iter=60)
    adm = LpBoxADMM(GenericSystem(A, be), b, constant=50.0, params=params, backend=be)
    logger = logging.getLogger("solver.admm.loop")
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        res = adm.run(seed=2)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    objs = [h.objective_rounded for h in res.history]
    assert min(objs) > 0  # premise: positive objectives, where a sum is not a spread
    want = next(i + 1 for i in range(2, len(objs))
                if max(objs[i - 2:i + 1]) - min(objs[i - 2:i + 1])
                <= 1e-9 * max(1.0, abs(objs[i])))
    assert res.status == "converged" and res.iterations == want < 60
    assert [r.getMessage() for r in records] == [
        f"ADMM converged after {want} iterations in {res.time_s:.3f} s: objective "
        f"{res.objective:.6g} (best at {res.best_iteration})"]


def test_a_float32_cost_is_the_same_cost_in_float64(backend):
    """The linear cost ``b`` is kept in float64 whatever dtype it comes in."""
    be = get_backend(backend)
    A, b, _, _, _, _ = _problem(13)
    b32 = b.astype(np.float32)
    runs = [LpBoxADMM(GenericSystem(A, be), c, params=ADMMParams(max_iter=4), backend=be)
            .run(seed=1).x_continuous for c in (b32, b32.astype(np.float64))]
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("pcg_tol", [1e-12, 1e-2])
def test_the_objective_from_the_cg_residual_is_the_iterates(backend, pcg_tol):
    """With rows cheaper than a product with A, the x-update hands back ``x'Ax`` from its CG's
    residual (no product with A): every record's objective is still the iterate's
    ``x'Ax + b'x``, also when the CG stops far from the solution (a loose tolerance); with
    rows as costly as A the loop computes it itself."""
    be = get_backend(backend)
    A, b, C1, d1, C2, d2 = _problem(16)
    eq = sparse_operator(sp.csr_matrix(C1), d1, be)
    ineq = sparse_operator(sp.csr_matrix(C2), d2, be)
    system = GenericSystem(sp.csr_matrix(A), be)
    x = be.asarray(np.random.default_rng(16).random(b.size))
    rhs = be.asarray(np.random.default_rng(17).normal(size=b.size))
    sol = system.solve(rhs, x, 1.3, eq, 0.7, ineq, 0.9, pcg_tol, 3)
    xs = be.to_numpy(sol.x)
    assert sol.quad == pytest.approx(xs @ A @ xs, rel=1e-10)
    heavy = sparse_operator(sp.csr_matrix(np.ones((12, b.size))), np.ones(12), be)
    assert system.solve(rhs, x, 1.3, eq, 0.7, heavy, 0.9, pcg_tol, 3).quad is None
    adm = LpBoxADMM(system, b, eq=eq, ineq=ineq, backend=be,
                    params=ADMMParams(pcg_tol=pcg_tol, pcg_maxiter=4, max_iter=6, tol=1e-14))
    seen = []
    res = adm.run(seed=3, callback=lambda st: seen.append(st.x_host().copy()))
    assert len(seen) == len(res.history) == 6
    for xi, rec in zip(seen, res.history):
        assert rec.objective == pytest.approx(xi @ A @ xi + b @ xi, rel=1e-10)
