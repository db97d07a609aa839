"""ℓp-box ADMM (Wu & Ghanem) for binary quadratic programs.

    minimise  x'Ax + b'x   over x in {0,1}^n,  C1 x = d1,  C2 x <= d2

with ``{0,1}^n = [0,1]^n ∩ {||x - 1/2||_2^2 = n/4}``, the split ``x = z1 (box) = z2 (sphere)`` and
the slack ``C2 x + z3 = d2, z3 >= 0``. An optional ℓ1 term ``sum_r w_r |(C0 x - d0)_r|`` (the
paper's §5) takes one more split ``z0 = C0 x - d0`` (:class:`solver.admm.splits.L1Split`), and
so do rows held by a projected copy (:class:`solver.admm.splits.PairSplit`). Each iteration solves
one positive-definite linear system for ``x`` by warm-started PCG, projects ``z1, z2, z3``, takes
dual steps of size ``gamma`` and grows the penalties geometrically up to a cap.

:class:`LpBoxADMM` separates set-up (operators, preconditioner, transfers to the backend) from
iterating, so a re-solve after a change of ``b`` or of the start point is cheap.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from solver.admm.params import ADMMParams
from solver.admm.projections import (
    project_box,
    project_lp_sphere,
    project_nonneg,
    project_simplex_rows,
)
from solver.admm.records import (
    CANCELLED,
    CONVERGED,
    MAX_ITER,
    PAUSED,
    ADMMResult,
    IterationRecord,
    IterationState,
)
from solver.admm.splits import L1Split, PairSplit, soft_threshold  # noqa: F401 (re-exported)
from solver.admm.steps import cpu_kernels
from solver.admm.steps.fused import fused_step
from solver.admm.systems import LinearOperatorPair
from solver.backend import Backend, get_backend

log = logging.getLogger(__name__)

@dataclass
class ADMMState:
    """Where an ℓp-box ADMM run stands after an iteration: enough to go on from there.

    Arrays live on the run's backend and are over the free variables (``y3`` over the equality
    rows, ``z3``, ``y4`` over the inequality rows). A caller may slice every variable-sized
    array to a subset of the variables before resuming (early fixing), as long as the system it
    resumes with is the restriction to that subset.

    Attributes
    ----------
    x, z1, z2, y1, y2 : array
        Iterate, box and sphere copies, and their duals.
    y3, z3, y4 : array or None
        Constraint duals and slack.
    rho : float
        Penalty for the next iteration (absolute, not relative to the scale).
    iteration : int
        Iterations done so far.
    recent : list of float
        Rounded objectives of the last iterations (for the stagnation test).
    z0, y0 : array or None
        The ℓ1 split's copy ``z0 = C0 x - d0`` and its dual (None without an ℓ1 term).
    """

    x: Any
    z1: Any
    z2: Any
    y1: Any
    y2: Any
    y3: Any
    z3: Any
    y4: Any
    rho: float
    iteration: int
    recent: list[float]
    z0: Any = None
    y0: Any = None


class LpBoxADMM:
    """ℓp-box ADMM on a prepared problem (see :func:`solver.solve_bqp` for the usual entry).

    Parameters
    ----------
    system : GenericSystem or OneHotKronSystem
        Provides ``apply_A`` and the x-update ``solve``; already on ``backend``.
    b : array, shape (n,)
        Linear term over the free variables.
    eq, ineq : LinearOperatorPair, optional
        ``C1 x = d1`` and ``C2 x <= d2`` over the free variables.
    scale : float
        Problem scale; penalties are ``params.rho0 * scale`` etc.
    constant : float
        Added to every objective value (contribution of eliminated variables).
    expand : callable, optional
        Maps a numpy vector over the free variables to one over all variables.
    params : ADMMParams
    backend : Backend or str
    fixed_norm_sq : float
        Squared norm of variables already eliminated from the problem at binary values (early
        fixing): ``||x||`` in the relative residuals counts them, so the stopping test means the
        same as on the whole problem.
    simplex_groups : int, optional
        Group size ``k`` of a one-hot structure laid out in consecutive groups (``x.reshape(-1, k)``
        rows sum to 1). Then ``z1`` is projected onto the product of simplices instead of the box:
        a convex superset of the one-hot points whose intersection with the sphere is exactly
        them (on the simplex ``sum_k z_ik^2 <= 1`` with equality only at a vertex), so the
        one-hot rows need no equality penalty.
    z1_set : BoxWithSums, optional
        The box with bounded weighted sums (:class:`solver.admm.sums.BoxWithSums`): ``z1`` is
        projected onto it instead of the box, which keeps cardinality constraints exactly
        without a row in the x-update. The compiled step (which clips to the box) is not used.
    rounding : callable, optional
        ``rounding(x) -> xr``: the binary point of an iterate (on the backend), for a caller
        whose constraints the default rounding does not keep (area bounds).
    l1 : L1Split, optional
        An ℓ1 term added to the objective (the paper's §5), by the split ``z0 = C0 x - d0``;
        every objective reported (records, result) includes it. The run then takes the generic
        loop (not the compiled step of :mod:`solver.admm.steps`).
    split : PairSplit, optional
        Rows held by the same kind of split, ``z0`` projected on each row's half-plane (not
        with ``l1``); a rounded iterate that breaks a row counts as infeasible.
    """

    def __init__(self, system: Any, b: Any, *, eq: LinearOperatorPair | None = None,
                 ineq: LinearOperatorPair | None = None, scale: float = 1.0,
                 constant: float = 0.0, expand: Callable[[np.ndarray], np.ndarray] | None = None,
                 params: ADMMParams | None = None, backend: Backend | str = "cpu",
                 simplex_groups: int | None = None, fixed_norm_sq: float = 0.0,
                 z1_set: Any = None, rounding: Callable[[Any], Any] | None = None,
                 l1: L1Split | None = None, split: PairSplit | None = None) -> None:
        if l1 is not None and split is not None:
            raise ValueError("give an l1 term or a pair split, not both")
        self.backend = get_backend(backend)
        self.system = system
        self.b = self.backend.asarray(b, dtype=np.float64)
        self.eq, self.ineq = eq, ineq
        self.scale = float(scale)
        self.constant = float(constant)
        self.expand = expand
        self.params = (params or ADMMParams()).validated().resolved()
        self.n = int(self.b.shape[0])
        self.simplex_groups = simplex_groups
        self.fixed_norm_sq = float(fixed_norm_sq)
        self.z1_set = z1_set
        self.rounding = rounding
        self.split = l1 if l1 is not None else split

    # ------------------------------------------------------------------ helpers
    def objective(self, x: Any) -> float:
        """``x'Ax + b'x + constant`` (plus the ℓ1 term, if any) for a vector over the free
        variables."""
        be = self.backend
        value = self.system.quad(x) + be.dot(self.b, x) + self.constant
        if self.split is not None:
            value += self.split.value(x, be)
        return value

    def round(self, x: Any) -> Any:
        """Round to a binary point; one-hot groups (if any) take their largest entry (or the
        caller's ``rounding``)."""
        if self.rounding is not None:
            return self.rounding(x)
        xp = self.backend.xp
        if self.simplex_groups:
            X = x.reshape(-1, self.simplex_groups)
            xr = xp.zeros_like(X)
            xr[xp.arange(X.shape[0]), xp.argmax(X, axis=1)] = 1.0
            return xr.ravel()
        if self.eq is not None and self.eq.group_size and not self.backend.is_gpu:
            return cpu_kernels.group_argmax_onehot(x, self.eq.group_size)
        xr = (x > 0.5).astype(x.dtype)
        groups = self.eq.groups if self.eq is not None else None
        if groups is not None:
            padded = xp.concatenate([x, xp.full(1, -xp.inf)])
            cols = xp.argmax(padded[groups], axis=1)
            chosen = groups[xp.arange(groups.shape[0]), cols]
            xr[groups[groups < self.n]] = 0.0
            xr[chosen] = 1.0
        return xr

    def _project_z1(self, v: Any) -> Any:
        if self.z1_set is not None:
            return self.z1_set.project(v, self.backend)
        if self.simplex_groups:
            return project_simplex_rows(v.reshape(-1, self.simplex_groups), self.backend.xp).ravel()
        return project_box(v)

    def violation(self, x: Any) -> float:
        """Largest constraint violation of ``x`` (0 when feasible)."""
        xp, v = self.backend.xp, 0.0
        if self.eq is not None and self.eq.m:
            v = max(v, float(xp.max(xp.abs(self.eq.matvec(x) - self.eq.d))))
        if self.ineq is not None and self.ineq.m:
            v = max(v, float(xp.max(self.ineq.matvec(x) - self.ineq.d)))
        if self.z1_set is not None:
            v = max(v, self.z1_set.violation(self.backend.to_numpy(x)))
        if self.split is not None:
            v = max(v, self.split.violation(x, self.backend))
        return max(v, 0.0)

    def _initial_x(self, x0: Any, seed: int | None) -> Any:
        xp = self.backend.xp
        if x0 is not None:
            x = self.backend.asarray(x0, dtype=np.float64).copy()
            if x.shape != (self.n,):
                raise ValueError(f"x0 must have shape ({self.n},), got {tuple(x.shape)}")
            if not bool(xp.all(xp.isfinite(x))):
                raise ValueError("x0 has non-finite entries")
            return x
        if seed is None:
            return xp.full(self.n, 0.5)
        rng = np.random.default_rng(seed)
        return self.backend.asarray(rng.random(self.n))

    def _generic_step(self, x: Any, z1: Any, z2: Any, z3: Any, y1: Any, y2: Any, y3: Any,
                      y4: Any, rho: float, rc: float, fused: bool,
                      extra: list | None = None) -> tuple:
        """One iteration's x-, z- and dual updates (duals in place); returns ``(x, z1, z2, z3,
        r1, r2, constraint residual, CG iterations, x'Ax or None)``. ``extra`` is the extra
        split's ``[z0, y0]`` (updated in place: ``z0`` replaced, ``y0`` stepped)."""
        be, P, eq, ineq = self.backend, self.params, self.eq, self.ineq
        if fused:
            rhs = cpu_kernels.admm_rhs(z1, z2, y1, y2, self.b, rho)
        else:
            rhs = rho * (z1 + z2) - self.b - y1 - y2
        if eq is not None:
            rhs += eq.rmatvec(rc * eq.d - y3)
        if ineq is not None:
            rhs += ineq.rmatvec(rc * (ineq.d - z3) - y4)
        sys_ineq, rho_ineq = ineq, rc
        if extra is not None:
            r0 = rho * self.split.ratio
            rhs = self.split.add_rhs(rhs, extra[0], extra[1], r0)
            sys_ineq, rho_ineq = self.split.system_operator(ineq, rc, r0)
        sol = self.system.solve(rhs, x, 2.0 * rho, eq, rc, sys_ineq, rho_ineq, P.pcg_tol,
                                P.pcg_maxiter)
        x = sol.x
        if fused:
            z1, z2, d1, d2, xx = cpu_kernels.box_sphere_update(x, y1, y2, rho, P.gamma)
            xnorm = max(math.sqrt(xx + self.fixed_norm_sq), 1.0)
            r1, r2 = math.sqrt(d1) / xnorm, math.sqrt(d2) / xnorm
        else:
            z1 = self._project_z1(x + y1 / rho)
            z2 = project_lp_sphere(x + y2 / rho, P.p)
            y1 += P.gamma * rho * (x - z1)
            y2 += P.gamma * rho * (x - z2)
            xnorm = max(math.sqrt(be.norm(x) ** 2 + self.fixed_norm_sq), 1.0)
            r1 = be.norm(x - z1) / xnorm
            r2 = be.norm(x - z2) / xnorm
        cres = 0.0
        if eq is not None:
            r3 = eq.matvec(x) - eq.d
            y3 += P.gamma * rc * r3
            cres = max(cres, be.norm(r3) / max(be.norm(eq.d), 1.0))
        if ineq is not None:
            c2x = ineq.matvec(x)
            z3 = project_nonneg(ineq.d - c2x - y4 / rc)
            r4 = c2x + z3 - ineq.d
            y4 += P.gamma * rc * r4
            cres = max(cres, be.norm(r4) / max(be.norm(ineq.d), 1.0))
        if extra is not None:
            extra[0], r0v = self.split.update(x, extra[0], extra[1], r0, P.gamma, be)
            cres = max(cres, r0v)
        return x, z1, z2, z3, r1, r2, cres, sol.iterations, sol.quad

    # ------------------------------------------------------------------ main loop
    def run(self, x0: Any = None, seed: int | None = None,
            callback: Callable[[IterationState], bool | None] | None = None,
            setup_time_s: float = 0.0, *, resume: ADMMState | None = None,
            pause_at: int | None = None) -> ADMMResult:
        """Iterate until convergence, the iteration limit, or a stop request.

        Parameters
        ----------
        x0 : array, optional
            Start point over the free variables (warm start). Default: ``1/2`` everywhere, or
            uniform random in ``[0, 1]`` when ``seed`` is given.
        seed : int, optional
            Seed of the random start point.
        callback : callable, optional
            ``callback(state)`` after every iteration with an :class:`IterationState`; return
            True to stop.
        setup_time_s : float
            Set-up time to report in the result (and to count in its ``time_s``).
        resume : ADMMState, optional
            Go on from this state (a previous result's ``state``) instead of starting; ``x0``
            and ``seed`` are then ignored. Iterations keep their numbers and the penalty its
            schedule, so pausing and resuming gives the same iterates as one run.
        pause_at : int, optional
            Stop with status ``"paused"`` after this iteration (counted from the first start).

        Returns
        -------
        ADMMResult
        """
        xp, P, be = self.backend.xp, self.params, self.backend
        t0 = time.perf_counter()
        eq, ineq = self.eq, self.ineq
        if resume is None:
            x = self._initial_x(x0, seed)
            z1, z2 = self._project_z1(x), project_lp_sphere(x, P.p)
            y1, y2 = xp.zeros(self.n), xp.zeros(self.n)
            y3 = xp.zeros(eq.m) if eq is not None else None
            y4 = xp.zeros(ineq.m) if ineq is not None else None
            z3 = project_nonneg(ineq.d - ineq.matvec(x)) if ineq is not None else None
            rho, start, recent = P.rho0 * self.scale, 0, []
            extra = None
            if self.split is not None:  # z0 = C0 x - d0 (the split holds), y0 = 0
                extra = [self.split.op.matvec(x) - self.split.op.d, xp.zeros(self.split.op.m)]
        else:
            if resume.x.shape != (self.n,):
                raise ValueError(f"resume state has {resume.x.shape[0]} variables, "
                                 f"the problem {self.n}")
            x, z1, z2, y1, y2 = resume.x, resume.z1, resume.z2, resume.y1, resume.y2
            y3, z3, y4 = resume.y3, resume.z3, resume.y4
            rho, start, recent = resume.rho, resume.iteration, list(resume.recent)
            extra = None
            if self.split is not None:
                if resume.z0 is None:
                    raise ValueError("resume state has no split (z0, y0) for this split")
                extra = [resume.z0, resume.y0]
        rho_cap = P.rho_max * self.scale
        history: list[IterationRecord] = []
        best = (math.inf, math.inf, None, 0)  # (violation, objective, x, iteration)
        last_xr, last_viol = None, 0.0
        rounded_quad = self.system.quad_tracker()  # rounded iterates change in few entries
        status = MAX_ITER
        # on the CPU the box/sphere steps run as compiled loops (same arithmetic, fewer passes)
        plain_box = not self.simplex_groups and self.z1_set is None
        fused = not be.is_gpu and plain_box
        # K = 2 with an area bound: its own fused step, when the rounding is the set's own
        area = self.z1_set if getattr(self.rounding, "area", None) is self.z1_set else None
        step_fn = (fused_step(self.system, self.b, eq, ineq, be, self.simplex_groups, P.gamma,
                              P.pcg_tol, P.pcg_maxiter, area=area)
                   if P.fused and self.split is None
                   and ((plain_box and self.rounding is None)
                        or (area is not None and area.k == 1 and not self.simplex_groups))
                   else None)
        for it in range(start + 1, P.max_iter + 1):
            rc = rho * P.rho_constraints
            if step_fn is not None:  # the MRF's forms: three compiled passes per iteration
                step = step_fn(x, z1, z2, y1, y2, y3, rho, rc)
                x, z1, z2, xr = step.x, step.z1, step.z2, step.xr
                r1, r2, cres = step.residuals(self.fixed_norm_sq)
                quad_r = rounded_quad(xr) if step.quad_r is None else step.quad_r
                obj_r = quad_r + step.bxr + self.constant
                viol, cg_its = step.violation, step.cg_iterations
                obj_x = step.quad + step.bx + self.constant
            else:
                x, z1, z2, z3, r1, r2, cres, cg_its, quad = self._generic_step(
                    x, z1, z2, z3, y1, y2, y3, y4, rho, rc, fused, extra)
                xr = self.round(x)
                obj_r = rounded_quad(xr) + be.dot(self.b, xr) + self.constant
                # (the rounded point often repeats: its violation, a pass over every row, too)
                same = last_xr is not None and bool(xp.array_equal(xr, last_xr))
                viol = last_viol if same else self.violation(xr)
                last_xr, last_viol = xr, viol
                obj_x = (self.objective(x) if quad is None
                         else quad + be.dot(self.b, x) + self.constant)
                if extra is not None:
                    obj_r += self.split.value(xr, be)
                    if quad is not None:  # objective() already counts it
                        obj_x += self.split.value(x, be)
            if (viol, obj_r) < best[:2]:
                best = (viol, obj_r, xr, it)
            if self.z1_set is not None:
                cres = max(cres, self.z1_set.relative_violation(x, be))
            rec = IterationRecord(it, obj_x, obj_r, viol <= 1e-9, r1, r2, rho, cg_its, cres)
            history.append(rec)
            recent = (recent + [obj_r])[-P.stagnation_window:]
            if callback is not None:
                state = IterationState(rec, x, z1, z2, P.max_iter, self.backend.to_numpy,
                                       self.expand)
                if callback(state):
                    status = CANCELLED
                    break
            if (max(r1, r2, cres) < P.tol and len(recent) == P.stagnation_window
                    and max(recent) - min(recent) <= P.stagnation_tol * max(1.0, abs(obj_r))):
                status = CONVERGED
                break
            if it % P.rho_every == 0:
                rho = min(rho * P.rho_growth, rho_cap)
            if pause_at is not None and it >= pause_at:
                status = PAUSED
                break
        elapsed = time.perf_counter() - t0
        viol, obj, xbest, best_it = best
        x_host = self.backend.to_numpy(xbest if xbest is not None else self.round(x))
        x_cont = self.backend.to_numpy(x)
        if self.expand is not None:
            x_host, x_cont = self.expand(x_host), self.expand(x_cont)
        log.info("ADMM %s after %d iterations in %.3f s: objective %.6g (best at %d)",
                 status, len(history), elapsed, obj, best_it)
        return ADMMResult(
            x=np.rint(x_host).astype(np.int8), objective=obj, feasible=viol <= 1e-9,
            iterations=len(history), status=status,
            time_s=setup_time_s + elapsed, setup_time_s=setup_time_s, history=history,
            x_continuous=x_cont, best_iteration=best_it, backend=self.backend.name,
            # kept only for a paused run, so a finished result holds no solver-sized arrays
            state=(ADMMState(x, z1, z2, y1, y2, y3, z3, y4, rho, start + len(history), recent,
                             *(extra if extra is not None else ()))
                   if status == PAUSED else None),
        )
