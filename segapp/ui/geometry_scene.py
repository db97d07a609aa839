"""The drawing of a tiny BQP in its own space: box, sphere, contours, constraints, iterates.

Two variables are drawn in the plane (the box a square, the sphere a circle, the objective's
contours behind them); three as a rotatable orthographic view (drag with the mouse). The walk
comes from a :class:`segapp.model.teaching.Trace`: ``x`` and its copies ``z1`` (box) and ``z2``
(sphere) up to the current iteration, with their trails.
"""
from __future__ import annotations

import math

import numpy as np
from PyQt6.QtCore import QEvent, QPointF, QRectF, Qt
from PyQt6.QtGui import QColor, QFont, QFontMetricsF, QImage, QPainter, QPen, QPolygonF, QRegion
from PyQt6.QtWidgets import QSizePolicy, QWidget

from segapp.model.teaching import Trace, binary_points, plane_box_polygon

BG = QColor(30, 31, 35)
C_X = QColor(90, 170, 255)      # the continuous iterate (the convergence plot's colour)
C_Z1 = QColor(200, 120, 255)    # box copy (the plot's box residual colour)
C_Z2 = QColor(255, 110, 140)    # sphere copy (the plot's sphere residual colour)
C_BOX = QColor(235, 235, 240)
C_SPHERE = QColor(250, 200, 90)
C_PLANE = QColor(120, 220, 120)  # the constraint C x = d (a line, or a plane's polygon)
C_BEST = QColor(70, 215, 240)    # the best binary point's ring (cyan: clear of the plane's green)
C_TEXT = QColor(220, 221, 226)
C_DIM = QColor(150, 152, 160)
#: The iterates drawn, their colours and legend names.
SERIES = (("x", C_X, "x (iterate)"), ("z1", C_Z1, "z₁ (on the box)"),
          ("z2", C_Z2, "z₂ (on the sphere)"))
#: Contour levels drawn in the plane.
CONTOUR_LEVELS = 14
#: Marker sizes (pixels): x and z2 are dots, z1 a ring round its point (x visible inside it
#: where they meet, as at the start point), the best binary point a wider ring.
DOT = {"x": 6.0, "z2": 5.0}
Z1_RING = 8.5
BEST_RING = 12.5
#: Iterations of the trails drawn behind the current iterate.
TRAIL = 40
#: Pixels per contour sample (the contour image is computed at this stride).
CONTOUR_STRIDE = 1
#: Default 3-D view (radians): tilted so the cube is seen from slightly above, and turned about
#: x₃ so that no corner (neither 3-D preset's answer) lies near the line of sight through the
#: centre, where a walk to it would be seen end-on.
DEFAULT_YAW, DEFAULT_PITCH = math.radians(30.0), math.radians(22.0)
#: Pixels kept free around the 3-D drawing (axis names, markers), and between it and the legend.
MARGIN_3D = 30.0
#: Farthest from the cube's centre (in the problem's units) the 3-D drawing's scale reaches to
#: show a walk (a wilder one is cut at the drawing's edge rather than shrink the cube to nothing).
MAX_REACH_3D = 3.0
#: Where the 3-D axis names sit (``e_k`` times this), and how far that is from the centre.
AXIS_LABEL_AT = 1.15


