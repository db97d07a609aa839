"""Shared fixtures of the app's tests: a shown main window, and solves slow enough to act on
while they run."""

import time

import numpy as np
import pytest
from PyQt6.QtCore import QSettings, QStandardPaths
from PyQt6.QtGui import QPainter
from PyQt6.QtWidgets import QMessageBox

from segapp.ui.main_window import MainWindow

QStandardPaths.setTestModeEnabled(True)  # (recent files and settings stay out of the user's)


@pytest.fixture(autouse=True)
def own_settings(tmp_path_factory):
    """Each test's settings (recent files, window state) in a folder of its own: test mode alone
    shares one file between the suite's worker processes and between runs, so a recent file
    left by another test could change what a menu shows."""
    path = str(tmp_path_factory.mktemp("settings"))
    for fmt in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        QSettings.setPath(fmt, QSettings.Scope.UserScope, path)


@pytest.fixture
def win(qtbot, monkeypatch):
    """A shown 1280 x 800 main window; error dialogs are collected in ``win.errors`` (as
    ``(title, text)``) instead of shown, so a test that expects none can say so."""
    errors: list[tuple[str, str]] = []
    monkeypatch.setattr(QMessageBox, "critical",
                        lambda _parent, title, text, *a, **k: errors.append((title, text)))
    w = MainWindow(confirm_discard=False)
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    qtbot.waitExposed(w)
    w.errors = errors
    yield w
    w.solver.shutdown()
    w.doc.dirty = False


def pace_iterations(monkeypatch, seconds: float = 0.002) -> None:
    """Make every ADMM iteration of the GUI's solves take at least ``seconds``: the solver is
    fast enough that a 60x60 job could end before a test closed or cancelled it."""
    from segapp.ui.worker import SolveWorker
    real = SolveWorker._callback

    def paced(self, state):
        time.sleep(seconds)
        return real(self, state)
    monkeypatch.setattr(SolveWorker, "_callback", paced)


def slow_job(h: int = 60, w: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """A grey ``(h, w)`` image split along a diagonal, with a short stroke per label: a solve
    that (paced) runs long enough to act on."""
    rng = np.random.default_rng(0)
    img = np.clip(np.where(np.add.outer(np.arange(h), np.arange(w)) < h, 60, 190)
                  + rng.normal(0, 10, (h, w)), 0, 255).astype(np.uint8)
    strokes = np.zeros((h, w), np.uint8)
    strokes[2:4, 2:10] = 1
    strokes[-4:-2, -10:-2] = 2
    return img, strokes


def disc_image(h: int = 40, w: int = 40, seed: int = 0,
               dtype=np.uint8) -> tuple[np.ndarray, np.ndarray]:
    """A bright disc on a dark background with noise, and strokes (of ``dtype``) for both labels."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    disc = (yy - h / 2) ** 2 + (xx - w / 2) ** 2 < (min(h, w) / 4) ** 2
    img = np.clip(np.where(disc, 190, 50) + rng.normal(0, 12, (h, w)), 0, 255).astype(np.uint8)
    strokes = np.zeros((h, w), dtype)
    strokes[2:5, 2:w - 2] = 1
    strokes[h // 2 - 1:h // 2 + 2, w // 2 - 4:w // 2 + 4] = 2
    return np.dstack([img, img, (img * 0.8).astype(np.uint8)]), strokes


def bands(k: int, h: int = 36, w: int = 48, seed: int = 1, noise: float = 20,
          dtype=np.uint8) -> tuple[np.ndarray, np.ndarray]:
    """``k`` vertical bands of distinct grey with noise, and a stroke (of ``dtype``) in each."""
    rng = np.random.default_rng(seed)
    band = np.minimum(np.arange(w) * k // w, k - 1)
    grey = np.linspace(40, 210, k)[band]
    img = np.clip(grey[None, :] + rng.normal(0, noise, (h, w)), 0, 255).astype(np.uint8)
    strokes = np.zeros((h, w), dtype)
    for lab in range(k):
        cols = np.flatnonzero(band == lab)
        strokes[h // 3:2 * h // 3, cols[len(cols) // 2]] = lab + 1
    return np.dstack([img] * 3), strokes


def open_image(win, qtbot, image, strokes, k: int = 2) -> None:
    """Open ``image`` with ``strokes`` at ``k`` labels in ``win``, fitted to the window."""
    win.doc.set_image(image, "synthetic.png")
    win.doc.set_k(k)
    win.doc.set_layers(strokes=strokes)
    win.canvas.fit_to_window()
    qtbot.wait(10)


def painted_texts(widget, module, monkeypatch) -> list[str]:
    """The strings ``widget``'s paint event draws (``module``: where it makes its painter)."""
    texts: list[str] = []

    class Spy(QPainter):
        def drawText(self, *args):  # noqa: N802 - Qt API
            texts.extend(a for a in args if isinstance(a, str))
            return super().drawText(*args)

    monkeypatch.setattr(module, "QPainter", Spy)
    widget.grab()
    monkeypatch.undo()
    return texts


def run_to_end(win, qtbot):
    """Press Run and wait until the solve has ended (a cold kernel cache compiles for a minute
    or more); the new outcome, after checking the run started and showed no error."""
    before = win.outcome
    win.act_run.trigger()
    assert win.running, f"Run did not start: {win.errors}"
    qtbot.waitUntil(lambda: not win.running, timeout=300000)
    assert not win.errors, f"the run failed: {win.errors}"
    assert win.outcome is not None and win.outcome is not before
    return win.outcome
