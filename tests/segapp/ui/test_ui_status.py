"""Qt tests (offscreen) of what the window says about a run while it goes and after (issue 33):

- warm start only where it helps: the last answer is the start only when the annotations are
  those of the last run (a changed parameter), a cold start otherwise, said in the status bar;
- the first-run compile notice and a GPU fallback stay in view (permanent status-bar widgets,
  which a status tip does not clear), and the fallback is in the results panel too;
- the phases: the progress text names the running phase, the results give each phase's time;
- one energy in the status bar at a time, no leftover progress text or plot frame after a run
  or a new image, and a busy bar rather than iteration / limit;
- a finished run keeps no live frame (the replay has its own copies).
"""
from __future__ import annotations

import re
import threading

import numpy as np
import pytest

from PyQt6.QtCore import QStandardPaths
from PyQt6.QtGui import QStatusTipEvent
from PyQt6.QtWidgets import QApplication

from tests.segapp.conftest import disc_image
from tests.segapp.conftest import run_to_end as run


QStandardPaths.setTestModeEnabled(True)


def open_image(win, qtbot, image=None, strokes=None) -> None:
    if image is None:
        image, strokes = disc_image()
    win.doc.set_image(image, "synthetic.png")
    if strokes is not None:
        win.doc.set_layers(strokes=strokes)
    qtbot.wait(10)


def spy_x0(monkeypatch) -> list:
    """The ``x0`` each run hands to the pipeline (the real pipeline still runs)."""
    import segapp.core.pipeline as pipeline
    real = pipeline.run_segmentation
    seen: list = []

    def spy(*args, **kw):
        seen.append(kw.get("x0"))
        return real(*args, **kw)

    monkeypatch.setattr(pipeline, "run_segmentation", spy)
    return seen


def hover_a_status_tip(win, tip: str = "a toolbar button's status tip") -> None:
    """What the mouse over a menu or toolbar item does to the status bar."""
    QApplication.sendEvent(win, QStatusTipEvent(tip))
    assert win.statusBar().currentMessage() == tip  # temporary messages are gone


def assert_compile_notice_survives_a_status_tip(win, qtbot) -> None:
    """Wait for the compile notice, hover a status tip, and check the notice is still shown."""
    qtbot.waitUntil(lambda: win.compile_label.isVisible(), timeout=20000)
    hover_a_status_tip(win)
    qtbot.wait(20)
    assert win.compile_label.isVisible() and win.compile_bar.isVisible()
    assert win.compile_label.text().startswith("Compiling the solver's kernels")


# ------------------------------------------------------------------------------- warm start
@pytest.mark.slow
def test_warm_start_only_when_the_annotations_are_the_last_runs(win, qtbot, monkeypatch):
    """Warm start (checked by default) starts from the last answer after a parameter change;
    a stroke or a hard constraint added or changed since makes the run a correction (the last
    answer's labels, no x0), which the status bar and the results say."""
    x0s = spy_x0(monkeypatch)
    messages: list[str] = []
    win.statusBar().messageChanged.connect(messages.append)
    open_image(win, qtbot)
    assert win.act_warm.isChecked()
    run(win, qtbot)
    assert x0s[-1] is None  # nothing to start from
    assert "Solving" in messages  # and nothing said about a start
    win.doc.begin_stroke("strokes")
    win.doc.stroke_to((35, 35), (38, 38), 1, 1)
    win.doc.end_stroke()
    second = run(win, qtbot)
    assert x0s[-1] is None and not win._warm and win._correction
    assert any(m.startswith("Solving (correction: from the last answer") for m in messages), \
        messages
    assert "warm start" not in win.results_panel.fields["status"].text()
    assert "(correction)" in win.results_panel.fields["status"].text()
    labels = second.labels.copy()
    win.params_panel.lam.setValue(7.5)  # only a parameter changes
    run(win, qtbot)
    x0 = x0s[-1]
    assert x0 is not None and win._warm
    np.testing.assert_array_equal(np.asarray(x0).reshape(-1, 2).argmax(1) + 1, labels.ravel())
    assert "warm start" in win.results_panel.fields["status"].text()
    assert "Solving (warm start: same annotations, new parameters)" in messages, messages
    run(win, qtbot)  # again, nothing changed: said as it is
    assert x0s[-1] is not None
    assert "Solving (warm start: from the last answer)" in messages, messages
    # hard constraints are annotations too: painting some, then changing them, is a
    # correction each time
    for corner in ((3, 3), (30, 30)):
        win.doc.begin_stroke("hard")
        win.doc.stroke_to(corner, (corner[0] + 2, corner[1] + 2), 1, 2)
        win.doc.end_stroke()
        run(win, qtbot)
        assert x0s[-1] is None and not win._warm and win._correction


