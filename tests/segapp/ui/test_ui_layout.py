"""The app at 1440 x 900 (issue "The app as people use it", item 7).

The Replay slider was below the fold of the Results tab (scrolled to); the Geometry window's
"This iteration" text overflowed into a scroll box; the Geometry window could not be closed
from the keyboard; the probe at K = 3 gave x as one number without saying whose.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from PyQt6.QtCore import QPoint, QRect, Qt
from PyQt6.QtTest import QTest
from PyQt6.QtWidgets import QScrollArea

from segapp.model.teaching import PRESETS
from tests.segapp.conftest import bands, disc_image, open_image, painted_texts, run_to_end

#: The screen of the issue, and the Geometry window's size on it (its default fits).
SCREEN = (1440, 900)
GEOMETRY_SIZE = (1366, 768)


def scroll_area_of(widget) -> QScrollArea | None:
    """The scroll area ``widget`` lies in, if any."""
    w = widget.parentWidget()
    while w is not None and not isinstance(w, QScrollArea):
        w = w.parentWidget()
    return w


# ------------------------------------------------------------------ the Results tab
@pytest.mark.slow
def test_the_replay_slider_is_in_view_after_a_run_at_1440x900(win, qtbot):
    win.resize(*SCREEN)
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    run_to_end(win, qtbot)
    qtbot.wait(50)
    panel = win.results_panel
    assert win.side_tabs.currentWidget() is panel  # (the run's end shows its results)
    assert panel.replay.isEnabled()
    scroll = scroll_area_of(panel)
    assert scroll is not None
    assert scroll.verticalScrollBar().value() == 0  # as a person sees it: not scrolled
    viewport = scroll.viewport()
    slider = QRect(panel.replay.mapTo(viewport, QPoint(0, 0)), panel.replay.size())
    assert viewport.rect().contains(slider), (slider, viewport.rect())
    label = QRect(panel.replay_label.mapTo(viewport, QPoint(0, 0)), panel.replay_label.size())
    assert viewport.rect().contains(label), (label, viewport.rect())


def test_the_results_wrapped_lines_are_not_cut_at_1440x900(win, qtbot):
    """A phase line one character too long for the panel wrapped its last word ("s") onto a
    line the form gave no room: the row keeps the height its wrapped text takes."""
    win.resize(*SCREEN)
    panel = win.results_panel
    win.side_tabs.setCurrentWidget(panel)
    qtbot.wait(20)
    panel.show_outcome(-365159.0, -365159.0, "α-expansion", 0, 40, 10.76,
                       "settled (every pixel decided)", "cpu", build_s=12.71,
                       reference_s=22.98, unpolished=-359519.0, total_s=35.71,
                       warnings=["CuPy cannot be imported (no module named cupy); running on "
                                 "the CPU instead"])
    qtbot.wait(20)
    for key in ("time", "backend"):
        label = panel.fields[key]
        assert label.heightForWidth(label.width()) <= label.height(), key


# ------------------------------------------------------------------ the Geometry window
@pytest.fixture
def geometry(win, qtbot):
    win.resize(*SCREEN)
    view = win.open_geometry()
    view.resize(*GEOMETRY_SIZE)
    qtbot.waitExposed(view)
    yield view
    view.close()


@pytest.mark.slow
def test_the_geometry_windows_numbers_fit_without_scrolling(geometry, qtbot):
    view = geometry
    label = view.numbers
    for i in range(len(PRESETS)):
        view.set_preset(i)
        for idx in (0, 1, len(view.trace) // 2, len(view.trace) - 1):
            view.set_index(idx)
            qtbot.wait(1)
            need = label.heightForWidth(label.width())
            assert need <= label.height(), (PRESETS[i].title, idx, need, label.height())
            area = scroll_area_of(label)
            assert area is None or area.verticalScrollBar().maximum() == 0, (
                PRESETS[i].title, idx, "the text scrolls")
            # and it is on screen: inside the window
            top = label.mapTo(view, QPoint(0, 0))
            assert top.y() + label.height() <= view.height()


@pytest.mark.parametrize("keys", ["Esc", "Ctrl+W"])
def test_the_geometry_window_closes_from_the_keyboard(geometry, qtbot, keys):
    view = geometry
    view.play()
    view.activateWindow()
    view.setFocus()
    qtbot.wait(10)
    if keys == "Esc":
        QTest.keyClick(view, Qt.Key.Key_Escape)
    else:
        QTest.keyClick(view, Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not view.isVisible(), timeout=2000)
    assert not view.playing


# ------------------------------------------------------------------ the probe at K = 3
@pytest.mark.slow
def test_the_probe_at_k3_names_the_label_of_each_value(win, qtbot, monkeypatch):
    from segapp.ui import probe as probe_module
    img, strokes = bands(3)
    open_image(win, qtbot, img, strokes, k=3)
    win.resize(*SCREEN)
    win.show_teaching_dock()
    run_to_end(win, qtbot)
    panel = win.teaching
    h, w = win.doc.shape
    panel.probe(w // 2, h // 2)  # the middle band: label 2
    assert win.outcome.labels[h // 2, w // 2] == 2
    chart = panel.chart
    assert chart.series is not None and chart.marker is not None
    texts = painted_texts(chart, probe_module, monkeypatch)
    shown = " | ".join(texts)
    # the curves' label is named with their values, and x is given for every label, by label
    line = next((t for t in texts if t.startswith("label 2")), None)
    assert line is not None, shown
    by_label = next((t for t in texts if t.startswith("x by label")), None)
    assert by_label is not None, shown
    values = dict(re.findall(r"x([₁₂₃]) (-?\d+\.\d+)", by_label))
    assert sorted(values) == ["₁", "₂", "₃"], by_label
    # ... and they are the store's values at the marked iteration
    i = panel.store.iterations.index(chart.marker)
    sample = panel.store.samples[i]
    step = sample["step"]
    xs = sample["x"][round(h // 2 / step), round(w // 2 / step)]
    for c, sub in enumerate("₁₂₃"):
        assert values[sub] == f"{float(xs[c]):.3f}", (by_label, xs)
    assert int(np.argmax(xs)) == 1  # the curves' label, 2, is the pixel's at the end
