"""The polish as named stages: what each took off the energy and how long it took.

The polish (:func:`solver.mrf.polish.pipeline.polish_labels`) is a sequence of exact moves,
each followed by the ICM sweeps and region moves that settle what it took. A
:class:`StageClock` times each such stage and, where the stage took something, the energy it
removed, so that a result can say which stages made its answer (as OSQP reports its polish):
:attr:`solver.mrf.MRFResult.stages`. The energy is evaluated only after a stage that changed
the labels (a pass over the image each), so a stage that took nothing costs nothing to report.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from solver.mrf.build.problem import MRFProblem

__all__ = ["STAGES", "StageClock", "StageReport"]

#: The stages' names in the order the polish runs them, each with what it is.
STAGES: dict[str, str] = {
    "icm": "ICM sweeps from ADMM's labels, pair moves (K > 2)",
    "fill": "filled concavities and box completions",
    "regions": "whole-region moves",
    "split": "region splits (K > 2)",
    "descent": "level sets of ADMM's iterates carved by ICM",
    "tv": "the TV relaxation's level sets (K = 2)",
    "tv-expansion": "each label's TV-relaxed expansion move (K > 2)",
    "local": "local re-solves along the pyramid's cell lines",
    "edge-snap": "boundaries snapped to image edges",
    "level-sets": "level sets of ADMM's iterates",
    "warm-fusion": "fusion with the warm start's labels",
    "constrained": "moves that keep the area bounds and apart pairs",
    "area-relaxation": "the TV relaxation under the area bound (K = 2)",
}


@dataclass(frozen=True)
class StageReport:
    """One stage of a polish.

    Attributes
    ----------
    name : str
        One of :data:`STAGES`.
    time_s : float
        Wall-clock seconds, every call of the stage together.
    gain : float
        Energy the stage took off (never negative: every move is taken only if it lowers
        the energy).
    calls : int
        How many times the stage ran.
    """

    name: str
    time_s: float
    gain: float
    calls: int = 1

    def as_dict(self) -> dict:
        """The report as plain JSON values."""
        return {"name": self.name, "time_s": round(self.time_s, 6), "gain": self.gain,
                "calls": self.calls}


class StageClock:
    """Times a polish's stages and the energy each takes off.

    Parameters
    ----------
    problem : MRFProblem
        The problem being polished.
    lab : numpy.ndarray
        ``(n,)`` 0-based labels the polish changes in place (read after each stage that
        reports a change).
    energy : float, optional
        The energy of ``lab`` at the start, where the caller has it; else evaluated once.
    """

    def __init__(self, problem: MRFProblem, lab: np.ndarray,
                 energy: float | None = None) -> None:
        self.problem = problem
        self.lab = lab
        self.energy = float(problem.energy(lab + 1) if energy is None else energy)
        self._order: list[str] = []
        self._time: dict[str, float] = {}
        self._gain: dict[str, float] = {}
        self._calls: dict[str, int] = {}

    @contextmanager
    def stage(self, name: str, before: np.ndarray | None = None) -> Iterator["_Took"]:
        """Time the stage ``name``; call the yielded object once the stage changed labels.

        Parameters
        ----------
        name : str
            One of :data:`STAGES`.
        before : numpy.ndarray, optional
            The labels at the stage's start (a copy): where the stage does not say that it
            moved, the labels after it are compared with these.

        Yields
        ------
        callable
            Call it (no arguments) when the stage moved a pixel: the energy is then
            evaluated after the stage and its gain recorded.
        """
        if name not in STAGES:
            raise ValueError(f"unknown polish stage {name!r}")
        took = _Took()
        t0 = time.perf_counter()
        try:
            yield took
        finally:
            if name not in self._time:
                self._order.append(name)
                self._time[name] = self._gain[name] = 0.0
                self._calls[name] = 0
            self._time[name] += time.perf_counter() - t0
            self._calls[name] += 1
            if not took.moved and before is not None:
                took.moved = not np.array_equal(before, self.lab)
            if took.moved:
                after = float(self.problem.energy(self.lab + 1))
                self._gain[name] += self.energy - after
                self.energy = after

    def reports(self) -> tuple[StageReport, ...]:
        """The stages so far, in the order they first ran."""
        return tuple(StageReport(n, self._time[n], self._gain[n], self._calls[n])
                     for n in self._order)


class _Took:
    """What a stage calls when it changed labels."""

    def __init__(self) -> None:
        self.moved = False

    def __call__(self) -> None:
        self.moved = True
