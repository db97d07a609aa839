"""Qt tests (offscreen): what the canvas shows and does that the other canvas tests leave open,
read back from the screen (the viewport's pixels at 1:1 zoom), the status bar, the scroll bars
and the document:

- the result overlay over the whole photo at the slider's opacity (a result of lower resolution
  stretched over it), the disagreement layer over it, both taken away again;
- the hint drawn on an empty canvas, gone once a photo is open;
- the pixel readout while the pointer moves over the photo and its clearing outside it;
- the brush outline under the pointer, hidden for the rectangle tool, while panning and once
  the pointer leaves;
- space-drag panning, the smallest brush, the zoom's limits and an unknown tool.
"""
from __future__ import annotations

import numpy as np
import pytest
from PyQt6.QtCore import QEvent, QPoint, QPointF, Qt
from PyQt6.QtGui import QWheelEvent
from PyQt6.QtTest import QTest

from tests.segapp.ui.test_ui_canvas_agrees import PHOTO, grab_viewport, open_photo, vpos

LEFT, NONE_MOD = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier


def at_1to1(win, qtbot, tmp_path, h=36, w=48):
    doc = open_photo(win, qtbot, tmp_path, h, w)
    win.canvas.actual_size()
    qtbot.wait(10)
    return doc


def zoomed_in(win, qtbot, tmp_path, h=36, w=48):
    """The photo at 8 screen pixels per image pixel: a pointer at a pixel's centre is well
    inside it."""
    doc = open_photo(win, qtbot, tmp_path, h, w)
    win.canvas.set_zoom(8.0)
    qtbot.wait(10)
    return doc


def shown(win, h=36, w=48) -> np.ndarray:
    """The image's pixels as the viewport shows them at 1:1, RGB int."""
    shot = grab_viewport(win.canvas)
    p = win.canvas.mapFromScene(QPointF(0, 0))
    return shot[p.y():p.y() + h, p.x():p.x() + w, :3].astype(int)


# ------------------------------------------------------------------------- result layers
def test_the_result_is_drawn_over_the_whole_photo_at_the_sliders_opacity(win, qtbot, tmp_path):
    at_1to1(win, qtbot, tmp_path)
    assert np.all(shown(win) == PHOTO)  # the premise: the photo alone
    small = np.zeros((18, 24, 3), np.uint8)  # half the photo's resolution, four colours
    small[:9, :12], small[:9, 12:], small[9:, :12], small[9:, 12:] = \
        (250, 10, 10), (10, 250, 10), (250, 250, 10), (10, 10, 250)
    win.canvas.set_result(small)
    win.canvas.set_result_opacity(1.0)
    qtbot.wait(10)
    want = np.repeat(np.repeat(small, 2, axis=0), 2, axis=1).astype(int)
    assert np.abs(shown(win) - want).max() <= 1
    win.canvas.set_result_opacity(0.5)
    qtbot.wait(10)
    assert np.abs(shown(win) - (want + np.array(PHOTO)) / 2).max() <= 2
    win.canvas.set_result(None)
    qtbot.wait(10)
    assert np.all(shown(win) == PHOTO)


def test_the_disagreement_layer_is_drawn_over_the_result_and_taken_away(win, qtbot, tmp_path):
    at_1to1(win, qtbot, tmp_path)
    win.canvas.set_result(np.full((36, 48, 3), (10, 250, 10), np.uint8))
    win.canvas.set_result_opacity(1.0)
    marks = np.zeros((36, 48, 4), np.uint8)
    marks[5:10, 7:20] = (255, 0, 255, 255)
    win.canvas.set_compare(marks)
    qtbot.wait(10)
    got = shown(win)
    assert np.all(got[5:10, 7:20] == (255, 0, 255))
    rest = np.ones((36, 48), bool)
    rest[5:10, 7:20] = False
    assert np.all(np.abs(got[rest] - (10, 250, 10)) <= 1)
    win.canvas.set_compare(None)
    qtbot.wait(10)
    assert np.all(np.abs(shown(win) - (10, 250, 10)) <= 1)


# ------------------------------------------------------------------------- the empty canvas
def hint_pixels(win) -> np.ndarray:
    shot = grab_viewport(win.canvas)[..., :3].astype(int)
    return np.all(np.abs(shot - (150, 152, 160)) <= 40, axis=2)


