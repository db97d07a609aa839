"""Cut-outs and colour-coded labels, as a person keeps them (the app-as-people-use-it issue,
items 1 and 2).

- a cut-out is the photo's own pixels, opaque on the kept labels and transparent elsewhere;
  with a feather, its alpha is the ramp ``255 · clip(1/2 + s / F, 0, 1)`` of the signed distance
  ``s`` to the labels' boundary (checked against scipy's exact distance transform, an
  independent computation), 255 deep inside and 0 far outside;
- ``segapp segment --cutout`` writes that file (PNG, TIFF, WebP, alpha kept), with
  ``--cutout-label`` and ``--feather``; JPEG, labels beyond K, a feather without a cut-out and
  a cut-out over the photo are refused in one line before anything is read or written;
- ``--labels-palette`` writes a palette PNG whose index is the label and whose colours are the
  app's, read back as the same labels;
- in the window, File → Export cut-out asks for the labels and the soft edge, then for the
  file (``<photo>_cutout.png``), and refuses JPEG and the open photo in a dialog; File → Export
  colour-coded labels writes the palette PNG.
"""
from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

import cv2
import numpy as np
import pytest
from PIL import Image
from PyQt6.QtCore import QTimer
from PyQt6.QtWidgets import QApplication, QFileDialog
from scipy import ndimage

import segapp.core.io as core_io
import segapp.core.pipeline as pipeline
from segapp.cli import main
from segapp.core.io import (
    cutout,
    cutout_alpha,
    label_palette,
    load_image,
    load_label_image,
    palette_png,
    save_labels,
)


def expected_alpha(kept: np.ndarray, feather: float) -> np.ndarray:
    """The documented ramp, from scipy's exact Euclidean distance transform."""
    d_in = ndimage.distance_transform_edt(kept)
    d_out = ndimage.distance_transform_edt(~kept)
    s = np.where(kept, d_in - 0.5, 0.5 - d_out)
    return np.rint(255 * np.clip(0.5 + s / feather, 0, 1)).astype(np.uint8)


def assert_alpha(got: np.ndarray, want: np.ndarray) -> None:
    """Equal up to the rounding of a value that lies on a half (float32 distances)."""
    assert got.shape == want.shape
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


def disc(h: int = 60, w: int = 70, r: float = 18.0) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    return (yy - h / 2) ** 2 + (xx - w / 2) ** 2 < r * r


# ------------------------------------------------------------------------------ core
def test_a_hard_cutout_keeps_the_photo_on_the_label_and_nothing_elsewhere():
    rng = np.random.default_rng(0)
    photo = rng.integers(1, 255, (60, 70, 3), dtype=np.uint8)
    labels = np.where(disc(), 1, 2).astype(np.int32)
    rgba = cutout(photo, labels, [1])
    assert rgba.shape == (60, 70, 4) and rgba.dtype == np.uint8
    inside, outside = labels == 1, labels == 2
    assert (rgba[..., 3][inside] == 255).all() and (rgba[..., 3][outside] == 0).all()
    assert np.array_equal(rgba[..., :3][inside], photo[inside])
    # nothing of the photo outside the cut-out is kept in the file
    assert (rgba[..., :3][outside] == 0).all()
    # the other label, and both
    assert (cutout(photo, labels, [2])[..., 3] == np.where(outside, 255, 0)).all()
    assert (cutout(photo, labels, [1, 2])[..., 3] == 255).all()


