"""The reduction of a segmentation MRF to a BQP for ℓ2-box ADMM, exploiting its structure.

* K = 2: with ``x2 = 1 - x1`` and ``L 1 = 0`` the energy is
  ``2 lam x1'L x1 + (d1 - d2)'x1 + sum d2``, a BQP over n unknowns with no constraints.
* K > 2: ``A = lam (L ⊗ I_K)`` (pixel-major) with the one-hot rows ``sum_k x_ik = 1``; the
  x-update splits into label-direction solves with one shared matrix
  (:class:`solver.admm.systems.OneHotKronSystem`).
* Hard constraints fix whole pixels; those pixels are removed from the system and their coupling
  moves into the linear term.

:class:`MRFADMM` holds that reduction and runs ADMM on it, with early fixing
(:mod:`solver.mrf.solve.early_fixing`) and the polish (:mod:`solver.mrf.polish`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from solver.admm.loop import LpBoxADMM
from solver.admm.params import ADMMParams
from solver.admm.records import (
    CANCELLED,
    CONVERGED,
    PAUSED,
    SETTLED,
    IterationRecord,
    IterationState,
)
from solver.admm.systems import (GenericSystem, OneHotKronSystem, onehot_operator,
                                 problem_scale, sparse_operator)
from solver.backend import Backend, get_backend
from solver.mrf.build.graph import own_grid
from solver.mrf.build.problem import MRFProblem, replace_problem
from solver.mrf.build.stencil import graph_arrays, grid_view
from solver.mrf.options import DEFAULT_OPTIONS, SolveOptions
from solver.mrf.polish.fusion import Snapshot
from solver.mrf.polish.pipeline import polish_labels
from solver.mrf.result import MRFResult
from solver.mrf.solve import reduction_kernels as kernels
from solver.mrf.solve.constraint_terms import (apart_rows, apart_split, area_set,
                                               carry_split_state, ordered_pairs, rounding)
from solver.mrf.solve.early_fixing import (
    check_interval,
    one_hot_distance,
    restrict_state,
    settled,
    variable_rows,
)
from solver.mrf.solve.state import MRFIterationState

log = logging.getLogger(__name__)

#: How K > 2 keeps each pixel's weights on the simplex by default: one-hot rows as a penalty.
ONEHOT_DEFAULT = "penalty"


def _split_arrays(problem: MRFProblem) -> tuple:
    """What :func:`reduction_kernels.split_fixed` reads the Laplacian from:
    ``(indptr, indices, data, grid)``. On a graph of the grid's own edges, its weights
    (``grid = (gw, geom)``, :func:`solver.mrf.build.stencil.grid_view`) and empty CSR arrays, so
    a photo's ADMM never makes the matrix; else the matrix's CSR arrays and None (a coarse
    level's matrix adds its diagonal in another order than the grid view)."""
    if own_grid(problem.graph):
        gw, geom = grid_view(problem)
        if gw.shape[0]:
            return np.zeros(1, np.int32), np.zeros(0, np.int32), np.zeros(0), (gw, geom)
    L = problem.laplacian.tocsr()
    return L.indptr, L.indices, L.data, None


def label_weights(x0: np.ndarray, n: int, k: int) -> np.ndarray:
    """A warm start's ``(H, W, K)`` / ``(n, K)`` label weights as an ``(n, K)`` float64 array.

    Raises
    ------
    ValueError
        When ``x0`` does not have ``n * k`` entries.
    """
    if np.size(x0) != n * k:
        raise ValueError(f"x0 must have {n * k} entries (H, W, K), got shape {np.shape(x0)}")
    return np.asarray(x0, dtype=np.float64).reshape(n, k)


class MRFADMM:
    """Set-up of ℓ2-box ADMM for one MRF; :meth:`run` may be called repeatedly (warm starts).

    Parameters
    ----------
    problem : MRFProblem
    backend : {"cpu", "gpu", "auto"} or Backend
    params : ADMMParams, optional
    onehot : {"penalty", "simplex"}
        How K > 2 keeps each pixel's weights on the simplex.
    options : SolveOptions, optional
        Early fixing and the polish (:mod:`solver.mrf.options`; default: the tuned values).
    early_fixing : bool, optional
        Fix settled pixels during :meth:`run`; None: ``options.early_fixing.enabled``.
    scale : float, optional
        Problem scale of the penalties (default: from this problem); a sub-problem made by early
        fixing keeps its parent's, so the penalty cap does not move.
    """

    def __init__(self, problem: MRFProblem, backend: str | Backend = "cpu",
                 params: ADMMParams | None = None, onehot: str = ONEHOT_DEFAULT, *,
                 options: SolveOptions = DEFAULT_OPTIONS, early_fixing: bool | None = None,
                 scale: float | None = None) -> None:
        if onehot not in ("simplex", "penalty"):
            raise ValueError(f"onehot must be 'simplex' or 'penalty', got {onehot!r}")
        t0 = time.perf_counter()
        self.problem = problem
        self.onehot = onehot
        self.options = options
        self.early_fixing = options.early_fixing.enabled if early_fixing is None else early_fixing
        self.backend = get_backend(backend)
        self.params = (params or ADMMParams()).validated().resolved()
        k, lam = problem.k, problem.lam
        hard = np.asarray(problem.hard).ravel()
        self.free = np.flatnonzero(hard == 0)
        # (free pixels, fixed labels, x) of the solver that made each iterate: not the solver
        # itself, which would make a reference cycle holding the whole system until the
        # cyclic garbage collector runs (about 75 MB a solve at 5e5 pixels)
        self.snapshots: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        fix = np.flatnonzero(hard > 0)
        *csr, grid = _split_arrays(problem)
        ptr, idx, val, coupling, same = kernels.split_fixed(*csr, hard.astype(np.int64), k,
                                                            grid=grid)
        L_ff = sp.csr_matrix((val, idx, ptr), shape=(self.free.size, self.free.size))
        d = problem.unary
        # the pairwise term of the fixed pixels among themselves, lam X_c' L_cc X_c, and their data
        constant = lam * same + float(d[fix, hard[fix] - 1].sum())
        B = d[self.free] + 2.0 * lam * coupling  # 2 lam L_fc X_c: gradient of the pairwise term
        if k == 2:
            # x2 = 1 - x1; L_ff 1 = 0 only without fixed pixels, so keep its terms
            A = (2.0 * lam) * L_ff
            row = np.asarray(L_ff.sum(axis=1)).ravel()
            b = B[:, 0] - B[:, 1] - 2.0 * lam * row
            constant += float(B[:, 1].sum()) + lam * float(row.sum())
        else:
            # sum_k x_ik = 1, so a per-pixel constant in the unaries changes nothing but the
            # penalty scale: centre them so mean |b| measures how strongly labels compete
            mean = B.mean(axis=1, keepdims=True)
            constant += float(mean.sum())
            A = lam * L_ff
            b = (B - mean).ravel()
        # the objective over the free variables, kept on the host for early fixing
        self._A, self._b, self._constant = A, b, constant
        self._scale = problem_scale(A, b) if scale is None else scale
        self._fixed_norm_sq = 0.0  # of the variables early fixing removed
        # area bounds as the set z1 is projected on, apart pairs as inequality rows
        self._area = area_set(problem, self.free, hard)
        self._apart = self._split = self._pairs = None
        if options.apart not in ("split", "rows"):
            raise ValueError(f"options.apart must be 'split' or 'rows', got {options.apart!r}")
        if options.apart == "rows":
            self._apart = apart_rows(problem, self.free, hard)
        else:
            has_apart = problem.constraints is not None and problem.constraints.has_apart
            self._pairs = ordered_pairs(problem) if has_apart else None
            self._split = apart_split(problem, self.free, hard, options.apart_ratio,
                                      self.backend, self._pairs)
        if self._apart is not None:
            self.early_fixing = False  # (the rows would have to be restricted at every pause)
        self._build()
        self._fixed_labels = hard
        self.setup_time_s = time.perf_counter() - t0

    def _build(self) -> None:
        """The x-update system and the ADMM solver of the objective ``x'Ax + b'x + constant``."""
        k, be = self.problem.k, self.backend
        if k == 2:
            system, eq = GenericSystem(self._A, be), None
        elif self._apart is not None:
            # apart rows couple the label directions, so the split does not apply: CG on the
            # whole pixel-major system (its rows exact; a linearised split converged slower
            # and worse, docs/decisions.md, "Apart pairs in the x-update")
            system = GenericSystem(sp.kron(self._A, sp.identity(k), format="csr"), be)
            eq = onehot_operator(self.free.size, k, be)
        else:
            system = OneHotKronSystem(self._A, k, be)
            eq = onehot_operator(self.free.size, k, be) if self.onehot == "penalty" else None
        if self._area is not None and self.onehot == "simplex":
            raise ValueError("area bounds need onehot='penalty'")
        self.admm = LpBoxADMM(system, self._b, eq=eq, scale=self._scale, constant=self._constant,
                              params=self.params, backend=be,
                              simplex_groups=k if k > 2 and self.onehot == "simplex" else None,
                              fixed_norm_sq=self._fixed_norm_sq,
                              ineq=None if self._apart is None else sparse_operator(*self._apart,
                                                                                    be),
                              z1_set=self._area, split=self._split,
                              rounding=None if self._area is None else rounding(self._area, be))

    def _restricted(self, keep: np.ndarray, x: np.ndarray) -> MRFADMM:
        """This solver with every free pixel outside ``keep`` fixed to the label ``x`` rounds to.

        The objective over the pixels left is the restriction of this one (``A_kk``, and the
        coupling ``2 A_kr x_r`` moved into ``b``), so nothing is rebuilt from the whole image.

        Parameters
        ----------
        keep : numpy.ndarray
            Sorted positions (among the free pixels) of those that stay free.
        x : numpy.ndarray
            Host vector over the free variables.
        """
        t0 = time.perf_counter()
        k, m = self.problem.k, self.free.size
        out = np.ones(m, dtype=bool)
        out[keep] = False
        gone = np.flatnonzero(out)
        lab = one_hot_distance(x, k)[0][gone]
        B = self._b.reshape(m, -1)
        cols = B.shape[1]  # K = 2: the variables are label 1's weights alone
        # the fixed variables xr: one-hot rows of lab, label 1's column only for K = 2
        on = lab < cols
        rows, labs = gone[on], lab[on]
        hard_sub = np.zeros(m, np.int64)
        hard_sub[gone] = lab + 1
        # A_kk, the coupling A_kr xr, and xr' A_rr xr, in one compiled pass
        ptr, idx, val, coupling, quad = kernels.split_fixed(
            self._A.indptr, self._A.indices, self._A.data, hard_sub, cols)
        child = object.__new__(MRFADMM)
        hard = self._fixed_labels.copy()
        hard[self.free[gone]] = lab + 1
        area = None
        if self._area is not None:  # the newly fixed pixels' areas leave the free sums
            wg = self._area.weights[gone]
            fixed_sums = (np.array([wg[lab == 0].sum()]) if k == 2
                          else np.bincount(lab, weights=wg, minlength=k))
            area = self._area.restricted(keep, fixed_sums)
        split = None
        if self._split is not None:  # the rows again, over the pixels left free
            split = apart_split(replace_problem(self.problem, hard=hard), self.free[keep], hard,
                                self._split.ratio, self.backend, self._pairs, self._split)
        child.__dict__.update(
            problem=replace_problem(self.problem, hard=hard), onehot=self.onehot,
            early_fixing=False, options=self.options, _area=area, _apart=None, _split=split,
            _pairs=self._pairs,
            backend=self.backend, params=self.params, free=self.free[keep], snapshots=[],
            _fixed_labels=hard, _scale=self._scale,
            _fixed_norm_sq=self._fixed_norm_sq + float(rows.size),  # |xr|^2: its ones
            _A=sp.csr_matrix((val, idx, ptr), shape=(keep.size, keep.size)),
            _b=(B[keep] + 2.0 * coupling).ravel(),
            _constant=self._constant + quad + float(B[rows, labs].sum()))
        child._build()
        child.setup_time_s = time.perf_counter() - t0
        return child

    def _touching_apart(self, x_free: np.ndarray) -> np.ndarray:
        """``(m,)`` bool over the free pixels: those whose rounded label touches a label apart
        from it (among the rounded free pixels and the fixed ones)."""
        p, k = self.problem, self.problem.k
        lab = self._fixed_labels.astype(np.int64) - 1  # 0-based
        lab[self.free] = np.argmax(np.asarray(x_free).reshape(-1, k), axis=1)
        indptr, indices, _, gw, geom = graph_arrays(p)
        return kernels.touching_apart(indptr, indices, gw, geom, lab,
                                      np.ascontiguousarray(p.constraints.apart), self.free)

    # -------------------------------------------------------------- variable mapping
    def free_weights(self, x_free: np.ndarray) -> np.ndarray:
        """``(m, K)`` float32 label weights of the free pixels from a host vector over them."""
        k = self.problem.k
        if k > 2:  # (one compiled pass instead of six numpy temporaries)
            return kernels.label_weights(np.asarray(x_free, dtype=np.float64), k)
        x = np.clip(np.asarray(x_free, dtype=np.float32), 0.0, 1.0)
        return np.stack([x, 1.0 - x], axis=1)

    def probabilities(self, x_free: np.ndarray) -> np.ndarray:
        """Map a host vector over the free variables to ``(H, W, K)`` float32 label weights."""
        p = self.problem
        out = np.zeros((p.n, p.k), dtype=np.float32)
        fixed = self._fixed_labels > 0
        out[np.flatnonzero(fixed), self._fixed_labels[fixed] - 1] = 1.0
        out[self.free] = self.free_weights(x_free)
        return out.reshape(*p.shape, p.k)

    def probabilities_at(self, x_free: np.ndarray, pixels: np.ndarray) -> np.ndarray:
        """:meth:`probabilities` at some pixels only, without making them for the rest.

        Parameters
        ----------
        x_free : numpy.ndarray
            Host vector over the free variables (as for :meth:`probabilities`).
        pixels : numpy.ndarray
            Flat pixel indices into this solver's problem.

        Returns
        -------
        numpy.ndarray
            ``(len(pixels), K)`` float32 label weights.
        """
        k = self.problem.k
        pixels = np.asarray(pixels).ravel()
        out = np.zeros((pixels.size, k), dtype=np.float32)
        hard = self._fixed_labels[pixels]
        fixed = hard > 0
        out[np.flatnonzero(fixed), hard[fixed] - 1] = 1.0
        rows = np.searchsorted(self.free, pixels[~fixed])  # (free: sorted, every other pixel)
        per_pixel = np.asarray(x_free).reshape(self.free.size, -1)
        out[~fixed] = self.free_weights(per_pixel[rows].ravel())
        return out

    def labels(self, x_free: np.ndarray) -> np.ndarray:
        """Labels ``(H, W)`` int32 from a (binary or continuous) host vector over free variables:
        the largest of :meth:`probabilities`, without making them for the fixed pixels."""
        lab = self._fixed_labels.astype(np.int32)  # (a copy; 0 on the free pixels)
        lab[self.free] = np.argmax(self.free_weights(x_free), axis=1) + 1
        return lab.reshape(self.problem.shape)

    def snapshot_weights(self) -> list[Snapshot]:
        """The continuous iterates kept by the last :meth:`run` (at
        ``options.polish.fusion.snapshot_iterations``), as label weights on the pixels free at
        the time (:class:`solver.mrf.polish.fusion.Snapshot`; ``.dense()`` gives ``(n, K)``)."""
        return [Snapshot(free, self.free_weights(x), fixed) for free, fixed, x in self.snapshots]

    def start_vector(self, x0: np.ndarray) -> np.ndarray:
        """Free-variable start vector from ``(H, W, K)`` / ``(n, K)`` label weights."""
        p = self.problem
        X = label_weights(x0, p.n, p.k)[self.free]
        return X[:, 0].copy() if p.k == 2 else X.ravel()

    # -------------------------------------------------------------- solve
    def run(self, *, x0: np.ndarray | None = None, seed: int | None = None,
            callback: Callable[[MRFIterationState], bool | None] | None = None,
            polish: bool = True, view: dict[str, Any] | None = None,
            start_labels: np.ndarray | None = None,
            on_stage: Callable[[str], None] | None = None,
            stop: Callable[[], bool] | None = None) -> MRFResult:
        """Run ADMM; see :func:`solver.mrf.solve_mrf` for the arguments (``on_stage`` and
        ``stop``: the polish's hooks, :class:`solver.mrf.solve.state.CallbackChannel`).

        ``start_labels`` (``(H, W)`` or ``(n,)`` labels in 1..K) is a warm start given as a
        labelling: the same run as ``x0`` = its one-hot weights, without making those for the
        whole image (16 bytes a pixel for K = 2; the coarse-to-fine solver's band levels start
        so).

        ``view`` holds extra :class:`MRFIterationState` fields (pixel map, iteration offset,
        level) that let a coarse level report in full-image terms. ``time_s`` includes set-up.
        With ``early_fixing`` the run pauses every
        :func:`solver.mrf.solve.early_fixing.check_interval` iterations and goes on with the
        settled pixels fixed; ``admm`` in the result then spans all the pieces (its ``x`` and
        ``x_continuous`` over this problem's free variables). For K > 2 it ends once a piece
        would keep at most ``options.early_fixing.tail_fraction`` of the free pixels.
        """
        t_start = time.perf_counter()
        if x0 is not None and start_labels is not None:
            raise ValueError("give x0 or start_labels, not both")
        warm = x0 is not None or start_labels is not None
        start = None if x0 is None else self.start_vector(x0)
        if start_labels is not None:  # (one-hot weights are 0 and 1: the same vector exactly)
            start = self._onehot(start_labels)
        if start is None and seed is None:
            # the centre of the feasible set: 1/2 for K = 2, 1/K for each one-hot group
            start = np.full(self.admm.n, 1.0 / self.problem.k)
        self.snapshots = []
        if self.free.size == 0:
            labels = self._fixed_labels.reshape(self.problem.shape).astype(np.int32)
            return MRFResult(labels, self.problem.energy(labels), "admm", self.backend.name, 0,
                             self.setup_time_s + time.perf_counter() - t_start, CONVERGED,
                             x_continuous=self.probabilities(np.zeros(0)),
                             constraints=self.problem.constraint_report(labels))
        fixing = self.options.early_fixing
        # a warm start counts as the check before the first pause (``warm_start_check``)
        previous = start if fixing.warm_start_check and warm else None
        active, state = self, None
        history: list[IterationRecord] = []
        # objective, iteration, solver, x, feasible
        best: tuple[float, int, MRFADMM, np.ndarray, bool] | None = None
        x_cont, status = None, None
        while True:
            pause = None
            if self.early_fixing:
                pause = ((0 if state is None else state.iteration)
                         + check_interval(self.params, fixing.window_growth))
            res = active.admm.run(x0=start, seed=seed, callback=self._inner_callback(
                active, callback, view), resume=state, pause_at=pause)
            history += res.history
            # (a feasible labelling before any other: apart pairs' roundings may break them)
            if res.history and (best is None or (not res.feasible, res.objective)
                                < (not best[4], best[0])):
                best = (res.objective, res.best_iteration, active, res.x, res.feasible)
            if res.status != PAUSED:
                status = res.status
                break
            state = res.state
            x_now = active.backend.to_numpy(state.x)
            if previous is not None and (warm or state.rho >= fixing.min_rho * self._scale):
                done = settled(x_now, previous, self.problem.k, fixing.delta)
                clash = False
                if active._split is not None:  # never fix a conflict in, nor leave it
                    touching = active._touching_apart(x_now)  # to the polish
                    done &= ~touching
                    clash = bool(touching.any())
                if done.all():  # every pixel settled: that labelling is the answer
                    x_cont, status = self._weights_on_free(active, x_now), SETTLED
                    break
                if done.sum() >= fixing.min_fraction * done.size:
                    keep = np.flatnonzero(~done)
                    if (self.problem.k > 2 and not clash
                            and keep.size <= fixing.tail_fraction * self.free.size):
                        # the polish decides the few pixels left (``tail_fraction``)
                        x_cont, status = self._weights_on_free(active, x_now), SETTLED
                        break
                    log.debug("early fixing: %d of %d free pixels settled at iteration %d",
                              done.size - keep.size, done.size, state.iteration)
                    parent, active = active, active._restricted(keep, x_now)
                    state = restrict_state(state, keep, self.problem.k, active.backend.xp)
                    x_now = x_now[variable_rows(keep, self.problem.k)]
                    if active._split is not None:
                        state = replace(state, **dict(zip(("z0", "y0"), carry_split_state(
                            parent._split, active._split, state.z0, state.y0, state.x,
                            active.backend))))
            previous = x_now
        assert best is not None
        labels = best[2].labels(best[3])
        energy = self.problem.energy(labels)
        if abs(energy - best[0]) > 1e-6 * max(1.0, abs(energy)):
            log.warning("ADMM objective %.9g differs from the MRF energy %.9g", best[0], energy)
        if x_cont is None:
            x_cont = self._weights_on_free(active, res.x_continuous)
        res = replace(res, x=self._onehot(labels).astype(np.int8), objective=best[0],
                      best_iteration=best[1], iterations=len(history), history=history,
                      status=status, x_continuous=x_cont, setup_time_s=self.setup_time_s,
                      time_s=self.setup_time_s + time.perf_counter() - t_start, state=None)
        energy_admm = energy
        stages: list = []
        if polish and status != CANCELLED:
            labels = polish_labels(self.problem, labels, self.snapshot_weights(),
                                   options=self.options.polish, backend=self.backend,
                                   report=stages, energy=energy, on_stage=on_stage,
                                   stop=stop)
            energy = self.problem.energy(labels)
            if stop is not None and stop():  # (a stop asked for within the polish)
                status = CANCELLED
        return MRFResult(labels, energy, "admm", self.backend.name, res.iterations,
                         self.setup_time_s + time.perf_counter() - t_start, status,
                         history, self.probabilities(x_cont).reshape(self.problem.n,
                                                                     self.problem.k),
                         res, energy_admm, self.problem.constraint_report(labels),
                         stages=tuple(stages))

    def _inner_callback(self, active: MRFADMM,
                        callback: Callable[[MRFIterationState], bool | None] | None,
                        view: dict[str, Any] | None) -> Callable[[IterationState], bool | None]:
        """The LpBoxADMM callback of one piece of a run: snapshots, then the user's callback."""
        def inner_cb(state: IterationState) -> bool | None:
            if state.record.iteration in self.options.polish.fusion.snapshot_iterations:
                self.snapshots.append((active.free, active._snapshot_fixed(),
                                       active.backend.to_numpy(state.x).astype(np.float32)))
            if callback is not None:
                return callback(MRFIterationState(state, active, **(view or {})))
            return None
        return inner_cb

    def _snapshot_fixed(self) -> np.ndarray:
        """This piece's fixed labels as the snapshots keep them: ``(n,)`` int8 (K is at most
        32), made once per piece. A run's snapshots come from several pieces (early fixing),
        each with its own fixed labels, and they are kept through the polish: int8 copies are
        a quarter of the pieces' int32 arrays, which go with their pieces."""
        fixed = self.__dict__.get("_fixed_small")
        if fixed is None:
            fixed = self._fixed_labels.astype(np.int8)
            self._fixed_small = fixed
        return fixed

    def _onehot(self, labels: np.ndarray) -> np.ndarray:
        """A labelling as a vector over this problem's free variables."""
        lab = np.asarray(labels).ravel()[self.free] - 1
        if self.problem.k == 2:
            return (lab == 0).astype(np.float64)
        return np.eye(self.problem.k)[lab].ravel()

    def _weights_on_free(self, active: MRFADMM, x_active: np.ndarray) -> np.ndarray:
        """The label weights of ``active``'s iterate (this solver, or a piece early fixing made
        of it) as a vector over this solver's free variables: the rows of this solver's free
        pixels in ``active.probabilities(x_active)``, without making the whole image's (the
        pixels early fixing took out have weight 1 on the label they were fixed to)."""
        k = self.problem.k
        if active is self:
            W = self.free_weights(x_active)
        else:
            W = np.zeros((self.free.size, k), dtype=np.float32)
            fixed = active._fixed_labels[self.free]  # 0 where ``active`` still has the pixel
            rows = np.flatnonzero(fixed > 0)
            W[rows, fixed[rows] - 1] = 1.0
            W[np.searchsorted(self.free, active.free)] = active.free_weights(x_active)
        W = W.astype(np.float64)
        return W[:, 0].copy() if k == 2 else W.ravel()