class GeometryScene(QWidget):
    """Draws a :class:`Trace` up to one iteration (:meth:`set_index`).

    Attributes
    ----------
    drawn : dict
        What the last paint put where, in widget coordinates (for tests and tooltips):
        ``"x"``, ``"z1"``, ``"z2"`` and ``"best"`` (the best binary point) as ``QPointF``,
        ``"legend"`` as its ``QRectF``; in 2-D ``"circle"`` as ``(centre QPointF, radius in
        pixels)`` and ``"box"`` as the square's ``QRectF``; in 3-D ``"sphere"`` as the
        sphere's outline ``(centre QPointF, radius in pixels)`` and ``"frame"`` as the disc
        everything is drawn in, ``(centre QPointF, radius in pixels)``.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(360, 320)
        self.trace: Trace | None = None
        self.index = 0
        self.show_trails = True
        self.yaw, self.pitch = DEFAULT_YAW, DEFAULT_PITCH
        self.drawn: dict = {}
        self._drag: QPointF | None = None
        self._contours: tuple | None = None  # (key, QImage)
        self._lo, self._hi = -0.35, 1.35
        self._reach = AXIS_LABEL_AT  # 3-D: the distance from ½·1 the drawing's disc spans
        self._frame: tuple | None = None  # (key, frame_3d()): it is needed for every point

    # ---------------------------------------------------------------- state
    def set_trace(self, trace: Trace | None) -> None:
        """Show ``trace`` (from its start point)."""
        self.trace = trace
        self.index = 0
        self._contours = None
        self._frame = None
        if trace is not None and trace.problem.n == 2:
            pts = np.array([v for it in trace.iterates for v in (it.x, it.z1, it.z2)])
            r = trace.radius
            lo = min(0.5 - r, float(pts.min())) - 0.12
            hi = max(0.5 + r, float(pts.max())) + 0.12
            self._lo, self._hi = max(lo, -1.5), min(hi, 2.5)
        elif trace is not None:
            # the drawing spans the farthest of the sphere (and the cube's corners on it), the
            # axis names and every iterate from ½·1: a distance, so whatever the rotation they
            # all fall inside the drawing's disc
            pts = np.array([v for it in trace.iterates for v in (it.x, it.z1, it.z2)])
            far = float(np.max(np.linalg.norm(pts - 0.5, axis=1)))
            label = math.hypot(AXIS_LABEL_AT - 0.5, 0.5 * math.sqrt(trace.problem.n - 1))
            self._reach = min(max(trace.radius, label, far) * 1.04, MAX_REACH_3D)
        self.update()

    def set_index(self, index: int) -> None:
        """Draw the walk up to iterate ``index`` (0 = the start point)."""
        if self.trace is not None:
            self.index = int(min(max(index, 0), len(self.trace) - 1))
        self.update()

    def set_trails(self, on: bool) -> None:
        """Draw (or hide) the paths the iterates took."""
        self.show_trails = bool(on)
        self.update()

    # ---------------------------------------------------------------- 2-D mapping
    def plot_rect(self) -> QRectF:
        """The square the plane's ``[lo, hi]²`` is drawn in."""
        m = 28.0
        side = max(10.0, min(self.width(), self.height()) - 2 * m)
        return QRectF((self.width() - side) / 2, (self.height() - side) / 2, side, side)

    def _scale(self) -> float:
        return self.plot_rect().width() / (self._hi - self._lo)

    def to_screen(self, p) -> QPointF:
        """Widget position of the plane's point ``p`` (2-D) or of space's point (3-D)."""
        p = np.asarray(p, dtype=np.float64)
        r = self.plot_rect()
        if p.size == 2:
            s = self._scale()
            return QPointF(r.left() + (p[0] - self._lo) * s, r.bottom() - (p[1] - self._lo) * s)
        u, v, _ = self._rotate(p)
        centre, s = self._frame_scale()
        return QPointF(centre.x() + u * s, centre.y() - v * s)

    def from_screen(self, q: QPointF) -> np.ndarray:
        """The plane's point at widget position ``q`` (2-D only): inverse of :meth:`to_screen`."""
        r, s = self.plot_rect(), self._scale()
        return np.array([(q.x() - r.left()) / s + self._lo, (r.bottom() - q.y()) / s + self._lo])

    # ---------------------------------------------------------------- 3-D mapping
    def frame_3d(self) -> tuple[QPointF, float]:
        """The disc the 3-D drawing fits in: inside the widget less :data:`MARGIN_3D`, and
        that far clear of the legend (centred in the widget, or left of the legend where that
        gives it more room).

        Returns
        -------
        centre : QPointF
            Where ``½·1`` is drawn.
        radius : float
            Pixels: the farthest any iterate, the sphere or an axis name is drawn from it.
        """
        key = (self.width(), self.height(), id(self.trace))
        if self._frame is not None and self._frame[0] == key:
            return self._frame[1]
        w, h = float(self.width()), float(self.height())
        leg = self.legend_rect()
        best = (QPointF(w / 2, h / 2), -math.inf)
        for right in (w, leg.left()):
            c = QPointF(right / 2, h / 2)
            r = min(right / 2, h / 2) - MARGIN_3D
            dx = max(leg.left() - c.x(), c.x() - leg.right(), 0.0)
            dy = max(leg.top() - c.y(), c.y() - leg.bottom(), 0.0)
            r = min(r, math.hypot(dx, dy) - MARGIN_3D)
            if r > best[1]:
                best = (c, r)
        frame = (best[0], max(best[1], 10.0))
        self._frame = (key, frame)
        return frame

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.FontChange:  # (the legend's size, so the 3-D frame)
            self._frame = None
        super().changeEvent(event)

    def _frame_scale(self) -> tuple[QPointF, float]:
        """Centre of the 3-D drawing and its pixels per unit of the problem's space."""
        centre, radius = self.frame_3d()
        return centre, radius / self._reach

    def _rotate(self, p: np.ndarray) -> tuple[float, float, float]:
        """Screen right, screen up and depth (positive: away from the viewer) of ``p − ½·1``;
        x₃ points up before the tilt, and a positive pitch looks from above."""
        v = np.asarray(p, dtype=np.float64) - 0.5
        cy, sy, cp, sp = math.cos(self.yaw), math.sin(self.yaw), math.cos(self.pitch), \
            math.sin(self.pitch)
        a = cy * v[0] - sy * v[1]
        b = sy * v[0] + cy * v[1]
        return a, cp * v[2] + sp * b, cp * b - sp * v[2]

    def depth(self, p) -> float:
        """How far behind the cube's centre space's point ``p`` lies in the 3-D view (negative:
        in front, nearer the viewer).

        Parameters
        ----------
        p : array_like
            A point of the problem's 3-D space.

        Returns
        -------
        float
            In the problem's units, along the line of sight.
        """
        return float(self._rotate(p)[2])

    def mousePressEvent(self, event) -> None:  # noqa: N802 - Qt API
        if self.trace is not None and self.trace.problem.n == 3:
            self._drag = event.position()

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 - Qt API
        if self._drag is None:
            return
        d = event.position() - self._drag
        self._drag = event.position()
        self.rotate_by(d.x() * 0.01, d.y() * 0.01)

    def mouseReleaseEvent(self, _event) -> None:  # noqa: N802 - Qt API
        self._drag = None

    def rotate_by(self, dyaw: float, dpitch: float) -> None:
        """Turn the 3-D view (radians; a positive ``dpitch`` tilts the top towards the
        viewer); the tilt stays within ±85°."""
        self.yaw += dyaw
        self.pitch = min(max(self.pitch + dpitch, -1.48), 1.48)
        self.update()

    # ---------------------------------------------------------------- painting
    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.fillRect(self.rect(), BG)
        self.drawn = {}
        if self.trace is None:
            p.setPen(C_DIM)
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "Pick a problem")
            return
        if self.trace.problem.n == 2:
            self._paint_2d(p)
            self._paint_walk(p)
        else:
            self._paint_3d(p)
            # (the scale keeps the walk in the drawing's disc, clear of the legend; a walk too
            # wild for MAX_REACH_3D is cut at the widget's edge and never crosses the legend)
            p.save()
            p.setClipRegion(QRegion(self.rect()).subtracted(
                QRegion(self.legend_rect().toAlignedRect())))
            self._paint_walk(p)
            p.restore()
        self._paint_legend(p)
        p.end()

    def _pen(self, colour: QColor, width: float = 1.5, style=Qt.PenStyle.SolidLine) -> QPen:
        pen = QPen(colour, width, style)
        pen.setCosmetic(True)
        return pen

    def _contour_image(self) -> QImage:
        """The objective's level bands and contour lines over the plot square (cached)."""
        r = self.plot_rect()
        key = (int(r.width()), self._lo, self._hi, id(self.trace))
        if self._contours is not None and self._contours[0] == key:
            return self._contours[1]
        m = max(int(r.width()) // CONTOUR_STRIDE, 8)
        t = self._lo + (np.arange(m) + 0.5) * (self._hi - self._lo) / m
        X, Y = np.meshgrid(t, t[::-1])
        f = self.trace.problem.objective(np.stack([X, Y], axis=-1))
        # levels evenly spaced in sqrt(f - min f): a quadratic's contours then sit evenly apart
        lo, hi = float(f.min()), float(np.percentile(f, 95))
        u = np.sqrt(np.clip((f - lo) / max(hi - lo, 1e-12), 0.0, 1.0))
        level = np.floor(u * CONTOUR_LEVELS).astype(int)
        edge = np.zeros_like(level, dtype=bool)
        edge[:, 1:] |= level[:, 1:] != level[:, :-1]
        edge[1:, :] |= level[1:, :] != level[:-1, :]
        shade = np.clip(level / CONTOUR_LEVELS, 0, 1)
        rgba = np.empty((m, m, 4), np.uint8)
        rgba[..., 0] = (36 + 20 * (1 - shade)).astype(np.uint8)
        rgba[..., 1] = (40 + 38 * (1 - shade)).astype(np.uint8)
        rgba[..., 2] = (52 + 60 * (1 - shade)).astype(np.uint8)
        rgba[..., 3] = 255
        rgba[edge] = (92, 104, 132, 255)
        img = QImage(rgba.tobytes(), m, m, 4 * m, QImage.Format.Format_RGBA8888).copy()
        self._contours = (key, img)
        return img

    def _paint_2d(self, p: QPainter) -> None:
        trace, r = self.trace, self.plot_rect()
        p.drawImage(r, self._contour_image())
        p.setPen(self._pen(C_DIM, 1.0))
        p.drawRect(r)
        s = self._scale()
        # the constraint lines, and the part inside the box
        prob = trace.problem
        if prob.C is not None:
            for c, d in zip(prob.C, prob.d):
                seg = _line_in_square(c, d, self._lo, self._hi)
                if seg is not None:
                    p.setPen(self._pen(C_PLANE, 1.2, Qt.PenStyle.DashLine))
                    p.drawLine(self.to_screen(seg[0]), self.to_screen(seg[1]))
                seg = _line_in_square(c, d, 0.0, 1.0)
                if seg is not None:
                    p.setPen(self._pen(C_PLANE, 3.0))
                    p.drawLine(self.to_screen(seg[0]), self.to_screen(seg[1]))
        box = QRectF(self.to_screen((0.0, 1.0)), self.to_screen((1.0, 0.0)))
        p.setPen(self._pen(C_BOX, 2.0))
        p.setBrush(QColor(235, 235, 240, 18))
        p.drawRect(box)
        centre, radius = self.to_screen((0.5, 0.5)), trace.radius * s
        p.setPen(self._pen(C_SPHERE, 2.0))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawEllipse(centre, radius, radius)
        self.drawn["circle"] = (centre, radius)
        self.drawn["box"] = box
        self._paint_marks(p)
        # axes' ticks
        p.setPen(C_DIM)
        f = QFont(self.font())
        f.setPointSizeF(8.5)
        p.setFont(f)
        for v in (0.0, 0.5, 1.0):
            q = self.to_screen((v, self._lo))
            p.drawText(QRectF(q.x() - 20, r.bottom() + 2, 40, 14), Qt.AlignmentFlag.AlignCenter,
                       f"{v:g}")
            q = self.to_screen((self._lo, v))
            p.drawText(QRectF(r.left() - 26, q.y() - 7, 22, 14), Qt.AlignmentFlag.AlignRight,
                       f"{v:g}")
        p.drawText(QRectF(r.right() - 40, r.bottom() + 2, 40, 14), Qt.AlignmentFlag.AlignRight,
                   "x₁")
        p.drawText(QRectF(r.left() - 26, r.top() - 2, 22, 14), Qt.AlignmentFlag.AlignRight, "x₂")

    def _paint_3d(self, p: QPainter) -> None:
        trace = self.trace
        prob = trace.problem
        centre, s = self._frame_scale()
        radius = trace.radius * s
        self.drawn["frame"] = self.frame_3d()
        self.drawn["sphere"] = (centre, radius)
        p.setPen(self._pen(C_SPHERE, 2.0))
        p.setBrush(QColor(250, 200, 90, 14))
        p.drawEllipse(centre, radius, radius)
        # three great circles give the sphere its depth
        t = np.linspace(0, 2 * np.pi, 97)
        for axes in ((0, 1), (0, 2), (1, 2)):
            pts = np.full((t.size, 3), 0.5)
            pts[:, axes[0]] += trace.radius * np.cos(t)
            pts[:, axes[1]] += trace.radius * np.sin(t)
            p.setPen(self._pen(QColor(250, 200, 90, 90), 1.0, Qt.PenStyle.DashLine))
            p.drawPolyline(QPolygonF([self.to_screen(q) for q in pts]))
        if prob.C is not None:
            for c, d in zip(prob.C, prob.d):
                poly = plane_box_polygon(c, float(d))
                if len(poly) >= 3:
                    p.setPen(self._pen(C_PLANE, 2.0))
                    p.setBrush(QColor(120, 220, 120, 60))
                    p.drawPolygon(QPolygonF([self.to_screen(q) for q in poly]))
        corners = binary_points(3)
        # the edges hidden behind the cube (those of its corner farthest away) fainter
        far = int(np.argmax([self.depth(q) for q in corners]))
        p.setBrush(Qt.BrushStyle.NoBrush)
        for i in range(8):
            for j in range(i + 1, 8):
                if np.sum(corners[i] != corners[j]) == 1:
                    alpha = 120 if far in (i, j) else 255
                    col = QColor(C_BOX)
                    col.setAlpha(alpha)
                    p.setPen(self._pen(col, 2.0 if alpha == 255 else 1.2))
                    p.drawLine(self.to_screen(corners[i]), self.to_screen(corners[j]))
        p.setPen(C_DIM)
        for k, name in enumerate(("x₁", "x₂", "x₃")):
            e = np.zeros(3)
            e[k] = AXIS_LABEL_AT
            p.drawText(self.to_screen(e), name)
        self._paint_marks(p)

    def _paint_marks(self, p: QPainter) -> None:
        """The binary points (filled where feasible), the optimum, the relaxation's minimum."""
        trace = self.trace
        prob = trace.problem
        for q in binary_points(prob.n):
            c = self.to_screen(q)
            ok = prob.feasible(q)
            p.setPen(self._pen(C_TEXT, 1.2))
            p.setBrush(C_TEXT if ok else Qt.BrushStyle.NoBrush)
            p.drawEllipse(c, 4.0, 4.0)
        best = self.to_screen(trace.optimum[1])
        self.drawn["best"] = best
        p.setPen(self._pen(C_BEST, 2.5))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawEllipse(best, BEST_RING, BEST_RING)
        if trace.relaxation is not None:
            c = self.to_screen(trace.relaxation[1])
            p.setPen(self._pen(C_TEXT, 1.5))
            p.drawPolygon(QPolygonF([c + QPointF(0, -7), c + QPointF(7, 0), c + QPointF(0, 7),
                                     c + QPointF(-7, 0)]))

    def _paint_walk(self, p: QPainter) -> None:
        trace, k = self.trace, self.index
        its = trace.iterates[:k + 1]
        now = its[-1]
        if self.show_trails and k > 0:
            # the last TRAIL iterations, older ones fainter: x as a path, its copies as dots
            tail = its[-TRAIL - 1:]
            m = len(tail)
            for name, colour, _ in SERIES:
                pts = [self.to_screen(getattr(it, name)) for it in tail]
                for j in range(1, m):
                    col = QColor(colour)
                    col.setAlpha(int(40 + 180 * j / m))
                    if name == "x":
                        p.setPen(self._pen(col, 1.6))
                        p.drawLine(pts[j - 1], pts[j])
                    else:
                        p.setPen(Qt.PenStyle.NoPen)
                        p.setBrush(col)
                        p.drawEllipse(pts[j - 1], 2.6, 2.6)
        x = self.to_screen(now.x)
        for name, colour, _ in SERIES[1:]:  # x pulled towards each copy
            p.setPen(self._pen(colour, 1.2, Qt.PenStyle.DashLine))
            p.drawLine(x, self.to_screen(getattr(now, name)))
        # x last, on top: at the start point x = z1 = ½, and z1 is a ring around it (z2, a dot
        # under x where they meet, is apart from x until the end)
        for name, colour, _ in (SERIES[1], SERIES[2], SERIES[0]):
            q = self.to_screen(getattr(now, name))
            self.drawn[name] = q
            if name == "z1":
                p.setBrush(Qt.BrushStyle.NoBrush)
                p.setPen(self._pen(QColor(20, 20, 24), 4.2))
                p.drawEllipse(q, Z1_RING, Z1_RING)
                p.setPen(self._pen(colour, 2.4))
                p.drawEllipse(q, Z1_RING, Z1_RING)
            else:
                p.setPen(self._pen(QColor(20, 20, 24), 1.5))
                p.setBrush(colour)
                p.drawEllipse(q, DOT[name], DOT[name])

    def legend_items(self) -> list[tuple[QColor, str, str]]:
        """The legend's entries.

        Returns
        -------
        list of (QColor, str, str)
            Colour, text and symbol, each as the thing is drawn: ``"dot"`` (x, z2), ``"ring"``
            (z1), ``"square"`` (the box), ``"circle"`` (the sphere), ``"best"`` (the best
            binary point's ring), and for ``C x = d`` ``"line"`` (2-D) or ``"patch"`` (3-D,
            the filled polygon). Empty without a trace.
        """
        if self.trace is None:
            return []
        n = self.trace.problem.n
        items = [(C_X, SERIES[0][2], "dot"), (C_Z1, SERIES[1][2], "ring"),
                 (C_Z2, SERIES[2][2], "dot"), (C_BOX, "box [0,1]ⁿ", "square"),
                 (C_SPHERE, f"sphere ‖x − ½‖ = √{n}/2", "circle"),
                 (C_BEST, "best binary point", "best")]
        if self.trace.problem.C is not None:
            items.append((C_PLANE, "C x = d", "line" if n == 2 else "patch"))
        return items

    def _legend_font(self) -> QFont:
        f = QFont(self.font())
        f.setPointSizeF(9.0)
        return f

    def legend_rect(self) -> QRectF:
        """Where the legend is drawn.

        Returns
        -------
        QRectF
            Its box in widget coordinates, top right (empty without a trace).
        """
        items = self.legend_items()
        if not items:
            return QRectF(self.width() - 4, 4, 0, 0)
        fm = QFontMetricsF(self._legend_font())
        w = max(fm.horizontalAdvance(t) for _, t, _ in items) + 36
        # top right: the plane's x₂ label is top left
        return QRectF(self.width() - w - 4, 4, w, 17 * len(items) + 10)

    def _paint_legend(self, p: QPainter) -> None:
        p.setFont(self._legend_font())
        items = self.legend_items()
        box = self.legend_rect()
        self.drawn["legend"] = box
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QColor(30, 31, 35, 215))
        p.drawRoundedRect(box, 5, 5)
        x0, y = box.left(), box.top() + 4
        for colour, text, symbol in items:
            c = QPointF(x0 + 11, y + 7)
            p.setBrush(Qt.BrushStyle.NoBrush)
            if symbol == "dot":
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(colour)
                p.drawEllipse(c, 5, 5)
            elif symbol in ("ring", "best", "circle"):
                p.setPen(self._pen(colour, 2.2 if symbol != "circle" else 1.8))
                p.drawEllipse(c, 5, 5)
            elif symbol == "square":
                p.setPen(self._pen(colour, 1.6))
                p.drawRect(QRectF(c.x() - 5, c.y() - 5, 10, 10))
            elif symbol == "line":
                p.setPen(self._pen(colour, 3.0))
                p.drawLine(c + QPointF(-6, 4), c + QPointF(6, -4))
            else:  # "patch": the plane's polygon, filled as drawn
                p.setPen(self._pen(colour, 1.6))
                p.setBrush(QColor(colour.red(), colour.green(), colour.blue(), 90))
                p.drawPolygon(QPolygonF([c + QPointF(-6, 5), c + QPointF(6, 5),
                                         c + QPointF(0, -6)]))
            p.setPen(C_TEXT)
            p.drawText(QPointF(x0 + 22, y + 11), text)
            y += 17


def _line_in_square(c: np.ndarray, d: float, lo: float, hi: float):
    """The segment of the line ``c₁x₁ + c₂x₂ = d`` inside ``[lo, hi]²`` (None if it misses)."""
    c = np.asarray(c, dtype=np.float64)
    pts = []
    for axis in (0, 1):
        other = 1 - axis
        if abs(c[other]) < 1e-15:
            continue
        for v in (lo, hi):
            w = (d - c[axis] * v) / c[other]
            if lo - 1e-12 <= w <= hi + 1e-12:
                q = np.zeros(2)
                q[axis], q[other] = v, w
                pts.append(q)
    if len(pts) < 2:
        return None
    pts = np.array(pts)
    i, j = np.unravel_index(np.argmax(((pts[:, None] - pts[None]) ** 2).sum(-1)), (len(pts),) * 2)
    return pts[i], pts[j]


__all__ = ["C_BEST", "DEFAULT_PITCH", "DEFAULT_YAW", "SERIES", "GeometryScene"]