@pytest.mark.parametrize("feather", [1.5, 2.0, 4.0, 7.5])
def test_the_feather_is_the_documented_ramp_across_the_boundary(feather):
    kept = disc()
    alpha = cutout_alpha(kept, feather)
    assert_alpha(alpha, expected_alpha(kept, feather))
    d_in = ndimage.distance_transform_edt(kept)
    d_out = ndimage.distance_transform_edt(~kept)
    # opaque from F/2 inside the boundary on, transparent from F/2 outside it on
    assert (alpha[kept & (d_in - 0.5 >= feather / 2)] == 255).all()
    assert (alpha[~kept & (d_out - 0.5 >= feather / 2)] == 0).all()
    # a soft edge: the pixels either side of the boundary are neither
    edge_in = kept & (d_in == 1)
    edge_out = ~kept & (d_out == 1)
    assert (np.abs(alpha[edge_in] - 255 * (0.5 + 0.5 / feather)) <= 0.5 + 1e-6).all()
    assert (np.abs(alpha[edge_out] - 255 * (0.5 - 0.5 / feather)) <= 0.5 + 1e-6).all()
    # and it falls off along a row through the centre
    row = alpha[30, :35].astype(int)
    assert (np.diff(row) >= 0).all() and row[0] == 0 and row[-1] == 255


def test_no_feather_or_a_one_pixel_one_is_the_hard_edge_and_the_frame_is_no_edge():
    kept = disc()
    hard = np.where(kept, 255, 0)
    assert np.array_equal(cutout_alpha(kept, 0), hard)
    assert np.array_equal(cutout_alpha(kept, 1), hard)
    # an object cut by the photo's frame stays opaque up to it
    half = np.zeros((40, 40), bool)
    half[:, :20] = True
    alpha = cutout_alpha(half, 6)
    assert (alpha[:, :17] == 255).all() and (alpha[:, 23:] == 0).all()
    assert (alpha[0, :17] == 255).all()
    assert (cutout_alpha(np.ones((5, 5), bool), 4) == 255).all()
    assert (cutout_alpha(np.zeros((5, 5), bool), 4) == 0).all()
    for bad in (-1, 1e6, float("nan")):
        with pytest.raises(ValueError, match="feather"):
            cutout_alpha(kept, bad)


def test_a_grey_or_16_bit_photo_is_cut_out_in_its_8_bit_rgb():
    labels = np.where(disc(), 1, 2)
    grey = np.full((60, 70), 123, np.uint8)
    assert (cutout(grey, labels, [1])[labels == 1][:, :3] == 123).all()
    deep = np.full((60, 70, 3), 65535, np.uint16)
    assert (cutout(deep, labels, [1])[labels == 1][:, :3] == 255).all()
    with pytest.raises(ValueError, match="at least one label"):
        cutout(grey, labels, [])


