"""The main window: canvas in the middle, tools on the left, panels and plot on the right."""
from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path

from PyQt6.QtCore import Qt
from PyQt6.QtGui import QAction, QKeySequence
from PyQt6.QtWidgets import (
    QDockWidget,
    QLabel,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QTabWidget,
    QToolBar,
)

from segapp.core.isolated import IsolatedReference
from segapp.model import Document
from segapp.ui.canvas import Canvas
from segapp.ui.constraints_panel import ConstraintsPanel
from segapp.ui.fileops import FileOpsMixin
from segapp.ui.panels import ParamsPanel, ResultsPanel
from segapp.ui.plot import EnergyPlot
from segapp.ui.runctl import RunMixin
from segapp.ui.screen_fit import fit_to_screen
from segapp.ui.teaching_panel import install_teaching
from segapp.ui.tools import ToolBar

log = logging.getLogger(__name__)

#: The window's size where the screen has room for it.
DEFAULT_SIZE = (1440, 900)
#: Height below which the convergence plot is no use (its two panes and axes).
PLOT_MIN_HEIGHT = 200
#: How long closing the window waits for a cancelled run's thread (a step that polls no
#: cancel flag, such as building the model, runs on; :func:`segapp.ui.app.run_app` then ends
#: the process without waiting for it).
CLOSE_WAIT_MS = 250


def initial_size(widget) -> tuple[int, int]:
    """The window's first size: :data:`DEFAULT_SIZE`, shrunk to fit the available geometry of
    the screen it opens on (:func:`segapp.ui.screen_fit.fit_to_screen`)."""
    return fit_to_screen(widget, DEFAULT_SIZE)


def _kill_now(pid: int | None) -> None:
    """Send the reference's child the signal that ends it at once (none where it is gone)."""
    if pid is None:
        return
    try:
        os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
    except OSError:  # (it ended meanwhile)
        pass