# ------------------------------------------------------------------------------- notices
@pytest.mark.slow
def test_compile_notice_of_a_run_survives_a_status_tip(win, qtbot, monkeypatch):
    """While a run waits for its kernels to compile, a permanent label and busy bar say so; a
    status tip (the mouse over a menu item) does not clear them; they go when the run ends."""
    import numba

    import segapp.core.pipeline as pipeline
    real = pipeline.run_segmentation
    release = threading.Event()

    def compiling(*a, **kw):  # a real compile, then a wait as long as the test likes
        numba.njit(lambda x: 3 * x + 1)(2)
        release.wait(60)
        return real(*a, **kw)

    monkeypatch.setattr(pipeline, "run_segmentation", compiling)
    open_image(win, qtbot)
    win.act_run.trigger()
    try:
        assert_compile_notice_survives_a_status_tip(win, qtbot)
        assert win.compile_bar.maximum() == 0  # busy
    finally:
        release.set()
    qtbot.waitUntil(lambda: not win.running, timeout=300000)
    assert not win.compile_label.isVisible() and not win.compile_bar.isVisible()


@pytest.mark.slow
def test_compile_notice_of_the_warm_up_survives_a_status_tip(win, qtbot, monkeypatch, tmp_path):
    from segapp.ui.worker import WarmUp
    release = tmp_path / "release"
    monkeypatch.setenv("SEGAPP_TEST_RELEASE", str(release))
    monkeypatch.setattr(WarmUp, "target", "tests.segapp._warm_up_targets:compiles_then_waits")
    thread = win.start_warm_up()
    try:
        assert_compile_notice_survives_a_status_tip(win, qtbot)
    finally:
        release.touch()
    thread.join(60)
    qtbot.waitUntil(lambda: not win.compile_label.isVisible(), timeout=5000)
    assert win.statusBar().currentMessage() == "Solver ready (compiled in 42 s)"


@pytest.mark.slow
def test_gpu_fallback_is_in_the_results_panel_and_stays_in_view(win, qtbot, no_cupy):
    """The GPU backend without CuPy runs on the CPU: the results panel's backend field and a
    permanent status-bar label say so, with the reason, and a status tip does not clear it."""
    open_image(win, qtbot)
    win.params_panel.backend.setCurrentIndex(win.params_panel.backend.findData("gpu"))
    o = run(win, qtbot)
    assert o.backend == "cpu" and o.warnings
    backend = win.results_panel.fields["backend"].text()
    assert backend.startswith("cpu\nGPU not available: ran on the CPU (")
    reason = o.warnings[-1].removesuffix("; running on the CPU instead")
    assert reason and reason in backend
    hover_a_status_tip(win)
    assert win.notice_label.isVisible()
    assert win.notice_label.text().startswith("GPU not available: ran on the CPU")


