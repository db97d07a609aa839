"""Qt tests of the main window (offscreen): drawing, undo, runs, cancel, sessions, errors."""
from __future__ import annotations

import time

import numpy as np
import pytest

from PyQt6.QtCore import QPoint, QPointF, QStandardPaths, Qt  # noqa: E402
from PyQt6.QtTest import QTest  # noqa: E402
from PyQt6.QtWidgets import QApplication, QMessageBox  # noqa: E402

from segapp.ui.main_window import MainWindow  # noqa: E402
from tests.segapp.conftest import disc_image as synthetic  # noqa: E402
from tests.segapp.conftest import pace_iterations  # noqa: E402

QStandardPaths.setTestModeEnabled(True)


def load(win, qtbot, strokes=True, **kw):
    img, s = synthetic(**kw)
    win.doc.set_image(img, "synthetic.png")
    if strokes:
        win.doc.set_layers(strokes=s)
    win.canvas.fit_to_window()
    qtbot.wait(10)
    return img, s


def vpos(win, x, y) -> QPoint:
    return win.canvas.mapFromScene(QPointF(x + 0.5, y + 0.5))


def drag(win, points, button=Qt.MouseButton.LeftButton):
    vp = win.canvas.viewport()
    QTest.mousePress(vp, button, Qt.KeyboardModifier.NoModifier, vpos(win, *points[0]))
    for p in points[1:]:
        QTest.mouseMove(vp, vpos(win, *p))
    QTest.mouseRelease(vp, button, Qt.KeyboardModifier.NoModifier, vpos(win, *points[-1]))


def test_mouse_strokes_undo_redo(win, qtbot):
    load(win, qtbot, strokes=False)
    win.tools.set_label(2)
    win.tools.label_changed.emit(2)
    win.tools.size_slider.setValue(2)
    drag(win, [(5, 10), (15, 10), (30, 10)])
    s1 = win.doc.strokes.copy()
    assert (s1[10, 5:31] == 2).all() and s1[20, 20] == 0
    win.canvas.set_tool("hard")
    win.canvas.label = 1
    drag(win, [(10, 30), (20, 30)])
    h1 = win.doc.hard.copy()
    assert (h1[30, 10:21] == 1).all()
    win.act_undo.trigger()
    assert not win.doc.hard.any() and np.array_equal(win.doc.strokes, s1)
    win.act_undo.trigger()
    assert not win.doc.strokes.any()
    win.act_redo.trigger()
    win.act_redo.trigger()
    assert np.array_equal(win.doc.strokes, s1) and np.array_equal(win.doc.hard, h1)
    win.canvas.set_tool("eraser")
    drag(win, [(0, 10), (39, 10)])
    assert not win.doc.strokes[10].any()
    win.act_undo.trigger()
    assert np.array_equal(win.doc.strokes, s1)


def test_rectangle_and_shortcuts(win, qtbot):
    load(win, qtbot)
    win.activateWindow()
    win.tools.tool_actions["rect"].trigger()
    assert win.canvas.tool == "rect"
    drag(win, [(5, 6), (20, 20), (30, 25)])
    x, y, w, h = win.doc.rect
    assert abs(x - 5) <= 1 and abs(y - 6) <= 1 and abs(w - 25) <= 1 and abs(h - 19) <= 1
    win.act_undo.trigger()
    assert win.doc.rect is None
    r0 = win.canvas.brush_radius
    win.act_bigger.trigger()
    assert win.canvas.brush_radius > r0
    win.tools.k_spin.setValue(4)
    assert win.doc.k == 4 and win.tools.label_actions[3].isVisible()
    win.act_undo.trigger()
    assert win.doc.k == 2 and win.tools.k_spin.value() == 2


def _params(win):
    from segapp.ui.runctl import build_params
    return build_params(win.doc.k, win.params_panel.settings())


