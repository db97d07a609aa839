"""Qt tests (offscreen) of the window as a person meets it (issue #33): the mouse wheel zooms
about the point under the cursor and never leaves the view blank, strokes painted after a zoom
land under the cursor, panning is explained on the canvas, the window fits a 1366x768 screen
with a usable plot, and the opacity slider acts on the live result during a run.
"""
from __future__ import annotations


import numpy as np
import pytest

from PyQt6.QtCore import QEvent, QPoint, QPointF, QRect, QStandardPaths, Qt
from PyQt6.QtGui import QCursor, QHelpEvent, QImage, QScreen, QWheelEvent
from PyQt6.QtTest import QTest
from PyQt6.QtWidgets import QApplication, QDockWidget, QToolTip

from segapp.core.colouring import display_rgb
from segapp.ui.main_window import MainWindow
from tests.segapp.conftest import pace_iterations, slow_job

QStandardPaths.setTestModeEnabled(True)


def picture(h: int, w: int, seed: int = 0) -> np.ndarray:
    """A grey (H, W, 3) picture: a bright disc on a dark, noisy background."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    disc = (yy - h / 2) ** 2 + (xx - w / 2) ** 2 < (min(h, w) / 3) ** 2
    img = np.clip(np.where(disc, 190, 60) + rng.normal(0, 10, (h, w)), 0, 255).astype(np.uint8)
    return np.dstack([img] * 3)


def open_picture(win, qtbot, h: int, w: int) -> None:
    win.doc.set_image(picture(h, w), "picture.png")
    win.canvas.fit_to_window()
    qtbot.wait(10)


def wheel(canvas, pos: QPoint, clicks: int) -> None:
    """``clicks`` wheel clicks (positive: away from the user, zoom in) at viewport ``pos``,
    the mouse moved there first as a hand would (the view is under the mouse, the cursor is
    at ``pos``: what Qt's own zoom anchor reads)."""
    vp = canvas.viewport()
    QCursor.setPos(vp.mapToGlobal(pos))
    QTest.mouseMove(vp, pos)
    for _ in range(abs(clicks)):
        ev = QWheelEvent(QPointF(pos), QPointF(vp.mapToGlobal(pos)), QPoint(0, 0),
                         QPoint(0, 120 if clicks > 0 else -120), Qt.MouseButton.NoButton,
                         Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
        QApplication.sendEvent(vp, ev)


def visible_scene_rect(canvas):
    return canvas.mapToScene(canvas.viewport().rect()).boundingRect()


def image_in_view(canvas, px: float = 32.0) -> bool:
    """The view is not blank: the image item is in view, at least ``px`` screen pixels of it
    across and down (or all of it, where it is shown smaller than that)."""
    img = canvas.photo.sceneBoundingRect()
    seen = visible_scene_rect(canvas).intersected(img)
    z = canvas.zoom()
    return (not seen.isEmpty() and seen.width() * z >= min(px, img.width() * z) - 1
            and seen.height() * z >= min(px, img.height() * z) - 1)


# ------------------------------------------------------------------------------- wheel zoom
@pytest.mark.parametrize("size, start, where, clicks", [
    ((40, 40), "fit", (0.25, 0.7), [3, 3, -2, -6, -6, 4]),   # in, then out until tiny, back in
    ((300, 400), "1:1", (0.8, 0.3), [2, 4, -3, -5, -4, 6]),  # a photo at 1:1, off centre
    ((40, 40), "fit", (0.9, 0.1), [-5, -5, -5, 8, 12]),       # smaller than the view, far out
])
def test_wheel_zoom_keeps_the_point_under_the_cursor(win, qtbot, size, start, where, clicks):
    open_picture(win, qtbot, *size)
    c = win.canvas
    if start == "1:1":
        win.act_1to1.trigger()
    img_rect = c.photo.sceneBoundingRect()
    # a viewport position over the image, away from the view's centre
    target = QPointF(img_rect.left() + where[0] * img_rect.width(),
                     img_rect.top() + where[1] * img_rect.height())
    pos = c.mapFromScene(target)
    assert c.viewport().rect().contains(pos)
    anchor = c.mapToScene(pos)
    zooms = [c.zoom()]
    for n in clicks:
        wheel(c, pos, n)
        z = c.zoom()
        zooms.append(z)
        moved = c.mapToScene(pos) - anchor
        assert max(abs(moved.x()), abs(moved.y())) <= 1.0 / z + 1e-9, (n, z, moved)
        assert image_in_view(c)
    assert max(zooms) > 2 * zooms[0] and min(zooms) < zooms[0] / 2  # it did zoom both ways
    # at the smallest zoom the whole image was smaller than the view: the case Qt's own anchor
    # cannot handle (no scroll range)
    assert min(zooms) * max(size) < min(c.viewport().width(), c.viewport().height())


@pytest.mark.slow
def test_wheel_zoom_never_leaves_the_view_blank(win, qtbot):
    """Zooming in hard with the cursor beside the image, then out and in again at a corner."""
    open_picture(win, qtbot, 40, 40)
    c = win.canvas
    vp = c.viewport().rect()
    for pos, clicks in ((QPoint(5, 5), 12), (QPoint(vp.width() - 5, vp.height() - 5), -14),
                        (QPoint(vp.width() - 5, 5), 20)):
        for _ in range(clicks if clicks > 0 else -clicks):
            wheel(c, pos, 1 if clicks > 0 else -1)
            assert image_in_view(c), (pos, c.zoom())


def test_a_stroke_after_a_wheel_zoom_lands_under_the_cursor(win, qtbot):
    open_picture(win, qtbot, 120, 160)
    c = win.canvas
    win.tools.size_slider.setValue(1)
    c.set_brush_radius(1.0)
    c.set_tool("brush")
    c.label = 2
    # the cursor rests on an image pixel off the view's centre; the user zooms in there
    ax, ay = 48, 72
    a = c.mapFromScene(QPointF(ax + 0.5, ay + 0.5))
    wheel(c, a, 4)
    assert c.zoom() > 2 * 1.25 ** 3
    # ... and paints from there, 90 screen pixels to the right
    b = a + QPoint(90, 0)
    end = c.mapToScene(b)
    bx, by = int(end.x()), int(end.y())
    vp = c.viewport()
    QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, a)
    QTest.mouseMove(vp, a + QPoint(45, 0))
    QTest.mouseMove(vp, b)
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, b)
    s = win.doc.strokes
    assert s[ay, ax] == 2, "the stroke does not start on the pixel under the cursor"
    assert abs(by - ay) <= 1 and s[by, bx] == 2
    assert (s[ay, ax:bx + 1] == 2).all()
    # 90 screen pixels at this zoom are fewer image pixels than at fit
    assert 0 < bx - ax <= 90 / c.zoom() + 2
    assert np.count_nonzero(s) <= 3 * (bx - ax + 3)   # nothing painted elsewhere