# ------------------------------------------------------------------------------- phases
@pytest.mark.slow
def test_progress_names_the_phase_and_results_give_each_phases_time(win, qtbot):
    open_image(win, qtbot)
    texts: list[str] = []
    # connected after the window's own slots: they see the text those slots set
    win.solver.phase.connect(lambda _name: texts.append(win.iter_label.text()))
    win.solver.records.connect(lambda _batch: texts.append(win.iter_label.text()))
    o = run(win, qtbot)
    # (the reference solves in its child beside ADMM: its phase is named only when ADMM
    # ends first and the run waits for it)
    texts = [t for t in texts if t != "waiting for the reference (min-cut)…"]
    assert texts[0].startswith("building the model")
    # the colour models' rounds (a rectangle's default) come first, each named, then the final
    # solve's set-up and its iterations
    assert texts[1].startswith("colour models, round 1 of ")
    final = max(i for i, t in enumerate(texts) if t.startswith("ADMM: setting up"))
    assert all(t.startswith(("colour models, round", "ADMM iteration", "polish"))
               for t in texts[1:final])
    assert texts[final + 1].startswith("ADMM iteration ") and "E = " in texts[final + 1]
    assert o.rounds >= 1 and o.build_time_s > 0 and o.reference_time_s > 0
    shown = win.results_panel.fields["time"].text()
    # the run's wall time: at least its build and each overlapping phase, and the text says so
    assert max(o.reference_time_s, o.time_s) + o.build_time_s <= o.total_time_s
    assert o.total_time_s <= o.build_time_s + o.reference_time_s + o.time_s + 0.5
    assert shown == (f"{o.total_time_s:.2f} s in all\nmodel {o.build_time_s:.2f} · reference "
                     f"{o.reference_time_s:.2f} · ADMM {o.time_s:.2f} s")


# ------------------------------------------------------------------------------- one energy
def _pace_iterations(monkeypatch, seconds=0.002):
    import time as _time

    from segapp.ui.worker import SolveWorker
    real = SolveWorker._callback

    def paced(self, state):
        _time.sleep(seconds)
        return real(self, state)
    monkeypatch.setattr(SolveWorker, "_callback", paced)


@pytest.mark.slow
def test_one_energy_in_the_status_bar_and_nothing_left_for_a_new_image(
        win, qtbot, monkeypatch, tmp_path):
    """After a run the status bar holds one energy (the outcome's), not the last iteration's
    beside it; opening another image mid-run leaves no progress text and a plot that frames
    the next data afresh. While ADMM runs the bar is busy, not iteration / limit."""
    import cv2
    open_image(win, qtbot)
    run(win, qtbot)
    assert win.outcome is not None
    shown = win.statusBar().currentMessage() + " " + win.iter_label.text()
    assert shown.count("E =") == 1, shown
    assert win.iter_label.text() == ""
    # a long run, then a new image while it goes
    _pace_iterations(monkeypatch)
    win.params_panel.admm["max_iter"].setValue(100000)
    win.params_panel.admm["tol"].setValue(1e-6)
    win.params_panel.reference.setChecked(False)
    with qtbot.waitSignal(win.solver.records, timeout=60000):
        assert win.start_run()
    assert "E =" in win.iter_label.text()
    assert win.progress.maximum() == 0  # busy: the number of iterations is not known
    vb = win.plot.energy.getViewBox()
    vb.setYRange(-5e6, -4e6)  # as _fit_y and the user's zoom leave it: auto-range off
    assert not all(vb.autoRangeEnabled())
    img, strokes = disc_image(32, 48, seed=3)
    path = tmp_path / "other.png"
    cv2.imwrite(str(path), img)
    assert win.open_path(str(path))
    assert not win.running and win.outcome is None
    assert win.iter_label.text() == ""
    assert win.plot.n_points() == 0
    assert all(vb.autoRangeEnabled()) and all(win.plot.resid.getViewBox().autoRangeEnabled())
    assert vb.viewRange()[1] == pytest.approx([0, 1])


# ------------------------------------------------------------------------------- memory
@pytest.mark.slow
def test_a_finished_run_keeps_no_live_frame(win, qtbot):
    open_image(win, qtbot)
    seen: list[int] = []
    win.solver.frame.connect(lambda *_: seen.append(win._live_probs is not None))
    o = run(win, qtbot)
    assert seen and all(seen)  # premise: the run showed live frames
    assert win._live_probs is None
    assert o.x_final is None  # the warm start takes the labels
    assert len(win.frames) >= 2  # what the replay needs stays


