"""Qt tests (offscreen): the canvas agrees with the document after every kind of change.

What is drawn is read back from the canvas itself: the stroke layer is the pixmap its layer
item displays (checked to lie over the photo pixel for pixel), the rectangle is its rectangle
item's scene geometry (or None while hidden), and at 1:1 zoom the viewport's own pixels (the
rectangle's yellow outline, the strokes over the photo). What is expected is computed here from
the document's arrays alone: a pixel with a soft stroke of label k (and no hard constraint)
shows label k's colour (``segapp.core.io.label_palette``), translucent; a hard pixel shows
label k's colour or its darker hatch shade, more opaque, or white where a 4-neighbour inside
the image has another hard value (the outline); every other pixel shows nothing; the
rectangle is ``doc.rect`` or hidden.
"""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from PyQt6.QtCore import QPoint, QPointF, Qt
from PyQt6.QtGui import QImage
from PyQt6.QtTest import QTest

from segapp.core.colouring import HARD_ALPHA, SOFT_ALPHA
from segapp.core.io import label_palette
from segapp.core.session import save_session
from segapp.ui.fileops import list_constraint_samples, list_samples

#: What a pixel of the stroke layer shows (the first of the pair ``(kind, label)``).
NONE, SOFT, HARD, OUTLINE, UNKNOWN = 0, 1, 2, 3, -1
#: The rectangle's outline colour (the canvas's pen): nothing else on these canvases is yellow.
YELLOW = (255, 214, 10)


# ------------------------------------------------------------------------- reading pixels
def qimage_rgba(img: QImage) -> np.ndarray:
    """A QImage as an (H, W, 4) uint8 RGBA array (a copy)."""
    img = img.convertToFormat(QImage.Format.Format_RGBA8888)
    h, w = img.height(), img.width()
    buf = np.frombuffer(img.constBits().asstring(img.sizeInBytes()), np.uint8)
    return buf.reshape(h, img.bytesPerLine())[:, :w * 4].reshape(h, w, 4).copy()


def drawn_state(canvas) -> tuple[np.ndarray, tuple[float, float, float, float] | None]:
    """What the canvas draws: the stroke layer's RGBA in image pixels (all transparent when the
    layer is hidden) and the rectangle's ``(x, y, w, h)`` in image pixels (None when hidden)."""
    photo = canvas.photo.pixmap()
    h, w = photo.height(), photo.width()
    layer = canvas.layers
    if not layer.isVisible() or layer.pixmap().isNull():
        rgba = np.zeros((h, w, 4), np.uint8)
    else:
        # the layer lies over the photo pixel for pixel: its pixel (y, x) is image pixel (y, x)
        assert layer.sceneBoundingRect() == canvas.photo.sceneBoundingRect(), (
            layer.sceneBoundingRect(), canvas.photo.sceneBoundingRect())
        rgba = qimage_rgba(layer.pixmap().toImage())
        assert rgba.shape[:2] == (h, w), (rgba.shape, (h, w))
    item = canvas.rect_item
    if not item.isVisible():
        return rgba, None
    r = item.mapRectToScene(item.rect())
    return rgba, (r.x(), r.y(), r.width(), r.height())


