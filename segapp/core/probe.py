"""Per-pixel probes of a segmentation run: ``x``, ``z1``, ``z2`` at sampled pixels, per iteration.

The app's frame store keeps the continuous iterate's label weights (clipped to [0, 1],
quantised) for the replay; a probe wants the solver's own values, and its box and sphere
copies too. :func:`sample_values` reads them from a live :class:`solver.mrf.MRFIterationState`
on a coarse grid of pixels, and :class:`ProbeStore` keeps them, bounded, over a run. The duals
are not in the callback's state, so a photo's probe has none (the Geometry view shows them for
tiny problems).
"""
from __future__ import annotations

import logging
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: Longest side of the grid of pixels a probe samples.
PROBE_MAX_SIDE = 128
#: The vectors a probe follows.
NAMES = ("x", "z1", "z2")


def sample_values(state: Any, max_side: int = PROBE_MAX_SIDE) -> dict[str, Any]:
    """``x``, ``z1`` and ``z2`` of a segmentation solve's live state on a coarse pixel grid
    (:meth:`solver.mrf.MRFIterationState.grid_values`).

    Parameters
    ----------
    state : solver.mrf.MRFIterationState
        What the solver's callback receives.
    max_side : int
        Every ``s``-th row and column is sampled, ``s = ceil(max(H, W) / max_side)``.

    Returns
    -------
    dict
        ``"step"``: ``s``; ``"x"``, ``"z1"``, ``"z2"``: ``(h, w, C)`` float32 arrays (C = 1 for
        K = 2, the value of label 1; C = K otherwise), unclipped where the solver's variables
        are the labels' weights.
    """
    return state.grid_values(max_side, NAMES)


class ProbeStore:
    """Probe samples of one run, at most ``capacity`` iterations (every other one dropped,
    the first and the newest kept, when full), as float16.

    Parameters
    ----------
    capacity : int
        Iterations kept (at least 2).
    """

    def __init__(self, capacity: int = 120) -> None:
        self.capacity = max(int(capacity), 2)
        self.iterations: list[int] = []
        self.samples: list[dict[str, Any]] = []

    def clear(self) -> None:
        """Forget the run."""
        self.iterations.clear()
        self.samples.clear()

    def __len__(self) -> int:
        return len(self.samples)

    def add(self, iteration: int, values: dict[str, Any]) -> None:
        """Keep :func:`sample_values`' ``values`` for ``iteration``."""
        kept = {"step": int(values["step"])}
        for name in NAMES:
            kept[name] = np.asarray(values[name], dtype=np.float16)
        if self.iterations and self.iterations[-1] == iteration:
            self.samples[-1] = kept
            return
        self.iterations.append(int(iteration))
        self.samples.append(kept)
        if len(self.samples) > self.capacity:
            keep = list(range(0, len(self.samples) - 1, 2)) + [len(self.samples) - 1]
            self.iterations = [self.iterations[i] for i in keep]
            self.samples = [self.samples[i] for i in keep]

    def nbytes(self) -> int:
        """Memory the samples hold."""
        return sum(s[n].nbytes for s in self.samples for n in NAMES)

    def series(self, y: int, x: int, label: int = 0) -> dict[str, np.ndarray]:
        """The values at image pixel ``(y, x)`` (its nearest sampled pixel) over the run.

        Parameters
        ----------
        y, x : int
            Pixel of the full image.
        label : int
            Which label's value (0-based; K = 2 samples have label 1's only).

        Returns
        -------
        dict
            ``"iteration"``: ``(T,)`` ints; ``"x"``, ``"z1"``, ``"z2"``: ``(T,)`` floats;
            ``"pixel"``: the sampled pixel ``(y, x)`` of the last sample.
        """
        out: dict[str, Any] = {"iteration": np.array(self.iterations, dtype=np.int64)}
        vals: dict[str, list[float]] = {n: [] for n in NAMES}
        pixel = (y, x)
        for s in self.samples:
            step = s["step"]
            hh, ww, c = s["x"].shape
            i = min(int(round(y / step)), hh - 1)
            j = min(int(round(x / step)), ww - 1)
            pixel = (i * step, j * step)
            for n in NAMES:
                vals[n].append(float(s[n][i, j, min(label, c - 1)]))
        for n in NAMES:
            out[n] = np.array(vals[n], dtype=np.float64)
        out["pixel"] = pixel
        return out

    def labels(self) -> int:
        """How many labels' values each sample holds (1 for K = 2: label 1's weight; K
        otherwise; 0 without samples)."""
        return int(self.samples[-1]["x"].shape[2]) if self.samples else 0

    def series_by_label(self, y: int, x: int) -> dict[str, np.ndarray]:
        """Every label's values at image pixel ``(y, x)`` over the run.

        Returns
        -------
        dict
            As :meth:`series`, with ``"x"``, ``"z1"``, ``"z2"`` as ``(T, C)`` arrays, column
            ``c`` label ``c + 1``'s value (C = 1 for K = 2: label 1's weight).
        """
        c = self.labels()
        per = [self.series(y, x, label) for label in range(max(c, 1))]
        out: dict[str, Any] = {"iteration": per[0]["iteration"], "pixel": per[0]["pixel"]}
        for n in NAMES:
            out[n] = np.stack([p[n] for p in per], axis=1)
        return out


__all__ = ["NAMES", "PROBE_MAX_SIDE", "ProbeStore", "sample_values"]
