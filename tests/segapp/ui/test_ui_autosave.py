"""The autosave: a crash of the app loses no stroke, and the next start offers the work back.

- the app, killed with ``kill -9`` in the middle of its work (as a container's memory limit
  kills it), leaves an autosave from which a new window gets back exactly the strokes, hard
  pixels, rectangle, K and constraints it had;
- the autosave is written shortly after each change and at once when a Run starts, never for
  a clean document, and goes when the work is saved or the window closes cleanly;
- an autosave belongs to its running window until that window's process is gone (its lock,
  not its process id, tells): no other window offers, reads or removes it meanwhile;
- restoring says what it restores in a sentence; Discard removes the autosave; where the image
  is gone, that is one sentence and the autosave is kept;
- :mod:`segapp.core.autosave` writes atomically (a failed write leaves the previous autosave
  intact, and no temporary file).
"""
from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PyQt6.QtCore import QTimer
from PyQt6.QtWidgets import QApplication, QMessageBox

import segapp.ui.fileops as fileops
from segapp.core import autosave as core
from segapp.core.autosave import (ENV_DIR, Autosave, Leftover, claim, describe, find_leftovers,
                                  owner_alive, saved_when)
from segapp.core.io import ASSETS_DIR, load_image
from segapp.core.session import load_session
from segapp.model import Document
from segapp.ui.main_window import MainWindow

ROOT = Path(__file__).resolve().parents[3]
CAMERAMAN = Path(ASSETS_DIR) / "cameraman.png"


@pytest.fixture(autouse=True)
def folder(tmp_path, monkeypatch) -> Path:
    """Every autosave of these tests in a folder of the test's own."""
    path = tmp_path / "autosave"
    monkeypatch.setenv(ENV_DIR, str(path))
    return path


@pytest.fixture
def window(qtbot, monkeypatch):
    """A maker of shown windows that keep an autosave; their error dialogs are collected in
    ``errors`` (``(title, text)``)."""
    errors: list[tuple[str, str]] = []
    monkeypatch.setattr(QMessageBox, "critical",
                        lambda _parent, title, text, *a, **k: errors.append((title, text)))

    def make(confirm_discard: bool = False) -> MainWindow:
        w = MainWindow(confirm_discard=confirm_discard, autosave=True)
        qtbot.addWidget(w)
        w.show()
        qtbot.waitExposed(w)
        w.errors = errors
        return w
    yield make


def answer(monkeypatch, reply: str) -> list[tuple[str, str]]:
    """Answer the restore offer with ``reply``; the offers made, as ``(text, detail)``."""
    asked: list[tuple[str, str]] = []
    monkeypatch.setattr(fileops, "ask_restore",
                        lambda parent, text, detail: asked.append((text, detail)) or reply)
    return asked


