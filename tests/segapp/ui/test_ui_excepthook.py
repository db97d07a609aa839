"""The app's exception hook (issue 34, item 5): an exception escaping a Qt slot is logged,
shown in one dialog with its message, the work is kept and saving the session is offered."""
from __future__ import annotations

import logging
import sys

import numpy as np
import pytest

from PyQt6.QtCore import QStandardPaths, QTimer
from PyQt6.QtWidgets import QApplication, QMessageBox

import segapp.ui.app as app_module
from segapp.ui.app import install_exception_hook
from segapp.ui.main_window import MainWindow

QStandardPaths.setTestModeEnabled(True)


@pytest.fixture
def win(qtbot):
    w = MainWindow(confirm_discard=False)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    rng = np.random.default_rng(0)
    w.doc.set_image(rng.integers(0, 255, (30, 40, 3), dtype=np.uint8), "photo.png")
    s = np.zeros((30, 40), np.uint8)
    s[2:5, 2:30] = 1
    s[20, 5:25] = 2
    w.doc.set_layers(strokes=s)
    yield w
    w.solver.shutdown()
    w.doc.dirty = False


@pytest.fixture
def hooked(win):
    """The hook installed on ``win``; it is taken off (and checked to be) at the end."""
    before = sys.excepthook
    restore = install_exception_hook(win)
    assert sys.excepthook is not before
    yield
    restore()
    assert sys.excepthook is before


def raise_in_slot(qtbot, exc: BaseException, done) -> None:
    def slot():
        raise exc
    QTimer.singleShot(0, slot)
    qtbot.waitUntil(done, timeout=5000)


@pytest.mark.parametrize("ask_to_save", [False, True])
def test_an_exception_in_a_slot_is_logged_and_shown_once(win, hooked, qtbot, monkeypatch,
                                                         caplog, ask_to_save):
    shown, saved = [], []

    def dialog(window, message, can_save):
        shown.append((window, message, can_save))
        return ask_to_save
    monkeypatch.setattr(app_module, "exception_dialog", dialog)
    monkeypatch.setattr(win, "save_session_as", lambda: saved.append(1) or True)
    strokes, k = win.doc.strokes.copy(), win.doc.k
    win.doc.dirty = True
    with caplog.at_level(logging.ERROR, logger="segapp.ui.app"):
        raise_in_slot(qtbot, RuntimeError("the frame went missing\nsecond line"),
                      lambda: bool(shown))
        qtbot.wait(20)
    assert shown == [(win, "RuntimeError: the frame went missing", True)]
    assert saved == ([1] if ask_to_save else [])
    logged = [r for r in caplog.records if r.exc_info]
    assert len(logged) == 1 and logged[0].exc_info[0] is RuntimeError
    assert "the frame went missing" in caplog.text and "Traceback" in caplog.text
    assert np.array_equal(win.doc.strokes, strokes) and win.doc.k == k and win.doc.dirty
    assert win.isVisible()


def test_the_dialog_offers_to_save_the_session(win, hooked, qtbot, monkeypatch):
    """The real dialog: its "Save session…" button calls the window's save_session_as."""
    saved, seen = [], []
    monkeypatch.setattr(win, "save_session_as", lambda: saved.append(1) or True)

    def click_save():
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(10, click_save)
            return
        seen.append((box.windowTitle(), box.text()))
        [button] = [b for b in box.buttons() if b.text().startswith("Save session")]
        button.click()
    QTimer.singleShot(0, click_save)
    raise_in_slot(qtbot, KeyError("lost"), lambda: bool(saved))
    assert saved == [1]
    assert seen and seen[0][0] == "Unexpected error" and "KeyError: 'lost'" in seen[0][1]


def test_without_an_image_there_is_nothing_to_save(qtbot, monkeypatch):
    w = MainWindow(confirm_discard=False)
    qtbot.addWidget(w)
    shown = []
    monkeypatch.setattr(app_module, "exception_dialog",
                        lambda window, message, can_save: shown.append(can_save) or True)
    monkeypatch.setattr(w, "save_session_as", lambda: pytest.fail("nothing to save"))
    restore = install_exception_hook(w)
    try:
        raise_in_slot(qtbot, ValueError("x"), lambda: bool(shown))
    finally:
        restore()
        w.solver.shutdown()
    assert shown == [False]


def test_restore_puts_the_previous_hook_back(win, monkeypatch):
    calls = []
    monkeypatch.setattr(sys, "excepthook", lambda *a: calls.append(a))
    previous = sys.excepthook
    restore = install_exception_hook(win)
    assert sys.excepthook is not previous
    restore()
    assert sys.excepthook is previous


@pytest.mark.slow
def test_run_app_installs_the_hook_while_the_window_lives(monkeypatch, qapp):
    """run_app: the hook is on while the event loop runs and off after it."""
    seen = []
    before = sys.excepthook
    monkeypatch.setattr(type(qapp), "exec",
                        lambda self: seen.append(sys.excepthook is not before) or 0)
    monkeypatch.setattr(app_module, "get_app", lambda argv=None: qapp)
    from segapp.ui.main_window import MainWindow as MW
    monkeypatch.setattr(MW, "start_warm_up", lambda self: None)
    assert app_module.run_app([]) == 0
    assert seen == [True]
    assert sys.excepthook is before