@pytest.mark.slow
def test_run_matches_pipeline(win, qtbot):
    from segapp.core.pipeline import run_segmentation
    img, s = load(win, qtbot)
    win.act_warm.setChecked(False)
    with qtbot.waitSignal(win.solver.finished, timeout=60000):
        assert win.start_run()
    o = win.outcome
    assert o is not None and not win.running
    assert win.frames_received >= 1
    assert win.plot.n_points() == win.records_received >= 1
    assert win.plot.iterations() == sorted(set(win.plot.iterations()))
    assert win.plot.iterations()[-1] == o.iterations
    ref = run_segmentation(img, s.astype(np.int32), _params(win), reference=True)
    assert np.array_equal(o.labels, ref.labels)
    assert o.energy == pytest.approx(ref.energy)
    assert win.results_panel.fields["energy"].text() != "—"
    # without constraints there is no bound or constraint row to show
    assert not win.results_panel.fields["constraints"].isVisible()
    assert not win.results_panel.fields["bound"].isVisible()
    assert win.results_panel.replay.isEnabled() == (len(win.frames) > 1)
    # replay and compare views do not crash and show something
    win.results_panel.set_view_mode("compare")
    win.results_panel.replay.setValue(0)
    win.results_panel.set_view_mode("solution")
    assert not win.canvas.result.pixmap().isNull()
    # adding a stroke and re-running is a correction, not a warm start (the annotations
    # changed); changing only a parameter then warm-starts
    win.act_warm.setChecked(True)
    win.doc.begin_stroke("strokes")
    win.doc.stroke_to((35, 35), (38, 38), 1, 1)
    win.doc.end_stroke()
    with qtbot.waitSignal(win.solver.finished, timeout=60000):
        win.start_run()
    assert not win._warm and win._correction and win.outcome is not o
    o = win.outcome
    win.params_panel.lam.setValue(7.5)
    with qtbot.waitSignal(win.solver.finished, timeout=60000):
        win.start_run()
    assert win._warm and win.outcome is not o


@pytest.mark.slow
def test_exports(win, qtbot, tmp_path):
    load(win, qtbot)
    with qtbot.waitSignal(win.solver.finished, timeout=60000):
        win.start_run()
    assert win.save_labels(str(tmp_path / "l.png"))
    assert win.save_overlay(str(tmp_path / "o.png"))
    assert win.save_history(str(tmp_path / "h.csv"))
    from segapp.core.io import load_label_image
    assert np.array_equal(load_label_image(str(tmp_path / "l.png")), win.outcome.labels)
    rows = (tmp_path / "h.csv").read_text().strip().splitlines()
    assert rows[0].startswith("iteration,") and len(rows) == len(win.outcome.history) + 1


@pytest.mark.slow
def test_cancel_keeps_everything(win, qtbot, monkeypatch):
    pace_iterations(monkeypatch)
    _, s = load(win, qtbot, h=60, w=60)
    win.params_panel.admm["max_iter"].setValue(100000)
    win.params_panel.admm["tol"].setValue(1e-6)
    win.params_panel.reference.setChecked(False)
    with qtbot.waitSignal(win.solver.records, timeout=60000):
        win.start_run()
    with qtbot.waitSignal(win.solver.finished, timeout=10000):
        win.act_cancel.trigger()
        assert win.statusBar().currentMessage() == "Cancelling…"
    assert not win.running and win.outcome is not None
    assert not win.outcome.converged
    assert win.results_panel.fields["status"].text() == \
        f"cancelled at iteration {win.outcome.iterations}"
    assert np.array_equal(win.doc.strokes, s)
    assert win.act_run.isEnabled()
    win.params_panel.admm["max_iter"].setValue(5)
    with qtbot.waitSignal(win.solver.finished, timeout=60000):
        win.start_run()


def test_missing_label_error(win, qtbot, monkeypatch):
    calls = []
    monkeypatch.setattr(QMessageBox, "critical", lambda *a, **k: calls.append(a))
    _, s = load(win, qtbot)
    win.doc.set_k(3)
    with qtbot.waitSignal(win.solver.failed, timeout=60000):
        win.start_run()
    assert calls and "3" in calls[0][2]
    assert np.array_equal(win.doc.strokes, s) and win.act_run.isEnabled()