# ------------------------------------------------------------------------------- endings
@pytest.mark.slow
def test_a_failed_warm_up_takes_its_compile_notice_away(win, qtbot, monkeypatch):
    """A warm-up that fails after its kernels began compiling leaves no compile notice behind
    (the first run then compiles, and says so itself)."""
    from segapp.ui.worker import WarmUp
    monkeypatch.setattr(WarmUp, "target", "tests.segapp._warm_up_targets:fails")
    calls: list[tuple] = []
    real = win._set_compiling

    def recording(*args):
        calls.append(args)
        real(*args)

    monkeypatch.setattr(win, "_set_compiling", recording)
    thread = win.start_warm_up()
    thread.join(60)
    qtbot.waitUntil(lambda: len(calls) == 2, timeout=5000)
    assert calls == [("warm-up", True), ("warm-up", False)]
    assert not win.compile_label.isVisible() and not win.compile_bar.isVisible()


def test_a_notice_is_in_the_status_bar_as_the_results_panel_words_it(win):
    """A solve's notice (here a GPU fallback) is in the status bar as one line, reworded as
    the results panel shows it, and in the permanent notice label."""
    text = "CuPy cannot be imported; running on the CPU instead"
    win.on_notice(text)
    line = "GPU not available: ran on the CPU (CuPy cannot be imported)"
    assert win.statusBar().currentMessage() == line
    assert win.notice_label.text() == "GPU not available: ran on the CPU"
    assert win.notice_label.toolTip() == line


@pytest.mark.slow
def test_the_polish_text_only_while_admm_is_between_iterations(win, qtbot, monkeypatch):
    """The "polish (after ADMM iteration N): stage…" text appears while the solve names its
    polish stages, not while the run waits for the reference (which solves beside ADMM, here
    made to end after it), and not from a stage named after the run ended."""
    from segapp.core import isolated
    monkeypatch.setattr(isolated, "CHILD_TARGET", "tests.segapp.core.test_isolated_reference:late")
    open_image(win, qtbot)
    during_reference: list[str] = []

    polishing: list[str] = []

    def on_phase(name):
        if name == "reference":
            during_reference.append(win.iter_label.text())
        elif name.startswith("polish:"):
            polishing.append(win.iter_label.text())

    win.solver.phase.connect(on_phase)  # (after the window's own slot: the text it set)
    run(win, qtbot)
    assert during_reference == ["waiting for the reference (min-cut)…"]
    assert polishing and all(t.startswith("polish") and t.endswith("…") and
                             re.search(r"\(after ADMM iteration \d+\): [A-Za-z]", t)
                             for t in polishing), polishing
    assert ": ICM" in polishing[0]  # (every polish begins with its ICM sweeps)
    assert win.records_received > 0 and win.iter_label.text() == ""
    win.on_phase("polish:tv")  # a stage named after the run ended
    assert win.iter_label.text() == ""


@pytest.mark.slow
def test_the_status_bar_names_the_outcome_its_gap_and_its_warning(win, qtbot, no_cupy):
    """After a run the status bar says how ADMM ended in words (the iteration limit here), its
    energy and iterations, the gap to the reference, and the run's last warning."""
    from segapp.ui.panels import warning_line
    open_image(win, qtbot)
    win.params_panel.backend.setCurrentIndex(win.params_panel.backend.findData("gpu"))
    win.params_panel.admm["max_iter"].setValue(3)
    o = run(win, qtbot)
    assert o.status == "max_iter" and o.reference_energy and o.warnings
    gap = (o.energy - o.reference_energy) / abs(o.reference_energy) * 100
    assert win.statusBar().currentMessage() == (
        f"ADMM iteration limit: E = {o.energy:.6g} after {o.iterations} iterations "
        f"(gap {gap:+.3f} % to the reference) — {warning_line(o.warnings[-1])}")


