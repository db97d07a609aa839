"""The probe: click a pixel of the photo and follow its ``x``, ``z1`` and ``z2`` over a run.

The values come from :class:`segapp.core.probe.ProbeStore` (sampled from the solver's live
state on a coarse grid of pixels, so the probe reads the nearest sampled pixel) and, for ``x``,
also from the replay's frames. The duals are not in the solver's callback state, so they are
not shown here; the Geometry view shows them for tiny problems.
"""
from __future__ import annotations

import math

import numpy as np
from PyQt6.QtCore import QEvent, QObject, QPoint, QPointF, QRectF, Qt, pyqtSignal
from PyQt6.QtGui import QColor, QFont, QPainter, QPen, QPolygonF
from PyQt6.QtWidgets import QSizePolicy, QWidget

from segapp.ui.geometry_scene import C_X, C_Z1, C_Z2

TEXT = QColor(220, 221, 226)
DIM = QColor(150, 152, 160)
#: The values the chart spans (those beyond run off its edges; the header gives them).
VALUE_RANGE = (-0.5, 1.5)
#: The curves: key in the series, colour, legend name.
CURVES = (("x", C_X, "x"), ("z1", C_Z1, "z₁ (box)"), ("z2", C_Z2, "z₂ (sphere)"))


def follow_label(series: dict) -> dict:
    """A :meth:`segapp.core.probe.ProbeStore.series_by_label` series as the chart shows it:
    the curves of one label (the one the pixel ends with: its largest ``x`` at the last
    sample), ``"label"`` naming it (1-based), and every label's values in ``"by_label"``
    (for K = 2 the one column is label 1's weight, the solver's variable: no ``"by_label"``).
    """
    x = np.asarray(series["x"])
    if x.ndim == 1:
        return {**series, "label": 1, "by_label": None}
    followed = int(np.argmax(x[-1])) if x.shape[1] > 1 else 0
    out = {"iteration": series["iteration"], "pixel": series.get("pixel"),
           "label": followed + 1,
           "by_label": {k: np.asarray(series[k]) for k, _, _ in CURVES} if x.shape[1] > 1
           else None}
    for k, _, _ in CURVES:
        out[k] = np.asarray(series[k])[:, followed]
    return out


def subscript(n: int) -> str:
    """``n`` in subscript digits: ``subscript(2)`` is ``"₂"`` (x₂: label 2's x)."""
    return "".join("₀₁₂₃₄₅₆₇₈₉"[int(d)] for d in str(int(n)))


