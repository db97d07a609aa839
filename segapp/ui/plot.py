"""Live energy and residual plots (pyqtgraph)."""
from __future__ import annotations

import re
from html import escape

import numpy as np
import pyqtgraph as pg
from PyQt6.QtCore import QRectF, Qt
from PyQt6.QtWidgets import QGraphicsTextItem, QVBoxLayout, QWidget

BG = (30, 31, 35)
C_CONT = (90, 170, 255)
C_ROUND = (255, 170, 60)
C_REF = (120, 220, 120)
C_BOX = (200, 120, 255)
C_SPH = (255, 110, 140)
C_CON = (250, 230, 90)
C_BOUND = (120, 220, 120, 150)
C_FINAL = (255, 255, 255)

#: How a legend entry draws its line's style (box-drawing characters, in the line's colour); a
#: point's entry draws the point's symbol.
SAMPLE = {"solid": "━━", "dash": "╍╍", "dot": "┅┅", "point": "◆"}


class SafeAxis(pg.AxisItem):
    """An axis that asks for no geometry once its view box is gone.

    pyqtgraph's axis measures itself against its linked view box; when a closed window's plot
    is torn down, the scene can still ask the axis for its bounding rectangle after the view
    box's C++ side was deleted, and the RuntimeError raised inside that Qt virtual call ended
    the process (seen in the test suite, where many windows come and go in one process)."""

    def boundingRect(self):  # noqa: N802 - Qt API
        try:
            return super().boundingRect()
        except (RuntimeError, AttributeError):
            return QRectF()

    def paint(self, *args) -> None:
        try:
            super().paint(*args)
        except (RuntimeError, AttributeError):
            pass  # (nothing to draw against)


class SafeLine(pg.InfiniteLine):
    """An infinite line that asks for no geometry once its view box is gone (as
    :class:`SafeAxis`: pyqtgraph's line reads its view box's size, which raised AttributeError
    inside Qt's call when the box had gone first, and the process ended)."""

    def boundingRect(self):  # noqa: N802 - Qt API
        try:
            if self.getViewBox() is None:
                return QRectF()
            return super().boundingRect()
        except (RuntimeError, AttributeError):
            return QRectF()


def _plot(left: pg.AxisItem | None = None) -> pg.PlotWidget:
    """A plot whose four axes are :class:`SafeAxis`, the top and right ones hidden (given, a
    plot shows them)."""
    widget = pg.PlotWidget(background=BG, axisItems={
        "left": left or SafeAxis("left"), "bottom": SafeAxis("bottom"),
        "top": SafeAxis("top"), "right": SafeAxis("right")})
    for side in ("top", "right"):
        widget.getPlotItem().hideAxis(side)
    return widget


class LogAxis(SafeAxis):
    """Axis for log10-transformed data: ticks at decades, labelled 10ⁿ."""

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph API
        return [f"1e{int(round(v))}" if abs(v - round(v)) < 1e-6 else "" for v in values]


def _hex(colour) -> str:
    return "#" + "".join(f"{int(c):02x}" for c in colour[:3])


def _unbroken(html: str) -> str:
    """``html`` text with no line-break opportunity inside: spaces as non-breaking spaces, a
    hyphen before a letter as a non-breaking hyphen (U+2011; before a digit, a minus sign, it
    is no break opportunity)."""
    return re.sub(r"-(?=[^\W\d_])", "\u2011", html.replace(" ", "&nbsp;"))