class MainWindow(FileOpsMixin, RunMixin, QMainWindow):
    """segapp's main window.

    Parameters
    ----------
    confirm_discard : bool
        Ask before discarding unsaved work (tests turn it off).
    autosave : bool or path-like
        Keep an autosave of the document while it has unsaved work, for the next start to
        offer back after a crash (:meth:`offer_restore`): True in the per-user folder
        (:func:`segapp.core.autosave.autosave_dir`), or in the folder given. Off by default
        (:func:`segapp.ui.app.run_app` turns it on), so scripts and tests write none.
    """

    def __init__(self, confirm_discard: bool = True,
                 autosave: bool | str | os.PathLike[str] = False) -> None:
        super().__init__()
        self.confirm_discard = confirm_discard
        self.doc = Document()
        self.setWindowTitle("segapp")
        self.resize(*initial_size(self))
        self.setAcceptDrops(True)
        self.canvas = Canvas(self.doc, self)
        self.setCentralWidget(self.canvas)
        self.tools = ToolBar(self)
        self.addToolBar(Qt.ToolBarArea.LeftToolBarArea, self.tools)
        self.params_panel = ParamsPanel()
        self.results_panel = ResultsPanel()
        self.constraints_panel = ConstraintsPanel()
        self.plot = EnergyPlot()
        self._build_docks()
        self._build_status()
        self.init_run()
        self._build_actions()
        self.init_autosave(autosave)
        self._connect()
        install_teaching(self)  # Teach menu, "Mass and probe" dock (histogram, probe)
        self.show_settings()
        self.update_actions()
        self.update_title()

    # ---------------------------------------------------------------- layout
    def _build_docks(self) -> None:
        tabs = QTabWidget()
        tabs.addTab(self.params_panel, "Parameters")
        tabs.addTab(self.constraints_panel, "Constraints")
        tabs.addTab(self.results_panel, "Results")
        self.side_tabs = tabs
        d1 = QDockWidget("Settings", self)
        d1.setObjectName("settings")
        # in a scroll area, so the panels' height does not set the window's minimum height
        # (on a 708-pixel-high screen they scroll, and the plot keeps its height)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(tabs)
        scroll.setMinimumWidth(tabs.minimumSizeHint().width())
        d1.setWidget(scroll)
        self.plot.setMinimumHeight(PLOT_MIN_HEIGHT)
        d2 = QDockWidget("Convergence", self)
        d2.setObjectName("plot")
        d2.setWidget(self.plot)
        for d in (d1, d2):
            d.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                          | QDockWidget.DockWidgetFeature.DockWidgetFloatable)
            self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, d)
        self.resizeDocks([d1], [420], Qt.Orientation.Horizontal)
        # the panels at their full height where the screen allows, the plot the rest (the
        # split scales with the window: on a 708-pixel screen the panels scroll a little)
        self.resizeDocks([d1, d2], [tabs.sizeHint().height() + 30, 360], Qt.Orientation.Vertical)

    def _build_status(self) -> None:
        sb = self.statusBar()
        self.size_label = QLabel("no image")
        self.pos_label = QLabel("")
        self.pos_label.setMinimumWidth(260)
        self.zoom_label = QLabel("")
        self.iter_label = QLabel("")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(False)
        self.progress.hide()
        for w in (self.iter_label, self.progress, self.pos_label, self.size_label,
                  self.zoom_label):
            sb.addPermanentWidget(w)

    def _action(self, text: str, slot, shortcut=None, tip: str = "") -> QAction:
        a = QAction(text, self)
        if shortcut is not None:
            a.setShortcut(QKeySequence(shortcut))
        a.setToolTip(tip or text)
        a.setStatusTip(tip)
        a.triggered.connect(lambda _=False: slot())
        self.addAction(a)
        return a

    def _build_actions(self) -> None:
        SK = QKeySequence.StandardKey
        A = self._action
        self.act_open = A("&Open…", self.open_dialog, SK.Open, "Open an image or a session")
        self.act_open_session = A("Open s&ession…", self.open_session_dialog, "Ctrl+Shift+O",
                                  "Open a saved session: its photo, strokes, rectangle, K, "
                                  "parameters and constraints")
        self.act_save = A("&Save session", self.save_session, SK.Save, "Save strokes, rectangle, "
                          "K and parameters as a session file")
        self.act_save_as = A("Save session &as…", self.save_session_as, SK.SaveAs)
        self.act_labels = A("Export &labels…", self.save_labels, None,
                            "Labels 1..K as PNG or TIFF (formats that keep them exactly)")
        self.act_labels_colour = A("Export &colour-coded labels…",
                                   lambda: self.save_labels(palette=True), None,
                                   "Labels as a palette PNG: each label in its colour, and "
                                   "still the label image (the index is the label)")
        self.act_cutout = A("Export c&ut-out…", self.save_cutout, None,
                            "The photo's pixels where the chosen labels are, transparent "
                            "elsewhere (PNG, TIFF or WebP), with an optional soft edge")
        self.act_overlay = A("Export &overlay…", self.save_overlay, None,
                             "Photo with labels, as PNG or JPEG")
        self.act_csv = A("Export energy &history CSV…", self.save_history, None)
        self.act_quit = A("&Quit", self.close, SK.Quit)
        self.act_undo = A("&Undo", self.undo, "Ctrl+Z", "Undo the last stroke or edit")
        self.act_redo = A("&Redo", self.redo, "Ctrl+Shift+Z", "Redo")
        self.act_clear = A("&Clear annotations", self.doc.clear, None,
                           "Remove all strokes, hard constraints and the rectangle (undoable)")
        self.act_remove_rect = A("Remove &rectangle", lambda: self.doc.set_rect(None),
                                 "Shift+R", "Remove the rectangle (undoable); the strokes stay")
        self.act_fit = A("&Fit to window", self.canvas.fit_to_window, "Ctrl+0")
        self.act_1to1 = A("&Actual size (1:1)", self.canvas.actual_size, "Ctrl+1")
        self.act_zin = A("Zoom &in", lambda: self.canvas.set_zoom(self.canvas.zoom() * 1.25),
                         SK.ZoomIn)
        self.act_zout = A("Zoom o&ut", lambda: self.canvas.set_zoom(self.canvas.zoom() / 1.25),
                          SK.ZoomOut)
        self.act_run = A("▶  &Run", self.start_run, "Ctrl+R", "Run ℓ₂-box ADMM (Ctrl+R)")
        self.act_cancel = A("■  Cancel", self.cancel_run, "Esc", "Stop the solve (Esc)")
        self.act_warm = A("&Warm start from last run", lambda: None, None,
                          "Start ADMM from the previous continuous solution")
        self.act_warm.setCheckable(True)
        self.act_warm.setChecked(True)
        self.act_follow = A("&Follow the brush", lambda: None, "F",
                            "Run again after each stroke, from the last answer (a correction); "
                            "the last answer stays on screen until the new one is ready")
        self.act_follow.setCheckable(True)
        self.act_bigger = A("Bigger brush", lambda: self.tools.step_radius(1.25), "]")
        self.act_smaller = A("Smaller brush", lambda: self.tools.step_radius(0.8), "[")
        mb = self.menuBar()
        m = mb.addMenu("&File")
        m.addAction(self.act_open)
        m.addAction(self.act_open_session)
        self.recent_menu = m.addMenu("Open &recent")
        m.addSeparator()
        for a in (self.act_save, self.act_save_as):
            m.addAction(a)
        m.addSeparator()
        for a in (self.act_labels, self.act_labels_colour, self.act_overlay, self.act_cutout,
                  self.act_csv):
            m.addAction(a)
        m.addSeparator()
        m.addAction(self.act_quit)
        samples = mb.addMenu("&Samples")
        self.samples_menu = samples
        self.build_samples_menu(samples)
        m = mb.addMenu("&Edit")
        for a in (self.act_undo, self.act_redo, self.act_remove_rect, self.act_clear,
                  self.act_bigger, self.act_smaller):
            m.addAction(a)
        m = mb.addMenu("&View")
        for a in (self.act_fit, self.act_1to1, self.act_zin, self.act_zout):
            m.addAction(a)
        m = mb.addMenu("&Segment")
        for a in (self.act_run, self.act_cancel, self.act_warm, self.act_follow):
            m.addAction(a)
        self.rebuild_recent_menu()
        tb = QToolBar("Main", self)
        tb.setObjectName("main")
        tb.setMovable(False)
        tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        for a in (self.act_open, self.act_save, None, self.act_undo, self.act_redo, None,
                  self.act_fit, self.act_1to1, None):
            tb.addSeparator() if a is None else tb.addAction(a)
        self.run_button = QPushButton("▶  Run")
        self.run_button.setObjectName("run")
        self.run_button.setToolTip("Run ℓ₂-box ADMM (Ctrl+R)")
        self.run_button.clicked.connect(self.start_run)
        self.cancel_button = QPushButton("■  Cancel")
        self.cancel_button.setToolTip("Stop the solve and keep the best labels so far (Esc)")
        self.cancel_button.clicked.connect(self.cancel_run)
        tb.addWidget(self.run_button)
        tb.addWidget(self.cancel_button)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, tb)

    def _connect(self) -> None:
        t, c, r = self.tools, self.canvas, self.results_panel
        t.tool_changed.connect(c.set_tool)
        t.label_changed.connect(lambda k: setattr(c, "label", k))
        t.radius_changed.connect(c.set_brush_radius)
        t.k_changed.connect(self._on_k_spin)
        c.cursor_moved.connect(self._on_cursor)
        c.edited.connect(self.update_actions)  # (a finished stroke enables Undo)
        c.edited.connect(self.follow_stroke)  # (Segment → Follow the brush)
        c.zoom_changed.connect(lambda z: self.zoom_label.setText(f"{z * 100:.0f} %"))
        r.opacity_changed.connect(c.set_result_opacity)
        r.strokes_toggled.connect(c.set_layers_visible)
        r.view_changed.connect(self.show_view)
        r.replay_changed.connect(self.on_replay)
        self.params_panel.changed.connect(self._on_settings)
        self.constraints_panel.changed.connect(lambda *_: self._on_settings(None))
        self.doc.subscribe(self._on_doc)

    # ---------------------------------------------------------------- reactions
    def _on_doc(self, kind: str, _box) -> None:
        if kind == "k":
            self.tools.set_k(self.doc.k)
            self._show_constraints()
        if kind == "image":
            h, w = self.doc.shape
            self.constraints_panel.set_image_pixels(h * w)
            ch = "colour" if self.doc.image.ndim == 3 else "grey"
            self.size_label.setText(f"{w} × {h} px, {ch}")
        self.note_doc_change()  # (the autosave)
        self.update_title()
        self.update_actions()

    def _on_k_spin(self, k: int) -> None:
        if k != self.doc.k:
            self.doc.set_k(k)
        # K is one digit: once it is set, the keys go back to the canvas, where 1-8 pick a
        # label and B/E/R/H a tool (left in the spin box, they would type into it)
        if self.tools.k_spin.hasFocus():
            self.canvas.setFocus(Qt.FocusReason.OtherFocusReason)

    def _on_settings(self, _settings) -> None:
        self.doc.set_settings(self.current_settings())

    def current_settings(self):
        """The solver settings as the panels show them: parameters and constraints."""
        settings = self.params_panel.settings()
        settings.area, settings.apart = self.constraints_panel.texts()
        return settings

    def show_settings(self) -> None:
        """Show the document's settings in the panels (after a session is opened)."""
        self.params_panel.set_settings(self.doc.settings)
        self._show_constraints()

    def _show_constraints(self) -> None:
        """The document's constraints in the panel, for its K; those that no longer apply (a
        label beyond K) leave the document too."""
        panel, settings = self.constraints_panel, self.doc.settings
        panel.set_k(self.doc.k)
        panel.set_texts(settings.area, settings.apart, emit=False)
        area, apart = panel.texts()
        if (area, apart) != (settings.area, settings.apart):
            settings.area, settings.apart = area, apart

    def _on_cursor(self, x: int, y: int) -> None:
        if x < 0:
            self.pos_label.setText("")
            return
        parts = [f"x {x}, y {y}"]
        s, h = int(self.doc.strokes[y, x]), int(self.doc.hard[y, x])
        if h:
            parts.append(f"hard {h}")
        elif s:
            parts.append(f"stroke {s}")
        if self.outcome is not None and self.outcome.labels.shape == self.doc.shape:
            parts.append(f"label {int(self.outcome.labels[y, x])}")
        self.pos_label.setText("   ".join(parts))

    def start_run(self) -> bool:
        """Autosave the unsaved work at once, then start the run
        (:meth:`~segapp.ui.runctl.RunMixin.start_run`): a run is where memory runs out and a
        container's limit kills the app without a word."""
        if not self.running and self.doc.has_image:
            self.autosave_now()
        return super().start_run()

    def undo(self) -> None:
        """Undo the last edit."""
        if not self.doc.undo():
            self.statusBar().showMessage("Nothing to undo", 2000)
        self.update_actions()  # (the document reports the change before the stack moves)

    def redo(self) -> None:
        """Redo the last undone edit."""
        if not self.doc.redo():
            self.statusBar().showMessage("Nothing to redo", 2000)
        self.update_actions()

    def update_title(self) -> None:
        """Window title with file name and an unsaved-changes marker."""
        name = Path(self.session_path or self.doc.image_path or "").name
        star = " *" if self.doc.dirty else ""
        self.setWindowTitle(f"{name}{star} — segapp" if name else "segapp")

    def update_actions(self) -> None:
        """Enable actions according to state."""
        has, run = self.doc.has_image, self.running
        self.act_run.setEnabled(has and not run)
        self.run_button.setEnabled(has and not run)
        self.act_cancel.setEnabled(run)
        self.cancel_button.setEnabled(run)
        for a in (self.act_labels, self.act_labels_colour, self.act_overlay, self.act_cutout,
                  self.act_csv):
            a.setEnabled(self.outcome is not None)
        self.act_save.setEnabled(has)
        self.act_save_as.setEnabled(has)
        self.act_undo.setEnabled(self.doc.undo_stack.can_undo())
        self.act_redo.setEnabled(self.doc.undo_stack.can_redo())
        self.act_remove_rect.setEnabled(self.doc.rect is not None and not run)

    # ---------------------------------------------------------------- window events
    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802
        urls = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if urls:
            self.open_path(urls[0])
            event.acceptProposedAction()

    #: Set when the window closed while a segmentation ran (:meth:`closeEvent`): the process
    #: is then ended without waiting for the run's thread (:func:`segapp.ui.app.run_app`).
    closed_during_run = False

    def closeEvent(self, event) -> None:  # noqa: N802
        """Close the window, asking first where work would be lost.

        While a segmentation runs, one question names it ("A segmentation is running. Quit
        and stop it?", :meth:`confirm_close_during_run`, which offers to save unsaved work);
        on Quit the autosave goes (the work was saved or let go), the run is cancelled, the
        reference's child process is killed, and the run's thread is waited for at most
        :data:`CLOSE_WAIT_MS`.

        The child is sent SIGKILL at once and reaped from a helper thread: waiting for a killed
        child that solved a large photo to end (the system reclaiming its gigabytes) took 0.5 s
        at 4 MP, and nothing needs that wait (the window keeps a fresh, idle child in its
        place).
        """
        if self.running:
            if not self.confirm_close_during_run():
                event.ignore()
                return
            self.stop_warm_up()
            self.close_autosave()
            self.closed_during_run = True
            log.info("closing during a run: cancelling it")
            self.solver.cancel()  # (first: the child's end then reads as a cancel)
            child, self.solver.reference_process = (self.solver.reference_process,
                                                    IsolatedReference())
            _kill_now(child.pid)  # (here: the process may end before the helper runs)
            threading.Thread(target=child.close, name="segapp-reference-close",
                             daemon=True).start()
            self.solver.shutdown(timeout_ms=CLOSE_WAIT_MS)
            event.accept()
            return
        if not self.maybe_save():
            event.ignore()
            return
        # a clean close: the work was saved, or the person chose to discard it
        self.stop_warm_up()
        self.close_autosave()
        self.solver.shutdown()
        event.accept()