def child_env() -> dict[str, str]:
    """The environment of a child Python: this checkout's packages first."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}


def files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()} if folder.exists() else set()


def photo(tmp_path: Path, name: str = "photo.png") -> Path:
    """A copy of the bundled cameraman (a test may delete it)."""
    path = tmp_path / name
    shutil.copy(CAMERAMAN, path)
    return path


def paint(doc: Document, label: int = 1, y: int = 30) -> None:
    """One brush stroke across the image through the document, as the canvas paints."""
    doc.begin_stroke("strokes")
    doc.stroke_to((20, y), (120, y + 10), 4, label)
    doc.stroke_to((120, y + 10), (150, y + 60), 4, label)
    doc.end_stroke()


def crashed(folder: Path, image: Path, k: int = 2) -> tuple[Path, Document]:
    """An autosave left as a crash leaves it: written, its lock gone with its process (the
    file keeps this live process's id in its name, as a process id given again would)."""
    doc = Document(k=k)
    doc.set_image(load_image(image), str(image))
    paint(doc, 1)
    paint(doc, 2, y=200)
    a = Autosave(folder)
    assert a.write(doc)
    a._lock.release()  # noqa: SLF001 - what the system does when the process dies
    return a.path, doc


# ------------------------------------------------------------------------------- the crash
CRASH_SCRIPT = r'''
"""The app as a person runs it, with work painted on an image; the test then kills it."""
import sys

import numpy as np
from PyQt6.QtCore import QTimer
from PyQt6.QtWidgets import QApplication

import segapp.ui.app as app
from segapp.ui.main_window import MainWindow

MainWindow.start_warm_up = lambda self: None  # (nothing is solved here: no kernels compile)
image, expected = sys.argv[1], sys.argv[2]


def work():
    win = next((w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)), None)
    if win is None or not win.doc.has_image:
        QTimer.singleShot(50, work)
        return
    doc = win.doc
    win.tools.k_spin.setValue(3)
    for label, points, radius in ((1, [(20, 30), (120, 40), (150, 90)], 4),
                                  (2, [(100, 300), (380, 330)], 6),
                                  (3, [(400, 20), (480, 90)], 3)):
        doc.begin_stroke("strokes")
        for p0, p1 in zip(points, points[1:]):
            doc.stroke_to(p0, p1, radius, label)
        doc.end_stroke()
    doc.begin_stroke("hard")
    doc.stroke_to((10, 480), (200, 500), 3, 3)
    doc.end_stroke()
    doc.set_rect((5, 8, 430, 470))
    win.constraints_panel.set_texts(["2:0.1-0.6"], ["1,3"])
    np.savez(expected, strokes=doc.strokes, hard=doc.hard, rect=np.array(doc.rect), k=doc.k,
             area=np.array(doc.settings.area), apart=np.array(doc.settings.apart))
    print("painted", flush=True)


qapp = app.get_app([])  # (run_app takes this one)
QTimer.singleShot(0, work)
sys.exit(app.run_app([], image=image))
'''


@pytest.mark.slow
def test_a_crash_loses_no_stroke(window, monkeypatch, tmp_path, folder):
    """The app, started in a process of its own, opens a photo and gets strokes of three
    labels, hard pixels, a rectangle, K = 3 and two constraints; once its autosave is on
    disk it is killed with SIGKILL. A new window offers the work back in a sentence, and
    restoring it gives exactly the same strokes, hard pixels, rectangle, K and constraints
    on the same image, as unsaved work that is itself autosaved at once."""
    script = tmp_path / "crash.py"
    script.write_text(CRASH_SCRIPT)
    expected = tmp_path / "expected.npz"
    log = tmp_path / "app.log"
    env = {**child_env(), "QT_QPA_PLATFORM": "offscreen", ENV_DIR: str(folder),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}  # (its recent files)
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, str(script), str(CAMERAMAN), str(expected)],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        while not (expected.exists() and list(folder.glob("autosave-*.json"))):
            assert proc.poll() is None, f"the app ended by itself:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"no autosave appeared:\n{log.read_text()}"
            time.sleep(0.1)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    (left,) = folder.glob("autosave-*.json")
    assert left.name.startswith(f"autosave-{proc.pid}-")
    want = np.load(expected)
    assert want["strokes"].max() == 3 and want["hard"].any() and want["k"] == 3

    asked = answer(monkeypatch, "restore")
    w = window()
    assert w.offer_restore()
    assert w.errors == []
    (text, detail), = asked
    assert text == ("segapp did not close properly last time. Restore the unsaved work on "
                    "cameraman.png?")
    n_strokes = int(np.count_nonzero(want["strokes"]))
    n_hard = int(np.count_nonzero(want["hard"]))
    assert detail.startswith(f"Strokes of labels 1, 2 and 3 ({n_strokes:,} pixels), "
                             f"{n_hard:,} hard pixels, a rectangle and 2 constraints; K = 3. "
                             "Autosaved today at "), detail
    doc = w.doc
    np.testing.assert_array_equal(doc.strokes, want["strokes"])
    np.testing.assert_array_equal(doc.hard, want["hard"])
    assert doc.rect == tuple(int(v) for v in want["rect"])
    assert doc.k == 3 and w.tools.k_spin.value() == 3
    assert doc.settings.area == list(want["area"]) == ["2:0.1-0.6"]
    assert doc.settings.apart == list(want["apart"]) == ["1,3"]
    assert w.constraints_panel.texts() == (["2:0.1-0.6"], ["1,3"])
    np.testing.assert_array_equal(doc.image, load_image(CAMERAMAN))
    assert Path(doc.image_path) == CAMERAMAN.resolve()
    assert doc.dirty and w.windowTitle() == "cameraman.png * — segapp"
    # the dead process's autosave went only once this window's own held the work
    assert not left.exists()
    assert files(folder) == {w.autosave_path.name, w.autosave_path.with_suffix(".lock").name}
    np.testing.assert_array_equal(load_session(w.autosave_path).strokes, want["strokes"])
    w.close()
    assert files(folder) == set()


