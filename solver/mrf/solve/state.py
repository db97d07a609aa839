"""What a segmentation solve reports as it runs: the live state (:class:`MRFIterationState`)
and the one callback channel that asks it (:class:`CallbackChannel`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from solver.admm.records import IterationState

__all__ = ["CallbackChannel", "MRFIterationState"]


@dataclass
class MRFIterationState:
    """What a ``solve_mrf`` callback receives: each ADMM iteration, and each polish stage as it
    starts and between the rounds of its relaxations (energies in MRF units).

    With coarse-to-fine solving, iterations are numbered across levels and every quantity refers
    to the full image: a coarse labelling copied to its pixels has exactly the coarse energy.

    Attributes
    ----------
    phase : str
        ``"admm"`` for an iteration; ``"polish:<stage>"`` within the polish
        (:data:`solver.mrf.polish.stages.STAGES`; a coarse level's polish too), where the
        other fields hold the last iteration's values (that level's).
    iteration, max_iter : int
    energy_continuous : float
        ``lam x'(I⊗L)x + d'x`` of the continuous iterate.
    energy_rounded : float
        Energy of its rounding (a valid labelling).
    residual_box, residual_sphere, rho : float
    residual_constraints : float
        How far the continuous iterate is from the area bounds and apart rows (relative; 0
        without any).
    level : int
        Pyramid level of this iteration (0 = full resolution).
    reference_energy, reference_bound : float or None
        The yardstick's energy and its lower bound, where the caller solved one first (set by
        :func:`segapp.core.pipeline.run_segmentation`; None otherwise).
    """

    inner: IterationState
    solver: Any  # the solver.mrf.solve.reduction.MRFADMM (or piece of one) that ran it
    pixel_map: np.ndarray | None = None
    shape: tuple[int, int] | None = None
    offset: int = 0
    level: int = 0
    max_iter_total: int | None = None
    reference_energy: float | None = None
    reference_bound: float | None = None
    phase: str = "admm"

    iteration = property(lambda self: self.inner.record.iteration + self.offset)
    energy_continuous = property(lambda self: self.inner.record.objective)
    energy_rounded = property(lambda self: self.inner.record.objective_rounded)
    residual_box = property(lambda self: self.inner.record.residual_box)
    residual_sphere = property(lambda self: self.inner.record.residual_sphere)
    rho = property(lambda self: self.inner.record.rho)
    residual_constraints = property(lambda self: self.inner.record.residual_constraints)
    max_iter = property(lambda self: self.max_iter_total or self.inner.max_iter)

    def probabilities(self, max_side: int | None = None) -> np.ndarray:
        """Per-pixel label weights of the continuous iterate, ``(H, W, K)`` float32 on the host.

        Parameters
        ----------
        max_side : int, optional
            Only every ``s``-th row and column, ``s = ceil(max(H, W) / max_side)``: the image's
            ``[::s, ::s]``, made for those pixels alone (a live view of a 12 MP photo need not
            pay for 12 M pixels each frame). None: every pixel.
        """
        x = self.solver.backend.to_numpy(self.inner.x)
        shape = self.shape if self.pixel_map is not None else self.solver.problem.shape
        h, w = (int(v) for v in shape)
        step = 1 if max_side is None else max(1, -(-max(h, w) // max(1, int(max_side))))
        if step == 1 and self.pixel_map is None:
            return self.solver.probabilities(x)
        pixels = (np.arange(0, h, step)[:, None] * w + np.arange(0, w, step)[None, :]).ravel()
        if self.pixel_map is not None:
            pixels = self.pixel_map[pixels]
        k = self.solver.problem.k
        return self.solver.probabilities_at(x, pixels).reshape(-(-h // step), -(-w // step), k)

    def grid_values(self, max_side: int, names: tuple[str, ...] = ("x", "z1", "z2")
                    ) -> dict[str, Any]:
        """The solver's own values (unclipped) of ``x`` and its box and sphere copies ``z1``,
        ``z2`` on a coarse grid of the image's pixels, for a probe that follows them.

        Parameters
        ----------
        max_side : int
            Every ``s``-th row and column, ``s = ceil(max(H, W) / max_side)``.
        names : tuple of str
            Which of ``"x"``, ``"z1"``, ``"z2"``.

        Returns
        -------
        dict
            ``"step"``: ``s``; per name an ``(h, w, C)`` float32 array: C = 1 for K = 2 (label
            1's value), C = K otherwise. A fixed pixel reads its one-hot label.
        """
        solver = self.solver
        h, w = (int(v) for v in (self.shape if self.pixel_map is not None
                                 else solver.problem.shape))
        step = max(1, -(-max(h, w) // max(1, int(max_side))))
        rows, cols = np.arange(0, h, step), np.arange(0, w, step)
        pixels = (rows[:, None] * w + cols[None, :]).ravel()
        if self.pixel_map is not None:
            pixels = np.asarray(self.pixel_map)[pixels]
        out: dict[str, Any] = {"step": step}
        for name in names:
            vec = solver.backend.to_numpy(getattr(self.inner, name))
            out[name] = _values_at(solver, vec, pixels).reshape(rows.size, cols.size, -1)
        return out


class CallbackChannel:
    """A solve's one callback as the three hooks its parts call: each ADMM iteration
    (:meth:`iteration`), each polish stage as it starts (:meth:`stage`) and the polish's polls
    between the rounds of its relaxations (:meth:`stopped`). The callback's True, at any of
    them, is the one way to stop a solve: ADMM ends after that iteration, the polish at its
    next poll.

    Parameters
    ----------
    callback : callable
        ``callback(state)`` with an :class:`MRFIterationState`; True stops.
    """

    def __init__(self, callback: Callable[[MRFIterationState], bool | None]) -> None:
        self.callback = callback
        self.last: MRFIterationState | None = None
        self.phase = "admm"
        self.stop = False

    def iteration(self, state: MRFIterationState) -> bool:
        """An ADMM iteration: the callback's answer (True: stop)."""
        self.last, self.phase = state, "admm"
        return self._ask(state)

    def stage(self, name: str) -> None:
        """A polish stage starts: the callback sees the last iteration's state with its name
        as the phase (none before any iteration)."""
        self.phase = f"polish:{name}"
        self.stopped()

    def stopped(self) -> bool:
        """The polish's poll: whether the callback has asked to stop, asking it again with
        the current phase."""
        if not self.stop and self.last is not None:
            self._ask(replace(self.last, phase=self.phase))
        return self.stop

    def _ask(self, state: MRFIterationState) -> bool:
        if self.callback(state):
            self.stop = True
        return self.stop


def _values_at(solver: Any, vec: np.ndarray, pixels: np.ndarray) -> np.ndarray:
    """Per-pixel values of a vector over the free variables: ``(m, C)`` with C = 1 for K = 2
    (label 1's value) and C = K otherwise; fixed pixels read their one-hot label."""
    k = int(solver.problem.k)
    out = np.asarray(solver.probabilities_at(vec, pixels), dtype=np.float32)  # clipped
    free = np.asarray(getattr(solver, "free", np.zeros(0, np.int64)))
    if free.size:
        per = np.asarray(vec).reshape(free.size, -1)
        rows = np.minimum(np.searchsorted(free, pixels), free.size - 1)
        ok = free[rows] == pixels
        if per.shape[1] == 1 and k == 2:  # K = 2 in n unknowns: x is label 1's weight
            out[ok, 0] = per[rows[ok], 0]
            out[ok, 1] = 1.0 - per[rows[ok], 0]
        elif per.shape[1] == k:
            out[ok] = per[rows[ok]]
    return out[:, :1] if k == 2 else out