@pytest.mark.slow
def test_panning_is_explained_on_the_canvas(win, qtbot):
    open_picture(win, qtbot, 40, 40)
    c = win.canvas
    tip = c.toolTip()
    assert "Wheel" in tip and "zoom" in tip
    assert "Space-drag" in tip and "middle-drag" in tip and "pan" in tip
    # the hint is what a pause over the canvas actually shows
    vp = c.viewport()
    pos = QPoint(vp.width() // 2, vp.height() // 2)
    QApplication.sendEvent(vp, QHelpEvent(QEvent.Type.ToolTip, pos, vp.mapToGlobal(pos)))
    try:
        assert QToolTip.isVisible() and QToolTip.text() == tip
    finally:
        # gone for good while the window lives: Qt's tip label hides on a timer and keeps a
        # pointer to the widget it was shown for, and a tip still pending when the window was
        # deleted crashed a later test's event processing (a segfault two tests on)
        QToolTip.hideText()
        qtbot.waitUntil(lambda: not QToolTip.isVisible(), timeout=5000)
        qtbot.wait(500)


# ------------------------------------------------------------------------------- window size
def test_the_window_fits_a_1366x768_screen_with_a_usable_plot(qtbot, monkeypatch):
    avail = QRect(0, 0, 1366, 708)  # 1366x768 less a 60-pixel panel
    monkeypatch.setattr(QScreen, "availableGeometry", lambda self: QRect(avail))
    w = MainWindow(confirm_discard=False)
    qtbot.addWidget(w)
    assert w.width() <= avail.width() and w.height() <= avail.height()
    w.show()
    qtbot.waitExposed(w)
    try:
        qtbot.wait(20)
        # the layout did not push it past the screen (minimum sizes), with room for a frame
        assert w.width() <= avail.width() and w.height() <= avail.height() - 24
        assert w.plot.height() >= 180
        assert w.canvas.viewport().height() >= 400 and w.canvas.viewport().width() >= 600
        # the user drags the dock splitter to give the settings all the room: the plot stays
        settings, plot = (w.findChild(QDockWidget, n) for n in ("settings", "plot"))
        w.resizeDocks([settings, plot], [2000, 10], Qt.Orientation.Vertical)
        qtbot.wait(20)
        assert w.plot.height() >= 180 and w.height() <= avail.height() - 24
    finally:
        w.solver.shutdown()
        w.doc.dirty = False


LARGE_SCREEN = """
import json, sys
from PyQt6.QtCore import QRect
from PyQt6.QtGui import QScreen
from PyQt6.QtWidgets import QApplication
app = QApplication([])
QScreen.availableGeometry = lambda self: QRect(0, 0, 2560, 1400)
from segapp.ui.main_window import MainWindow
w = MainWindow(confirm_discard=False)
print(json.dumps([w.width(), w.height()]))
w.solver.shutdown()
sys.stdout.flush()
"""


@pytest.mark.slow
def test_the_window_keeps_its_size_on_a_large_screen(tmp_path):
    """On a 2560 x 1400 screen the window opens at its own 1440 x 900. (In a process of its
    own: a never-shown window made in the suite's worker was where a worker segfaulted, at
    random, in Qt's event processing after the test.)"""
    import json
    import os
    import subprocess
    import sys
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", SEGAPP_AUTOSAVE_DIR=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", LARGE_SCREEN], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [1440, 900]