# ------------------------------------------------------------------------------- writing
@pytest.mark.slow
def test_the_autosave_follows_the_work_and_goes_when_it_is_saved(window, qtbot, tmp_path,
                                                                  folder):
    """A stroke is autosaved shortly after it is painted (not during the painting: no write
    while the brush is down); the file is the document as a session. Saving the session
    removes it, a new change brings it back, and opening another image (the work let go)
    removes it again."""
    w = window()
    assert w.open_path(str(photo(tmp_path)))
    assert files(folder) == set()  # (a clean document: nothing to keep)
    w.doc.begin_stroke("strokes")
    w.doc.stroke_to((20, 30), (120, 40), 4, 1)
    qtbot.wait(fileops.AUTOSAVE_DELAY_MS + 500)
    assert not w.autosave_path.exists()  # the brush is still down
    w.doc.stroke_to((120, 40), (150, 90), 4, 1)
    w.doc.end_stroke()
    qtbot.waitUntil(w.autosave_path.exists, timeout=fileops.AUTOSAVE_DELAY_MS + 2000)
    np.testing.assert_array_equal(load_session(w.autosave_path).strokes, w.doc.strokes)
    assert w.save_session(str(tmp_path / "work.json"))
    assert not w.autosave_path.exists()
    paint(w.doc, 2, y=200)
    qtbot.waitUntil(w.autosave_path.exists, timeout=fileops.AUTOSAVE_DELAY_MS + 2000)
    data = load_session(w.autosave_path)
    np.testing.assert_array_equal(data.strokes, w.doc.strokes)
    assert data.extra["autosave"]["session_path"] == str(tmp_path / "work.json")
    assert w.open_path(str(photo(tmp_path, "other.png")))  # (confirm_discard is off)
    assert not w.autosave_path.exists()
    qtbot.wait(fileops.AUTOSAVE_DELAY_MS + 300)
    assert not w.autosave_path.exists()


def test_a_run_autosaves_before_it_starts(window, monkeypatch, tmp_path):
    """Run writes the autosave at once, before the solve starts (a run is where memory runs
    out), without waiting for the delay after the last stroke."""
    w = window()
    assert w.open_path(str(photo(tmp_path)))
    paint(w.doc, 1)
    paint(w.doc, 2, y=200)
    seen = []
    monkeypatch.setattr(w.solver, "start", lambda job: seen.append(
        w.autosave_path.exists() and np.array_equal(load_session(w.autosave_path).strokes,
                                                    job.strokes)))
    w.act_run.trigger()
    assert seen == [True]