def test_a_colour_coded_label_png_is_a_palette_whose_index_is_the_label(tmp_path):
    rng = np.random.default_rng(1)
    labels = rng.integers(1, 4, (30, 40)).astype(np.int32)
    path = tmp_path / "colour.png"
    save_labels(path, labels, palette=True, k=3)
    with Image.open(path) as im:
        assert im.mode == "P" and im.size == (40, 30)
        table = np.array(im.getpalette()[:12], np.uint8).reshape(4, 3)
        indices = np.asarray(im)
    assert table[0].tolist() == [0, 0, 0]
    np.testing.assert_array_equal(table[1:], label_palette(3))
    np.testing.assert_array_equal(indices, labels)
    np.testing.assert_array_equal(load_label_image(path), labels)
    # a viewer (OpenCV here) sees each label in its colour, not near-black values 1..3
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    np.testing.assert_array_equal(bgr[..., ::-1], label_palette(3)[labels - 1])
    with pytest.raises(ValueError, match="palette PNG, so name a .png file"):
        save_labels(tmp_path / "c.tif", labels, palette=True)
    assert not (tmp_path / "c.tif").exists()
    assert palette_png(np.ones((2, 2), np.int32))[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------------------ CLI
@pytest.fixture
def photo(tmp_path):
    """A colour photo with a bright disc (the object, label 1) and strokes for both labels."""
    rng = np.random.default_rng(0)
    obj = disc()
    grey = np.where(obj, 200, 50) + rng.normal(0, 8, obj.shape)
    rgb = np.clip(np.dstack([grey, grey * 0.9, grey * 0.6]), 0, 255).astype(np.uint8)
    cv2.imwrite(str(tmp_path / "photo.png"), rgb[..., ::-1])
    strokes = np.zeros(obj.shape, np.uint8)
    strokes[28:32, 30:40] = 1
    strokes[2:5, 2:60] = 2
    save_labels(tmp_path / "strokes.png", strokes)
    return tmp_path


def segment(d: Path, *extra, capfd=None) -> tuple[int, str]:
    code = main(["segment", str(d / "photo.png"), "--strokes", str(d / "strokes.png"),
                 "--quiet", *map(str, extra)])
    err = capfd.readouterr().err if capfd is not None else ""
    return code, err


@pytest.mark.usefixtures("app_launches")
def test_segment_cutout_writes_the_photo_with_transparency(photo, capfd):
    d = photo
    code, err = segment(d, "--out", d / "l.png", "--cutout", d / "c.png", "--feather", "3",
                        capfd=capfd)
    assert code == 0, err
    labels = load_label_image(d / "l.png")
    rgb = load_image(d / "photo.png")
    with Image.open(d / "c.png") as im:
        assert im.mode == "RGBA"
        rgba = np.asarray(im)
    assert_alpha(rgba[..., 3], expected_alpha(labels == 1, 3.0))
    shown = rgba[..., 3] > 0
    np.testing.assert_array_equal(rgba[..., :3][shown], rgb[shown])
    assert (rgba[..., :3][~shown] == 0).all()
    # the object came out: the disc is opaque in the middle, the corners transparent
    assert rgba[30, 35, 3] == 255 and rgba[0, 0, 3] == 0 and rgba[-1, -1, 3] == 0
    assert 0 < np.mean((rgba[..., 3] > 0) & (rgba[..., 3] < 255))


@pytest.mark.usefixtures("app_launches")
@pytest.mark.parametrize("ext", [".tif", ".webp"])
def test_segment_cutout_keeps_the_alpha_in_tiff_and_webp(photo, capfd, ext):
    d = photo
    code, err = segment(d, "--out", d / "l.png", "--cutout", d / f"c{ext}",
                        "--cutout-label", "2", capfd=capfd)
    assert code == 0, err
    labels = load_label_image(d / "l.png")
    with Image.open(d / f"c{ext}") as im:
        assert im.mode == "RGBA"
        alpha = np.asarray(im)[..., 3]
    np.testing.assert_array_equal(alpha, np.where(labels == 2, 255, 0))


@pytest.mark.usefixtures("app_launches")
def test_segment_cutout_labels_repeat_or_come_as_a_list(photo, capfd):
    d = photo
    for args in (("--cutout-label", "1", "--cutout-label", "2"), ("--cutout-label", "2,1")):
        code, err = segment(d, "--out", d / "l.png", "--cutout", d / "c.png", *args,
                            capfd=capfd)
        assert code == 0, err
        assert (np.asarray(Image.open(d / "c.png"))[..., 3] == 255).all()


@pytest.mark.usefixtures("app_launches")
@pytest.mark.parametrize("args, words", [
    (("--cutout", "c.jpg"), "cannot write --cutout '{d}/c.jpg': JPEG has no transparency, so "
                            "name a .png, .tif, .tiff or .webp file"),
    (("--cutout", "c.bmp"), "a cut-out needs a format with transparency"),
    (("--cutout", "c.png", "--cutout-label", "3"),
     "cannot keep --cutout-label 3: with K = 2 the labels are 1 and 2"),
    (("--feather", "2"), "--feather needs --cutout OUT.png"),
    (("--cutout-label", "1"), "--cutout-label needs --cutout OUT.png"),
    (("--cutout", "c.png", "--feather", "1000"), "argument --feather: expected a width in "
                                                  "pixels from 0 to 100"),
    (("--cutout", "c.png", "--feather", "-1"), "argument --feather"),
    (("--cutout", "c.png", "--cutout-label", "0"), "labels are numbered from 1"),
    (("--cutout", "photo.png"), "it is the image file"),
    (("--labels-palette",), None),  # (with --out l.tif below)
])
def test_segment_refuses_a_bad_cutout_in_one_line_before_any_work(photo, capfd, monkeypatch,
                                                                   args, words):
    d = photo
    seen = []
    monkeypatch.setattr(pipeline, "run_segmentation", lambda *a, **k: seen.append("solve"))
    monkeypatch.setattr(core_io, "load_image", lambda *a, **k: seen.append("load"))
    before = sorted(p.name for p in d.iterdir())
    photo_bytes = (d / "photo.png").read_bytes()
    out = "l.tif" if words is None else "l.png"
    code, err = segment(d, "--out", d / out,
                        *[str(d / a) if a.endswith((".png", ".jpg", ".bmp")) else a
                          for a in args], capfd=capfd)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("segapp: error: "), err
    expected = (words or "cannot write --out '{d}/l.tif': --labels-palette writes a palette "
                         "PNG, so name a .png file").format(d=d)
    assert expected in err
    assert seen == [] and sorted(p.name for p in d.iterdir()) == before
    assert (d / "photo.png").read_bytes() == photo_bytes


@pytest.mark.usefixtures("app_launches")
def test_segment_labels_palette_writes_the_same_labels_in_colour(photo, capfd):
    d = photo
    assert segment(d, "--out", d / "plain.png", capfd=capfd)[0] == 0
    assert segment(d, "--out", d / "colour.png", "--labels-palette", capfd=capfd)[0] == 0
    plain = load_label_image(d / "plain.png")
    with Image.open(d / "plain.png") as im:
        assert im.mode == "L"  # (--out's contract unchanged without the flag)
    with Image.open(d / "colour.png") as im:
        assert im.mode == "P"
    np.testing.assert_array_equal(load_label_image(d / "colour.png"), plain)
    seen = cv2.imread(str(d / "colour.png"), cv2.IMREAD_COLOR)[..., ::-1]
    np.testing.assert_array_equal(seen, label_palette(2)[plain - 1])


# ------------------------------------------------------------------------------ the window
@pytest.fixture
def done(win, tmp_path):
    """``win`` with a photo opened from a file and a finished run's labels (a disc = label 1)."""
    rng = np.random.default_rng(0)
    img = rng.integers(1, 255, (60, 70, 3), dtype=np.uint8)
    path = tmp_path / "photo.png"
    cv2.imwrite(str(path), img[..., ::-1])
    assert win.open_path(str(path))
    win.outcome = SimpleNamespace(labels=np.where(disc(), 1, 2).astype(np.int32), history=[],
                                  reference_energy=None)
    win.update_actions()
    win.photo = img
    return win


def on_modal(qtbot, kind, act) -> list:
    """When a modal widget of type ``kind`` opens, call ``act(widget)``; what it returned."""
    got: list = []

    def poll() -> None:
        w = QApplication.activeModalWidget()
        if isinstance(w, kind):
            got.append(act(w))
        else:
            QTimer.singleShot(20, poll)
    QTimer.singleShot(0, poll)
    return got


def answer_save(monkeypatch, path) -> list:
    asked: list = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        lambda _parent, *a: asked.append(a) or (str(path), a[2].split(";;")[0]))
    return asked


