"""Files in and out of the app keep what a person owns, and every bad one is one sentence.

- a failed energy-history export leaves the file it would replace byte for byte, and no
  temporary file;
- labels are written only in a lossless format (PNG, TIFF): a JPEG name is refused in a dialog
  before anything is written; an overlay in a format this build cannot write likewise;
- a name typed without an extension gets the chosen filter's, and a file that name then hits
  is replaced only when the person says so; an export never replaces the photo it was made
  from;
- an OpenCV error in a save or an open is a dialog with one sentence, not the exception hook;
  an image too large to read is one sentence, whether opened or named by a session, and the
  work in the window is untouched.
"""
from __future__ import annotations

import csv
import errno
import json
import os
from pathlib import Path
from types import SimpleNamespace

import cv2
import numpy as np
import pytest
from PyQt6.QtWidgets import QFileDialog, QMessageBox

import segapp.core.io as core_io
import segapp.ui.app as app_module
from segapp.core.io import ImageError
from segapp.ui.app import install_exception_hook

HUGE = ("cannot read image 'x.png': it claims 40000×40000 pixels, more than the 1073741824 "
        "this build reads")
LABELS_REFUSED = ("labels need a lossless format, so name a .png, .tif or .tiff file")


# ------------------------------------------------------------------------------- set-up
@pytest.fixture
def done(win, qtbot, tmp_path):
    """``win`` with a photo read from a file, strokes on it and a finished run's outcome
    (labels 1 and 2, a three-iteration history); ``win.out`` is an empty folder for exports."""
    rng = np.random.default_rng(0)
    img = rng.integers(0, 255, (40, 50, 3), dtype=np.uint8)
    path = tmp_path / "photo.png"
    cv2.imwrite(str(path), img)
    assert win.open_path(str(path))
    strokes = np.zeros((40, 50), np.uint8)
    strokes[2:5, 2:40] = 1
    strokes[30, 5:30] = 2
    win.doc.set_layers(strokes=strokes)
    labels = np.where(np.arange(50)[None, :] < 25, 1, 2).repeat(40, axis=0).astype(np.int32)
    history = [SimpleNamespace(iteration=i, energy_continuous=10.0 - i, energy_rounded=11.0 - i,
                               residual_box=0.1 / i, residual_sphere=0.2 / i, rho=0.5 * i)
               for i in (1, 2, 3)]
    win.outcome = SimpleNamespace(labels=labels, history=history, reference_energy=-3.25)
    win.update_actions()
    win.out = tmp_path / "out"
    win.out.mkdir()
    return win


@pytest.fixture
def hook_dialogs(win, monkeypatch):
    """The app's exception hook on ``win``; the messages its dialog would show."""
    shown: list[str] = []
    monkeypatch.setattr(app_module, "exception_dialog",
                        lambda _w, message, _can_save: shown.append(message) or False)
    restore = install_exception_hook(win)
    yield shown
    restore()


def typed(monkeypatch, name: str | Path, chosen: str = "") -> list[tuple]:
    """Answer every save dialog with ``name`` and the filter ``chosen``; the dialogs asked, as
    ``(title, default, filter)``."""
    asked: list[tuple] = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        lambda _parent, *a: asked.append(a) or (str(name), chosen))
    return asked


def files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def cv2_error() -> cv2.error:
    """A genuine OpenCV error (as an encoder that is missing raises it)."""
    try:
        cv2.imencode(".xyz", np.zeros((4, 4), np.uint8))
    except cv2.error as exc:
        return exc
    raise AssertionError("OpenCV encoded .xyz")


# ------------------------------------------------------------------------------- history
@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_a_failed_history_export_keeps_the_file_it_would_replace(done, monkeypatch, failing):
    """A full disk while the CSV is written (its flush to disk, or its rename into place):
    the error is one dialog, the file already at that path is byte for byte what it was, and
    no temporary file is left. Once the disk has room, the CSV holds the run."""
    path = done.out / "h.csv"
    path.write_bytes(b"precious,numbers\n1,2\n")

    def full(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")
    typed(monkeypatch, path)
    with monkeypatch.context() as m:
        m.setattr(os, failing, full)
        done.act_csv.trigger()
    assert done.errors == [("Cannot save history", f"cannot write '{path}': No space left on "
                                                   "device")]
    assert path.read_bytes() == b"precious,numbers\n1,2\n"
    assert files(done.out) == {"h.csv"}
    assert done.save_history(str(path))
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(int(r["iteration"]), float(r["energy_rounded"]), float(r["reference_energy"]))
            for r in rows] == [(1, 10.0, -3.25), (2, 9.0, -3.25), (3, 8.0, -3.25)]