# ------------------------------------------------------------------------------- opacity
def _shown(canvas, image: np.ndarray, pixels) -> np.ndarray:
    """The viewport's RGB at the centres of image ``pixels`` [(x, y), ...]."""
    grabbed = canvas.viewport().grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    out = []
    for x, y in pixels:
        p = canvas.mapFromScene(QPointF(x + 0.5, y + 0.5))
        c = grabbed.pixelColor(p)
        out.append((c.red(), c.green(), c.blue()))
    return np.array(out, np.int16)


@pytest.mark.slow
def test_opacity_slider_acts_on_the_live_result_during_a_run(win, qtbot, monkeypatch):
    pace_iterations(monkeypatch)
    img, strokes = slow_job()
    img = np.dstack([img] * 3)
    win.doc.set_image(img, "slow.png")
    win.doc.set_layers(strokes=strokes)
    win.canvas.fit_to_window()
    win.results_panel.strokes.setChecked(False)
    win.params_panel.admm["max_iter"].setValue(100000)
    win.params_panel.admm["tol"].setValue(1e-6)
    win.params_panel.reference.setChecked(False)
    with qtbot.waitSignal(win.solver.frame, timeout=300000):  # a cold kernel cache compiles
        assert win.start_run()
    qtbot.wait(50)
    assert win.running and not win.canvas.result.pixmap().isNull()
    rng = np.random.default_rng(1)
    pixels = [(int(x), int(y)) for x, y in rng.integers(4, 56, (40, 2))]
    photo = display_rgb(img)[[y for _, y in pixels], [x for x, _ in pixels]].astype(np.int16)
    try:
        win.results_panel.opacity.setValue(0)
        assert win.canvas.result.opacity() == 0.0   # at once, not at the end of the run
        qtbot.wait(30)
        assert win.running
        assert np.abs(_shown(win.canvas, img, pixels) - photo).max() <= 3
        win.results_panel.opacity.setValue(100)
        assert win.canvas.result.opacity() == 1.0
        qtbot.wait(30)
        assert win.running
        assert np.abs(_shown(win.canvas, img, pixels) - photo).max() > 40
        win.results_panel.opacity.setValue(30)
        assert win.canvas.result.opacity() == pytest.approx(0.30)
    finally:
        win.cancel_run()
        qtbot.waitUntil(lambda: not win.running, timeout=60000)
