"""Qt tests (offscreen) of the first view of a photo: opened, it is shown whole, none of it
under the scroll bars that its own opening brings up."""
from __future__ import annotations

import pytest
from PyQt6.QtCore import QPointF

from tests.segapp.ui.test_ui_window import picture


def whole_image_in_view(canvas) -> bool:
    """Every corner of the image lies inside the viewport (to a screen pixel)."""
    r = canvas.photo.sceneBoundingRect()
    vp = canvas.viewport().rect().adjusted(-1, -1, 1, 1)
    return all(vp.contains(canvas.mapFromScene(QPointF(x, y)))
               for x in (r.left(), r.right()) for y in (r.top(), r.bottom()))


@pytest.mark.parametrize("size", [(400, 600), (600, 400), (300, 1200)])
def test_an_opened_image_is_shown_whole(win, qtbot, size):
    win.doc.set_image(picture(*size), "picture.png")  # (a photo opened or a sample picked)
    qtbot.wait(50)  # the scroll bars come up on the next layout pass
    c = win.canvas
    assert c.horizontalScrollBar().isVisible() and c.verticalScrollBar().isVisible()
    assert whole_image_in_view(c), (c.zoom(), c.viewport().size())
    # and it fills the view along one side: a fit, not merely small
    z, vp = c.zoom(), c.viewport().size()
    assert max(size[1] * z / vp.width(), size[0] * z / vp.height()) > 0.97


def test_fit_to_window_after_opening_changes_nothing(win, qtbot):
    win.doc.set_image(picture(400, 600), "picture.png")
    qtbot.wait(50)
    z = win.canvas.zoom()
    win.canvas.fit_to_window()
    qtbot.wait(20)
    assert win.canvas.zoom() == pytest.approx(z)