def test_bad_image_keeps_strokes(win, qtbot, monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(QMessageBox, "critical", lambda *a, **k: calls.append(a))
    _, s = load(win, qtbot)
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    assert not win.open_path(str(bad))
    assert len(calls) == 1 and calls[0][1] == "Cannot open image"
    assert np.array_equal(win.doc.strokes, s) and win.doc.image_path == "synthetic.png"


@pytest.mark.slow
def test_session_round_trip(win, qtbot, tmp_path):
    from segapp.core.io import load_image
    img, _ = synthetic()
    import cv2
    path = tmp_path / "img.png"
    cv2.imwrite(str(path), img[:, :, ::-1])
    assert win.open_path(str(path))
    s = np.zeros(win.doc.shape, np.uint8)
    s[3:6, 3:30] = 1
    s[20, 15:25] = 3
    win.doc.set_k(3)
    win.doc.set_layers(strokes=s)
    win.doc.begin_stroke("hard")
    win.doc.stroke_to((30, 30), (33, 33), 2, 2)
    win.doc.end_stroke()
    win.doc.set_rect((4, 5, 25, 30))
    win.params_panel.lam.setValue(3.5)
    win.params_panel.colour.setCurrentIndex(1)
    win.params_panel.admm["max_iter"].setValue(77)
    assert win.doc.dirty
    sess = tmp_path / "s.json"
    assert win.save_session(str(sess)) and not win.doc.dirty
    w2 = MainWindow(confirm_discard=False)
    qtbot.addWidget(w2)
    assert w2.open_session(str(sess))
    d1, d2 = win.doc, w2.doc
    assert d2.k == 3 and d2.rect == d1.rect
    assert np.array_equal(d2.strokes, d1.strokes) and np.array_equal(d2.hard, d1.hard)
    assert np.array_equal(d2.image, load_image(str(path)))
    assert w2.params_panel.settings() == win.params_panel.settings()
    assert w2.tools.k_spin.value() == 3 and not d2.dirty


def test_close_prompts_when_dirty(qtbot, monkeypatch):
    w = MainWindow(confirm_discard=True)
    qtbot.addWidget(w)
    img, s = synthetic()
    w.doc.set_image(img)
    w.doc.set_layers(strokes=s)
    asked = []
    monkeypatch.setattr(QMessageBox, "question",
                        lambda *a, **k: asked.append(a) or QMessageBox.StandardButton.Cancel)
    assert not w.close() and asked
    monkeypatch.setattr(QMessageBox, "question",
                        lambda *a, **k: QMessageBox.StandardButton.Discard)
    assert w.close()


def test_zoom_pan_and_cursor_readout(win, qtbot):
    load(win, qtbot)
    win.act_1to1.trigger()
    assert win.canvas.zoom() == pytest.approx(1.0)
    win.act_zin.trigger()
    assert win.canvas.zoom() == pytest.approx(1.25)
    win.act_fit.trigger()
    z = win.canvas.zoom()
    assert z > 1  # 40x40 image fills a big view
    QTest.mouseMove(win.canvas.viewport(), vpos(win, 20, 20))
    assert "x 20, y 20" in win.pos_label.text() and "stroke 2" in win.pos_label.text()
    h0 = win.canvas.horizontalScrollBar().value()
    drag(win, [(20, 20), (10, 20)], button=Qt.MouseButton.MiddleButton)
    assert win.canvas.horizontalScrollBar().value() != h0
    assert np.array_equal(win.doc.strokes, synthetic()[1])  # panning paints nothing


@pytest.mark.slow
def test_gpu_fallback_notice(win, qtbot, no_cupy):
    """GPU chosen on a machine whose GPU is not usable: the run happens on the CPU, and the user
    is told why in a notice and in the results panel."""
    load(win, qtbot)
    win.params_panel.backend.setCurrentIndex(win.params_panel.backend.findData("gpu"))
    notices = []
    win.solver.notice.connect(notices.append)
    with qtbot.waitSignal(win.solver.finished, timeout=60000):
        win.start_run()
    assert len(notices) == 1 and "running on the CPU instead" in notices[0]
    assert "CuPy cannot be imported" in notices[0] and win.outcome.backend == "cpu"


@pytest.mark.slow
def test_samples_recent_and_drop(win, qtbot, tmp_path):
    from PyQt6.QtCore import QMimeData, QUrl
    from PyQt6.QtGui import QDropEvent
    titles = [a.text() for a in win.samples_menu.actions()]
    assert any("cameraman" in t for t in titles)
    cam3 = next(a for a in win.samples_menu.actions() if "cameraman" in a.text()
                and "3" in a.text())
    cam3.trigger()
    assert win.doc.k == 3 and win.tools.k_spin.value() == 3
    assert set(np.unique(win.doc.strokes)) == {0, 1, 2, 3} and not win.doc.dirty
    assert win.recent_files()[0].endswith("cameraman.png")
    img, _ = synthetic()
    import cv2
    p = tmp_path / "dropped.png"
    cv2.imwrite(str(p), img)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p))])
    ev = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
                    Qt.KeyboardModifier.NoModifier)
    win.dropEvent(ev)
    assert win.doc.image_path == str(p) and win.doc.shape == (40, 40)
    assert win.recent_menu.actions()[0].text() == "dropped.png"


