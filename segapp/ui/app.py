"""Application entry points: the interactive app and the headless demo screenshot."""
from __future__ import annotations

import gc
import logging
import os
import sys
import threading
import weakref
from collections.abc import Callable

from PyQt6.QtCore import QCoreApplication, QEvent, QEventLoop, QObject, QTimer
from PyQt6.QtGui import QColor, QPalette
from PyQt6.QtWidgets import QApplication, QMessageBox

log = logging.getLogger(__name__)

STYLE = """
QMainWindow, QDockWidget, QTabWidget::pane { background: #2b2c30; }
QDockWidget::title { background: #232428; padding: 4px 8px; color: #c8c8d0; }
QToolBar { background: #26272b; border: none; spacing: 3px; padding: 3px; }
QToolBar#tools QToolButton { min-width: 30px; min-height: 28px; }
QToolButton:checked { background: #4a5a7a; border: 1px solid #7d9bd6; border-radius: 4px; }
QToolButton:hover { background: #3a3d45; border-radius: 4px; }
QGroupBox { border: 1px solid #3d3f46; border-radius: 5px; margin-top: 14px; padding-top: 6px; }
QGroupBox::title { subcontrol-origin: margin; left: 8px; color: #9fb4dd; }
QPushButton#run { background: #2f7d4f; color: white; font-weight: bold; padding: 4px 16px;
                  border-radius: 4px; }
QPushButton#run:disabled { background: #3a4a40; color: #8a9a90; }
QPushButton { padding: 4px 12px; }
QSlider::groove:vertical { background: #4a4c55; width: 4px; border-radius: 2px; }
QSlider::add-page:vertical { background: #4a6fb5; width: 4px; border-radius: 2px; }
QSlider::handle:vertical { background: #b8c6e6; height: 12px; margin: 0 -5px;
                           border-radius: 6px; }
QSlider::groove:horizontal { background: #4a4c55; height: 4px; border-radius: 2px; }
QSlider::sub-page:horizontal { background: #4a6fb5; height: 4px; border-radius: 2px; }
QSlider::handle:horizontal { background: #b8c6e6; width: 12px; margin: -5px 0;
                             border-radius: 6px; }
QStatusBar { background: #232428; color: #c8c8d0; }
QStatusBar QLabel { padding: 0 8px; }
"""


def _dark_palette() -> QPalette:
    p = QPalette()
    R = QPalette.ColorRole
    for role, c in ((R.Window, "#2b2c30"), (R.WindowText, "#dcdde2"), (R.Base, "#202125"),
                    (R.AlternateBase, "#2b2c30"), (R.ToolTipBase, "#202125"),
                    (R.ToolTipText, "#dcdde2"), (R.Text, "#dcdde2"), (R.Button, "#34363c"),
                    (R.ButtonText, "#dcdde2"), (R.Highlight, "#4a6fb5"),
                    (R.HighlightedText, "#ffffff"), (R.Link, "#7d9bd6"),
                    (R.PlaceholderText, "#80828a")):
        p.setColor(role, QColor(c))
    p.setColor(QPalette.ColorGroup.Disabled, R.Text, QColor("#6c6e75"))
    p.setColor(QPalette.ColorGroup.Disabled, R.ButtonText, QColor("#6c6e75"))
    p.setColor(QPalette.ColorGroup.Disabled, R.WindowText, QColor("#6c6e75"))
    return p


def get_app(argv: list[str] | None = None) -> QApplication:
    """The QApplication (created and styled on first call)."""
    app = QApplication.instance()
    if app is None:
        # The solver thread runs compiled kernels without the GIL and needs it back between
        # them; with Python's default 5 ms switch interval it waits behind every GUI redraw
        # (measured: docs/decisions.md, The desktop app; a whole-process setting, harmless
        # elsewhere).
        sys.setswitchinterval(0.0005)
        app = QApplication(list(argv) if argv is not None else sys.argv[:1])
        app.setApplicationName("segapp")
        app.setOrganizationName("segapp")
        app.setStyle("Fusion")
        app.setPalette(_dark_palette())
        app.setStyleSheet(STYLE)
    return app  # type: ignore[return-value]


def run_app(argv: list[str] | None = None, image: str | None = None) -> int:
    """Start the interactive application.

    Parameters
    ----------
    argv : list of str, optional
        Qt arguments.
    image : str, optional
        Image or session file to open at start.

    Returns
    -------
    int
        The exit code of the event loop.

    Notes
    -----
    The window keeps an autosave of unsaved work (:mod:`segapp.core.autosave`, in
    ``$SEGAPP_AUTOSAVE_DIR`` or the per-user state folder). Once the window shows, the unsaved
    work an earlier run left by not closing properly (a crash, a kill) is offered back, before
    ``image`` is opened.
    """
    from segapp.ui.main_window import MainWindow
    app = get_app(argv)
    before = python_owned_qobjects()
    win = MainWindow(autosave=True)
    restore_hook = install_exception_hook(win)
    win.show()
    # compile the solver's CPU kernels while the user opens an image and paints
    win.start_warm_up()

    def first() -> None:  # (in the event loop: the window is on screen behind the dialog)
        win.offer_restore()
        if image:
            win.open_path(image)

    QTimer.singleShot(0, first)
    code = 1
    try:
        code = int(app.exec())
        return code
    finally:
        restore_hook()
        if win.closed_during_run:
            exit_now(code)
        dispose_window(win, before)


