"""Tiny binary quadratic programs for teaching, and a recorder of ℓ2-box ADMM's iterates on them.

``{0,1}ⁿ`` is the intersection of the box ``[0,1]ⁿ`` with the sphere of radius ``√n/2`` around
``½·1``; ℓ2-box ADMM keeps ``x`` and its two copies, ``z1`` on the box and ``z2`` on the sphere,
and grows the penalty ``ρ`` until the three agree. :func:`record` runs the library's own
:func:`solver.solve_bqp` on a 2- or 3-variable problem and keeps every iterate (``x``, ``z1``,
``z2``, the duals ``y1``, ``y2``) so that a view can step through them forwards and backwards.

No Qt here (``segapp.model`` never imports it).
"""
from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: Problem sizes the geometry view can draw.
SIZES = (2, 3)


@dataclass(frozen=True)
class TinyBQP:
    """``minimise xᵀAx + bᵀx over x ∈ {0,1}ⁿ`` (optionally with ``C x = d``), n = 2 or 3.

    Attributes
    ----------
    title : str
        Short name (for a menu).
    A : numpy.ndarray, shape (n, n)
        Symmetric matrix (need not be positive semi-definite).
    b : numpy.ndarray, shape (n,)
    C : numpy.ndarray or None, shape (m, n)
        Equality rows ``C x = d`` (None: no constraint).
    d : numpy.ndarray or None, shape (m,)
    note : str
        One or two sentences on what the problem shows.
    """

    title: str
    A: np.ndarray
    b: np.ndarray
    C: np.ndarray | None = None
    d: np.ndarray | None = None
    note: str = ""

    @property
    def n(self) -> int:
        """Number of variables."""
        return int(self.b.size)

    @property
    def eq(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(C, d)`` as :func:`solver.solve_bqp` takes it, or None."""
        return None if self.C is None else (self.C, self.d)

    def objective(self, x: np.ndarray) -> np.ndarray:
        """``xᵀAx + bᵀx`` for one point ``(n,)`` or many ``(..., n)``."""
        x = np.asarray(x, dtype=np.float64)
        return np.einsum("...i,ij,...j->...", x, self.A, x) + x @ self.b

    def feasible(self, x: np.ndarray, tol: float = 1e-9) -> bool:
        """Whether ``x`` meets ``C x = d`` (always True without constraints)."""
        return self.C is None or bool(np.max(np.abs(self.C @ x - self.d)) <= tol)


def make_problem(A: Any, b: Any, C: Any = None, d: Any = None, title: str = "Custom",
                 note: str = "") -> TinyBQP:
    """A checked :class:`TinyBQP` from array-likes.

    Parameters
    ----------
    A : array-like, shape (n, n)
        Symmetrised as ``(A + Aᵀ) / 2``.
    b : array-like, shape (n,)
    C, d : array-like, optional
        Equality rows ``C x = d`` (``C`` of shape (m, n) or (n,), ``d`` of shape (m,)).
    title, note : str

    Returns
    -------
    TinyBQP

    Raises
    ------
    ValueError
        For a size other than 2 or 3, mismatched shapes or non-finite entries.
    """
    A = np.asarray(A, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64).ravel()
    n = b.size
    if n not in SIZES:
        raise ValueError(f"the geometry view draws 2 or 3 variables, not {n}")
    if A.shape != (n, n):
        raise ValueError(f"A must be {n}×{n}, got shape {A.shape}")
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(b))):
        raise ValueError("A and b must be finite")
    A = (A + A.T) / 2.0
    if C is not None:
        C = np.atleast_2d(np.asarray(C, dtype=np.float64))
        d = np.atleast_1d(np.asarray(d, dtype=np.float64)).ravel()
        if C.shape != (d.size, n) or not (np.all(np.isfinite(C)) and np.all(np.isfinite(d))):
            raise ValueError(f"C must be m×{n} and d of length m, finite")
    return TinyBQP(title, A, b, C, d, note)


#: The presets of the geometry view, in menu order.
PRESETS: tuple[TinyBQP, ...] = (
    make_problem([[1.0, 0.0], [0.0, 1.0]], [-3.0, 1.0], title="Relaxation already binary",
                 note="The relaxation's minimum over the box is the corner (1, 0): x slides "
                      "there at once, and ADMM only has to confirm it."),
    make_problem([[1.4, -1.5], [-1.5, 2.7]], [-1.1, 0.7], title="Rounding the relaxation is wrong",
                 note="The relaxation's minimum lies inside the box near (0.63, 0.22); rounding "
                      "it gives (1, 0), but the best binary point is (0, 0)."),
    make_problem([[0.5, -1.5], [-1.5, 0.5]], [0.8, 0.6], title="Indefinite A",
                 note="A has a negative eigenvalue: a saddle. The solver adds αI to A and "
                      "subtracts α from b, which leaves every binary point's value unchanged."),
    make_problem([[1.0, 0.4, -0.3], [0.4, 1.0, 0.6], [-0.3, 0.6, 1.0]], [0.2, -0.5, 0.1],
                 C=[[1.0, 1.0, 1.0]], d=[1.0], title="One-hot (x₁ + x₂ + x₃ = 1)",
                 note="Exactly one variable is 1: the feasible set is the triangle where the "
                      "plane cuts the box, and its binary points are three corners."),
    make_problem([[1.5, 0.6, -0.8], [0.6, 1.2, 0.5], [-0.8, 0.5, 1.4]], [-1.6, 0.3, -1.2],
                 title="Three variables",
                 note="The sphere of radius √3/2 passes through all eight corners of the cube; "
                      "drag to rotate."),
)


def preset(title: str) -> TinyBQP:
    """The preset called ``title`` (KeyError if none)."""
    for p in PRESETS:
        if p.title == title:
            return p
    raise KeyError(title)


@dataclass(frozen=True)
class Iterate:
    """One step of the walk: iteration ``k`` (0 = the start point) and its vectors.

    Attributes
    ----------
    iteration : int
    x, z1, z2 : numpy.ndarray
        The iterate, its copy on the box and its copy on the sphere.
    y1, y2 : numpy.ndarray
        The duals of ``x = z1`` and ``x = z2`` after this iteration (at the problem's scale).
    rho : float
        The penalty of this iteration (0 for the start).
    residual_box, residual_sphere : float
        ``‖x − z1‖ / max(‖x‖, 1)`` and ``‖x − z2‖ / max(‖x‖, 1)``, as the solver reports them.
    objective, objective_rounded : float
        The solver's objective of ``x`` (of the shifted problem when ``A`` is indefinite) and of
        its rounding (NaN for the start point, and so are its residuals).
    """

    iteration: int
    x: np.ndarray
    z1: np.ndarray
    z2: np.ndarray
    y1: np.ndarray
    y2: np.ndarray
    rho: float
    residual_box: float
    residual_sphere: float
    objective: float
    objective_rounded: float


@dataclass
class Trace:
    """A recorded run of :func:`solver.solve_bqp` on a :class:`TinyBQP`.

    Attributes
    ----------
    problem : TinyBQP
    iterates : list of Iterate
        The start point, then one per iteration.
    result : solver ADMMResult
        What ``solve_bqp`` returned (its ``history`` has one record per iteration).
    optimum : tuple (float, numpy.ndarray)
        The best feasible binary point by enumeration, and its value.
    relaxation : tuple (float, numpy.ndarray) or None
        The minimum of the objective over the box (problems without constraints).
    shift : float
        The α the solver adds to A's diagonal when A is indefinite (0 otherwise).
    """

    problem: TinyBQP
    iterates: list[Iterate]
    result: Any
    optimum: tuple[float, np.ndarray]
    relaxation: tuple[float, np.ndarray] | None
    shift: float = 0.0
    params: dict = field(default_factory=dict)

    @property
    def radius(self) -> float:
        """The sphere's radius ``√n / 2``."""
        return sphere_radius(self.problem.n)

    def __len__(self) -> int:
        return len(self.iterates)


def sphere_radius(n: int) -> float:
    """Radius ``√n / 2`` of the sphere around ``½·1`` through the binary points (the solver's
    :func:`solver.admm.projections.sphere_radius`)."""
    from solver.admm.projections import sphere_radius as radius
    return float(radius(n, 2.0))


def record(problem: TinyBQP, seed: int | None = None, **params: Any) -> Trace:
    """Run ℓ2-box ADMM (:func:`solver.solve_bqp`, no polish) on ``problem``, keeping every iterate.

    ``x``, ``z1``, ``z2`` and the penalty come from the solver's per-iteration callback; the
    duals are its dual steps replayed on them, ``y ← y + γρ(x − z)`` from ``y = 0`` (the
    callback does not carry them), so ``z1 = Π_box(x + y1/ρ)`` holds with the previous step's
    ``y1`` at every iteration.

    Parameters
    ----------
    problem : TinyBQP
    seed : int, optional
        Start at a uniformly random point drawn with this seed; None starts at ``½·1``.
    **params
        ADMM parameters (:class:`solver.ADMMParams` fields: ``rho0``, ``rho_growth``, ...).

    Returns
    -------
    Trace
    """
    from solver import solve_bqp
    from solver.admm.params import ADMMParams
    from solver.admm.projections import project_box, project_lp_sphere

    n = problem.n
    x0 = (np.full(n, 0.5) if seed is None
          else np.random.default_rng(seed).random(n))
    gamma = ADMMParams.from_kwargs(**params).gamma
    zero = np.zeros(n)
    start = Iterate(0, x0.copy(), project_box(x0), project_lp_sphere(x0), zero, zero, 0.0,
                    float("nan"), float("nan"), float("nan"), float("nan"))
    iterates = [start]

    def keep(state: Any) -> None:
        prev = iterates[-1]
        x, z1, z2 = (np.array(v, dtype=np.float64) for v in (state.x, state.z1, state.z2))
        rec = state.record
        y1 = prev.y1 + gamma * rec.rho * (x - z1)
        y2 = prev.y2 + gamma * rec.rho * (x - z2)
        iterates.append(Iterate(int(rec.iteration), x, z1, z2, y1, y2, float(rec.rho),
                                float(rec.residual_box), float(rec.residual_sphere),
                                float(rec.objective), float(rec.objective_rounded)))

    result = solve_bqp(problem.A, problem.b, eq=problem.eq, x0=x0, callback=keep,
                       polish=False, **params)
    lam = float(np.linalg.eigvalsh(problem.A).min())
    log.debug("recorded %d iterations of %s", result.iterations, problem.title)
    return Trace(problem, iterates, result, enumerate_optimum(problem),
                 box_minimum(problem) if problem.C is None else None,
                 shift=max(0.0, -lam), params=dict(params))


def binary_points(n: int) -> np.ndarray:
    """The ``2ⁿ`` corners of the box, one per row."""
    return np.array(list(itertools.product((0.0, 1.0), repeat=n)))


def enumerate_optimum(problem: TinyBQP) -> tuple[float, np.ndarray]:
    """The best feasible binary point by trying all ``2ⁿ``: ``(value, x)``.

    Raises
    ------
    ValueError
        If no binary point meets the constraints.
    """
    pts = [p for p in binary_points(problem.n) if problem.feasible(p)]
    if not pts:
        raise ValueError("no binary point meets the constraints")
    vals = [float(problem.objective(p)) for p in pts]
    i = int(np.argmin(vals))
    return vals[i], pts[i]


def box_minimum(problem: TinyBQP) -> tuple[float, np.ndarray]:
    """The minimum of ``xᵀAx + bᵀx`` over the box ``[0,1]ⁿ`` (constraints ignored): ``(value, x)``.

    Exact for n ≤ 3: each coordinate is at 0, at 1 or free; for every such face the stationary
    point of the free coordinates (where their block of A is invertible) is a candidate, and the
    best candidate inside the box is the minimum (a continuous function on a compact box takes
    its minimum at a stationary point of some face).
    """
    A, b, n = problem.A, problem.b, problem.n
    best: tuple[float, np.ndarray] | None = None
    for kinds in itertools.product((0, 1, 2), repeat=n):  # 0, 1: at that bound; 2: free
        x = np.array([k if k < 2 else 0.0 for k in kinds], dtype=np.float64)
        free = np.array([k == 2 for k in kinds])
        if free.any():
            Aff = A[np.ix_(free, free)]
            if abs(np.linalg.det(Aff)) < 1e-12:
                continue
            rhs = -(b[free] + 2.0 * A[np.ix_(free, ~free)] @ x[~free]) / 2.0
            x[free] = np.linalg.solve(Aff, rhs)
            if np.any(x < -1e-12) or np.any(x > 1 + 1e-12):
                continue
        value = float(problem.objective(x))
        if best is None or value < best[0] - 1e-15:
            best = (value, np.clip(x, 0.0, 1.0))
    assert best is not None  # (the corners always qualify)
    return best


def plane_box_polygon(c: np.ndarray, d: float) -> np.ndarray:
    """The polygon where the plane ``cᵀx = d`` cuts the unit cube, its corners in order
    (``(m, 3)``, m = 0 when they miss each other)."""
    c = np.asarray(c, dtype=np.float64)
    corners = binary_points(3)
    pts = []
    for i, j in itertools.combinations(range(8), 2):
        p, q = corners[i], corners[j]
        if np.sum(p != q) != 1:
            continue  # not an edge
        fp, fq = c @ p - d, c @ q - d
        if abs(fp) < 1e-12:
            pts.append(p)
        if fp * fq < 0:
            t = fp / (fp - fq)
            pts.append(p + t * (q - p))
    if not pts:
        return np.zeros((0, 3))
    pts = np.unique(np.round(np.array(pts), 12), axis=0)
    if len(pts) < 3:
        return pts
    centre = pts.mean(axis=0)
    normal = c / np.linalg.norm(c)
    u = pts[0] - centre
    u /= np.linalg.norm(u)
    v = np.cross(normal, u)
    angles = np.arctan2((pts - centre) @ v, (pts - centre) @ u)
    return pts[np.argsort(angles)]


def mass_histogram(values: np.ndarray, bins: int = 40,
                   lo: float = 0.0, hi: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Counts of ``values`` in ``bins`` equal bins over ``[lo, hi]`` (values outside go to the
    end bins): ``(counts, edges)``."""
    v = np.clip(np.asarray(values, dtype=np.float64).ravel(), lo, hi)
    return np.histogram(v, bins=bins, range=(lo, hi))


__all__ = ["PRESETS", "SIZES", "Iterate", "TinyBQP", "Trace", "binary_points", "box_minimum",
           "enumerate_optimum", "make_problem", "mass_histogram", "plane_box_polygon", "preset",
           "record", "sphere_radius"]