# ------------------------------------------------------------------------------- labels
@pytest.mark.parametrize("name", ["l.jpg", "l.JPEG", "l.webp"])
def test_labels_in_a_lossy_format_are_refused_before_anything_is_written(done, monkeypatch,
                                                                        name):
    typed(monkeypatch, done.out / name)
    done.act_labels.trigger()
    assert done.errors == [("Cannot save labels", f"cannot write labels '{name}': "
                                                  + LABELS_REFUSED)]
    assert files(done.out) == set()
    done.errors.clear()
    typed(monkeypatch, done.out / "l.tif")
    done.act_labels.trigger()
    assert done.errors == []
    np.testing.assert_array_equal(cv2.imread(str(done.out / "l.tif"), cv2.IMREAD_UNCHANGED),
                                  done.outcome.labels)


def test_the_label_dialog_offers_png_and_tiff_and_adds_the_chosen_extension(done,
                                                                           monkeypatch):
    asked = typed(monkeypatch, done.out / "labels", "TIFF (*.tif *.tiff)")
    done.act_labels.trigger()
    assert asked == [("Save labels", str(Path(done.doc.image_path).with_name("photo_labels.png")),
                      "PNG (*.png);;TIFF (*.tif *.tiff)")]
    typed(monkeypatch, done.out / "plain", "")
    done.act_labels.trigger()
    assert done.errors == []
    assert files(done.out) == {"labels.tif", "plain.png"}
    for name in ("labels.tif", "plain.png"):
        np.testing.assert_array_equal(cv2.imread(str(done.out / name), cv2.IMREAD_UNCHANGED),
                                      done.outcome.labels)


def test_an_added_extension_never_replaces_a_file_unasked(done, monkeypatch):
    """The dialog asked about "o" only: "o.png", which exists, is replaced only after a yes."""
    old = done.out / "o.png"
    old.write_bytes(b"someone's picture")
    asked = []
    for reply in (QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes):
        monkeypatch.setattr(QMessageBox, "question",
                            lambda _p, title, text, *a, r=reply: asked.append((title, text)) or r)
        typed(monkeypatch, done.out / "o", "PNG (*.png)")
        done.act_overlay.trigger()
        if reply == QMessageBox.StandardButton.No:
            assert old.read_bytes() == b"someone's picture" and files(done.out) == {"o.png"}
    assert asked == [("Replace file?", f"o.png already exists in {done.out}. Replace it?")] * 2
    assert cv2.imread(str(old)).shape == (40, 50, 3) and done.errors == []


def test_an_export_never_replaces_the_photo_it_was_made_from(done, monkeypatch):
    photo = Path(done.doc.image_path)
    before = photo.read_bytes()
    typed(monkeypatch, photo)
    done.act_overlay.trigger()
    assert len(done.errors) == 1 and done.errors[0][0] == "Cannot save overlay"
    assert "which would be lost" in done.errors[0][1]
    assert photo.read_bytes() == before


# ------------------------------------------------------------------------------- overlay
def test_an_overlay_in_an_unknown_format_is_one_sentence(done, monkeypatch, hook_dialogs):
    typed(monkeypatch, done.out / "x.xyz")
    done.act_overlay.trigger()
    assert hook_dialogs == []
    assert done.errors == [("Cannot save overlay", "cannot write overlay 'x.xyz': unknown "
                                                   "image format '.xyz'; name a .png or .jpg "
                                                   "file")]
    assert files(done.out) == set()