def exit_now(code: int) -> None:
    """End the process at once, without waiting for the cancelled run's thread: what ran when
    the window was closed during a run (:meth:`MainWindow.closeEvent
    <segapp.ui.main_window.MainWindow.closeEvent>` has removed the autosave or saved the
    session, cancelled the run and killed the reference's child process).

    The thread may be in a step that polls no cancel flag (building the model: about 4 s at
    3 MP) or in the polish's last round, and a normal exit waits for it and then tears down an
    interpreter that holds the run's gigabytes (1.5–2 s at 3 MP, measured); so logging and the
    standard streams are flushed and ``os._exit`` ends the process: 0.7 s after the answer to
    the quit question at 4 MP in a real X window (``make smoke``), the system's reclaiming of
    the process's memory included.

    Parameters
    ----------
    code : int
        The exit status (the event loop's).
    """
    log.info("closed during a run: exiting without waiting for its thread")
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # (closed or missing)
            pass
    os._exit(code)


def exception_message(exc_type: type, exc: BaseException | None) -> str:
    """An exception in one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()[0] if exc is not None and str(exc).strip() else ""
    return f"{exc_type.__name__}: {text}" if text else exc_type.__name__


def exception_dialog(window, message: str, can_save: bool) -> bool:
    """Tell the user about an unexpected error; True when they ask to save the session.

    Parameters
    ----------
    window : QWidget
        The dialog's parent.
    message : str
        The exception in one line (:func:`exception_message`).
    can_save : bool
        Offer a "Save session…" button.
    """
    box = QMessageBox(QMessageBox.Icon.Critical, "Unexpected error",
                      f"Something went wrong: {message}", QMessageBox.StandardButton.NoButton,
                      window)
    box.setInformativeText("Your work is kept; the details are in the log."
                           + (" Saving the session now is recommended." if can_save else ""))
    save = (box.addButton("Save session…", QMessageBox.ButtonRole.AcceptRole)
            if can_save else None)
    close = box.addButton(QMessageBox.StandardButton.Close)
    box.setDefaultButton(save or close)
    box.exec()
    clicked = box.clickedButton()
    box.deleteLater()
    return save is not None and clicked is save


def install_exception_hook(window) -> Callable[[], None]:
    """Make ``sys.excepthook`` report uncaught exceptions (in Qt slots, say) in ``window``.

    Each is logged with its traceback, then shown in one error dialog with its one-line message
    (:func:`exception_dialog`), with an offer to save the session (``window.save_session_as``);
    the document is not touched. While a dialog is open, further exceptions are only logged. An
    exception raised outside the GUI thread is shown from the GUI thread. KeyboardInterrupt goes
    to the previous hook.

    Returns
    -------
    callable
        Puts the previous hook back (call it when the window closes).
    """
    from PyQt6 import sip

    previous = sys.excepthook
    state = {"active": True, "showing": False}

    def report(message: str) -> None:
        if state["showing"] or not state["active"] or sip.isdeleted(window):
            return
        state["showing"] = True
        try:
            can_save = bool(window.doc.has_image)
            if exception_dialog(window, message, can_save) and can_save:
                try:
                    window.save_session_as()
                except Exception:  # noqa: BLE001 - a hook must not raise
                    log.exception("saving the session after an error failed")
        finally:
            state["showing"] = False

    def hook(exc_type, exc, tb) -> None:
        if not state["active"] or issubclass(exc_type, KeyboardInterrupt):
            previous(exc_type, exc, tb)
            return
        log.error("uncaught exception", exc_info=(exc_type, exc, tb))
        message = exception_message(exc_type, exc)
        if threading.current_thread() is not threading.main_thread():  # (Qt's GUI thread)
            QTimer.singleShot(0, window, lambda: report(message))
            return
        report(message)

    sys.excepthook = hook

    def restore() -> None:
        state["active"] = False
        if sys.excepthook is hook:
            sys.excepthook = previous

    return restore


def python_owned_qobjects() -> list:
    """Live QObjects (other than the application) whose C++ side Python owns."""
    from PyQt6 import sip
    # (weak proxies first: isinstance() on one whose referent died raises ReferenceError, and
    # numba leaves such proxies behind when a compiled function is freed)
    return [o for o in gc.get_objects() if type(o) not in weakref.ProxyTypes
            and isinstance(o, QObject) and not isinstance(o, QCoreApplication)
            and not sip.isdeleted(o) and sip.ispyowned(o)]


def dispose_window(win, owned_before=()) -> None:
    """Stop ``win``'s solve and destroy it, and what was created with it, while the app lives.

    A closed main window is not deleted: reference cycles (document subscriptions, lambdas)
    keep it alive, and with it the parentless menus pyqtgraph makes for each plot. When the
    last reference to the QApplication goes (the entry point's ``app`` local, which Python
    drops before ``win``), PyQt's QApplication dealloc deletes every QObject Python still owns
    while it walks sip's wrapper map; deleting a tree of wrapped widgets there frees wrappers
    of that map under the walk and crashes at random (``sip_api_get_address`` in
    ``release_QApplication``). So the window is deleted here, and then every Python-owned
    QObject created since ``owned_before`` (a :func:`python_owned_qobjects` list taken before
    the window was made) is deleted one by one.
    """
    from PyQt6 import sip

    from segapp.ui.worker import wait_stale
    if not sip.isdeleted(win):
        win.solver.shutdown()
        win.deleteLater()
    busy = wait_stale()
    if busy:
        log.warning("a cancelled solve is still running; its thread is left alive")
    # posted outside any event loop, so this delivers it now; the second round deletes what
    # the window's destruction scheduled (PyQt's slot proxies of its connections)
    for _ in range(2):
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()
    keep = {id(o) for o in (*owned_before, *busy)}
    for obj in python_owned_qobjects():
        if id(obj) not in keep and not sip.isdeleted(obj):
            sip.delete(obj)
    QCoreApplication.processEvents()


def wait_for_run(win, timeout_s: float = 600.0) -> bool:
    """Spin an event loop until ``win``'s solve ends; False on timeout."""
    if not win.running:
        return True
    loop = QEventLoop()
    conn = win.solver.running_changed.connect(lambda running: None if running else loop.quit())
    timer = QTimer()
    timer.setSingleShot(True)
    timer.timeout.connect(loop.quit)
    timer.start(int(timeout_s * 1000))
    try:
        loop.exec()
    finally:
        # the lambda would otherwise keep the loop alive for as long as the window
        timer.stop()
        win.solver.running_changed.disconnect(conn)
    QApplication.processEvents()
    return not win.running


