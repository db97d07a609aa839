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


class ProbeChart(QWidget):
    """``x``, ``z1`` and ``z2`` of one pixel against the iteration, the replay's one marked."""

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
        y, x = self.pixel
        p.setPen(TEXT)
        p.drawText(QPointF(8, 15), f"Pixel (x {x}, y {y})" + (
            f", iteration {self.marker}" if self.marker is not None else ""))
        if self.marker is not None:
            v = self.values_at(self.marker)
            xl = 8.0
            for key, colour, name in CURVES:
                text = f"{name.split()[0]} = {v[key]:.3f}"
                p.setPen(colour)
                p.drawText(QPointF(xl, 31), text)
                xl += p.fontMetrics().horizontalAdvance(text) + 14
        r = QRectF(40, 40, self.width() - 50, self.height() - 60)
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
