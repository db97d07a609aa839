"""Qt tests (offscreen) of the warm-start decision: every annotation, K, constraint and
parameter change is covered.

The design (``segapp.ui.runctl.RunMixin.start_run``, ``annotation_fingerprint`` and
``scene_fingerprint``): with Segment > Warm start checked, a run starts from the last run's
answer (its labels one-hot, ``SolveJob.x0``) when what the answer depends on besides the
solver's parameters is unchanged since that run: the image, K, the strokes, the hard pixels,
the rectangle and the area / apart constraints. Where only strokes or hard pixels changed, the
run is a correction (``SolveJob.previous``, the last answer's labels: the colour models are
refitted to it with the new strokes, and the solve starts from it). A change of the image, K,
the rectangle or the constraints starts cold (neither). A change of parameters only
(λ, β, the colour model, ADMM's ρ₀, ρ growth, γ, iteration limit and tolerance, the seed, the
backend, the reference check box) keeps the warm start: that is the case it exists for. The
decision is on content, not history: an edit undone before the next run leaves the annotations
the last run had, and that run's answer is still the start. A new image, session or sample
forgets the last run, so the next run starts cold whatever it holds.

Each test runs one real (tiny) solve to have a last answer, then intercepts the next run's job
at the solve controller (``SolveController.start``), so no second solve is needed. Before each
change it shows the premise: a run with nothing changed would start warm, from that answer.
"""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from PyQt6.QtCore import QPointF, Qt
from PyQt6.QtTest import QTest
from PyQt6.QtWidgets import QMessageBox

from segapp.core.pipeline import run_segmentation
from segapp.core.session import save_session
from segapp.model import SolverSettings
from segapp.ui.fileops import list_samples
from segapp.ui.main_window import MainWindow
from tests.segapp.conftest import disc_image, run_to_end

pytestmark = pytest.mark.slow  # (every test here: see docs/testing.md, the fast lane)

H = W = 16


def base_layers(k: int) -> tuple[np.ndarray, np.ndarray]:
    """The tiny photo and strokes for K labels (label 3 along the bottom)."""
    img, strokes = disc_image(H, W)
    if k >= 3:
        strokes[H - 4:H - 2, 2:W - 2] = 3
    return img, strokes


@pytest.fixture(scope="module")
def shared_window(qapp):
    """One shown main window for the module's tests (a window each took most of their time);
    :func:`window` puts it back to a fresh state for each. Error dialogs are collected in
    ``errors`` (as the suite's ``win`` fixture does)."""
    errors: list[tuple[str, str]] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(QMessageBox, "critical",
                   lambda _parent, title, text, *a, **k: errors.append((title, text)))
        w = MainWindow(confirm_discard=False)
        w.resize(1280, 800)
        w.show()
        w.errors = errors
        yield w
        w.solver.shutdown()
        w.doc.dirty = False
        w.close()
        w.deleteLater()


@pytest.fixture
def window(shared_window, qtbot):
    """The shared window with no run, no errors and the panels at their defaults."""
    w = shared_window
    qtbot.waitExposed(w)
    w.forget_run()
    w.errors.clear()
    w.act_warm.setChecked(True)
    w.params_panel.set_settings(SolverSettings())
    w.constraints_panel.set_texts([], [])
    yield w
    w.solver.shutdown()