class TitleRowLegend:
    """A plot's legend written in its title row, after the title: outside the view box, so it
    never covers a curve or a line, whatever the data do.

    The entries (a line sample in the curve's colour, then its name) follow the title on one
    line while they fit and wrap between entries when they do not; the title row takes the
    text's height (:meth:`fit`, run on every resize and change of the entries).
    """

    def __init__(self, plot: pg.PlotWidget, title: str) -> None:
        self.item = plot.getPlotItem()
        self.title = title
        # the plot's own title is hidden; this text, a child of the plot item outside its
        # layout, takes its row (a LabelItem in the layout would widen the plot to its text)
        self.item.setTitle(None)
        self.text = QGraphicsTextItem(self.item)
        self._html = ""
        self._entries: dict[object, tuple[str, str, str]] = {}
        self.item.geometryChanged.connect(self.fit)
        self.item.vb.sigResized.connect(self.fit)

    def add(self, key, name: str, colour, style: str = "solid") -> None:
        """Add (or rename) the entry ``key``: ``name`` after a ``style`` sample in ``colour``."""
        self._entries[key] = (name, _hex(colour), SAMPLE[style])
        self.fit()

    def remove(self, key) -> None:
        """Drop the entry ``key``, if there."""
        if self._entries.pop(key, None) is not None:
            self.fit()

    def has(self, key) -> bool:
        """Whether ``key`` has an entry."""
        return key in self._entries

    def names(self) -> list[str]:
        """The entries' names, in order."""
        return [name for name, _, _ in self._entries.values()]

    def html(self) -> str:
        """The title row's text: the title, then each entry (kept whole: no break inside; Qt's
        rich text breaks after a hyphen even in a no-wrap span, so a name's hyphens are
        non-breaking ones and its spaces non-breaking spaces)."""
        nb = "&nbsp;"
        parts = [f"<span style='color:#c8c8d0; font-size:9pt'>{self.title}</span>"]
        for name, colour, sample in self._entries.values():
            parts.append(f"<span style='font-size:8pt; white-space:nowrap'>"
                         f"<span style='color:{colour}'>{sample}</span>{nb}"
                         f"<span style='color:#b4b4bc'>{_unbroken(escape(name))}</span></span>")
        return (nb * 2 + " ").join(parts)

    def fit(self) -> None:
        """Write the title row from the view box's left edge to the plot's right, wrapped
        between entries where it must, and make the row as tall as the text."""
        html = self.html()
        if html != self._html:
            self._html = html
            self.text.setHtml(html)
        left = max(self.item.vb.geometry().x() - 4, 0.0)
        self.text.setTextWidth(max(self.item.width() - left - 4, 40.0))
        self.text.setPos(left, 0)
        height = float(np.ceil(self.text.boundingRect().height()))
        if self.item.layout.rowMinimumHeight(0) != height:
            self.item.layout.setRowFixedHeight(0, height)
            # at once, not at the next layout pass: until then the view box, still at the old
            # row's height, ran under the text's new line (a busy event loop showed it so)
            self.item.layout.activate()

    def scene_rect(self):
        """Where the title row's text (title and legend) is drawn, in scene coordinates."""
        return self.text.mapRectToScene(self.text.boundingRect())