class ProbeChart(QWidget):
    """``x``, ``z1`` and ``z2`` of one pixel against the iteration, the replay's one marked.

    For K = 2 the values are label 1's weight (the solver's one variable a pixel); for K > 2
    the curves are the label the pixel ends with, named in the header, and the header gives
    every label's ``x`` at the marked iteration, each named by its label.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumHeight(150)
        self.series: dict | None = None
        self.pixel: tuple[int, int] | None = None
        self.marker: int | None = None
        self.note = "Probe: click a pixel of the photo to follow its values"

    def set_series(self, pixel: tuple[int, int] | None, series: dict | None) -> None:
        """Show ``series`` (:meth:`segapp.core.probe.ProbeStore.series`) of image ``pixel``."""
        self.pixel, self.series = pixel, series
        self.update()

    def set_marker(self, iteration: int | None) -> None:
        """Mark ``iteration`` (the replay's), or none."""
        self.marker = iteration
        self.update()

    def values_at(self, iteration: int) -> dict[str, float]:
        """The curves' values at the stored iteration nearest ``iteration``."""
        its = self.series["iteration"]
        i = int(np.argmin(np.abs(its - iteration)))
        return {k: float(self.series[k][i]) for k, _, _ in CURVES}

    def label_values_at(self, iteration: int) -> dict[str, list[float]] | None:
        """Every label's values at the stored iteration nearest ``iteration``: ``{"x": [label
        1's, label 2's, …], …}``; None for K = 2 (one value a pixel)."""
        by = (self.series or {}).get("by_label")
        if not by:
            return None
        i = int(np.argmin(np.abs(self.series["iteration"] - iteration)))
        return {k: [float(v) for v in by[k][i]] for k, _, _ in CURVES}

    @property
    def label(self) -> int:
        """The label whose values the curves show (1: label 1's weight, for K = 2)."""
        return int((self.series or {}).get("label", 1) or 1)

    def header_lines(self) -> list[list[tuple[QColor, str]]]:
        """The header's lines above the curves, each a list of ``(colour, text)`` runs: the
        pixel and the iteration; at a marked iteration the curves' values, named by their
        label ("label 2 (the curves): x = …, z₁ = …, z₂ = …"); and for K > 2 every label's
        ``x`` there, each by its label ("x by label: x₁ 0.051  x₂ 0.912  x₃ 0.037")."""
        y, x = self.pixel
        by = (self.series or {}).get("by_label")
        lines = [[(TEXT, f"Pixel (x {x}, y {y})" + (
            f", iteration {self.marker}" if self.marker is not None else ""))]]
        if self.marker is None:
            return lines
        v = self.values_at(self.marker)
        lines.append([(TEXT, f"label {self.label}{' (the curves)' if by else ''}:")]
                     + [(colour, f"{name.split()[0]} = {v[key]:.3f}")
                        for key, colour, name in CURVES])
        if by:
            xs = self.label_values_at(self.marker)["x"]
            digits = 3 if len(xs) <= 4 else 2
            lines.append([(C_X, "x by label: " + "  ".join(
                f"x{subscript(c + 1)} {val:.{digits}f}" for c, val in enumerate(xs)))])
        return lines

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.fillRect(self.rect(), QColor(30, 31, 35))
        f = QFont(self.font())
        f.setPointSizeF(9.0)
        p.setFont(f)
        s = self.series
        if s is None or len(s["iteration"]) == 0:
            p.setPen(TEXT)
            p.drawText(QPointF(8, 15), self.note)
            p.end()
            return
        its = s["iteration"].astype(np.float64)
        step = p.fontMetrics().height() + 2
        baseline = 15.0
        for line in self.header_lines():
            xl = 8.0
            for colour, text in line:
                p.setPen(colour)
                p.drawText(QPointF(xl, baseline), text)
                xl += p.fontMetrics().horizontalAdvance(text) + 14
            baseline += step
        top = max(40.0, baseline - step + 9)
        r = QRectF(40, top, self.width() - 50, max(self.height() - top - 20, 10.0))
        lo, hi = VALUE_RANGE
        # iterations on a log scale: the early moves, where the values change most, get room
        t0, t1 = 0.0, max(math.log10(max(float(its.max()), 2.0)), 0.3)

        def at(t: float, v: float) -> QPointF:
            return QPointF(r.left() + (math.log10(max(t, 1.0)) - t0) / (t1 - t0) * r.width(),
                           r.bottom() - (v - lo) / (hi - lo) * r.height())

        p.setPen(QPen(DIM, 1.0, Qt.PenStyle.DotLine))
        for v in (0.0, 0.5, 1.0):
            p.drawLine(at(1, v), at(10 ** t1, v))
            p.drawText(QRectF(0, at(1, v).y() - 7, 36, 14), Qt.AlignmentFlag.AlignRight, f"{v:g}")
        p.save()
        p.setClipRect(r.adjusted(-2, -2, 2, 2))
        for key, colour, _ in CURVES:
            p.setPen(QPen(colour, 1.8))
            p.drawPolyline(QPolygonF([at(t, v) for t, v in zip(its, s[key])]))
        if self.marker is not None:
            p.setPen(QPen(TEXT, 1.0, Qt.PenStyle.DashLine))
            p.drawLine(at(self.marker, lo), at(self.marker, hi))
        p.restore()
        p.setPen(DIM)
        p.drawText(QRectF(r.left(), r.bottom() + 2, r.width(), 14), Qt.AlignmentFlag.AlignLeft,
                   "iteration 1")
        p.drawText(QRectF(r.left(), r.bottom() + 2, r.width(), 14),
                   Qt.AlignmentFlag.AlignHCenter, "(log scale; no duals for a photo)")
        p.drawText(QRectF(r.left(), r.bottom() + 2, r.width(), 14), Qt.AlignmentFlag.AlignRight,
                   f"{int(its.max())}")
        p.end()


class CanvasClicks(QObject):
    """While on, takes left clicks on the canvas (instead of drawing) and reports the image
    pixel clicked.

    Signals
    -------
    picked(int, int)
        Image pixel ``(x, y)`` clicked.
    """

    picked = pyqtSignal(int, int)

    def __init__(self, canvas) -> None:
        super().__init__(canvas)
        self.canvas = canvas
        self.active = False
        canvas.viewport().installEventFilter(self)

    def set_active(self, on: bool) -> None:
        """Take clicks (True) or leave them to the canvas's tools (False)."""
        self.active = bool(on)
        # a crosshair alone while probing: the brush's outline would say a click paints; off,
        # the canvas's own cursor (a crosshair, with the brush outline once the mouse moves)
        self.canvas.viewport().setCursor(Qt.CursorShape.CrossCursor)
        if on:
            self.canvas.cursor_item.setVisible(False)

    def click(self, view_pos: QPoint) -> bool:
        """Handle a click at viewport position ``view_pos``; True when it hit the image."""
        doc = self.canvas.doc
        if not doc.has_image:
            return False
        q = self.canvas.image_pos(view_pos)
        h, w = doc.shape
        x, y = int(round(q.x())), int(round(q.y()))
        if not (0 <= x < w and 0 <= y < h):
            return False
        self.picked.emit(x, y)
        return True

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt API
        if (self.active and event.type() == QEvent.Type.MouseButtonPress
                and event.button() == Qt.MouseButton.LeftButton):
            self.click(event.position().toPoint())
            return True
        if self.active and event.type() == QEvent.Type.MouseMove:
            # the canvas still reports the pixel under the mouse (and pans with the middle
            # button), but shows no brush outline: a click here picks, it does not paint
            self.canvas.mouseMoveEvent(event)
            self.canvas.cursor_item.setVisible(False)
            return True
        if (self.active and event.type() == QEvent.Type.MouseButtonRelease
                and event.button() == Qt.MouseButton.LeftButton):
            return True
        return False


__all__ = ["CanvasClicks", "ProbeChart"]