def finish_a_run(win, qtbot, tmp_path: Path, monkeypatch, k: int = 2, before=None,
                 threaded=False):
    """Open the tiny photo (from a file, as a user does) with strokes for ``k`` labels, apply
    ``before(win)`` (edits the run is to include), run to the end, and intercept every later
    run's job. Returns ``(jobs, outcome)``: the list the intercepted jobs go to, and the
    answer the last run gave.

    ``threaded``: the run goes through the solve controller's thread (``run_to_end``).
    Otherwise (faster: no thread to start and wait for) Run's job is taken at the controller,
    solved by the real pipeline here, and its outcome handed back through the controller's
    ``finished`` signal, as the thread would."""
    img, strokes = base_layers(k)
    path = tmp_path / "disc.png"
    cv2.imwrite(str(path), cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
    if win.doc.has_image:
        win.doc.set_k(k)  # (before the image: its opening clears the history)
    assert win.open_path(str(path)), win.errors
    win.tools.k_spin.setValue(k)
    # (the history starts here: a K set through the spin box after the opening, as when the
    # shared window's previous test left another K, is not one of the edits under test)
    win.doc.undo_stack.clear()
    assert win.doc.k == k and not win.doc.undo_stack.can_undo()
    win.doc.set_layers(strokes=strokes)
    win.params_panel.reference.setChecked(False)  # (no yardstick: the run is the answer)
    assert win.act_warm.isChecked()  # the default
    if before is not None:
        before(win)
    qtbot.wait(1)
    jobs: list = []
    if threaded:
        outcome = run_to_end(win, qtbot)
        monkeypatch.setattr(win.solver, "start", jobs.append)  # (a job, and nothing solved)
    else:
        monkeypatch.setattr(win.solver, "start", jobs.append)
        job = next_job(win, jobs)
        assert job.x0 is None  # (a first run: nothing to start from)
        outcome = run_segmentation(job.image, job.strokes, job.params, rect=job.rect,
                                   hard=job.hard, x0=job.x0, reference=job.reference)
        win.solver.finished.emit(outcome)
        assert win.outcome is outcome and not win.errors
    return jobs, outcome


def next_job(win, jobs):
    """Press Run and return the job the solve controller received."""
    n = len(jobs)
    win.act_run.trigger()
    assert not win.errors, win.errors
    assert len(jobs) == n + 1, "Run handed no job to the controller"
    return jobs[-1]


def assert_warm_from(job, outcome) -> None:
    """The job starts from the last answer: its labels, one-hot."""
    assert job.x0 is not None, "cold start where the last answer should be the start"
    k = int(outcome.problem.k)
    x0 = np.asarray(job.x0)
    assert x0.shape == (outcome.labels.size, k)
    np.testing.assert_array_equal(x0, np.eye(k)[outcome.labels.ravel() - 1])


def stroke(doc, mode, p0, p1, radius=1.5, label=1) -> None:
    doc.begin_stroke(mode)
    doc.stroke_to(p0, p1, radius, label)
    assert doc.end_stroke() is not None, "the stroke changed nothing"


def mouse_drag(win, tool, label, points) -> None:
    """A drag on the canvas with a tool and label picked from the tool bar."""
    win.tools.tool_actions[tool].trigger()
    win.tools.label_actions[label - 1].trigger()
    win.tools.size_slider.setValue(1)
    vp = win.canvas.viewport()
    at = [win.canvas.mapFromScene(QPointF(x + 0.5, y + 0.5)) for x, y in points]
    left, none = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    QTest.mousePress(vp, left, none, at[0])
    for p in at[1:]:
        QTest.mouseMove(vp, p)
    QTest.mouseRelease(vp, left, none, at[-1])


RECT = (3, 4, 10, 9)


def set_area(win, label, lo, hi, on=True) -> None:
    row = win.constraints_panel.rows[label - 1]
    row.lo.setValue(lo)
    row.hi.setValue(hi)
    row.on.setChecked(on)


# ---------------------------------------------------------------------- the edits, by kind
# (name, K of the run, edit before the run (None: none), the change after it)
def _add_stroke(w):
    stroke(w.doc, "strokes", (12, 11), (13, 12), 1, 2)


def _erase(w):
    stroke(w.doc, "erase", (6, 3), (9, 3), 1)


def _hard(w):
    stroke(w.doc, "hard", (12, 12), (13, 13), 1, 2)


def _hard_relabel(w):
    stroke(w.doc, "hard", (12, 12), (13, 13), 1, 1)


def _rect(w):
    w.doc.set_rect(RECT)


def _moved(w):
    x, y, rw, rh = RECT
    w.doc.set_rect((x + 1, y, rw, rh))


def _resized(w):
    x, y, rw, rh = RECT
    w.doc.set_rect((x, y, rw, rh + 1))


def _no_rect(w):
    w.doc.set_rect(None)


def _undo(w):
    assert w.doc.undo_stack.can_undo()
    w.act_undo.trigger()


def _redo(w):
    assert w.doc.undo_stack.can_redo()
    w.act_redo.trigger()


def _both(*fs):
    def run(w):
        for f in fs:
            f(w)
    return run


def _k3(w):
    w.tools.k_spin.setValue(3)
    assert w.doc.k == 3


def _k2(w):
    w.tools.k_spin.setValue(2)
    assert w.doc.k == 2


def _strokes_again(w):
    """The run's strokes back after a clear, outside the history (undoing the clear then
    brings back only what else it removed)."""
    w.doc.set_layers(strokes=base_layers(w.doc.k)[1], undoable=False)


COLD = [
    ("stroke added", 2, None, _add_stroke),
    ("stroke added with the mouse", 2, None,
     lambda w: mouse_drag(w, "brush", 2, [(11, 12), (13, 13)])),
    ("stroke erased", 2, None, _erase),
    ("stroke erased with the mouse", 2, None,
     lambda w: mouse_drag(w, "eraser", 1, [(5, 3), (9, 3)])),
    ("hard pixel painted", 2, None, _hard),
    ("hard pixel relabelled", 2, _hard, _hard_relabel),
    ("hard pixel erased", 2, _hard, lambda w: stroke(w.doc, "erase", (12, 12), (13, 13), 1)),
    ("rectangle added", 2, None, _rect),
    ("rectangle dragged with the mouse", 2, None,
     lambda w: mouse_drag(w, "rect", 1, [(3, 3), (12, 12)])),
    ("rectangle moved", 2, _rect, _moved),
    ("rectangle resized", 2, _rect, _resized),
    ("rectangle removed", 2, _rect, _no_rect),
    ("undo of a stroke", 2, _add_stroke, _undo),
    ("undo of an erase", 2, _erase, _undo),
    ("undo of a hard pixel", 2, _hard, _undo),
    ("undo of a rectangle", 2, _rect, _undo),
    ("undo of a rectangle's move", 2, _both(_rect, _moved), _undo),
    ("undo of a rectangle's removal", 2, _both(_rect, _no_rect), _undo),
    ("undo of clear", 2, _both(_rect, lambda w: w.act_clear.trigger(), _strokes_again), _undo),
    ("undo of K lowered", 3, _k2, _undo),
    ("redo of a stroke", 2, _both(_add_stroke, _undo), _redo),
    ("redo of an erase", 2, _both(_erase, _undo), _redo),
    ("redo of a hard pixel", 2, _both(_hard, _undo), _redo),
    ("redo of a rectangle", 2, _both(_rect, _undo), _redo),
    ("redo of a rectangle's move", 2, _both(_rect, _moved, _undo), _redo),
    ("redo of a rectangle's removal", 2, _both(_rect, _no_rect, _undo), _redo),
    ("redo of clear", 2, _both(_rect, lambda w: w.act_clear.trigger(), _undo), _redo),
    ("redo of K lowered", 3, _both(_k2, _undo), _redo),
    ("redo of K raised", 2, _both(_k3, _undo), _redo),
    ("clear", 2, None, lambda w: w.act_clear.trigger()),
    ("K raised", 2, None, _k3),
    ("K lowered", 3, None, _k2),
    ("area bound added", 2, None, lambda w: set_area(w, 2, 10.0, 90.0)),
    ("area bound changed", 2, lambda w: set_area(w, 2, 10.0, 90.0),
     lambda w: w.constraints_panel.rows[1].hi.setValue(80.0)),
    ("area bound removed", 2, lambda w: set_area(w, 2, 10.0, 90.0),
     lambda w: w.constraints_panel.rows[1].on.setChecked(False)),
    ("apart pair added", 3, None, lambda w: w.constraints_panel.apart[(1, 3)].setChecked(True)),
    ("apart pair changed", 3, lambda w: w.constraints_panel.apart[(1, 3)].setChecked(True),
     lambda w: (w.constraints_panel.apart[(1, 3)].setChecked(False),
                w.constraints_panel.apart[(2, 3)].setChecked(True))),
    ("apart pair removed", 3, lambda w: w.constraints_panel.apart[(1, 3)].setChecked(True),
     lambda w: w.constraints_panel.apart[(1, 3)].setChecked(False)),
    ("image replaced, strokes kept", 2, None, lambda w: w.doc.set_image(
        np.ascontiguousarray(w.doc.image[:, ::-1]), "mirrored.png", keep_layers=True)),
]


#: The changes of strokes or hard pixels alone: the next run is a correction.
CORRECTIONS = {"stroke added", "stroke added with the mouse", "stroke erased",
               "stroke erased with the mouse", "hard pixel painted", "hard pixel relabelled",
               "hard pixel erased", "undo of a stroke", "undo of an erase",
               "undo of a hard pixel", "redo of a stroke", "redo of an erase",
               "redo of a hard pixel"}


@pytest.mark.parametrize("name, k, before, change", COLD, ids=[c[0] for c in COLD])
def test_a_change_of_the_annotations_starts_the_next_run_cold(window, qtbot, tmp_path, monkeypatch,
                                                              name, k, before, change):
    win = window
    """After the strokes or hard pixels alone change, Run is a correction from the last
    answer; after the image, K, the rectangle or the constraints change (or every stroke is
    gone), it starts cold: the last answer is an answer to another question."""
    assert CORRECTIONS <= {c[0] for c in COLD}
    jobs, outcome = finish_a_run(win, qtbot, tmp_path, monkeypatch, k, before)
    assert_warm_from(next_job(win, jobs), outcome)  # the premise: unchanged, it is warm
    assert next_job(win, jobs).previous is None
    change(win)
    qtbot.wait(1)
    job = next_job(win, jobs)
    assert job.x0 is None, f"{name}: the run starts warm from an answer to other annotations"
    if name in CORRECTIONS:
        assert job.previous is not None, f"{name}: not a correction"
        np.testing.assert_array_equal(job.previous, outcome.labels)
        assert "(correction: from the last answer" in win.statusBar().currentMessage()
    else:
        assert job.previous is None, f"{name}: a correction from an answer to another question"
        assert "cold start" in win.statusBar().currentMessage()


# ---------------------------------------------------------------------- parameters only
def _field(name, value):
    def change(w):
        fields = w.params_panel.number_fields()
        assert fields[name].value() != value
        fields[name].setValue(value)
    return change


def _combo(attr):
    def change(w):
        combo = getattr(w.params_panel, attr)
        assert combo.count() > 1
        combo.setCurrentIndex((combo.currentIndex() + 1) % combo.count())
    return change


WARM = [
    ("λ", _field("lam", 7.5)),
    ("β", _field("beta", 0.01)),
    ("ρ₀", _field("rho0", 0.5)),
    ("ρ growth", _field("rho_growth", 1.2)),
    ("γ", _field("gamma", 1.2)),
    ("iteration limit", _field("max_iter", 150)),
    ("tolerance", _field("tol", 1e-4)),
    ("seed", lambda w: w.params_panel.seed.setValue(w.params_panel.seed.value() + 1)),
    ("colour model", _combo("colour")),
    ("backend", _combo("backend")),
    ("reference", lambda w: w.params_panel.reference.setChecked(True)),
    ("a stroke added and undone", _both(_add_stroke, _undo)),
    ("K raised and lowered again", _both(_k3, lambda w: w.tools.k_spin.setValue(2))),
    ("an area bound switched on and off", _both(lambda w: set_area(w, 2, 10.0, 90.0),
                                                lambda w: set_area(w, 2, 10.0, 90.0, False))),
]


@pytest.mark.parametrize("name, change", WARM, ids=[c[0] for c in WARM])
def test_a_change_of_parameters_only_keeps_the_warm_start(window, qtbot, tmp_path, monkeypatch,
                                                          name, change):
    win = window
    """After a change of the solver's parameters only (or an edit undone), Run starts from
    the last answer, and the new parameters reach the job (a re-run that threw the last
    answer away, or one that kept the old parameters)."""
    jobs, outcome = finish_a_run(win, qtbot, tmp_path, monkeypatch)
    first = next_job(win, jobs)
    assert_warm_from(first, outcome)
    change(win)
    qtbot.wait(1)
    job = next_job(win, jobs)
    assert_warm_from(job, outcome)
    assert "warm start" in win.statusBar().currentMessage()
    if name.startswith(("a ", "K ", "an ")):  # an edit undone: the same job as before
        assert job.params == first.params
    elif name == "reference":
        assert job.reference and not first.reference
    else:  # the premise: the change is one the run receives
        assert job.params != first.params


def test_warm_start_unchecked_starts_cold_with_nothing_changed(window, qtbot, tmp_path,
                                                              monkeypatch):
    win = window
    """Segment > Warm start unchecked: Run starts cold even with nothing changed; checked
    again, warm from the last answer."""
    jobs, outcome = finish_a_run(win, qtbot, tmp_path, monkeypatch, threaded=True)
    assert_warm_from(next_job(win, jobs), outcome)
    win.act_warm.trigger()
    assert not win.act_warm.isChecked()
    assert next_job(win, jobs).x0 is None
    win.act_warm.trigger()
    assert_warm_from(next_job(win, jobs), outcome)


# ---------------------------------------------------------------------- a new document
def _open_image(win, tmp_path):
    """Another photo of the same size, with the run's strokes painted again."""
    img = np.ascontiguousarray(win.doc.image[::-1])
    path = tmp_path / "flipped.png"
    cv2.imwrite(str(path), cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
    strokes = win.doc.strokes.copy()
    assert win.open_path(str(path)), win.errors
    win.doc.set_layers(strokes=strokes)


def _reopen_same(win, tmp_path):
    """The run's photo opened again, its strokes painted again: the same annotations."""
    strokes = win.doc.strokes.copy()
    assert win.open_path(win.doc.image_path), win.errors
    win.doc.set_layers(strokes=strokes)


def _session(win, tmp_path, edit=True):
    """A session saved from this photo with a stroke more (or the same), opened."""
    path = tmp_path / "s.json"
    if edit:
        _add_stroke(win)
        save_session(path, win.doc)
        win.act_undo.trigger()
    else:
        save_session(path, win.doc)
    assert win.open_session(str(path)), win.errors


def _sample(win, tmp_path):
    title, image, strokes, k = min(list_samples(), key=lambda s: s[1].stat().st_size)
    assert win.open_sample(image, strokes, k), win.errors


NEW_DOC = [
    ("another image, the same strokes", _open_image),
    ("the same image opened again, the same strokes", _reopen_same),
    ("a session with another stroke", _session),
    ("a session of the same annotations", lambda w, p: _session(w, p, edit=False)),
    ("a sample", _sample),
]


@pytest.mark.parametrize("name, load", NEW_DOC, ids=[c[0] for c in NEW_DOC])
def test_a_new_image_session_or_sample_starts_cold(window, qtbot, tmp_path, monkeypatch, name,
                                                   load):
    win = window
    """Opening an image, a session or a sample forgets the last run: the next starts cold,
    even where the annotations are those of the last run (the results were cleared; the
    answer the run would start from is no longer shown)."""
    jobs, outcome = finish_a_run(win, qtbot, tmp_path, monkeypatch, threaded=True)
    assert_warm_from(next_job(win, jobs), outcome)
    load(win, tmp_path)
    qtbot.wait(1)
    assert win.outcome is None  # the results are cleared
    assert next_job(win, jobs).x0 is None


def test_an_edit_while_the_run_goes_makes_the_next_run_cold(window, qtbot, tmp_path,
                                                            monkeypatch):
    """A stroke painted while a run goes is not in that run's answer: the next run starts
    cold (a warm start from an answer that never saw the stroke); undone, the annotations are
    the run's again and it starts warm."""
    win = window
    jobs, first = finish_a_run(win, qtbot, tmp_path, monkeypatch, threaded=True)
    monkeypatch.undo()  # (the real controller again, for a second threaded run)
    win.params_panel.lam.setValue(7.5)  # (a parameter: this run starts warm)
    win.act_run.trigger()
    assert win.running and win._warm
    _add_stroke(win)  # while it runs (its end reaches the window only in the event loop)
    assert win.running
    qtbot.waitUntil(lambda: not win.running, timeout=300000)
    assert not win.errors and win.outcome is not first
    second = win.outcome
    monkeypatch.setattr(win.solver, "start", jobs.append)
    assert next_job(win, jobs).x0 is None, "warm from an answer that never saw the stroke"
    win.act_undo.trigger()
    assert_warm_from(next_job(win, jobs), second)