@pytest.mark.slow
def test_an_empty_canvas_says_how_to_open_a_photo_and_a_photo_takes_it_away(win, qtbot,
                                                                              tmp_path):
    assert not win.doc.has_image  # the premise
    hint = hint_pixels(win)
    assert hint.sum() > 100
    ys, xs = np.nonzero(hint)
    h, w = hint.shape
    assert abs((ys.min() + ys.max()) / 2 - h / 2) < h * 0.1  # centred
    assert abs((xs.min() + xs.max()) / 2 - w / 2) < w * 0.1
    open_photo(win, qtbot, tmp_path)
    assert not hint_pixels(win).any()


# ------------------------------------------------------------------------- the pointer
@pytest.mark.slow
def test_the_readout_follows_the_pointer_over_the_photo_only(win, qtbot, tmp_path):
    doc = zoomed_in(win, qtbot, tmp_path)
    vp = win.canvas.viewport()
    for x, y in ((0, 0), (47, 35), (20, 7)):
        QTest.mouseMove(vp, vpos(win, x, y))
        assert win.pos_label.text() == f"x {x}, y {y}"
    doc.set_layers(strokes=np.full(doc.shape, 2, np.uint8))
    QTest.mouseMove(vp, vpos(win, 3, 4))
    assert win.pos_label.text() == "x 3, y 4   stroke 2"
    for x, y in ((-1, 5), (48, 5), (5, -1), (5, 36)):
        QTest.mouseMove(vp, vpos(win, 3, 4))
        QTest.mouseMove(vp, vpos(win, x, y))
        assert win.pos_label.text() == "", (x, y)
    QTest.mouseMove(vp, vpos(win, 3, 4))
    win.canvas.leaveEvent(QEvent(QEvent.Type.Leave))
    assert win.pos_label.text() == ""
    assert not win.canvas.cursor_item.isVisible()


@pytest.mark.slow
def test_the_brush_outline_is_the_brush_under_the_pointer(win, qtbot, tmp_path):
    zoomed_in(win, qtbot, tmp_path)
    c, vp = win.canvas, win.canvas.viewport()
    c.set_tool("brush")
    c.set_brush_radius(3.0)
    QTest.mouseMove(vp, vpos(win, 10, 12))
    item = c.cursor_item
    assert item.isVisible()
    r = item.mapRectToScene(item.rect())
    # centred on the pointer, the brush's diameter across
    assert r.center() == c.mapToScene(vpos(win, 10, 12))
    assert (r.width(), r.height()) == (6.0, 6.0)
    c.set_tool("rect")
    QTest.mouseMove(vp, vpos(win, 11, 12))
    assert not item.isVisible()
    c.set_tool("eraser")
    QTest.mouseMove(vp, vpos(win, 12, 12))
    assert item.isVisible()
    # while the middle button pans, no outline
    QTest.mousePress(vp, Qt.MouseButton.MiddleButton, NONE_MOD, vpos(win, 12, 12))
    QTest.mouseMove(vp, vpos(win, 14, 12))
    assert not item.isVisible()
    QTest.mouseRelease(vp, Qt.MouseButton.MiddleButton, NONE_MOD, vpos(win, 14, 12))


def test_the_smallest_brush_paints_the_one_pixel_under_the_pointer(win, qtbot, tmp_path):
    doc = zoomed_in(win, qtbot, tmp_path)
    c, vp = win.canvas, win.canvas.viewport()
    c.set_tool("brush")
    c.label = 1
    c.set_brush_radius(0.1)
    assert c.brush_radius == 0.5
    QTest.mousePress(vp, LEFT, NONE_MOD, vpos(win, 9, 6))
    QTest.mouseRelease(vp, LEFT, NONE_MOD, vpos(win, 9, 6))
    assert np.argwhere(doc.strokes).tolist() == [[6, 9]]


def test_an_unknown_tool_is_refused_naming_it(win):
    with pytest.raises(ValueError) as err:
        win.canvas.set_tool("lasso")
    assert str(err.value) == "unknown tool 'lasso'"
    assert win.canvas.tool == "brush"