def test_an_opencv_error_in_a_save_is_a_dialog_not_the_exception_hook(done, monkeypatch,
                                                                      hook_dialogs):
    """OpenCV failing to encode (labels, overlay, a session's layers) is one error dialog
    each; the files already there and the document are untouched."""
    for name in ("l.png", "o.png", "s.json"):
        (done.out / name).write_bytes(b"kept " + name.encode())
    strokes = done.doc.strokes.copy()
    exc = cv2_error()

    def broken(*_args, **_kwargs):
        raise exc
    monkeypatch.setattr(cv2, "imencode", broken)
    for action, name, title in ((done.act_labels, "l.png", "Cannot save labels"),
                                (done.act_overlay, "o.png", "Cannot save overlay"),
                                (done.act_save_as, "s.json", "Cannot save session")):
        typed(monkeypatch, done.out / name)
        action.trigger()
        assert done.errors[-1] == (title, f"cannot write '{done.out / name}': OpenCV could not "
                                          "encode the image (could not find encoder for the "
                                          "specified extension)")
    assert hook_dialogs == [] and len(done.errors) == 3
    assert {n: (done.out / n).read_bytes() for n in files(done.out)} == {
        n: b"kept " + n.encode() for n in ("l.png", "o.png", "s.json")}
    np.testing.assert_array_equal(done.doc.strokes, strokes)
    assert done.doc.dirty and done.session_path is None


# ------------------------------------------------------------------------------- opening
def test_an_image_too_large_to_read_is_one_sentence_and_the_work_kept(done, monkeypatch,
                                                                      tmp_path):
    """Opening an image whose header claims more pixels than this build reads, directly, as
    a sample, or named by a session: one dialog with the reader's sentence each, and the
    window keeps its photo, strokes and title."""
    from segapp.core.session import save_session
    session = tmp_path / "s.json"
    save_session(session, done.doc)
    strokes, title = done.doc.strokes.copy(), done.windowTitle()
    image_path = done.doc.image_path

    def huge(_path):
        raise ImageError(HUGE)
    monkeypatch.setattr(core_io, "load_image", huge)
    assert not done.open_path(str(tmp_path / "x.png"))
    assert not done.open_session(str(session))
    assert not done.open_sample(Path(core_io.ASSETS_DIR) / "cameraman.png", None, 2)
    assert done.errors == [("Cannot open image", HUGE),
                           ("Cannot open session", f"session field 'image_path': {HUGE}"),
                           ("Cannot open image", HUGE)]
    np.testing.assert_array_equal(done.doc.strokes, strokes)
    assert done.doc.image_path == image_path and done.windowTitle() == title


def test_a_huge_image_file_is_one_sentence(done, tmp_path, hook_dialogs):
    """A real PNG of a few bytes whose header claims 40000 × 40000 pixels."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    path = tmp_path / "huge.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n"
                     + chunk(b"IHDR", struct.pack(">IIBBBBB", 40000, 40000, 8, 0, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(b"\0" * 100)) + chunk(b"IEND", b""))
    strokes = done.doc.strokes.copy()
    assert not done.open_path(str(path))
    assert hook_dialogs == []
    ((title, text),) = done.errors
    assert title == "Cannot open image" and "huge.png" in text
    assert "\n" not in text and "OpenCV(" not in text
    np.testing.assert_array_equal(done.doc.strokes, strokes)


def test_an_opencv_error_while_opening_is_one_sentence(done, monkeypatch, tmp_path,
                                                       hook_dialogs):
    from segapp.core.session import save_session
    session = tmp_path / "s.json"
    save_session(session, done.doc)
    strokes = done.doc.strokes.copy()
    exc = cv2_error()

    def broken(_path):
        raise exc
    monkeypatch.setattr(core_io, "load_image", broken)
    path = tmp_path / "odd.png"
    assert not done.open_path(str(path))
    assert not done.open_session(str(session))
    photo = json.loads(session.read_text())["image_path"]
    reason = "OpenCV could not decode the image (could not find encoder for the specified " \
             "extension)"
    assert done.errors == [("Cannot open image", f"cannot read '{path}': {reason}"),
                           ("Cannot open session",
                            f"session field 'image_path': cannot read '{photo}': {reason}")]
    assert hook_dialogs == []
    np.testing.assert_array_equal(done.doc.strokes, strokes)