def test_a_clean_close_removes_the_autosave_and_a_cancelled_one_keeps_it(window, monkeypatch,
                                                                         tmp_path, folder):
    """Closing with unsaved work asks first: Cancel keeps the window and its autosave,
    Discard closes it and the autosave goes (it was let go on purpose), lock and all."""
    w = window(confirm_discard=True)
    assert w.open_path(str(photo(tmp_path)))
    paint(w.doc)
    assert w.autosave_now() and w.autosave_path.exists()
    monkeypatch.setattr(QMessageBox, "question",
                        lambda *a, **k: QMessageBox.StandardButton.Cancel)
    assert not w.close()
    assert w.autosave_path.exists()
    monkeypatch.setattr(QMessageBox, "question",
                        lambda *a, **k: QMessageBox.StandardButton.Discard)
    assert w.close()
    assert files(folder) == set()


@pytest.mark.slow
def test_there_is_no_autosave_without_it_or_of_work_already_saved(window, qtbot, tmp_path,
                                                                  folder):
    """A window made without autosave (scripts, tests) writes none; a document without
    unsaved work has none."""
    plain = MainWindow(confirm_discard=False)
    qtbot.addWidget(plain)
    assert plain.open_path(str(photo(tmp_path)))
    paint(plain.doc)
    assert plain.autosave_path is None and not plain.autosave_now()
    w = window()
    assert w.open_path(str(photo(tmp_path)))
    assert not w.autosave_now()
    qtbot.wait(fileops.AUTOSAVE_DELAY_MS + 300)
    assert files(folder) == set()


# ------------------------------------------------------------------------------- restoring
def test_an_autosave_whose_image_is_gone_is_said_and_kept(window, monkeypatch, tmp_path,
                                                          folder):
    image = photo(tmp_path)
    left, _ = crashed(folder, image)
    before = left.read_bytes()
    image.unlink()
    asked = answer(monkeypatch, "restore")
    w = window()
    assert not w.offer_restore()
    assert len(asked) == 1 and "photo.png" in asked[0][0]
    assert w.errors == [("Cannot restore unsaved work",
                         f"the image it was drawn on, '{image}', is gone; the unsaved work is "
                         f"kept in '{left}' and offered again at the next start")]
    assert left.read_bytes() == before
    assert not w.doc.has_image and not w.doc.dirty and w.windowTitle() == "segapp"
    # put back, it is offered again and restored
    shutil.copy(CAMERAMAN, image)
    assert w.offer_restore() and len(asked) == 2
    assert w.doc.strokes.any() and w.doc.dirty


def test_discard_removes_the_autosave_and_closing_the_offer_keeps_it(window, monkeypatch,
                                                                     tmp_path, folder):
    left, _ = crashed(folder, photo(tmp_path))
    asked = answer(monkeypatch, "")  # (the dialog closed without an answer)
    w = window()
    assert not w.offer_restore()
    assert left.exists() and len(asked) == 1 and not w.doc.has_image
    answer(monkeypatch, "discard")
    assert not w.offer_restore()
    assert not left.exists() and not w.doc.has_image
    assert files(folder) == set()


def test_the_offer_restores_the_newest_first_and_keeps_the_others(window, monkeypatch,
                                                                  tmp_path, folder):
    older, _ = crashed(folder, photo(tmp_path, "older.png"))
    os.utime(older, (time.time() - 3600, time.time() - 3600))
    newer, doc = crashed(folder, photo(tmp_path, "newer.png"), k=3)
    asked = answer(monkeypatch, "restore")
    w = window()
    assert w.offer_restore()
    assert [t for t, _ in asked] == ["segapp did not close properly last time. Restore the "
                                     "unsaved work on newer.png?"]
    np.testing.assert_array_equal(w.doc.strokes, doc.strokes)
    assert w.doc.k == 3
    assert older.exists() and not newer.exists()


def test_a_running_window_s_autosave_is_never_offered(window, monkeypatch, tmp_path, folder):
    """Two windows (or two running apps) each keep their own autosave: the second start
    offers nothing of the first's, which runs."""
    first = window()
    assert first.open_path(str(photo(tmp_path)))
    paint(first.doc)
    assert first.autosave_now()
    asked = answer(monkeypatch, "restore")
    second = window()
    assert not second.offer_restore() and asked == []
    assert first.autosave_path.exists()
    assert second.autosave_path != first.autosave_path