# ------------------------------------------------------------------------- panning, zooming
@pytest.mark.slow
def test_space_and_the_left_button_pan_without_painting(win, qtbot, tmp_path):
    doc = open_photo(win, qtbot, tmp_path, 200, 300)
    c, vp = win.canvas, win.canvas.viewport()
    c.set_zoom(4.0)
    qtbot.wait(10)
    hb, vb = c.horizontalScrollBar(), c.verticalScrollBar()
    h0, v0 = hb.value(), vb.value()
    start = QPoint(vp.width() // 2, vp.height() // 2)
    QTest.keyPress(c, Qt.Key.Key_Space)
    assert vp.cursor().shape() == Qt.CursorShape.OpenHandCursor
    QTest.mousePress(vp, LEFT, NONE_MOD, start)
    assert vp.cursor().shape() == Qt.CursorShape.ClosedHandCursor
    QTest.mouseMove(vp, start + QPoint(-30, -20))
    QTest.mouseRelease(vp, LEFT, NONE_MOD, start + QPoint(-30, -20))
    assert (hb.value(), vb.value()) == (h0 + 30, v0 + 20)
    assert vp.cursor().shape() == Qt.CursorShape.OpenHandCursor  # space still held
    QTest.keyRelease(c, Qt.Key.Key_Space)
    assert vp.cursor().shape() == Qt.CursorShape.CrossCursor
    assert not doc.strokes.any()
    # space let go: the left button paints again
    QTest.mousePress(vp, LEFT, NONE_MOD, start)
    QTest.mouseRelease(vp, LEFT, NONE_MOD, start)
    assert doc.strokes.any()


@pytest.mark.slow
def test_a_middle_drag_pans_by_the_distance_dragged(win, qtbot, tmp_path):
    open_photo(win, qtbot, tmp_path, 200, 300)
    c, vp = win.canvas, win.canvas.viewport()
    c.set_zoom(4.0)
    hb, vb = c.horizontalScrollBar(), c.verticalScrollBar()
    h0, v0 = hb.value(), vb.value()
    start = QPoint(vp.width() // 2, vp.height() // 2)
    mid = Qt.MouseButton.MiddleButton
    QTest.mousePress(vp, mid, NONE_MOD, start)
    QTest.mouseMove(vp, start + QPoint(25, 0))
    QTest.mouseMove(vp, start + QPoint(25, 15))
    QTest.mouseRelease(vp, mid, NONE_MOD, start + QPoint(25, 15))
    assert (hb.value(), vb.value()) == (h0 - 25, v0 - 15)
    assert vp.cursor().shape() == Qt.CursorShape.CrossCursor


@pytest.mark.slow
def test_the_zoom_stops_at_1_32_and_64(win, qtbot, tmp_path):
    open_photo(win, qtbot, tmp_path, 40, 50)
    c = win.canvas
    c.set_zoom(1000)
    assert c.zoom() == 64 and win.zoom_label.text() == "6400 %"
    c.set_zoom(1e-6)
    assert c.zoom() == 1 / 32 and win.zoom_label.text() == "3 %"


@pytest.mark.slow
def test_a_wheel_turn_without_a_photo_or_without_a_step_changes_nothing(win, qtbot, tmp_path):
    c = win.canvas
    z0 = c.zoom()

    def wheel(dy):
        pos = QPointF(c.viewport().width() / 2, c.viewport().height() / 2)
        ev = QWheelEvent(pos, c.viewport().mapToGlobal(pos), QPoint(0, 0), QPoint(0, dy),
                         Qt.MouseButton.NoButton, NONE_MOD, Qt.ScrollPhase.NoScrollPhase, False)
        c.wheelEvent(ev)
        return ev
    assert wheel(120).isAccepted() and c.zoom() == z0  # no photo
    open_photo(win, qtbot, tmp_path, 40, 50)
    z1 = c.zoom()
    assert wheel(0).isAccepted() and c.zoom() == z1
    wheel(120)
    assert c.zoom() == pytest.approx(z1 * 1.25)
    wheel(-240)
    assert c.zoom() == pytest.approx(z1 / 1.25)


def test_a_resize_keeps_the_point_at_the_centre_of_the_view(win, qtbot, tmp_path):
    open_photo(win, qtbot, tmp_path, 200, 300)
    c = win.canvas
    c.set_zoom(3.0, QPointF(40, 30))
    qtbot.wait(10)
    vp = c.viewport()
    centre = c.view_to_scene(QPointF(vp.width() / 2, vp.height() / 2))
    win.resize(1100, 700)
    qtbot.wait(50)
    after = c.view_to_scene(QPointF(vp.width() / 2, vp.height() / 2))
    assert abs(after.x() - centre.x()) <= 1 / 3 + 1e-9
    assert abs(after.y() - centre.y()) <= 1 / 3 + 1e-9


def test_the_rectangle_is_drawn_dashed_two_screen_pixels_wide(win, qtbot):
    """The rectangle's outline is a dashed line two screen pixels wide at every zoom (a
    cosmetic pen), so it stands out from the photo without hiding its pixels when zoomed."""
    pen = win.canvas.rect_item.pen()
    assert pen.style() == Qt.PenStyle.DashLine
    assert pen.isCosmetic() and pen.widthF() == 2.0