@pytest.mark.slow
@pytest.mark.parametrize("compiles", [True, False])
def test_warm_up_says_when_the_first_run_compiles(win, qtbot, monkeypatch, compiles):
    """The background warm-up compiles for about a minute on a machine's first run: the status
    bar says so (in a permanent label, gone when it is done), then that the solver is ready;
    with numba's cache warm it says nothing."""
    from segapp.ui.worker import WarmUp
    # (the warm-up runs in a child process: these stand in for solver.mrf.warm_up there)
    monkeypatch.setattr(WarmUp, "target",
                        f"tests.segapp._warm_up_targets:{'compiles' if compiles else 'cached'}")
    messages = []
    win.statusBar().messageChanged.connect(messages.append)
    win.start_warm_up().join(60)
    qtbot.wait(50)  # the signals cross from the warm-up thread through the event loop
    ready = [m for m in messages if m.startswith("Solver ready")]
    # the compile notice is a permanent label (a status tip would clear a message): its text is
    # set when the compile starts, and it is hidden once the solver is ready
    assert not win.compile_label.isVisible()
    if compiles:
        assert win.compile_label.text().startswith("Compiling the solver's kernels")
        assert ready == ["Solver ready (compiled in 42 s)"]
    else:
        assert win.compile_label.text() == "" and ready == []


@pytest.mark.slow
def test_a_run_that_waits_for_compiling_says_so(win, qtbot, monkeypatch):
    import numba

    import segapp.core.pipeline as pipeline
    real = pipeline.run_segmentation

    def compiling(*a, **kw):  # as when Run is pressed before the warm-up has finished
        numba.njit(lambda x: x - 1)(1)
        return real(*a, **kw)

    monkeypatch.setattr(pipeline, "run_segmentation", compiling)
    load(win, qtbot)
    notices = []
    win.solver.notice.connect(notices.append)
    with qtbot.waitSignal(win.solver.finished, timeout=60000):
        win.start_run()
    assert [n for n in notices if n.startswith("Compiling the solver's kernels")] == \
        [notices[0]]


def test_keys_go_back_to_the_canvas_after_k_changes(win, qtbot):
    """Typing K into its spin box, then a label's number and a tool's letter: the number picks
    the label and the letter the tool (they used to type into the spin box)."""
    load(win, qtbot)
    win.activateWindow()
    spin = win.tools.k_spin
    spin.setFocus()
    qtbot.waitUntil(spin.hasFocus)
    QTest.keyClick(spin, Qt.Key.Key_Up)
    assert win.doc.k == 3
    assert not spin.hasFocus() and win.canvas.hasFocus()
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_2)
    assert win.doc.k == 3 and win.canvas.label == 2
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_R)
    assert win.canvas.tool == "rect" and win.doc.k == 3