@pytest.mark.parametrize("answer", ["yes", "no"])
def test_out_of_memory_for_the_reference_offers_a_run_without_it(win, qtbot, monkeypatch,
                                                                 caplog, answer):
    """A run that would fit in memory without the reference asks whether to run without it:
    Yes unchecks the reference and runs (to an outcome with no reference), No leaves both."""
    from PyQt6.QtWidgets import QMessageBox

    import segapp.core.pipeline as pipeline
    from segapp.core.memory import WITHOUT_REFERENCE, InsufficientMemoryError
    real = pipeline.run_segmentation
    message = f"this image needs 9 GiB; {WITHOUT_REFERENCE} to need 2 GiB"

    def short_of_memory(*a, **kw):
        if win.params_panel.reference.isChecked():
            raise InsufficientMemoryError(message)
        return real(*a, **kw)

    monkeypatch.setattr(pipeline, "run_segmentation", short_of_memory)
    asked: list[tuple] = []
    button = QMessageBox.StandardButton.Yes if answer == "yes" else QMessageBox.StandardButton.No

    def question(*args):
        asked.append(args)
        return button

    monkeypatch.setattr(QMessageBox, "question", question)
    open_image(win, qtbot)
    assert win.params_panel.reference.isChecked()
    win.act_run.trigger()
    qtbot.waitUntil(lambda: bool(asked) and not win.running, timeout=300000)
    assert asked == [(win, "Not enough memory",
                      "This image needs 9 GiB; leave out the reference to need 2 GiB."
                      "\n\nRun without the reference?",
                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)]
    assert f"Cannot segment: {message}" in caplog.text
    assert not win.errors
    if answer == "yes":
        assert not win.params_panel.reference.isChecked()
        assert win.outcome is not None and win.outcome.reference_energy is None
    else:
        assert win.params_panel.reference.isChecked() and win.outcome is None


def test_a_run_that_fails_while_compiling_takes_the_notice_away(win, qtbot):
    """A run that fails while it waits for its kernels to compile leaves no compile notice."""
    from segapp.ui.worker import compile_text
    win.on_notice(compile_text())
    assert win.compile_label.isVisible()
    win.on_failed("the solver ran out of patience")
    assert win.errors == [("Cannot segment", "The solver ran out of patience.")]
    assert not win.compile_label.isVisible() and not win.compile_bar.isVisible()


@pytest.mark.slow
@pytest.mark.parametrize("reference", [True, False])
def test_the_warm_up_starts_the_reference_process_when_a_reference_is_wanted(
        win, qtbot, monkeypatch, reference):
    """Once the kernels are warm the reference's child process starts too (its imports then
    cost the first run nothing), unless the reference is switched off; the first run then uses
    that very process."""
    from segapp.ui.worker import WarmUp
    monkeypatch.setattr(WarmUp, "target", "tests.segapp._warm_up_targets:quick")
    win.params_panel.reference.setChecked(reference)
    ref = win.solver.reference_process
    assert ref.pid is None
    win.start_warm_up().join(60)
    qtbot.wait(50)  # the ready signal crosses through the event loop
    if not reference:
        assert ref.pid is None
        return
    pid = ref.pid
    assert pid is not None
    open_image(win, qtbot)
    o = run(win, qtbot)
    assert o.reference_energy is not None
    assert ref.pid == pid


def test_a_warm_up_that_ends_after_the_window_closed_starts_no_process(win, qtbot,
                                                                       monkeypatch, tmp_path):
    """Closing the window ends its reference process; a warm-up still running then must not
    start a fresh one behind it."""
    from segapp.ui.worker import WarmUp
    release = tmp_path / "release"
    monkeypatch.setenv("SEGAPP_TEST_RELEASE", str(release))
    monkeypatch.setattr(WarmUp, "target", "tests.segapp._warm_up_targets:waits")
    thread = win.start_warm_up()
    win.close()
    release.touch()
    thread.join(60)
    qtbot.wait(50)
    assert win.solver.reference_process.pid is None
