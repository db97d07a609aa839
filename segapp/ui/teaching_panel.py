"""The main window's teaching additions: the "Mass and probe" dock and the Teach menu.

:func:`install_teaching` adds them to a :class:`segapp.ui.main_window.MainWindow` and wires
them to its solve controller (live frames and probe samples), its replay slider and its canvas.
"""
from __future__ import annotations

import logging

from PyQt6.QtCore import Qt
from PyQt6.QtGui import QAction
from PyQt6.QtWidgets import (
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from segapp.core.probe import ProbeStore
from segapp.ui.histogram import MassHistogram
from segapp.ui.probe import CanvasClicks, ProbeChart, follow_label

log = logging.getLogger(__name__)

#: What the histogram and the probe say before there is anything to show.
NO_RUN = "Run ADMM to see where the mass goes"
NO_PIXEL = "Probe: click a pixel of the photo to follow its values"
#: The probe button's text, off and on.
PROBE_OFF, PROBE_ON = "Probe a pixel", "Probing: click the photo"


class TeachingPanel(QWidget):
    """The histogram of the continuous values and the probe, linked to a main window.

    Parameters
    ----------
    win : MainWindow
        Its ``solver`` (signals ``frame``, ``splits``, ``finished``, ``running_changed``),
        ``frames`` (the replay's store), ``results_panel.replay`` and ``canvas`` are used.
    """

    def __init__(self, win) -> None:
        super().__init__()
        self.win = win
        self.store = ProbeStore()
        self.pixel: tuple[int, int] | None = None  # (y, x)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        row = QHBoxLayout()
        self.probe_button = QPushButton(PROBE_OFF)
        self.probe_button.setCheckable(True)
        self.probe_button.setToolTip("While on, a click on the photo picks the pixel to follow "
                                     "(instead of drawing)")
        # (the app's style gives push buttons no checked look of their own: say it here)
        self.probe_button.setStyleSheet(
            "QPushButton:checked { background: #4a5a7a; border: 1px solid #7d9bd6; "
            "border-radius: 4px; color: white; }")
        self.probe_button.toggled.connect(self.set_probing)
        hint = QLabel("replay slider: Results tab")
        hint.setStyleSheet("color: #9a9aa4;")
        row.addWidget(self.probe_button)
        row.addStretch(1)
        row.addWidget(hint)
        lay.addLayout(row)
        self.histogram = MassHistogram()
        self.chart = ProbeChart()
        lay.addWidget(self.histogram, 1)
        lay.addWidget(self.chart, 1)
        self.clicks = CanvasClicks(win.canvas)
        self.clicks.picked.connect(self.probe)
        s = win.solver
        s.running_changed.connect(self._on_running)
        s.frame.connect(self._on_frame)
        s.splits.connect(self._on_splits)
        s.finished.connect(lambda _outcome: self.show_replay())
        win.results_panel.replay_changed.connect(lambda _idx: self.show_replay())
        win.doc.subscribe(self._on_doc)

    def _on_doc(self, kind: str, _box) -> None:
        if kind == "image":
            self.reset()

    def reset(self) -> None:
        """Forget the run and the probed pixel (a new image: neither belongs to it)."""
        self.store.clear()
        self.pixel = None
        self.chart.note = NO_PIXEL
        self.chart.set_series(None, None)
        self.chart.set_marker(None)
        self.histogram.note = NO_RUN
        self.histogram.set_frame(None, None)

    # ---------------------------------------------------------------- probing
    def set_probing(self, on: bool) -> None:
        """Turn probe mode on (canvas clicks pick a pixel) or off (they draw again)."""
        if self.probe_button.isChecked() != on:
            self.probe_button.setChecked(on)
            return
        self.clicks.set_active(on)
        self.probe_button.setText(PROBE_ON if on else PROBE_OFF)
        if on and getattr(self.win, "show_teaching_dock", None) is not None:
            self.win.show_teaching_dock()
        self.win.statusBar().showMessage(
            "Probe: click a pixel to follow its x, z₁ and z₂" if on else "Probe off", 4000)

    def probe(self, x: int, y: int) -> None:
        """Follow image pixel ``(x, y)``."""
        self.pixel = (int(y), int(x))
        self._refresh_probe()

    def series(self) -> dict | None:
        """The probed pixel's values over the run (None: no pixel or no samples): label 1's
        weight for K = 2; for K > 2 the label the pixel ends with, and every label's
        (:func:`segapp.ui.probe.follow_label`)."""
        if self.pixel is None or not len(self.store):
            return None
        if self.store.labels() > 1:  # K > 2: every label's values, the pixel's label followed
            return follow_label(self.store.series_by_label(*self.pixel))
        return self.store.series(*self.pixel)

    def _refresh_probe(self) -> None:
        s = self.series()
        if s is None and self.pixel is not None:
            self.chart.note = (f"Pixel (x {self.pixel[1]}, y {self.pixel[0]}): run ADMM to "
                               "follow its values")
        self.chart.set_series(None if self.pixel is None else self.pixel, s)
        self.chart.set_marker(self._replay_iteration())

    # ---------------------------------------------------------------- run and replay
    def _on_running(self, running: bool) -> None:
        if running:
            # the last run's frame and samples are not this run's: wait for its own
            self.store.clear()
            if self.pixel is not None:
                self.chart.note = (f"Pixel (x {self.pixel[1]}, y {self.pixel[0]}): waiting for "
                                   "the run's first iterations")
            self.chart.set_series(self.pixel, None)
            self.chart.set_marker(None)
            self.histogram.note = "Waiting for ADMM's first iterate…"
            self.histogram.set_frame(None, None)
        else:
            self.histogram.note = NO_RUN  # (a run that failed before its first iterate)
            self.histogram.update()

    def _on_frame(self, iteration: int, probs) -> None:
        if self.isVisible():
            self.histogram.set_frame(iteration, probs, "(live)")

    def _on_splits(self, iteration: int, values) -> None:
        self.store.add(iteration, values)
        if self.pixel is not None and self.isVisible():
            self._refresh_probe()

    def _replay_iteration(self) -> int | None:
        frames = self.win.frames
        if not len(frames):
            return None
        idx = min(self.win.results_panel.replay.value(), len(frames) - 1)
        return frames.get(idx)[0]

    def show_replay(self) -> None:
        """Show the frame at the replay slider: its histogram, and the probe marked there."""
        frames = self.win.frames
        if self.win.running or not len(frames):
            return
        idx = min(self.win.results_panel.replay.value(), len(frames) - 1)
        it, probs = frames.get(idx)
        final = idx >= len(frames) - 1
        self.histogram.set_frame(it, probs, "(final labels)" if final else "")
        self._refresh_probe()


def install_teaching(win) -> TeachingPanel:
    """Add the "Mass and probe" dock (tabbed with the convergence plot) and the Teach menu to
    ``win``; returns the panel (also ``win.teaching``)."""
    from segapp.ui.guided_demo import GuidedDemo

    panel = TeachingPanel(win)
    dock = QDockWidget("Mass and probe", win)
    dock.setObjectName("teaching")
    dock.setWidget(panel)
    dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                     | QDockWidget.DockWidgetFeature.DockWidgetFloatable)
    plot_dock = win.findChild(QDockWidget, "plot")
    win.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    if plot_dock is not None:
        win.tabifyDockWidget(plot_dock, dock)
        plot_dock.raise_()
    win.teaching, win.teaching_dock = panel, dock
    win.geometry_view = None
    win.guided_demo = GuidedDemo(win)

    def open_geometry():
        from segapp.ui.geometry_view import GeometryView
        if win.geometry_view is None:
            win.geometry_view = GeometryView(win)
        win.geometry_view.show()
        win.geometry_view.raise_()
        return win.geometry_view

    def show_dock():
        dock.show()
        dock.raise_()

    win.open_geometry = open_geometry
    win.show_teaching_dock = show_dock
    menu = win.menuBar().addMenu("&Teach")
    for text, slot, tip in (
            ("&Geometry of ADMM…", open_geometry, "Tiny problems drawn in their own space: the "
             "box, the sphere and ADMM's walk between them"),
            ("&Mass and probe", show_dock, "Histogram of the continuous values; follow a pixel"),
            ("Guided &demo (lecture)", win.guided_demo.start, "A short guided sequence: the "
             "geometry, then the cameraman")):
        a = QAction(text, win)
        a.setStatusTip(tip)
        a.triggered.connect(lambda _=False, f=slot: f())
        menu.addAction(a)
    probe = QAction("&Probe a pixel", win)
    probe.setCheckable(True)
    probe.toggled.connect(panel.set_probing)
    panel.probe_button.toggled.connect(probe.setChecked)
    menu.addAction(probe)
    win.act_probe = probe
    return panel


__all__ = ["TeachingPanel", "install_teaching"]