def seen(rgba: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Decode a stroke layer into ``(kind, label)`` per pixel: NONE (transparent), SOFT (label
    colour, translucent), HARD (label colour or a darker shade of it, more opaque), OUTLINE
    (opaque white; label 0), UNKNOWN (anything else)."""
    pal = np.asarray(label_palette(k), np.float64)
    rgb, a = rgba[..., :3].astype(np.float64), rgba[..., 3].astype(int)
    kind = np.full(a.shape, UNKNOWN, np.int8)
    label = np.zeros(a.shape, np.int16)
    kind[a == 0] = NONE
    kind[(a == 255) & np.all(rgb == 255, axis=2)] = OUTLINE
    for lab in range(1, k + 1):
        c = pal[lab - 1]
        exact = np.all(np.abs(rgb - c) <= 2, axis=2)
        # a darker shade: a multiple f of the colour (0.25 < f < 0.75), to rounding
        f = (rgb @ c) / (c @ c)
        shade = (np.all(np.abs(rgb - f[..., None] * c) <= 2, axis=2)
                 & (f > 0.25) & (f < 0.75))
        soft = exact & (np.abs(a - SOFT_ALPHA) <= 1)
        hard = (exact | shade) & (np.abs(a - HARD_ALPHA) <= 1)
        kind[soft], label[soft] = SOFT, lab
        kind[hard], label[hard] = HARD, lab
    return kind, label


def expected_state(doc) -> tuple[tuple[np.ndarray, np.ndarray], tuple | None]:
    """What the canvas must show for ``doc``, from its arrays alone: ``((kind, label), rect)``."""
    s, hd = doc.strokes.astype(int), doc.hard.astype(int)
    kind = np.full(s.shape, NONE, np.int8)
    label = np.zeros(s.shape, np.int16)
    kind[s > 0], label[s > 0] = SOFT, s[s > 0]
    kind[hd > 0], label[hd > 0] = HARD, hd[hd > 0]
    edge = np.zeros(s.shape, bool)  # a hard pixel beside another value (inside the image)
    edge[1:] |= hd[1:] != hd[:-1]
    edge[:-1] |= hd[:-1] != hd[1:]
    edge[:, 1:] |= hd[:, 1:] != hd[:, :-1]
    edge[:, :-1] |= hd[:, :-1] != hd[:, 1:]
    edge &= hd > 0
    kind[edge], label[edge] = OUTLINE, 0
    rect = None if doc.rect is None else tuple(float(v) for v in doc.rect)
    return (kind, label), rect


def assert_agrees(canvas, doc, step: str = "") -> None:
    """The canvas draws what ``doc`` holds: every stroke pixel and the rectangle."""
    rgba, rect = drawn_state(canvas)
    (kind, label), want_rect = expected_state(doc)
    got_kind, got_label = seen(rgba, doc.k)
    assert got_kind.shape == kind.shape, f"{step}: layer {got_kind.shape}, image {kind.shape}"
    bad = (got_kind != kind) | (got_label != label)
    first = [tuple(int(v) for v in p) for p in np.argwhere(bad)[:5]]
    assert not bad.any(), (
        f"{step}: {int(bad.sum())} pixels drawn wrong; first (y, x): {first}; drawn (kind, "
        f"label) {[(int(got_kind[p]), int(got_label[p])) for p in first]}, document "
        f"{[(int(kind[p]), int(label[p])) for p in first]}")
    assert rect == want_rect, f"{step}: rectangle drawn {rect}, document {want_rect}"


# ------------------------------------------------------------------------- the viewport
def grab_viewport(canvas) -> np.ndarray:
    """The canvas's viewport as a user sees it, RGBA."""
    return qimage_rgba(canvas.viewport().grab().toImage())


def photo_origin(shot: np.ndarray, colour) -> tuple[int, int]:
    """Viewport (y, x) of the image's top-left pixel, found by the photo's uniform colour."""
    ys, xs = np.nonzero(np.all(shot[..., :3] == colour, axis=2))
    assert ys.size, "the photo is not in view"
    return int(ys.min()), int(xs.min())


def yellow(shot: np.ndarray) -> np.ndarray:
    return np.all(np.abs(shot[..., :3].astype(int) - YELLOW) <= 12, axis=2)


def assert_outline_on_screen(shot: np.ndarray, origin, rect) -> None:
    """At 1:1 zoom the yellow pixels are the rectangle's dashed outline, where ``rect`` (image
    pixels) says: each side covered at least half its length, nothing yellow elsewhere; no
    yellow at all for ``rect`` None."""
    ys = yellow(shot)
    if rect is None:
        assert not ys.any(), f"{int(ys.sum())} outline pixels drawn without a rectangle"
        return
    oy, ox = origin
    x0, y0 = ox + rect[0], oy + rect[1]
    x1, y1 = x0 + rect[2], y0 + rect[3]
    band = np.zeros(ys.shape, bool)  # within a pixel of the outline (a 2-pixel pen)
    sides = {"top": (slice(y0 - 1, y0 + 1), slice(x0 - 1, x1 + 1)),
             "bottom": (slice(y1 - 1, y1 + 1), slice(x0 - 1, x1 + 1)),
             "left": (slice(y0 - 1, y1 + 1), slice(x0 - 1, x0 + 1)),
             "right": (slice(y0 - 1, y1 + 1), slice(x1 - 1, x1 + 1))}
    for sl in sides.values():
        band[sl] = True
    stray = ys & ~band
    assert not stray.any(), f"outline pixels off the rectangle {rect}: {np.argwhere(stray)[:5]}"
    for name, (sy, sx) in sides.items():
        along = ys[sy, sx].any(axis=0 if name in ("top", "bottom") else 1)
        assert along.mean() >= 0.5, f"the {name} side of {rect} is {along.mean():.0%} drawn"


# ------------------------------------------------------------------------- driving the window
PHOTO = (20, 90, 160)  # uniform photo colour (RGB): no label colour, not yellow


def write_photo(path: Path, h: int, w: int, colour=PHOTO) -> str:
    """A uniform colour photo on disk (for the window's open and for sessions)."""
    img = np.zeros((h, w, 3), np.uint8)
    img[:] = colour
    cv2.imwrite(str(path), cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
    return str(path)


def open_photo(win, qtbot, tmp_path, h=36, w=48, name="photo.png"):
    assert win.open_path(write_photo(tmp_path / name, h, w)), win.errors
    qtbot.wait(10)
    return win.doc


def vpos(win, x, y) -> QPoint:
    """Viewport position of image point (x, y) (pixel centres at integers)."""
    return win.canvas.mapFromScene(QPointF(x + 0.5, y + 0.5))


def drag(win, points) -> None:
    """A left-button drag through image points with the current tool."""
    vp = win.canvas.viewport()
    left, none = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    QTest.mousePress(vp, left, none, vpos(win, *points[0]))
    for p in points[1:]:
        QTest.mouseMove(vp, vpos(win, *p))
    QTest.mouseRelease(vp, left, none, vpos(win, *points[-1]))


def pick(win, tool: str, label: int = 1, radius: int = 2) -> None:
    """Choose a tool, a label and a brush size from the tool bar, as a user does."""
    win.tools.tool_actions[tool].trigger()
    win.tools.label_actions[label - 1].trigger()
    win.tools.size_slider.setValue(radius)
    assert (win.canvas.tool, win.canvas.label, win.canvas.brush_radius) == (tool, label, radius)


def doc_stroke(doc, mode, p0, p1, radius, label=1) -> None:
    doc.begin_stroke(mode)
    doc.stroke_to(p0, p1, radius, label)
    assert doc.end_stroke() is not None


def snapshot(doc):
    return doc.strokes.copy(), doc.hard.copy(), doc.rect, doc.k, doc.shape


def changed(before, doc) -> bool:
    now = snapshot(doc)
    return (before[3:] != now[3:] or before[2] != now[2] or before[0].shape != now[0].shape
            or not np.array_equal(before[0], now[0]) or not np.array_equal(before[1], now[1]))


# ------------------------------------------------------------------------- the long script
@pytest.mark.slow
def test_the_canvas_agrees_after_every_step_of_a_long_editing_session(win, qtbot, tmp_path):
    """Every stroke, erase, hard pixel, rectangle, undo, redo, clear, K change, session,
    sample and new image shows on the canvas exactly as the document holds it (a stale or
    partly redrawn layer, or a rectangle left behind, shows something the solver never sees)."""
    doc = open_photo(win, qtbot, tmp_path)
    canvas = win.canvas
    assert_agrees(canvas, doc, "opened")
    session = tmp_path / "saved.json"

    def sample_load():
        title, image, strokes, k = min(list_samples(), key=lambda s: s[1].stat().st_size)
        assert win.open_sample(image, strokes, k), win.errors

    def save_then_edit():
        save_session(session, doc)
        doc.clear()

    steps = [
        ("mouse brush, label 1", lambda: (pick(win, "brush", 1, 2),
                                          drag(win, [(4, 4), (20, 6), (40, 8)]))),
        ("document stroke, label 2", lambda: doc_stroke(doc, "strokes", (6, 28), (40, 30), 2.5, 2)),
        ("mouse hard, label 2, across the strokes", lambda: (
            pick(win, "hard", 2, 3), drag(win, [(24, 2), (24, 20), (26, 32)]))),
        ("document soft stroke over the hard region's edge",
         lambda: doc_stroke(doc, "strokes", (22, 12), (30, 12), 1.5, 1)),
        ("document hard stroke beside the first, label 1",
         lambda: doc_stroke(doc, "hard", (30, 16), (34, 18), 2, 1)),
        ("mouse eraser through all", lambda: (pick(win, "eraser", 1, 2),
                                              drag(win, [(10, 0), (12, 35)]))),
        ("mouse rectangle", lambda: (pick(win, "rect"), drag(win, [(5, 6), (20, 14), (30, 25)]))),
        ("mouse rectangle past the right and bottom edges", lambda: (
            pick(win, "rect"), drag(win, [(20, 10), (60, 50)]))),
        ("rectangle removed", lambda: doc.set_rect(None)),
        ("undo: the clipped rectangle back", win.undo),
        ("undo: the first rectangle back", win.undo),
        ("redo: the clipped rectangle", win.redo),
        ("document rectangle", lambda: doc.set_rect((2, 3, 12, 9))),
        ("four undos: the three rectangles and the eraser's stroke",
         lambda: (win.undo(), win.undo(), win.undo(), win.undo())),
        ("K = 3 from the tool bar", lambda: win.tools.k_spin.setValue(3)),
        ("mouse brush, label 3", lambda: (pick(win, "brush", 3, 3),
                                          drag(win, [(36, 20), (44, 30)]))),
        ("mouse hard, label 3", lambda: (pick(win, "hard", 3, 2), drag(win, [(2, 20), (8, 26)]))),
        ("K = 2: label 3 goes", lambda: win.tools.k_spin.setValue(2)),
        ("undo K: label 3 back", win.undo),
        ("redo K", win.redo),
        ("clear", win.act_clear.trigger),
        ("undo clear", win.undo),
        ("session saved, then cleared", save_then_edit),
        ("session opened", lambda: win.open_session(str(session))),
        ("undo after the session (nothing to undo), then a rectangle",
         lambda: (win.undo(), doc.set_rect((0, 0, 5, 5)))),
        ("sample opened", sample_load),
        ("a rectangle on the sample, undone and redone",
         lambda: (doc.set_rect((3, 4, 50, 60)), win.undo(), win.redo())),
        ("a new photo of another size", lambda: open_photo(win, qtbot, tmp_path, 20, 30,
                                                            "other.png")),
    ]
    shown = set()
    for name, action in steps:
        before = snapshot(doc)
        action()
        qtbot.wait(1)
        assert not win.errors, f"{name}: {win.errors}"
        assert changed(before, doc), f"{name}: the step changed nothing (the test's premise)"
        assert_agrees(canvas, doc, name)
        (kind, label), rect = expected_state(doc)
        shown |= {(int(c), int(n)) for c, n in zip(kind.ravel(), label.ravel())}
        shown |= {("rect", rect is not None)}
    # the premise: the script drew every kind of pixel of every label, and a rectangle
    want = {(SOFT, 1), (SOFT, 2), (SOFT, 3), (HARD, 1), (HARD, 2), (HARD, 3), (OUTLINE, 0),
            (NONE, 0), ("rect", True), ("rect", False)}
    assert want <= shown, want - shown


# ------------------------------------------------------------------------- focused tests
def test_a_mouse_stroke_shows_in_its_labels_colour(win, qtbot, tmp_path):
    """A brush stroke dragged with the mouse shows its label's colour where it is in the
    document, and nowhere else (a stroke drawn off by a pixel, or in the wrong colour)."""
    doc = open_photo(win, qtbot, tmp_path)
    assert_agrees(win.canvas, doc, "empty")
    pick(win, "brush", 2, 2)
    drag(win, [(5, 5), (25, 15), (40, 30)])
    assert (doc.strokes == 2).sum() > 50
    assert_agrees(win.canvas, doc, "stroke")
    _, label = seen(drawn_state(win.canvas)[0], doc.k)
    assert np.array_equal(label == 2, doc.strokes == 2)  # (the premise: label 2 is drawn)


def test_a_document_stroke_and_its_erase_redraw_only_what_changed(win, qtbot, tmp_path):
    """Strokes painted and erased through the document (as loaded strokes and the command's
    edits are) show at once, and erasing leaves no coloured pixel behind."""
    doc = open_photo(win, qtbot, tmp_path)
    doc_stroke(doc, "strokes", (3, 3), (40, 20), 3, 1)
    doc_stroke(doc, "strokes", (3, 30), (40, 10), 2, 2)
    assert_agrees(win.canvas, doc, "two strokes")
    doc_stroke(doc, "erase", (20, 0), (20, 35), 4)
    assert not doc.strokes[:, 18:23].any() and doc.strokes.any()
    assert_agrees(win.canvas, doc, "erased")
    pick(win, "eraser", 1, 3)
    drag(win, [(0, 3), (47, 3)])
    assert_agrees(win.canvas, doc, "mouse erase")


def test_a_stroke_across_a_hard_regions_edge_keeps_its_outline(win, qtbot, tmp_path):
    """Painting across the edge of a hard-constraint region leaves its white outline whole:
    the canvas redraws only the stroke's box, and the outline just outside it depends on the
    pixels beyond (before the fix a gap opened in the outline along the box's rim)."""
    doc = open_photo(win, qtbot, tmp_path)
    doc_stroke(doc, "hard", (10, 10), (30, 10), 4, 1)
    assert_agrees(win.canvas, doc, "hard region")
    # (a box whose rim is the region's top row: the rows 6 to 14 are hard)
    assert doc.hard[6].any() and not doc.hard[5].any()
    for mode, p0, p1, lab in (("strokes", (15, 9), (22, 9), 2),    # inside, soft
                              ("hard", (20, 10), (20, 25), 2),     # across, other label
                              ("erase", (26, 0), (26, 12), 0)):    # partly out
        doc_stroke(doc, mode, p0, p1, 1.5, lab)
        assert_agrees(win.canvas, doc, mode)
    pick(win, "brush", 2, 1)
    drag(win, [(12, 8), (16, 8)])  # the mouse's stroke, inside the region
    assert_agrees(win.canvas, doc, "mouse stroke inside")


def test_hard_pixels_show_hatched_in_their_label_colour(win, qtbot, tmp_path):
    """The hard-constraint brush shows its pixels in the label's colour and darker shade
    (hatched) with a white outline, over any soft stroke beneath."""
    doc = open_photo(win, qtbot, tmp_path)
    doc_stroke(doc, "strokes", (0, 18), (47, 18), 4, 1)
    pick(win, "hard", 2, 5)
    drag(win, [(24, 5), (24, 30)])
    assert_agrees(win.canvas, doc, "hard")
    rgba = drawn_state(win.canvas)[0]
    inner = (doc.hard == 2) & (seen(rgba, 2)[0] == HARD)
    pal = np.asarray(label_palette(2), int)[1]
    full = np.abs(rgba[inner][:, :3].astype(int) - pal).max(axis=1) <= 2
    assert full.any() and not full.all()  # both the colour and its shade: hatched
    assert (seen(rgba, 2)[0] == OUTLINE).any()


@pytest.mark.parametrize("corner", ["inside", "past the right and bottom edges"])
def test_a_dragged_rectangle_is_drawn_where_the_document_has_it(win, qtbot, tmp_path, corner):
    """The rectangle dragged with the mouse is drawn exactly where the document holds it,
    clipped to the image when dragged past its edge (a rectangle drawn larger than the one
    the solver gets)."""
    doc = open_photo(win, qtbot, tmp_path)
    pick(win, "rect")
    end = (30, 25) if corner == "inside" else (80, 70)
    drag(win, [(6, 5), (18, 12), end])
    want = (6, 5, 24, 20) if corner == "inside" else (6, 5, 48 - 6, 36 - 5)
    assert doc.rect is not None and all(abs(a - b) <= 1 for a, b in zip(doc.rect, want)), doc.rect
    assert_agrees(win.canvas, doc, "rectangle")


def test_the_rectangle_follows_undo_redo_and_removal_on_screen(win, qtbot, tmp_path):
    """Undo, redo and removal move the rectangle a user sees at 1:1 zoom to where the
    document has it, or take it away (a rectangle left on screen that the run no longer
    uses, or one missing that it does)."""
    doc = open_photo(win, qtbot, tmp_path)
    win.canvas.actual_size()
    qtbot.wait(10)
    assert win.canvas.zoom() == 1.0
    pick(win, "rect")
    drag(win, [(5, 6), (25, 21)])
    first = doc.rect
    drag(win, [(20, 10), (60, 50)])  # the second, clipped at the right and bottom
    second = doc.rect
    assert first != second and second[0] + second[2] == 48 and second[1] + second[3] == 36
    origin = photo_origin(grab_viewport(win.canvas), PHOTO)
    for name, action, want in (("dragged", lambda: None, second),
                               ("undo", win.undo, first),
                               ("undo again", win.undo, None),
                               ("redo", win.redo, first),
                               ("redo again", win.redo, second),
                               ("removed", win.act_remove_rect.trigger, None),
                               ("undo removal", win.undo, second),
                               ("clear", win.act_clear.trigger, None),
                               ("undo clear", win.undo, second)):
        action()
        qtbot.wait(1)
        assert doc.rect == want, name
        assert_agrees(win.canvas, doc, name)
        assert_outline_on_screen(grab_viewport(win.canvas), origin, want)


def test_remove_rectangle_is_in_the_edit_menu_with_its_key(win, qtbot, tmp_path):
    """Edit → Remove rectangle (Shift+R) is there to find, enabled only while there is a
    rectangle, and takes only the rectangle away (the strokes stay; undo brings it back)."""
    doc = open_photo(win, qtbot, tmp_path)
    edit = next(a.menu() for a in win.menuBar().actions() if a.text() == "&Edit")
    assert win.act_remove_rect in edit.actions()
    assert win.act_remove_rect.shortcut().toString() == "Shift+R"
    assert not win.act_remove_rect.isEnabled()
    pick(win, "brush")
    drag(win, [(5, 5), (15, 5)])
    strokes = doc.strokes.copy()
    assert strokes.any()
    pick(win, "rect")
    drag(win, [(4, 4), (30, 25)])
    assert doc.rect is not None and win.act_remove_rect.isEnabled()
    rect = doc.rect
    win.act_remove_rect.trigger()
    assert doc.rect is None and not win.act_remove_rect.isEnabled()
    np.testing.assert_array_equal(doc.strokes, strokes)
    assert drawn_state(win.canvas)[1] is None
    win.undo()
    assert doc.rect == rect and win.act_remove_rect.isEnabled()


def test_strokes_on_screen_are_the_layers_colours_over_the_photo(win, qtbot, tmp_path):
    """At 1:1 zoom the viewport shows each stroke pixel as its label colour over the photo and
    the photo unchanged elsewhere (a layer drawn offset or scaled against the photo)."""
    doc = open_photo(win, qtbot, tmp_path)
    doc_stroke(doc, "strokes", (4, 4), (40, 9), 2, 1)
    doc_stroke(doc, "strokes", (4, 30), (40, 25), 2, 2)
    win.canvas.actual_size()
    qtbot.wait(10)
    shot = grab_viewport(win.canvas)
    oy, ox = photo_origin(shot, PHOTO)
    h, w = doc.shape
    view = shot[oy:oy + h, ox:ox + w, :3].astype(float)
    pal = np.asarray(label_palette(2), float)
    a = SOFT_ALPHA / 255.0
    want = np.empty((h, w, 3))
    want[:] = PHOTO
    for lab in (1, 2):
        want[doc.strokes == lab] = a * pal[lab - 1] + (1 - a) * np.asarray(PHOTO, float)
    off = np.abs(view - want).max(axis=2) > 3
    assert not off.any(), f"{int(off.sum())} pixels differ, first {np.argwhere(off)[:5]}"


def test_clear_and_k_change_redraw_the_whole_layer(win, qtbot, tmp_path):
    """Clear takes every stroke, hard pixel and the rectangle off the canvas and undo brings
    them back; lowering K takes the dropped label's strokes off and undo redraws them."""
    doc = open_photo(win, qtbot, tmp_path)
    win.tools.k_spin.setValue(3)
    doc_stroke(doc, "strokes", (3, 3), (40, 5), 2, 3)
    doc_stroke(doc, "hard", (3, 20), (40, 22), 2, 3)
    doc_stroke(doc, "strokes", (3, 30), (40, 30), 2, 1)
    doc.set_rect((4, 4, 30, 20))
    assert_agrees(win.canvas, doc, "drawn")
    win.act_clear.trigger()
    assert not doc.has_annotations()
    assert_agrees(win.canvas, doc, "cleared")
    win.undo()
    assert (doc.strokes == 3).any() and doc.rect is not None
    assert_agrees(win.canvas, doc, "undo clear")
    win.tools.k_spin.setValue(2)
    assert doc.k == 2 and not (doc.strokes == 3).any() and not (doc.hard == 3).any()
    assert_agrees(win.canvas, doc, "K = 2")
    win.undo()
    assert doc.k == 3 and (doc.hard == 3).any()
    assert_agrees(win.canvas, doc, "undo K")


@pytest.mark.slow
def test_an_opened_session_is_drawn_as_saved(win, qtbot, tmp_path):
    """Opening a session shows its strokes, hard pixels and rectangle, replacing what was
    drawn (a rectangle from before the session, or none where the session has one)."""
    doc = open_photo(win, qtbot, tmp_path)
    win.tools.k_spin.setValue(3)
    doc_stroke(doc, "strokes", (3, 3), (40, 5), 2, 3)
    doc_stroke(doc, "hard", (3, 20), (40, 22), 2, 2)
    doc.set_rect((4, 6, 30, 20))
    saved = snapshot(doc)
    path = tmp_path / "s.json"
    save_session(path, doc)
    # something else on the canvas: other strokes, another rectangle, another K
    win.act_clear.trigger()
    win.tools.k_spin.setValue(2)
    doc_stroke(doc, "strokes", (10, 30), (30, 30), 2, 1)
    doc.set_rect((1, 1, 10, 10))
    assert_agrees(win.canvas, doc, "before the session")
    assert win.open_session(str(path)), win.errors
    assert not changed(saved, doc)  # (the premise: the session restored the document)
    assert_agrees(win.canvas, doc, "session")
    # and a session without a rectangle takes the drawn one away
    doc.set_rect(None)
    save_session(path, doc)
    doc.set_rect((2, 2, 20, 20))
    assert win.open_session(str(path)) and doc.rect is None
    assert_agrees(win.canvas, doc, "session without a rectangle")


@pytest.mark.slow
def test_an_opened_sample_is_drawn_with_its_strokes(win, qtbot, tmp_path):
    """Opening a bundled sample (after a rectangle and strokes on another photo) shows the
    sample's strokes in its K's colours and no rectangle; a sample with hard constraints
    shows them hatched."""
    doc = open_photo(win, qtbot, tmp_path)
    doc_stroke(doc, "strokes", (3, 3), (40, 5), 2, 2)
    doc.set_rect((4, 6, 30, 20))
    title, image, strokes, k = min(list_samples(), key=lambda s: s[1].stat().st_size)
    assert win.open_sample(image, strokes, k), win.errors
    assert doc.k == k and doc.strokes.any() and doc.rect is None
    assert_agrees(win.canvas, doc, title)
    hard = [e for e in list_constraint_samples() if e["hard"] is not None]
    e = hard[0]
    assert win.open_sample(e["image"], e["strokes"], e["k"], hard=e["hard"], area=e["area"],
                           apart=e["apart"]), win.errors
    assert doc.hard.any()
    assert_agrees(win.canvas, doc, e["title"])


@pytest.mark.slow
def test_a_new_photo_takes_the_old_drawing_away(win, qtbot, tmp_path):
    """Opening another photo (of another size) leaves no stroke or rectangle of the last one
    on the canvas, and the next stroke shows on the new one."""
    doc = open_photo(win, qtbot, tmp_path)
    doc_stroke(doc, "hard", (3, 3), (40, 30), 3, 1)
    doc.set_rect((4, 6, 30, 20))
    assert_agrees(win.canvas, doc, "first photo")
    open_photo(win, qtbot, tmp_path, 60, 25, "tall.png")
    assert doc.shape == (60, 25) and not doc.has_annotations()
    assert_agrees(win.canvas, doc, "new photo")
    pick(win, "brush", 1, 2)
    drag(win, [(3, 50), (20, 55)])
    assert doc.strokes.any()
    assert_agrees(win.canvas, doc, "stroke on the new photo")


def test_hidden_strokes_are_not_drawn_and_come_back_current(win, qtbot, tmp_path):
    """With "show strokes" off no stroke shows; strokes painted meanwhile show once it is on."""
    doc = open_photo(win, qtbot, tmp_path)
    doc_stroke(doc, "strokes", (3, 3), (40, 5), 2, 2)
    win.results_panel.strokes.setChecked(False)
    assert not drawn_state(win.canvas)[0][..., 3].any()
    doc_stroke(doc, "hard", (3, 20), (40, 22), 2, 1)
    win.results_panel.strokes.setChecked(True)
    assert_agrees(win.canvas, doc, "shown again")
