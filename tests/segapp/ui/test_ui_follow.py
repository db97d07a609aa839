"""Qt tests (offscreen) of Segment → Follow the brush: with it checked, each finished stroke
runs again by itself, as a correction from the last answer; the last answer stays on screen
until the new one is ready; a newer stroke supersedes a run in progress it started."""
from __future__ import annotations

import numpy as np
import pytest

from tests.segapp.conftest import disc_image, pace_iterations, run_to_end
from tests.segapp.ui.test_ui_warm_start import mouse_drag


def drag(win, label, points) -> None:
    """A brush stroke with the mouse, in image pixels."""
    mouse_drag(win, "brush", label, points)


def opened(win, qtbot):
    image, strokes = disc_image()
    win.doc.set_image(image, "disc.png")
    win.doc.set_layers(strokes=strokes)
    win.params_panel.reference.setChecked(False)
    qtbot.wait(10)


def test_follow_the_brush_is_in_the_segment_menu_and_off_by_default(win):
    segment = next(a.menu() for a in win.menuBar().actions() if a.text() == "&Segment")
    assert win.act_follow in segment.actions() and win.act_follow.isCheckable()
    assert not win.act_follow.isChecked()


@pytest.mark.slow
def test_without_it_a_stroke_runs_nothing(win, qtbot):
    opened(win, qtbot)
    run_to_end(win, qtbot)
    drag(win, 1, [(20, 30), (24, 30)])
    qtbot.wait(50)
    assert not win.running


@pytest.mark.slow
def test_a_stroke_runs_a_correction_and_the_last_answer_stays_until_the_new_one(
        win, qtbot, monkeypatch):
    opened(win, qtbot)
    first = run_to_end(win, qtbot)
    shown: list = []
    real = win.canvas.set_result
    monkeypatch.setattr(win.canvas, "set_result", lambda rgb: (shown.append(rgb), real(rgb)))
    jobs: list = []
    start = win.solver.start
    monkeypatch.setattr(win.solver, "start", lambda job: (jobs.append(job), start(job)))
    win.act_follow.setChecked(True)
    drag(win, 1, [(20, 30), (24, 30)])
    assert win.running and len(jobs) == 1  # the stroke's release started it
    np.testing.assert_array_equal(jobs[0].previous, first.labels)
    qtbot.waitUntil(lambda: not win.running, timeout=300000)
    assert not win.errors and win.outcome is not first
    assert "(correction)" in win.results_panel.fields["status"].text()
    # no live frame replaced the last answer on the canvas: only the new answer was drawn
    assert len(shown) == 1 and shown[0] is not None
    assert np.all(win.outcome.labels[30, 20:25] == 1)  # the stroke's pixels


@pytest.mark.slow
def test_a_newer_stroke_supersedes_the_run_in_progress(win, qtbot, monkeypatch):
    opened(win, qtbot)
    first = run_to_end(win, qtbot)
    pace_iterations(monkeypatch, 0.02)  # (the first correction is still running at the second)
    jobs: list = []
    start = win.solver.start
    monkeypatch.setattr(win.solver, "start", lambda job: (jobs.append(job), start(job)))
    outcomes: list = []
    win.solver.finished.connect(outcomes.append)
    win.act_follow.setChecked(True)
    drag(win, 1, [(20, 30), (24, 30)])
    assert win.running and len(jobs) == 1
    qtbot.wait(100)
    drag(win, 2, [(2, 20), (2, 26)])
    assert win._rerun  # the run in progress is cancelled, a new one queued
    qtbot.waitUntil(lambda: len(jobs) == 2 and not win.running, timeout=300000)
    assert not win.errors
    # the second run has both strokes and starts from the answer on screen (the first run's:
    # the superseded one was never shown)
    assert jobs[1].strokes[30, 22] == 1 and jobs[1].strokes[23, 2] == 2
    np.testing.assert_array_equal(jobs[1].previous, first.labels)
    assert outcomes[0].status == "cancelled" and win.outcome is outcomes[-1]
    assert win.outcome.status != "cancelled"
