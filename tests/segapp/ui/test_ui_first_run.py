"""The first run on a machine: the kernels compile in a child process, and while they do the
window answers at once with the exact solver's cut, then runs ADMM (issue: the first result
within 15 s of the window from an empty kernel cache; measured in docs/decisions.md)."""

from __future__ import annotations

import numpy as np
import pytest

from segapp.core.colouring import labels_rgb, palette
from segapp.core.pipeline import SegmentParams, run_segmentation
from segapp.ui.worker import warm_up_in_child
from tests.segapp.conftest import disc_image
from tests.segapp.conftest import run_to_end as run
from tests.segapp.ui.test_ui_canvas_agrees import qimage_rgba

TARGETS = "tests.segapp._warm_up_targets"


def _open(win, qtbot, k: int = 2):
    image, strokes = disc_image(48, 56)
    if k == 3:  # a third label: a stroke on the disc's lower part
        strokes[30:32, 24:32] = 3
    win.doc.set_image(image, "synthetic.png")
    win.doc.set_k(k)
    win.doc.set_layers(strokes=strokes)
    qtbot.wait(10)
    return image, strokes


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_while_the_kernels_compile_the_exact_cut_shows_first(win, qtbot, k):
    """With the warm-up still compiling, Run shows the exact solver's answer to the same model
    (min-cut, α-expansion for K = 3) on the canvas and says so, before ADMM's run, which
    then ends as usual."""
    image, strokes = _open(win, qtbot, k)
    assert win.doc.k == k
    win._compiling.add("warm-up")  # (as the warm-up's compiling signal leaves it)
    seen = []

    def shown(labels, energy, name):
        seen.append((labels.copy(), energy, name, win.running,
                     qimage_rgba(win.canvas.result.pixmap().toImage())[:, :, :3],
                     win.statusBar().currentMessage(), win.statusBar().toolTip()))

    win.solver.provisional.connect(shown)
    outcome = run(win, qtbot)
    assert len(seen) == 1
    labels, energy, name, running, drawn, message, tip = seen[0]
    exact = run_segmentation(image, strokes.astype(np.int32),
                             SegmentParams(k=k, solver="mincut" if k == 2 else "expansion"),
                             reference=False)
    assert name == ("min-cut" if k == 2 else "α-expansion")
    np.testing.assert_array_equal(labels, exact.labels)
    assert energy == pytest.approx(exact.energy)
    assert running  # (ADMM's run was still to come)
    np.testing.assert_array_equal(drawn, labels_rgb(labels, palette(k)))
    assert message == "Exact cut shown; ADMM next"
    assert tip.startswith(f"The exact {name} answer to this model (E = {energy:.6g})")
    assert "ADMM's run follows" in tip
    assert outcome.method == "admm"
    assert win.statusBar().toolTip() == ""  # (the preview's tip goes with the run)
    # the same model: ADMM's polished answer lands on the exact one's energy
    assert outcome.energy <= energy + 1e-6 * abs(energy)


@pytest.mark.slow
def test_with_the_kernels_ready_no_preview_runs(win, qtbot):
    """Once the warm-up is done (or on a warm cache) Run goes straight to ADMM."""
    _open(win, qtbot)
    assert "warm-up" not in win._compiling
    seen = []
    win.solver.provisional.connect(lambda *a: seen.append(a))
    run(win, qtbot)
    assert seen == []


@pytest.mark.slow
def test_no_preview_under_constraints(win, qtbot):
    """The exact solvers cannot take area bounds or apart pairs: no preview then."""
    _open(win, qtbot)
    win._compiling.add("warm-up")
    win.constraints_panel.set_texts(["1:0.05-0.95"], [])
    seen = []
    win.solver.provisional.connect(lambda *a: seen.append(a))
    run(win, qtbot)
    assert seen == []
    assert win.outcome.constraints


@pytest.mark.slow
def test_the_warm_up_child_says_whether_it_compiled():
    """The child reports its first compile once and its time; a warm cache reports none."""
    calls = []
    assert warm_up_in_child(lambda: calls.append(1), f"{TARGETS}:compiles") == (42.0, True)
    assert calls == [1]
    assert warm_up_in_child(lambda: calls.append(2), f"{TARGETS}:cached") == (42.0, False)
    assert calls == [1]


@pytest.mark.slow
def test_a_failing_warm_up_child_raises_with_its_reason():
    with pytest.raises(RuntimeError, match=r"status 1: RuntimeError: no kernels today"):
        warm_up_in_child(lambda: None, f"{TARGETS}:fails")


@pytest.mark.slow
def test_a_warm_up_child_ends_when_its_parent_stops_waiting(tmp_path, monkeypatch):
    """Closing its standard input (the parent died or closed the window) ends the child."""
    import subprocess
    import sys
    import time

    monkeypatch.setenv("SEGAPP_TEST_RELEASE", str(tmp_path / "never"))
    proc = subprocess.Popen([sys.executable, "-m", "solver.mrf.solve.warmup", f"{TARGETS}:waits"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    time.sleep(1.0)
    assert proc.poll() is None  # (waiting for a release that never comes)
    proc.stdin.close()
    assert proc.wait(20) == 0
    proc.stdout.close()


def test_a_warm_up_child_that_writes_much_to_stderr_still_finishes():
    """Half a megabyte on stderr before "ready" (more than a pipe buffers) does not block it."""
    assert warm_up_in_child(lambda: None, f"{TARGETS}:talks") == (7.0, False)
