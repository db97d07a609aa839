"""Live energy and residual plots (pyqtgraph)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PyQt6.QtCore import Qt
from PyQt6.QtWidgets import QVBoxLayout, QWidget

BG = (30, 31, 35)
C_CONT = (90, 170, 255)
C_ROUND = (255, 170, 60)
C_REF = (120, 220, 120)
C_BOX = (200, 120, 255)
C_SPH = (255, 110, 140)
C_CON = (250, 230, 90)
C_BOUND = (120, 220, 120, 150)


class LogAxis(pg.AxisItem):
    """Axis for log10-transformed data: ticks at decades, labelled 10ⁿ."""

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph API
        return [f"1e{int(round(v))}" if abs(v - round(v)) < 1e-6 else "" for v in values]


class EnergyPlot(QWidget):
    """Energy of the continuous and rounded iterates, the reference line, and residuals."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        pg.setConfigOptions(antialias=True)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        self.energy = pg.PlotWidget(background=BG)
        self.energy.setTitle("Energy", color="#c8c8d0", size="9pt")
        self.energy.setLabel("bottom", "iteration")
        self.energy.showGrid(x=True, y=True, alpha=0.15)
        # the energies fall, so their curves end low on the right: the legend goes top right
        leg = self.energy.addLegend(offset=(-8, 8), labelTextSize="8pt")
        leg.setBrush(pg.mkBrush(30, 31, 35, 200))
        self.c_cont = self.energy.plot([], [], pen=pg.mkPen(C_CONT, width=2), name="continuous x")
        self.c_round = self.energy.plot([], [], pen=pg.mkPen(C_ROUND, width=2), name="rounded")
        self.ref_line = pg.InfiniteLine(angle=0, movable=False,
                                        pen=pg.mkPen(C_REF, width=1.5, style=Qt.PenStyle.DashLine),
                                        label="reference",
                                        # the label's left edge near the view's left: a
                                        # centred label of a 7-digit energy ran off the plot
                                        labelOpts={"color": C_REF, "position": 0.03,
                                                   "anchors": [(0, 0), (0, 1)]})
        self.ref_line.hide()
        self.energy.addItem(self.ref_line, ignoreBounds=False)
        # a constrained yardstick's lower bound on the optimum, below the reference line
        self.bound_line = pg.InfiniteLine(angle=0, movable=False,
                                          pen=pg.mkPen(C_BOUND, width=1,
                                                       style=Qt.PenStyle.DotLine),
                                          label="lower bound",
                                          # hanging below the line at the right: clear of
                                          # the reference's label (left, above its line)
                                          labelOpts={"color": C_BOUND, "position": 0.97,
                                                     "anchors": [(1, 0), (1, 0)]})
        self.bound_line.hide()
        self.energy.addItem(self.bound_line, ignoreBounds=False)
        self.marker = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen(200, 200, 200, 120))
        self.marker.hide()
        self.energy.addItem(self.marker, ignoreBounds=True)
        self.resid = pg.PlotWidget(background=BG, axisItems={"left": LogAxis("left")})
        self.resid.setTitle("Primal residuals (log)", color="#c8c8d0", size="9pt")
        self.resid.getAxis("left").setTickSpacing(1, 1)  # decades only (data are log10)
        self.resid.showGrid(x=True, y=True, alpha=0.15)
        self.resid.setXLink(self.energy)
        # one row along the top, in head-room the y range keeps free (see add_records)
        rleg = self.resid.addLegend(offset=(-8, 2), labelTextSize="8pt", colCount=2)
        rleg.setBrush(pg.mkBrush(30, 31, 35, 200))
        self.c_box = self.resid.plot([], [], pen=pg.mkPen(C_BOX, width=1.5), name="‖x − z₁‖ box")
        self.c_sph = self.resid.plot([], [], pen=pg.mkPen(C_SPH, width=1.5),
                                     name="‖x − z₂‖ sphere")
        # the area bounds' and apart rows' residual, in the legend only when a run has them
        self.c_con = self.resid.plot([], [], pen=pg.mkPen(C_CON, width=1.5), connect="finite")
        self._rleg = rleg
        lay.addWidget(self.energy, 3)
        lay.addWidget(self.resid, 2)
        self.reset()

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
        for c in (self.c_cont, self.c_round, self.c_box, self.c_sph, self.c_con):
            c.setData([], [])
        self._rleg.removeItem(self.c_con)
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
        else:
            self.ref_line.setValue(float(energy))
            self.ref_line.show()
            self.ref_line.label.setFormat(f"{name or 'reference'} {float(energy):.6g}")
        self._ref = None if energy is None or not np.isfinite(energy) else float(energy)
        show_bound = (bound is not None and np.isfinite(bound) and self._ref is not None
                      and bound < self._ref - 1e-9 * max(1.0, abs(self._ref)))
        if show_bound:
            self.bound_line.setValue(float(bound))
            self.bound_line.label.setFormat(f"lower bound {float(bound):.6g}")
            self.bound_line.show()
        else:
            self.bound_line.hide()
        self._bound = float(bound) if show_bound else None
        self._fit_y()

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
        if any(v > 0 for v in self._rc):
            # an iterate on the constraints exactly (residual 0) leaves a gap in the curve
            rc = np.asarray(self._rc)
            with np.errstate(divide="ignore"):
                self.c_con.setData(it, np.where(rc > 0, np.log10(np.where(rc > 0, rc, 1.0)),
                                                np.nan))
            if self._rleg.getLabel(self.c_con) is None:
                self._rleg.addItem(self.c_con, "constraints")
            logs = logs + [v for v in self._rc if v > 1e-12]
        self._fit_y()
        lr = np.log10(np.asarray(logs))
        lr = lr[np.isfinite(lr)]
        if lr.size:
            lo = float(np.floor(lr.min()))
            hi = max(float(np.ceil(lr.max())), lo + 1)
            self.resid.setYRange(lo, hi + 0.25 * (hi - lo), padding=0.02)  # + legend head-room
            step = max(1, int(np.ceil((hi - lo) / 5)))  # at most about six labelled decades
            self.resid.getAxis("left").setTickSpacing(step, step)

    def _fit_y(self) -> None:
        """Y range around the rounded energies and the reference, ignoring the first few
        iterations. The continuous curve may widen it by at most the rounded curve's own span
        each way: for K > 2 its early values (each level's soft phase) lie orders of magnitude
        below the answer, and a range that took them in flattened everything else."""
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
        for line in (self._ref, self._bound):
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
