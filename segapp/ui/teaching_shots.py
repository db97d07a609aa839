"""Headless screenshots of the teaching views (``segapp --demo-screenshot OUT --view ...``)."""
from __future__ import annotations

import logging
from collections.abc import Callable

from PyQt6.QtCore import QCoreApplication, QEvent
from PyQt6.QtWidgets import QApplication

log = logging.getLogger(__name__)

#: The size the teaching screenshots are taken at (a common laptop screen).
SHOT_SIZE = (1366, 768)


def _save(app: QApplication, widget, out_path: str) -> int:
    for _ in range(5):
        app.processEvents()
    if not widget.grab().save(str(out_path), "PNG"):
        log.error("could not write %s", out_path)
        return 1
    return 0


def geometry_screenshot(app: QApplication, out_path: str, preset: int = 0) -> int:
    """Open the Geometry window on ``preset``, play the walk to its end (every iterate drawn in
    turn), save a screenshot of the window; 0 on success, 1 on failure."""
    from segapp.ui.geometry_view import GeometryView
    view = GeometryView()
    try:
        view.resize(*SHOT_SIZE)
        view.show()
        view.set_preset(preset)
        for i in range(len(view.trace)):
            view.set_index(i)
            app.processEvents()
        return _save(app, view, out_path)
    finally:
        view.close()
        view.deleteLater()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)


def histogram_screenshot(app: QApplication, win, out_path: str, max_iter: int | None,
                         run_demo: Callable[..., bool]) -> int:
    """Run ADMM on the cameraman in ``win`` (1366×768), bring the "Mass and probe" dock forward
    with the replay at its first stored iteration and a pixel of the man's coat probed, and save
    a screenshot of the window (``run_demo(app, win, size, max_iter)``: open the sample and run
    it, :func:`segapp.ui.app.run_demo_sample`); 0 on success, 1 on failure."""
    if not run_demo(app, win, SHOT_SIZE, max_iter):
        return 1
    win.show_teaching_dock()
    win.side_tabs.setCurrentWidget(win.results_panel)
    win.results_panel.replay.setValue(0)  # the first stored iteration: mass still spread
    h, w = win.doc.shape
    win.teaching.set_probing(True)
    win.teaching.probe(w // 2 - w // 10, h // 2)
    return _save(app, win, out_path)


__all__ = ["SHOT_SIZE", "geometry_screenshot", "histogram_screenshot"]
