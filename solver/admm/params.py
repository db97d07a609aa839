"""Parameters of ℓp-box ADMM."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from solver.admm.projections import check_p

#: Fields of :class:`ADMMParams` that must be integers (>= 1).
INTEGER_FIELDS = ("rho_every", "max_iter", "stagnation_window", "pcg_maxiter")

#: Fields of :class:`ADMMParams` whose default, None, means "chosen for the problem"
#: (:meth:`ADMMParams.resolved`): the MRF front door picks them by size and K
#: (:func:`solver.mrf.solve_mrf`), a plain BQP takes :data:`FALLBACKS`.
CHOSEN_FIELDS = ("rho0", "rho_growth", "pcg_maxiter")

#: The values of :data:`CHOSEN_FIELDS` where nothing chooses for the problem.
FALLBACKS = {"rho0": 0.5, "rho_growth": 1.03, "pcg_maxiter": 7}


def shown(v: Any) -> str:
    """``repr(v)`` cut to one short line, for error messages."""
    text = " ".join(repr(v).split())
    return text if len(text) <= 60 else text[:57] + "..."


def check_seed(seed: Any, name: str = "seed") -> int | None:
    """Check a random seed: None or an integer >= 0.

    As for the integer fields of :class:`ADMMParams`, ``int`` and numpy integers are taken and
    anything else is refused rather than converted: ``bool``, floats (``1.0`` too), strings,
    sequences and generators.

    Parameters
    ----------
    seed : object
        The value given.
    name : str
        The argument's name, for the message.

    Returns
    -------
    int or None
        ``seed`` as a Python ``int`` (None stays None).

    Raises
    ------
    ValueError
        One line naming the argument, the value given and its type.
    """
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"{name} must be None or an integer >= 0, got {shown(seed)} "
                         f"(of type {type(seed).__name__})")
    return int(seed)


def check_callable(fn: Any, name: str = "callback") -> Callable[..., Any] | None:
    """Check that ``fn`` is None or callable.

    Parameters
    ----------
    fn : object
        The value given.
    name : str
        The argument's name, for the message.

    Returns
    -------
    callable or None
        ``fn``.

    Raises
    ------
    ValueError
        One line naming the argument, the value given and its type.
    """
    if fn is not None and not callable(fn):
        raise ValueError(f"{name} must be None or callable, got {shown(fn)} "
                         f"(of type {type(fn).__name__})")
    return fn


@dataclass(frozen=True)
class ADMMParams:
    """Parameters of ℓp-box ADMM. Penalties are relative to the problem's scale.

    Attributes
    ----------
    rho0 : float or None
        Starting penalty ``rho1 = rho2``, as a multiple of the problem scale
        (:func:`solver.admm.systems.problem_scale`: ``mean |b|``, or the mean absolute row sum
        of ``2A`` when ``b = 0``). Small values let the first iterates follow the continuous
        relaxation; the growth then pulls them onto binary points. None (with ``rho_growth``
        and ``pcg_maxiter``, :data:`CHOSEN_FIELDS`): chosen for the problem, see
        :meth:`resolved`.
    rho_growth : float or None
        Factor by which all penalties grow every ``rho_every`` iterations (>= 1).
    rho_every : int
        Iterations between penalty increases.
    rho_max : float
        Cap on the penalty, as a multiple of the problem scale (the convergence analysis needs a
        bounded sequence).
    rho_constraints : float
        Penalty of the equality/inequality constraints relative to ``rho1``.
    gamma : float
        Dual step length, in (0, 2).
    max_iter : int
        Iteration limit.
    tol : float
        Stop when ``max(||x - z1||, ||x - z2||) / max(||x||, 1)`` and the relative constraint
        residuals are below ``tol`` and the rounded objective has stagnated.
    stagnation_window : int
        Number of recent iterations over which the rounded objective must not change by more
        than ``stagnation_tol`` (relative).
    stagnation_tol : float
        See ``stagnation_window``.
    pcg_tol : float
        Relative residual tolerance of the inner conjugate-gradient solves (1e-3: the x-update
        is inexact early on, when the penalty is small and the CG would need many iterations;
        see the README's performance section).
    pcg_maxiter : int or None
        Iteration limit of each inner solve (warm-started from the last x-update).
    p : float
        Exponent of the ℓp sphere (2 is supported).
    fused : bool
        Take the compiled iteration of :mod:`solver.admm.steps` where it applies (the same
        iterates as the generic loop, in fewer passes); False runs the generic loop, to compare.
    """

    rho0: float | None = None
    rho_growth: float | None = None
    rho_every: int = 1
    rho_max: float = 1e5
    rho_constraints: float = 1.0
    gamma: float = 1.0
    max_iter: int = 1000
    tol: float = 1e-3
    stagnation_window: int = 5
    stagnation_tol: float = 1e-9
    pcg_tol: float = 1e-3
    pcg_maxiter: int | None = None
    p: float = 2.0
    fused: bool = True

    def validated(self) -> ADMMParams:
        """Return self after checking every field's type and range.

        The fields of :data:`CHOSEN_FIELDS` may be None. Integer fields (:data:`INTEGER_FIELDS`)
        must be integers (``int`` or a numpy integer, not
        ``bool``; a float, even an integral one such as ``10.0``, is refused with a message naming
        the field rather than converted); the other numeric fields must be finite real numbers.

        Returns
        -------
        ADMMParams
            ``self``.

        Raises
        ------
        ValueError
            Naming the first bad field, the value given and what was expected.
        """
        if not isinstance(self.fused, bool):
            raise ValueError(f"ADMM parameter fused must be True or False, got {self.fused!r}")
        for f in fields(self):
            if f.name == "fused":
                continue
            v = getattr(self, f.name)
            if v is None and f.name in CHOSEN_FIELDS:
                continue
            if f.name in INTEGER_FIELDS:
                if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                    raise ValueError(f"ADMM parameter {f.name} must be an integer >= 1, got {v!r} "
                                     f"(of type {type(v).__name__})")
                if v < 1:
                    raise ValueError(f"ADMM parameter {f.name} must be an integer >= 1, got {v}")
            elif (isinstance(v, bool) or not isinstance(v, numbers.Real)
                  or not math.isfinite(v)):
                raise ValueError(f"ADMM parameter {f.name} must be a finite number, got {v!r}")
        positive = ("rho0", "rho_max", "rho_constraints", "tol", "pcg_tol")
        for name in positive:
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise ValueError(f"ADMM parameter {name} must be > 0, got {getattr(self, name)}")
        if self.pcg_tol >= 1:
            raise ValueError(f"ADMM parameter pcg_tol must be in (0, 1) (a relative residual), "
                             f"got {self.pcg_tol}")
        if self.rho_growth is not None and self.rho_growth < 1:
            raise ValueError(f"ADMM parameter rho_growth must be >= 1, got {self.rho_growth}")
        if not 0 < self.gamma < 2:
            raise ValueError(f"ADMM parameter gamma must be in (0, 2), got {self.gamma}")
        if self.stagnation_tol < 0:
            raise ValueError("ADMM parameter stagnation_tol must be >= 0, "
                             f"got {self.stagnation_tol}")
        check_p(self.p)  # its messages name p
        return self

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> ADMMParams:
        """Build from keyword arguments, rejecting unknown names.

        Parameters
        ----------
        **kwargs
            Fields of :class:`ADMMParams`; the others keep their defaults.

        Returns
        -------
        ADMMParams
            The validated parameters (see :meth:`validated`).

        Raises
        ------
        ValueError
            For an unknown name, or a value of the wrong type or out of range (naming the field).
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise ValueError(f"unknown ADMM parameter(s): {', '.join(unknown)}; "
                             f"expected some of {', '.join(sorted(known))}")
        return replace(cls(), **kwargs).validated()

    def resolved(self, **choices: Any) -> ADMMParams:
        """These parameters with every None field chosen.

        Parameters
        ----------
        **choices
            Values for fields of :data:`CHOSEN_FIELDS` that are None here (a problem's choice);
            those not given take :data:`FALLBACKS`. A field set here is kept.

        Returns
        -------
        ADMMParams
            With no None field.
        """
        unknown = sorted(set(choices) - set(CHOSEN_FIELDS))
        if unknown:
            raise ValueError(f"only {', '.join(CHOSEN_FIELDS)} are chosen for a problem, "
                             f"not {', '.join(unknown)}")
        fill = {name: choices.get(name, FALLBACKS[name]) for name in CHOSEN_FIELDS
                if getattr(self, name) is None}
        return replace(self, **fill) if fill else self

    def given(self) -> dict[str, Any]:
        """The fields that differ from the defaults: what a person set (a session file stores
        these, so a later default reaches a session that did not choose)."""
        default = ADMMParams()
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) != getattr(default, f.name)}

    def as_dict(self) -> dict[str, Any]:
        """Parameters as a plain dict (for reports)."""
        return asdict(self)
