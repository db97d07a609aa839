"""Object lifetimes at the end of a solve and at exit: the window, its solve thread, its signals.

The demo screenshot used to exit with a segmentation fault about one run in 6 to 20: the main
window outlived the QApplication, and PyQt's QApplication dealloc, which deletes every QObject
Python still owns while walking sip's wrapper map, then deleted the whole widget tree in the
middle of that walk (crash in ``sip_api_get_address`` from ``release_QApplication``).
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from PyQt6.QtCore import QObject, QStandardPaths  # noqa: E402
from PyQt6.QtWidgets import QApplication  # noqa: E402

from segapp.ui.app import python_owned_qobjects  # noqa: E402
from segapp.ui.main_window import MainWindow  # noqa: E402
from tests.segapp.conftest import pace_iterations, slow_job  # noqa: E402

QStandardPaths.setTestModeEnabled(True)


@pytest.mark.slow
def test_demo_screenshot_leaves_nothing_for_the_app_teardown(qapp, tmp_path):
    from segapp.ui.app import demo_screenshot
    gc.collect()
    before = {id(o) for o in python_owned_qobjects()}
    windows_before = set(map(id, QApplication.topLevelWidgets()))
    assert demo_screenshot(str(tmp_path / "demo.png"), max_iter=8) == 0
    assert (tmp_path / "demo.png").stat().st_size > 0
    # No gc.collect() here: in the command the app goes right at the return, before any
    # collection. The window (kept in reference cycles), its solve thread and worker and the
    # plots' menus must all be gone already.
    left = [type(o).__name__ for o in python_owned_qobjects() if id(o) not in before]
    assert left == []
    assert not [w for w in QApplication.topLevelWidgets()
                if id(w) not in windows_before and isinstance(w, MainWindow)]


def test_closing_the_window_mid_solve_stops_the_thread_and_its_signals(qtbot, monkeypatch):
    pace_iterations(monkeypatch)
    win = MainWindow(confirm_discard=False)
    qtbot.addWidget(win)
    win.show()
    img, strokes = slow_job()
    win.doc.set_image(np.dstack([img] * 3), "slow.png")
    win.doc.set_layers(strokes=strokes)
    win.params_panel.admm["max_iter"].setValue(100000)
    win.params_panel.admm["tol"].setValue(1e-6)
    win.params_panel.reference.setChecked(False)
    with qtbot.waitSignal(win.solver.records, timeout=60000):
        assert win.start_run()
    thread = win.solver._thread
    assert thread is not None and thread.isRunning()
    late = []
    for sig in (win.solver.frame, win.solver.records, win.solver.finished, win.solver.failed):
        sig.connect(lambda *a, late=late: late.append(a))
    win.doc.dirty = False
    assert win.close()
    assert not win.running and thread.isFinished()
    # what the worker queued before it stopped must not reach the closed window
    qtbot.wait(300)
    assert late == [] and win.outcome is None


SHUTDOWN_MID_STEP = textwrap.dedent("""
    import gc, threading, time
    import numpy as np
    from PyQt6.QtCore import QCoreApplication
    import segapp.core.pipeline as pipeline
    from segapp.ui import worker as W

    app = QCoreApplication([])
    release = threading.Event()
    def stuck(*args, **kwargs):   # a step that never polls cancel (e.g. building the model)
        release.wait(20)
        raise RuntimeError("stale solve ended")
    pipeline.run_segmentation = stuck
    c = W.SolveController()
    got = []
    c.failed.connect(got.append)
    c.finished.connect(got.append)
    c.start(W.SolveJob(np.zeros((4, 4)), np.zeros((4, 4), np.int32), None))
    time.sleep(0.2)
    c.shutdown(timeout_ms=50)     # gives up waiting: the thread must be kept, not deleted
    assert not c.running
    gc.collect()
    assert len(W._stale) == 1 and W._stale[0][0].isRunning()
    release.set()
    for _ in range(200):
        app.processEvents()
        if not W._stale:
            break
        time.sleep(0.02)
    assert W.wait_stale(5000) == [] and not W._stale
    assert got == [], got          # the stale solve's outcome is dropped
    print("ok")
""")


@pytest.mark.slow
def test_shutdown_that_times_out_keeps_the_running_thread_alive(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", SHUTDOWN_MID_STEP],
                          capture_output=True, text=True, timeout=120, env=env)
    # without the fix: "QThread: Destroyed while thread is still running" and an abort
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-2000:]


@pytest.mark.slow
def test_owned_qobject_scan_survives_dead_weak_proxies(qapp):
    """numba leaves weak proxies to freed code libraries in the heap; the exit-time scan for
    Python-owned QObjects must step over them (isinstance() on one raises ReferenceError)."""
    import weakref

    class Referent:
        pass

    target = Referent()
    keep = [weakref.proxy(target)]
    del target
    gc.collect()
    with pytest.raises(ReferenceError):
        isinstance(keep[0], int)
    owned, child = QObject(), QObject()
    child.setParent(owned)  # C++ owns a parented object: the scan must leave it out
    found = python_owned_qobjects()
    assert any(o is owned for o in found) and not any(o is child for o in found)
    assert not any(o is qapp for o in found)
