"""Where the mass goes: a histogram of the continuous iterate's values at one iteration.

ADMM's iterate starts with its values piled in the middle and ends with them at 0 and 1; the
histogram shows one stored frame of a run (the replay slider's), or the live one while it runs.
"""
from __future__ import annotations

import numpy as np
from PyQt6.QtCore import QPointF, QRectF, Qt
from PyQt6.QtGui import QColor, QFont, QPainter, QPen
from PyQt6.QtWidgets import QSizePolicy, QWidget

from segapp.model.teaching import mass_histogram

BAR = QColor(90, 170, 255)
EDGE = QColor(120, 220, 120)
TEXT = QColor(220, 221, 226)
DIM = QColor(150, 152, 160)
#: Bins over [0, 1].
BINS = 40
#: Values within this of 0 or 1 count as "decided" in the summary line.
DECIDED = 0.1


def share_texts(counts: tuple[int, ...]) -> tuple[str, ...]:
    """Whole-number percentages of ``counts`` that add up to 100 (largest remainders), never
    negative; a share that is not zero but rounds to 0 reads ``"<1%"`` and one short of all
    ``">99%"``, so that "0%" and "100%" mean none and all.

    Parameters
    ----------
    counts : tuple of int
        Non-negative counts.

    Returns
    -------
    tuple of str
        ``("48%", "3%", "49%")``; all ``"0%"`` when the counts are all 0.
    """
    total = sum(counts)
    if total <= 0:
        return tuple("0%" for _ in counts)
    exact = [100.0 * c / total for c in counts]
    whole = [int(np.floor(v)) for v in exact]
    order = sorted(range(len(counts)), key=lambda i: exact[i] - whole[i], reverse=True)
    for i in order[:100 - sum(whole)]:
        whole[i] += 1
    out = []
    for c, v in zip(counts, whole):
        if 0 < c and v == 0:
            out.append("<1%")
        elif c < total and v == 100:
            out.append(">99%")
        else:
            out.append(f"{v}%")
    return tuple(out)


def frame_values(probs: np.ndarray) -> np.ndarray:
    """The values a histogram counts in a frame of ``(H, W, K)`` label weights: label 1's
    weight for K = 2 (the solver's variable), every label's weight for K > 2."""
    probs = np.asarray(probs)
    return probs[..., 0].ravel() if probs.shape[-1] == 2 else probs.ravel()


class MassHistogram(QWidget):
    """The histogram of one frame's values (:meth:`set_frame`)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumHeight(130)
        self.counts: np.ndarray | None = None
        self.edges: np.ndarray | None = None
        self.iteration: int | None = None
        self.caption = ""
        self.k = 0  # labels of the frame shown (0: none)
        #: What the widget says while it has no frame.
        self.note = "Run ADMM to see where the mass goes"

    def set_frame(self, iteration: int | None, probs: np.ndarray | None, caption: str = "") -> None:
        """Count the values of ``probs`` (``(H, W, K)`` weights), as of ``iteration``
        (None: clear)."""
        if probs is None:
            self.counts = self.edges = None
            self.k = 0
        else:
            self.counts, self.edges = mass_histogram(frame_values(probs), BINS)
            self.k = int(np.shape(probs)[-1])
        self.iteration, self.caption = iteration, caption
        self.update()

    def _split(self) -> tuple[int, int, int]:
        """How many values lie below ``DECIDED``, between, and above ``1 − DECIDED``."""
        if self.counts is None:
            return (0, 0, 0)
        counts = np.asarray(self.counts).astype(np.int64)
        centres = (self.edges[:-1] + self.edges[1:]) / 2
        low = int(counts[centres < DECIDED].sum())
        high = int(counts[centres > 1 - DECIDED].sum())
        return low, int(counts.sum()) - low - high, high

    def fractions(self) -> tuple[float, float, float]:
        """Shares of the values below ``DECIDED``, between, and above ``1 − DECIDED`` (from
        whole counts: each in [0, 1], summing to 1)."""
        parts = self._split()
        total = sum(parts)
        if total == 0:
            return (0.0, 0.0, 0.0)
        return tuple(p / total for p in parts)  # type: ignore[return-value]

    def percentages(self) -> tuple[str, str, str]:
        """The three shares as the summary line shows them (:func:`share_texts`)."""
        return share_texts(self._split())

    def summary(self) -> str:
        """The line under the bars: ``"< 0.1: 48%    between: 3%    > 0.9: 49%"``."""
        low, mid, high = self.percentages()
        return (f"< {DECIDED:g}: {low}    between: {mid}    > {1 - DECIDED:g}: {high}")

    def title(self) -> str:
        """The line over the bars: whose values, and at which iteration ("x, label 1's
        weight, at iteration 40"; for K > 2 every label's weight is counted)."""
        whose = {0: "x", 2: "x, label 1's weight,"}.get(self.k, "x, every label's weight,")
        if self.iteration is None:
            return f"Values of {whose.rstrip(',')}"
        return f"Values of {whose} at iteration {self.iteration}"

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(30, 31, 35))
        f = QFont(self.font())
        f.setPointSizeF(9.0)
        p.setFont(f)
        p.setPen(TEXT)
        title = self.title()
        p.drawText(QPointF(8, 15), title + (f" {self.caption}" if self.caption else ""))
        r = QRectF(34, 24, self.width() - 44, self.height() - 58)
        if self.counts is None:
            p.setPen(DIM)
            p.drawText(r, Qt.AlignmentFlag.AlignCenter, self.note)
            p.end()
            return
        share = self.counts / max(float(self.counts.sum()), 1.0)
        top = max(float(share.max()), 1e-9)
        bw = r.width() / len(share)
        for i, v in enumerate(share):
            h = r.height() * v / top
            edge = (i + 0.5) / len(share) < DECIDED or (i + 0.5) / len(share) > 1 - DECIDED
            p.fillRect(QRectF(r.left() + i * bw + 0.5, r.bottom() - h, bw - 1.0, h),
                       EDGE if edge else BAR)
        p.setPen(QPen(DIM, 1.0))
        p.drawLine(r.bottomLeft(), r.bottomRight())
        for v in (0.0, 0.5, 1.0):
            x = r.left() + v * r.width()
            p.drawText(QRectF(x - 20, r.bottom() + 2, 40, 14), Qt.AlignmentFlag.AlignCenter,
                       f"{v:g}")
        p.drawText(QRectF(0, r.top() - 2, 32, 14), Qt.AlignmentFlag.AlignRight,
                   f"{top * 100:.0f}%")
        p.setPen(TEXT)
        p.drawText(QRectF(r.left(), r.bottom() + 18, r.width(), 14), Qt.AlignmentFlag.AlignLeft,
                   self.summary())
        p.end()


__all__ = ["MassHistogram", "frame_values", "share_texts"]