@pytest.mark.slow
def test_the_title_names_the_image_opened_after_a_session(win, qtbot, tmp_path):
    """A session, then a different image: the title names the image at once (it kept the
    session's name until the next edit)."""
    import cv2
    img, _ = synthetic()
    cv2.imwrite(str(tmp_path / "first.png"), img)
    cv2.imwrite(str(tmp_path / "second.png"), img[::-1])
    assert win.open_path(str(tmp_path / "first.png"))
    assert win.save_session(str(tmp_path / "mysession.json"))
    assert win.windowTitle().startswith("mysession.json")
    titles = []
    win.windowTitleChanged.connect(titles.append)
    assert win.open_path(str(tmp_path / "second.png"))
    assert win.windowTitle().startswith("second.png")
    assert not any("mysession" in t for t in titles), titles


@pytest.mark.slow
def test_recent_entries_with_one_name_say_their_folders(win, qtbot, tmp_path):
    import cv2
    from segapp.ui.fileops import recent_entry_text
    img, _ = synthetic()
    paths = []
    for folder in ("shoot/a", "shoot/b", "other"):
        (tmp_path / folder).mkdir(parents=True)
        paths.append(tmp_path / folder / "cameraman.png")
        cv2.imwrite(str(paths[-1]), img)
    cv2.imwrite(str(tmp_path / "unique.png"), img)
    win._settings().setValue("recent", [])  # (the settings outlive a test)
    for p in [*paths, tmp_path / "unique.png"]:
        assert win.open_path(str(p))
    texts = [a.text() for a in win.recent_menu.actions()]
    assert texts == ["unique.png", "cameraman.png — other", "cameraman.png — b",
                     "cameraman.png — a"]
    assert [a.toolTip() for a in win.recent_menu.actions()][1] == str(paths[2].resolve())
    # folders that end alike are told apart by more of their path
    assert recent_entry_text("/x/a/img/p.png", ["/x/a/img/p.png", "/x/b/img/p.png"]) == \
        "p.png — a/img"


def test_undo_is_enabled_by_the_first_painted_stroke(win, qtbot):
    load(win, qtbot, strokes=False)
    assert not win.act_undo.isEnabled()
    drag(win, [(5, 10), (15, 10)])
    assert win.doc.strokes.any()
    assert win.act_undo.isEnabled() and not win.act_redo.isEnabled()
    win.act_undo.trigger()
    assert not win.doc.strokes.any() and win.act_redo.isEnabled()
    win.act_redo.trigger()
    assert win.doc.strokes.any() and win.act_undo.isEnabled() and not win.act_redo.isEnabled()


def test_a_cancel_during_the_polish_ends_it_and_says_so(win, qtbot, monkeypatch):
    """Esc while the polish runs (its first stage named): the polish (which polls the cancel
    between its rounds) ends, and the results say where the run was cancelled."""
    import solver.mrf.polish.pipeline as polish_pipeline
    from solver.mrf.solve import coarse_to_fine

    real = polish_pipeline.polish_labels

    def slow(problem, labels, *args, stop=None, **kwargs):  # a polish that waits for the stop
        kwargs["on_stage"]("icm")  # (its first stage begins, and waits)
        t0 = time.monotonic()
        while stop is not None and not stop() and time.monotonic() - t0 < 30:
            time.sleep(0.01)
        return real(problem, labels, *args, stop=stop, **kwargs)

    monkeypatch.setattr(coarse_to_fine.pipeline, "polish_labels", slow)
    _, s = load(win, qtbot, h=200, w=200)  # (coarse to fine: the polish polls the cancel)
    win.params_panel.reference.setChecked(False)
    with qtbot.waitSignal(win.solver.records, timeout=60000):
        win.start_run()
    qtbot.waitUntil(lambda: "polish" in win.iter_label.text(), timeout=30000)
    # (the coarsest level's polish: the stage it began, and what comes after it)
    assert win.iter_label.text().startswith("polish of level 1 of 3 (after ADMM iteration ")
    assert win.iter_label.text().endswith("): ICM, then level 2 of 3…"), win.iter_label.text()
    t0 = time.monotonic()
    with qtbot.waitSignal(win.solver.finished, timeout=20000):
        win.act_cancel.trigger()
    assert time.monotonic() - t0 < 10  # (not the fake polish's 30 s)
    assert win.outcome.status == "cancelled"
    assert win.results_panel.fields["status"].text() == "cancelled in the polish"
    assert np.array_equal(win.doc.strokes, s)