def demo_screenshot(out_path: str, max_iter: int | None = None, view: str = "main") -> int:
    """Open the cameraman sample with its K = 2 strokes, run ADMM to the end, save a screenshot.

    With ``view="geometry"`` the Geometry window instead, on its first preset played to the end;
    with ``view="histogram"`` the main window at 1366×768 with the "Mass and probe" dock in front,
    the replay at its first stored iteration and a pixel probed.

    Works headless: without a QApplication yet, the offscreen platform is used unless
    ``QT_QPA_PLATFORM`` says otherwise.

    Parameters
    ----------
    out_path : str
        PNG file to write.
    max_iter : int, optional
        Cap on ADMM iterations (default: the solver's own limit).
    view : {"main", "geometry", "histogram"}
        Which window to show (see above).

    Returns
    -------
    int
        0 on success, 1 on failure (logged).
    """
    from segapp.ui.main_window import MainWindow
    if QApplication.instance() is None:
        if not os.environ.get("QT_QPA_PLATFORM"):  # (an empty value would pick xcb)
            os.environ["QT_QPA_PLATFORM"] = "offscreen"
    app = get_app()
    before = python_owned_qobjects()
    if view == "geometry":
        from segapp.ui.teaching_shots import geometry_screenshot
        return geometry_screenshot(app, out_path)
    win = MainWindow(confirm_discard=False)
    try:
        if view == "histogram":
            from segapp.ui.teaching_shots import histogram_screenshot
            return histogram_screenshot(app, win, out_path, max_iter, run_demo_sample)
        return _demo_run(app, win, out_path, max_iter)
    finally:
        dispose_window(win, before)


def run_demo_sample(app: QApplication, win, size: tuple[int, int], max_iter: int | None) -> bool:
    """Show ``win`` at ``size``, open the bundled cameraman with its K = 2 strokes, run ADMM (no
    warm start; at most ``max_iter`` iterations if given) and wait for it to end.

    Parameters
    ----------
    app : QApplication
    win : MainWindow
    size : tuple of int
        The window's width and height.
    max_iter : int or None
        Iteration cap for the run.

    Returns
    -------
    bool
        True when the run finished with an outcome; False (and logged) otherwise.
    """
    from segapp.ui.fileops import list_samples
    win.resize(*size)
    win.show()
    app.processEvents()
    samples = [s for s in list_samples() if s[1].stem == "cameraman" and s[3] == 2]
    if not samples or not win.open_sample(*samples[0][1:]):
        log.error("bundled cameraman sample with K = 2 strokes not found")
        return False
    win.canvas.fit_to_window()
    win.act_warm.setChecked(False)
    if max_iter:
        win.params_panel.admm["max_iter"].setValue(int(max_iter))
    if not win.start_run() or not wait_for_run(win) or win.outcome is None:
        log.error("demo run did not finish")
        return False
    return True


def _demo_run(app: QApplication, win, out_path: str, max_iter: int | None) -> int:
    if not run_demo_sample(app, win, (1440, 900), max_iter):
        return 1
    win.side_tabs.setCurrentWidget(win.results_panel)
    for _ in range(5):
        app.processEvents()
    if not win.grab().save(str(out_path), "PNG"):
        log.error("could not write %s", out_path)
        return 1
    return 0
