"""Sessions in the File menu (the app-as-people-use-it issue, item 3): File → Open session…
(Ctrl+Shift+O) opens a saved session, the Open dialog offers images and sessions together at
first, and saved or opened sessions come back in Open recent, marked as sessions."""
from __future__ import annotations

import cv2
import numpy as np
import pytest
from PyQt6.QtGui import QKeySequence
from PyQt6.QtWidgets import QFileDialog

from segapp.ui.fileops import SESSION_FILTER

pytestmark = pytest.mark.slow  # (every test here: see docs/testing.md, the fast lane)


@pytest.fixture
def saved(win, tmp_path):
    """A session saved from ``win`` (photo, K = 3, strokes of three labels), then another photo
    opened over it: ``(session path, strokes)``."""
    rng = np.random.default_rng(0)
    cv2.imwrite(str(tmp_path / "photo.png"), rng.integers(0, 255, (30, 40, 3), dtype=np.uint8))
    cv2.imwrite(str(tmp_path / "other.png"), rng.integers(0, 255, (20, 25, 3), dtype=np.uint8))
    assert win.open_path(str(tmp_path / "photo.png"))
    win.doc.set_k(3)
    strokes = np.zeros((30, 40), np.uint8)
    strokes[2:4, 2:30], strokes[10, 5:20], strokes[25:27, 10:35] = 1, 2, 3
    win.doc.set_layers(strokes=strokes)
    session = tmp_path / "work.json"
    assert win.save_session(str(session))
    assert win.open_path(str(tmp_path / "other.png"))
    assert win.doc.shape == (20, 25)
    return session, strokes


def answer_open(monkeypatch, path) -> list:
    """Answer every Open dialog with ``path``; the dialogs asked, as (title, folder, filters)."""
    asked: list = []
    monkeypatch.setattr(QFileDialog, "getOpenFileName",
                        lambda _parent, *a: asked.append(a) or (str(path), ""))
    return asked


def file_menu(win):
    return win.menuBar().actions()[0].menu()


def test_file_open_session_opens_the_saved_work(win, saved, monkeypatch, tmp_path):
    session, strokes = saved
    act = win.act_open_session
    names = [a.text() for a in file_menu(win).actions()]
    assert names[:2] == ["&Open…", "Open s&ession…"]
    assert act.shortcut() == QKeySequence("Ctrl+Shift+O")
    asked = answer_open(monkeypatch, session)
    act.trigger()
    assert asked[0][0] == "Open session" and asked[0][2].split(";;")[0] == SESSION_FILTER
    assert win.errors == []
    assert win.doc.shape == (30, 40) and win.doc.k == 3
    np.testing.assert_array_equal(win.doc.strokes, strokes)
    assert win.session_path == str(session) and win.windowTitle() == "work.json — segapp"


def test_open_dialog_offers_images_and_sessions_together_first(win, saved, monkeypatch):
    session, strokes = saved
    asked = answer_open(monkeypatch, session)
    win.act_open.trigger()
    filters = asked[0][2].split(";;")
    assert filters[0].startswith("Images and sessions (") and "*.json" in filters[0]
    assert "*.png" in filters[0] and "*.jpg" in filters[0]
    assert SESSION_FILTER in filters and filters[-1] == "All files (*)"
    assert win.doc.k == 3
    np.testing.assert_array_equal(win.doc.strokes, strokes)


def test_recent_sessions_are_marked_and_reopen_the_session(win, saved, tmp_path):
    session, strokes = saved
    entries = {a.text(): a for a in win.recent_menu.actions()}
    # the saved session is there beside the photos, marked; the photos are not
    assert "work.json (session)" in entries, list(entries)
    assert "other.png" in entries and "photo.png" in entries
    assert entries["work.json (session)"].toolTip() == f"Session {session.resolve()}"
    entries["work.json (session)"].trigger()
    assert win.errors == []
    assert win.session_path == str(session.resolve()) and win.doc.k == 3
    np.testing.assert_array_equal(win.doc.strokes, strokes)
    # opened again, it moves to the top
    assert win.recent_menu.actions()[0].text() == "work.json (session)"


@pytest.mark.parametrize("percent", [0, 30, 100])
def test_the_overlay_opacity_comes_back_with_the_session_even_at_zero(win, tmp_path, percent):
    """The results' opacity slider is saved with the session and set again on opening it, its
    ends included (0 % is a value, not "none given": it must not come back as the default)."""
    rng = np.random.default_rng(1)
    cv2.imwrite(str(tmp_path / "photo.png"), rng.integers(0, 255, (20, 30, 3), dtype=np.uint8))
    assert win.open_path(str(tmp_path / "photo.png"))
    default = win.results_panel.opacity.value()
    assert default not in (0, 30, 100)  # (else reopening at the default would pass)
    win.results_panel.opacity.setValue(percent)
    session = tmp_path / "work.json"
    assert win.save_session(str(session))
    win.results_panel.opacity.setValue(default)
    assert win.open_session(str(session))
    assert win.errors == []
    assert win.results_panel.opacity.value() == percent