class EnergyPlot(QWidget):
    """Energy of the continuous and rounded iterates, the reference line, and residuals.

    Each plot's legend sits in its title row (:class:`TitleRowLegend`), outside the data; the
    reference and lower-bound lines are named, with their values, in the energy plot's
    legend rather than by a label on the line, which the curves (converging to it) ran under.
    """

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        pg.setConfigOptions(antialias=True)
        lay = QVBoxLayout(self)
        # (a right margin: docked at the window's right edge, the plots ran into it)
        lay.setContentsMargins(0, 0, 10, 0)
        lay.setSpacing(2)
        self.energy = _plot()
        self.energy.setLabel("bottom", "iteration")
        self.energy.showGrid(x=True, y=True, alpha=0.15)
        self._leg = TitleRowLegend(self.energy, "Energy")
        self.c_cont = self.energy.plot([], [], pen=pg.mkPen(C_CONT, width=2))
        self.c_round = self.energy.plot([], [], pen=pg.mkPen(C_ROUND, width=2))
        self._leg.add(self.c_cont, "continuous x", C_CONT)
        self._leg.add(self.c_round, "rounded", C_ROUND)
        ref_pen = pg.mkPen(C_REF, width=1.5, style=Qt.PenStyle.DashLine)
        self.ref_line = SafeLine(angle=0, movable=False, pen=ref_pen)
        self.ref_line.hide()
        self.energy.addItem(self.ref_line, ignoreBounds=False)
        # a constrained yardstick's lower bound on the optimum, below the reference line
        bound_pen = pg.mkPen(C_BOUND, width=1, style=Qt.PenStyle.DotLine)
        self.bound_line = SafeLine(angle=0, movable=False, pen=bound_pen)
        self.bound_line.hide()
        self.energy.addItem(self.bound_line, ignoreBounds=False)
        # the run's answer after ADMM's final polish: a point at the last iteration
        self.final = pg.ScatterPlotItem(symbol="d", size=11, pen=pg.mkPen(BG, width=1.5),
                                        brush=pg.mkBrush(*C_FINAL))
        self.energy.addItem(self.final)
        self.marker = SafeLine(angle=90, movable=False, pen=pg.mkPen(200, 200, 200, 120))
        self.marker.hide()
        self.energy.addItem(self.marker, ignoreBounds=True)
        self.resid = _plot(LogAxis("left"))
        self.resid.getAxis("left").setTickSpacing(1, 1)  # decades only (data are log10)
        self.resid.showGrid(x=True, y=True, alpha=0.15)
        self.resid.setXLink(self.energy)
        self._rleg = TitleRowLegend(self.resid, "Primal residuals (log)")
        self.c_box = self.resid.plot([], [], pen=pg.mkPen(C_BOX, width=1.5))
        self.c_sph = self.resid.plot([], [], pen=pg.mkPen(C_SPH, width=1.5))
        self._rleg.add(self.c_box, "‖x − z₁‖ box", C_BOX)
        self._rleg.add(self.c_sph, "‖x − z₂‖ sphere", C_SPH)
        # the constraint rows' residual, in the legend only when a run has them: the area
        # bounds and apart rows the person set, or for K > 2 the one-hot rows
        # (:meth:`set_constraint_curve`)
        self.c_con = self.resid.plot([], [], pen=pg.mkPen(C_CON, width=1.5), connect="finite")
        self._con_name: str | None = "constraints"
        lay.addWidget(self.energy, 3)
        lay.addWidget(self.resid, 2)
        self.reset()

    def set_constraint_curve(self, name: str | None) -> None:
        """Name the constraint residual's curve for the next run (``"constraints"`` for the
        person's area bounds and apart pairs, ``"one-hot Σₖxₖ = 1"`` for K > 2 without them), or
        ``None``: the run has no constraint rows the person would know of, and no curve is
        drawn (a residual the solver reports is then not the person's constraints')."""
        self._con_name = name
        if name is None:
            self.c_con.setData([], [])
            self._rleg.remove(self.c_con)
        elif self._rleg.has(self.c_con):
            self._rleg.add(self.c_con, name, C_CON)

    def residual_names(self) -> list[str]:
        """The residual plot's legend entries."""
        return self._rleg.names()

    def legends(self) -> list[TitleRowLegend]:
        """The energy plot's and the residual plot's legends."""
        return [self._leg, self._rleg]

    def legend_names(self) -> list[str]:
        """The energy plot's legend entries (curves, then the reference and bound lines)."""
        return self._leg.names()

    def reset(self, reference: float | None = None) -> None:
        """Clear all curves; optionally set the reference energy line."""
        self._it: list[int] = []
        self._ec: list[float] = []
        self._er: list[float] = []
        self._rb: list[float] = []
        self._rs: list[float] = []
        self._rc: list[float] = []
        self._ref: float | None = None
        self._bound: float | None = None
        self._final: float | None = None
        for c in (self.c_cont, self.c_round, self.c_box, self.c_sph, self.c_con):
            c.setData([], [])
        self._rleg.remove(self.c_con)
        self.final.setData([], [])
        self._leg.remove(self.final)
        self.marker.hide()
        # a run's view (zoomed, or framed by _fit_y, which turns y auto-range off) must not
        # outlive it: the next run, or a new image, starts on a blank frame that follows its data
        # (the residual plot's x follows the energy plot's: setting it would turn the energy
        # plot's x auto-range off again)
        self.energy.getViewBox().setRange(xRange=(0, 1), yRange=(0, 1), padding=0)
        self.resid.getViewBox().setRange(yRange=(0, 1), padding=0)
        for plot in (self.energy, self.resid):
            plot.enableAutoRange()
        self.set_reference(reference)

    def set_reference(self, energy: float | None, bound: float | None = None,
                      name: str = "") -> None:
        """Show the reference (the yardstick's) energy as a horizontal line and, where the
        yardstick proves one below it, its lower bound as a second, dotted one."""
        if energy is None or not np.isfinite(energy):
            self.ref_line.hide()
            self._leg.remove(self.ref_line)
        else:
            self.ref_line.setValue(float(energy))
            self.ref_line.show()
            self._leg.add(self.ref_line, f"{name or 'reference'} {float(energy):.6g}", C_REF,
                          "dash")
        self._ref = None if energy is None or not np.isfinite(energy) else float(energy)
        show_bound = (bound is not None and np.isfinite(bound) and self._ref is not None
                      and bound < self._ref - 1e-9 * max(1.0, abs(self._ref)))
        if show_bound:
            self.bound_line.setValue(float(bound))
            self.bound_line.show()
            self._leg.add(self.bound_line, f"lower bound {float(bound):.6g}", C_BOUND, "dot")
        else:
            self.bound_line.hide()
            self._leg.remove(self.bound_line)
        self._bound = float(bound) if show_bound else None
        self._fit_y()

    def set_final(self, iteration: int | None, energy: float | None) -> None:
        """Mark the run's answer: ``energy``, after ADMM's final polish, as a point at
        ``iteration`` (the last one), named with its value in the legend. The rounded curve
        ends at ADMM's own labels; the polish (ICM, region moves, fusions) can take the answer
        well below them, and the point shows where. None hides it."""
        if iteration is None or energy is None or not np.isfinite(energy):
            self.final.setData([], [])
            self._leg.remove(self.final)
            self._final = None
        else:
            self.final.setData([float(iteration)], [float(energy)])
            self._leg.add(self.final, f"after polish {float(energy):.6g}", C_FINAL, "point")
            self._final = float(energy)
        self._fit_y()

    def final_point(self) -> tuple[float, float] | None:
        """The answer's point ``(iteration, energy)``, or None when none is shown."""
        x, y = self.final.getData()
        return None if x is None or not len(x) else (float(x[0]), float(y[0]))

    def add_records(self, records) -> None:
        """Append per-iteration records (objects with iteration, energies, residuals)."""
        for r in records:
            self._it.append(int(r.iteration))
            self._ec.append(float(r.energy_continuous))
            self._er.append(float(r.energy_rounded))
            self._rb.append(max(float(r.residual_box), 1e-12))
            self._rs.append(max(float(r.residual_sphere), 1e-12))
            self._rc.append(float(getattr(r, "residual_constraints", 0.0) or 0.0))
        it = np.asarray(self._it)
        self.c_cont.setData(it, np.asarray(self._ec))
        self.c_round.setData(it, np.asarray(self._er))
        self.c_box.setData(it, np.log10(np.asarray(self._rb)))
        self.c_sph.setData(it, np.log10(np.asarray(self._rs)))
        logs = self._rb + self._rs
        if self._con_name is not None and any(v > 0 for v in self._rc):
            # an iterate on the constraints exactly (residual 0) leaves a gap in the curve
            rc = np.asarray(self._rc)
            with np.errstate(divide="ignore"):
                self.c_con.setData(it, np.where(rc > 0, np.log10(np.where(rc > 0, rc, 1.0)),
                                                np.nan))
            if not self._rleg.has(self.c_con):
                self._rleg.add(self.c_con, self._con_name, C_CON)
            logs = logs + [v for v in self._rc if v > 1e-12]
        self._fit_y()
        lr = np.log10(np.asarray(logs))
        lr = lr[np.isfinite(lr)]
        if lr.size:
            lo = float(np.floor(lr.min()))
            hi = max(float(np.ceil(lr.max())), lo + 1)
            self.resid.setYRange(lo, hi, padding=0.02)  # (the legend is above the plot)
            step = max(1, int(np.ceil((hi - lo) / 5)))  # at most about six labelled decades
            self.resid.getAxis("left").setTickSpacing(step, step)

    def _fit_y(self) -> None:
        """Y range around the rounded energies, the reference and the answer after the polish,
        ignoring the first few iterations. The continuous curve may widen it by at most the
        rounded curve's own span each way: for K > 2 its early values (each level's soft
        phase) lie orders of magnitude below the answer, and a range that took them in
        flattened everything else."""
        if not self._er:
            return
        n = len(self._er)
        skip = min(max(3, n // 20), n - 1) if n > 4 else 0
        rounded = np.asarray(self._er[skip:], dtype=np.float64)
        rounded = rounded[np.isfinite(rounded)]
        cont = np.asarray(self._ec[skip:], dtype=np.float64)
        cont = cont[np.isfinite(cont)]
        if rounded.size:
            lo, hi = float(np.percentile(rounded, 1)), float(np.percentile(rounded, 99))
        elif cont.size:
            lo, hi = float(np.percentile(cont, 1)), float(np.percentile(cont, 99))
        else:
            return
        for line in (self._ref, self._bound, self._final):
            if line is not None:
                lo, hi = min(lo, line), max(hi, line)
        span = max(hi - lo, abs(hi) * 1e-3, 1e-9)
        if cont.size:
            lo = max(min(lo, float(np.percentile(cont, 1))), lo - span)
            hi = min(max(hi, float(np.percentile(cont, 99))), hi + span)
        pad = max(hi - lo, abs(hi) * 1e-3, 1e-9) * 0.08
        self.energy.setYRange(lo - pad, hi + pad, padding=0)

    def y_range(self) -> tuple[float, float]:
        """The energy plot's visible y range."""
        lo, hi = self.energy.getViewBox().viewRange()[1]
        return float(lo), float(hi)

    def set_history(self, history, reference: float | None = None) -> None:
        """Replace the curves with a whole history (e.g. an outcome's)."""
        self.reset(reference)
        self.add_records(history)

    def set_marker(self, iteration: int | None) -> None:
        """Vertical marker at ``iteration`` (replay position); None hides it."""
        if iteration is None:
            self.marker.hide()
        else:
            self.marker.setValue(iteration)
            self.marker.show()

    def n_points(self) -> int:
        """Number of iterations plotted."""
        return len(self._it)

    def iterations(self) -> list[int]:
        """Plotted iteration numbers."""
        return list(self._it)

    def to_csv(self) -> str:
        """The plotted history as CSV text."""
        lines = ["iteration,energy_continuous,energy_rounded,residual_box,residual_sphere,"
                 "residual_constraints"]
        for row in zip(self._it, self._ec, self._er, self._rb, self._rs, self._rc):
            lines.append(",".join(f"{v:.10g}" for v in row))
        return "\n".join(lines) + "\n"