def test_file_export_cutout_asks_the_labels_and_the_edge_then_writes_it(done, qtbot,
                                                                       monkeypatch, tmp_path):
    from segapp.ui.export_dialogs import CutoutDialog
    win = done
    assert win.act_cutout.isEnabled()
    assert win.act_cutout in win.menuBar().actions()[0].menu().actions()  # (File)
    asked = answer_save(monkeypatch, tmp_path / "mine.png")

    def choose(dialog):
        first = ([b.text() for b in dialog.boxes], dialog.labels(), dialog.feather_px())
        dialog.feather.setValue(4)
        dialog.buttons.accepted.emit()
        return first
    seen = on_modal(qtbot, CutoutDialog, choose)
    win.act_cutout.trigger()
    assert seen == [(["Label 1 (the object)", "Label 2"], [1], 0.0)]
    title, default, filters = asked[0]
    assert title == "Save cut-out" and default == str(tmp_path / "photo_cutout.png")
    assert filters.split(";;")[0] == "PNG (*.png)" and "*.jpg" not in filters
    assert win.errors == []
    with Image.open(tmp_path / "mine.png") as im:
        rgba = np.asarray(im.convert("RGBA")) if im.mode != "RGBA" else np.asarray(im)
    kept = disc()
    assert_alpha(rgba[..., 3], expected_alpha(kept, 4.0))
    shown = rgba[..., 3] > 0
    np.testing.assert_array_equal(rgba[..., :3][shown], done.photo[shown])
    # the next export offers the last choice
    seen = on_modal(qtbot, CutoutDialog, lambda d: (d.labels(), d.feather_px(), d.reject()))
    assert not win.save_cutout()
    assert seen[0][:2] == ([1], 4.0)