def test_an_unreadable_autosave_is_said_and_set_aside(window, monkeypatch, tmp_path, folder):
    left, _ = crashed(folder, photo(tmp_path))
    left.write_text('{"format": "segapp-session", "version": 1, "k": 300}')
    asked = answer(monkeypatch, "restore")
    w = window()
    assert not w.offer_restore() and asked == []
    kept = left.with_name(left.name + ".unreadable")
    assert kept.exists() and not left.exists()
    ((title, text),) = w.errors
    assert title == "Cannot restore unsaved work"
    assert text.startswith("an autosave left by an earlier run cannot be read (session field")
    assert text.endswith(f"; it is kept as '{kept}'")
    assert not w.offer_restore() and len(w.errors) == 1  # (not offered again)


def test_the_restore_dialog_reads_as_a_question_with_two_answers(window, qtbot, tmp_path,
                                                                 folder):
    """The real dialog: its question, what it restores, and Restore (the default) and
    Discard, each answering as named."""
    w = window()
    box, restore, discard = fileops.restore_box(w, "Restore it?", "Strokes; K = 2.")
    assert (box.text(), box.informativeText()) == ("Restore it?", "Strokes; K = 2.")
    assert (restore.text(), discard.text()) == ("Restore", "Discard")
    assert box.defaultButton() is restore
    box.deleteLater()
    for name, reply in (("Discard", "discard"), ("Restore", "restore")):
        def click(name=name):
            dialog = QApplication.activeModalWidget()
            if dialog is None:
                QTimer.singleShot(20, click)
                return
            next(b for b in dialog.buttons() if b.text() == name).click()
        QTimer.singleShot(0, click)
        assert fileops.ask_restore(w, "Restore it?", "Strokes; K = 2.") == reply


@pytest.mark.slow
def test_run_app_offers_the_work_a_crash_left(monkeypatch, qapp, tmp_path, folder):
    """The app's start offers a leftover autosave once its window shows."""
    import segapp.ui.app as app_module
    crashed(folder, photo(tmp_path))
    asked = answer(monkeypatch, "")
    monkeypatch.setattr(type(qapp), "exec", lambda self: [QApplication.processEvents()
                                                          for _ in range(5)] and 0)
    monkeypatch.setattr(app_module, "get_app", lambda argv=None: qapp)
    monkeypatch.setattr(MainWindow, "start_warm_up", lambda self: None)
    assert app_module.run_app([]) == 0
    assert len(asked) == 1 and "photo.png" in asked[0][0]