def test_export_cutout_of_chosen_labels_and_refusals(done, monkeypatch, tmp_path):
    win = done
    assert win.save_cutout(str(tmp_path / "bg.webp"), labels=[2], feather_px=0)
    with Image.open(tmp_path / "bg.webp") as im:
        np.testing.assert_array_equal(np.asarray(im)[..., 3], np.where(disc(), 0, 255))
    # a JPEG is refused in one sentence, before anything is written
    assert not win.save_cutout(str(tmp_path / "c.jpg"), labels=[1])
    assert win.errors[-1] == ("Cannot export the cut-out",
                              f"cannot write cut-out 'c.jpg': JPEG has no transparency, so "
                              "name a .png, .tif, .tiff or .webp file")
    assert not (tmp_path / "c.jpg").exists()
    # and so is the open photo
    before = (tmp_path / "photo.png").read_bytes()
    assert not win.save_cutout(str(tmp_path / "photo.png"), labels=[1])
    assert win.errors[-1][0] == "Cannot export the cut-out"
    assert "it is the image file" in win.errors[-1][1]
    assert (tmp_path / "photo.png").read_bytes() == before


def test_file_export_colour_coded_labels_writes_a_palette_png(done, monkeypatch, tmp_path):
    win = done
    asked = answer_save(monkeypatch, tmp_path / "colour.png")
    win.act_labels_colour.trigger()
    assert asked[0][0] == "Save colour-coded labels"
    assert asked[0][1] == str(tmp_path / "photo_labels_colour.png")
    assert asked[0][2] == "PNG, colour-coded (*.png)"
    assert win.errors == []
    with Image.open(tmp_path / "colour.png") as im:
        assert im.mode == "P"
        assert np.array_equal(np.array(im.getpalette()[3:9], np.uint8).reshape(2, 3),
                              label_palette(2))
    np.testing.assert_array_equal(load_label_image(tmp_path / "colour.png"), win.outcome.labels)
    # the plain export is as it was: one channel, values 1..K
    answer_save(monkeypatch, tmp_path / "plain.png")
    win.act_labels.trigger()
    with Image.open(tmp_path / "plain.png") as im:
        assert im.mode == "L"
    assert not win.save_labels(str(tmp_path / "colour.tif"), palette=True)
    assert "palette PNG, so name a .png file" in win.errors[-1][1]
    assert not (tmp_path / "colour.tif").exists()


def test_cutout_bytes_in_memory_are_a_png_with_alpha():
    rgba = cutout(np.zeros((4, 4, 3), np.uint8), np.ones((4, 4), np.int32), [1])
    data = core_io.encode_rgba(rgba, ".png")
    with Image.open(io.BytesIO(data)) as im:
        assert im.mode == "RGBA"