# ------------------------------------------------------------------------------- core
def test_core_writes_atomically(tmp_path, folder, monkeypatch):
    """A failed write (a full disk at the rename) leaves the previous autosave byte for byte,
    and no temporary file; a write that succeeds reads back as the document."""
    image = photo(tmp_path)
    doc = Document()
    doc.set_image(load_image(image), str(image))
    paint(doc)
    a = Autosave(folder)
    assert a.write(doc)
    before = a.path.read_bytes()
    paint(doc, 2, y=200)

    def full(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")
    with monkeypatch.context() as m, pytest.raises(OSError, match="No space left"):
        m.setattr(os, "replace", full)
        a.write(doc)
    assert a.path.read_bytes() == before
    assert files(folder) == {a.path.name, a.path.with_suffix(".lock").name}
    assert a.write(doc)
    data = load_session(a.path)
    np.testing.assert_array_equal(data.strokes, doc.strokes)
    assert data.image_path == str(image.resolve()) and data.k == doc.k


def test_core_keeps_nothing_for_a_clean_document(tmp_path, folder):
    image = photo(tmp_path)
    doc = Document()
    a = Autosave(folder)
    assert not a.write(doc)  # no image
    doc.set_image(load_image(image), str(image))
    assert not a.write(doc)  # clean
    doc.set_image(load_image(image), None)
    paint(doc)
    assert not a.write(doc)  # an image that could not be read back
    assert not folder.exists()


def test_core_close_removes_the_file_and_its_lock(tmp_path, folder):
    image = photo(tmp_path)
    doc = Document()
    doc.set_image(load_image(image), str(image))
    paint(doc)
    a = Autosave(folder)
    assert a.write(doc) and owner_alive(a.path)
    assert find_leftovers(folder) == []
    a.close()
    assert files(folder) == set()


HOLDER_SCRIPT = r'''
import sys, time
from segapp.core.autosave import Autosave
from segapp.core.io import load_image
from segapp.model import Document
doc = Document()
doc.set_image(load_image(sys.argv[2]), sys.argv[2])
doc.begin_stroke("strokes"); doc.stroke_to((5, 5), (60, 60), 3, 1); doc.end_stroke()
a = Autosave(sys.argv[1])
assert a.write(doc)
print(a.path, flush=True)
time.sleep(600)
'''


def test_core_tells_a_dead_writer_from_a_running_one(tmp_path, folder):
    """A process that runs keeps its autosave its own (not a leftover, not claimable); once
    it is killed the autosave is a leftover, claimed by one start at a time. A file whose lock
    is free is a leftover even when its name's process id runs (ids are given again)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER_SCRIPT, str(folder),
                             str(photo(tmp_path))], cwd=ROOT, env=child_env(),
                            stdout=subprocess.PIPE, text=True)
    try:
        path = Path(proc.stdout.readline().strip())
        assert path.parent == folder and path.exists()
        assert owner_alive(path) and find_leftovers(folder) == []
        assert claim(Leftover(path, proc.pid, 0.0)) is None
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        proc.stdout.close()
    assert not owner_alive(path)
    (left,) = find_leftovers(folder)
    assert (left.path, left.pid) == (path, proc.pid)
    taken = claim(left)
    assert taken is not None
    assert claim(left) is None and find_leftovers(folder) == []  # (being offered)
    taken.release()
    assert [x.path for x in find_leftovers(folder)] == [path]
    # this live process's id, its lock free: a leftover all the same
    mine, _ = crashed(folder, photo(tmp_path, "mine.png"))
    assert core.file_pid(mine) == os.getpid()
    assert mine in [x.path for x in find_leftovers(folder)]


def test_core_says_what_an_autosave_holds(tmp_path):
    image = photo(tmp_path)
    doc = Document(k=3)
    doc.set_image(load_image(image), str(image))
    paint(doc, 1)
    paint(doc, 3, y=200)
    hard = np.zeros(doc.shape, np.uint8)
    hard[480, 10] = 2
    doc.set_layers(hard=hard)
    doc.set_rect((5, 5, 100, 100))
    doc.settings.area = ["2:0.1-0.6"]
    path = tmp_path / "s.json"
    from segapp.core.session import save_session
    save_session(path, doc)
    n = int(np.count_nonzero(doc.strokes))
    assert describe(load_session(path)) == (f"strokes of labels 1 and 3 ({n:,} pixels), 1 hard "
                                            "pixel, a rectangle and 1 constraint; K = 3")
    now = time.mktime((2026, 5, 3, 15, 0, 0, 0, 0, -1))
    assert saved_when(now - 3600, now) == "today at 14:00"
    assert saved_when(now - 86400, now) == "yesterday at 15:00"
    assert saved_when(now - 9 * 86400, now) == "on 24 April 2026 at 15:00"


def test_the_autosave_folder_is_per_user_and_can_be_moved(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_DIR, str(tmp_path / "here"))
    assert core.autosave_dir() == tmp_path / "here"
    monkeypatch.delenv(ENV_DIR)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    if sys.platform.startswith("linux"):
        assert core.autosave_dir() == tmp_path / "state" / "segapp"
        monkeypatch.setenv("XDG_STATE_HOME", "relative/state")  # (ignored, as the spec says)
        assert core.autosave_dir() == Path.home() / ".local" / "state" / "segapp"
