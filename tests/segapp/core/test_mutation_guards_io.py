"""Reading and writing image files (``segapp.core.io``), in process: what a user gets from a
photo or label file as other programs write them, and the one sentence for a file that cannot
be used.

``tests/segapp/cli/test_bad_inputs.py`` checks the same cases through the installed console
script; these call the library directly, so they judge the code of the tree they run in (the
mutation groups run in scratch copies, where the console script still imports the installed
tree).
"""
from __future__ import annotations

import io as bytesio
import os
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from segapp.core import io
from segapp.core.io import (
    ImageError,
    label_palette,
    load_image,
    load_label_image,
    overlay,
    save_image,
    save_labels,
    save_overlay,
    to_rgb8,
    write_files_atomic,
)


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return (len(data).to_bytes(4, "big") + kind + data
            + (zlib.crc32(kind + data) & 0xFFFFFFFF).to_bytes(4, "big"))


def huge_png(path: Path, w: int = 40000, h: int = 40000, colour_type: int = 0) -> None:
    """A PNG whose header claims ``w`` x ``h`` pixels, with almost no data."""
    ihdr = w.to_bytes(4, "big") + h.to_bytes(4, "big") + bytes([8, colour_type, 0, 0, 0])
    extra = png_chunk(b"PLTE", bytes(range(6))) if colour_type == 3 else b""
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + extra
                     + png_chunk(b"IDAT", zlib.compress(b"\0" * 64)) + png_chunk(b"IEND", b""))


def pil_save(path: Path, array: np.ndarray, mode: str | None = None, **kw) -> None:
    Image.fromarray(array, mode).save(path, **kw) if mode else \
        Image.fromarray(array).save(path, **kw)


# ------------------------------------------------------------------ files that cannot be used
def test_a_file_claiming_more_than_2_to_the_30_pixels_is_one_sentence(tmp_path):
    """As photo or strokes: the limit and the file's name; nothing decoded."""
    huge_png(tmp_path / "huge.png")
    limit = io.MAX_IMAGE_PIXELS
    assert 40000 * 40000 > limit  # the premise
    for read, what in ((load_image, "image"),
                       (lambda p: load_label_image(p, what="strokes"), "strokes")):
        with pytest.raises(ImageError) as err:
            read(tmp_path / "huge.png")
        assert str(err.value) == (f"cannot read {what} '{tmp_path / 'huge.png'}': it claims "
                                  f"more than the {limit} pixels this build reads")


def test_a_file_just_inside_the_limit_is_read(tmp_path, monkeypatch):
    """The limit is on the pixel count: a file of exactly as many pixels is read, one more is
    refused (photo and palette strokes alike)."""
    pil_save(tmp_path / "p.png", np.zeros((4, 5), np.uint8))
    pil_save(tmp_path / "s.png", np.ones((4, 5), np.uint8), "P")
    monkeypatch.setattr(io, "MAX_IMAGE_PIXELS", 20)
    assert load_image(tmp_path / "p.png").shape == (4, 5)
    assert load_label_image(tmp_path / "s.png").shape == (4, 5)
    monkeypatch.setattr(io, "MAX_IMAGE_PIXELS", 19)
    for read in (load_image, load_label_image):
        path = tmp_path / ("p.png" if read is load_image else "s.png")
        with pytest.raises(ImageError, match="it claims 5×4 pixels, more than the 19 this build"):
            read(path)


def test_opencvs_own_pixel_limit_is_the_same_sentence(tmp_path, monkeypatch):
    """A file Pillow cannot size but OpenCV refuses for its pixel limit: the limit named."""
    (tmp_path / "p.png").write_bytes(b"not read")

    def refuse(*_a):
        raise cv2.error("OpenCV(4) error: (-215:Assertion failed) pixels <= "
                        "CV_IO_MAX_IMAGE_PIXELS in function 'validateInputImageSize'")
    monkeypatch.setattr(io.cv2, "imdecode", refuse)
    with pytest.raises(ImageError) as err:
        load_image(tmp_path / "p.png")
    assert str(err.value) == (f"cannot read image '{tmp_path / 'p.png'}': it claims more than "
                              f"the {io.MAX_IMAGE_PIXELS} pixels this build reads")

    def fail(*_a):
        raise cv2.error("some other failure")
    monkeypatch.setattr(io.cv2, "imdecode", fail)
    with pytest.raises(ImageError) as err:
        load_image(tmp_path / "p.png")
    assert str(err.value) == (f"cannot read image '{tmp_path / 'p.png'}': not a supported "
                              "image file or corrupt")


@pytest.mark.parametrize("content", [b"", b"\x89PNG\r\n\x1a\n" + b"x" * 40, b"hello"])
def test_an_empty_or_corrupt_file_is_one_sentence(tmp_path, content):
    (tmp_path / "bad.png").write_bytes(content)
    with pytest.raises(ImageError) as err:
        load_image(tmp_path / "bad.png")
    assert str(err.value) == (f"cannot read image '{tmp_path / 'bad.png'}': not a supported "
                              "image file or corrupt")


def test_a_missing_file_and_a_folder_are_named(tmp_path):
    with pytest.raises(ImageError) as err:
        load_label_image(tmp_path / "none.png", what="strokes")
    assert str(err.value) == f"cannot read strokes '{tmp_path / 'none.png'}': no such file"
    with pytest.raises(ImageError) as err:
        load_image(tmp_path)
    assert str(err.value) == f"cannot read image '{tmp_path}': it is a folder, not a file"


def test_an_unreadable_file_names_the_cause(tmp_path, monkeypatch):
    """(A file the user may not read: the system's reason, as root sees none of it here.)"""
    pil_save(tmp_path / "p.png", np.zeros((4, 5), np.uint8))

    def denied(*_a, **_k):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(io.np, "fromfile", denied)
    with pytest.raises(ImageError) as err:
        load_image(tmp_path / "p.png")
    assert str(err.value) == f"cannot read image '{tmp_path / 'p.png'}': Permission denied"

    def bare(*_a, **_k):
        raise OSError("no reason given")
    monkeypatch.setattr(io.np, "fromfile", bare)
    with pytest.raises(ImageError) as err:
        load_image(tmp_path / "p.png")
    assert str(err.value) == f"cannot read image '{tmp_path / 'p.png'}': no reason given"


def test_a_corrupt_png_keeps_libpngs_line_off_the_terminal_and_puts_stderr_back(tmp_path,
                                                                                 capfd):
    """libpng's "IDAT: CRC error" goes nowhere the user sees; what is written to the C-level
    stderr afterwards reaches it again, and OpenCV's log level is what it was."""
    ok, buf = cv2.imencode(".png", np.random.default_rng(0).integers(0, 255, (50, 50), np.uint8))
    data = bytearray(buf.tobytes())
    data[60] ^= 0xFF
    (tmp_path / "bad.png").write_bytes(bytes(data))
    level = cv2.utils.logging.getLogLevel()
    with pytest.raises(ImageError, match="not a supported image file or corrupt"):
        load_image(tmp_path / "bad.png")
    assert cv2.utils.logging.getLogLevel() == level
    os.write(2, b"after\n")
    err = capfd.readouterr().err
    assert err == "after\n"


def test_quiet_opencv_silences_and_puts_the_level_back():
    level = cv2.utils.logging.getLogLevel()
    with io.quiet_opencv():
        assert cv2.utils.logging.getLogLevel() == cv2.utils.logging.LOG_LEVEL_SILENT
    assert cv2.utils.logging.getLogLevel() == level


def test_what_an_image_library_says_is_logged_at_debug_level(caplog):
    import logging
    with caplog.at_level(logging.DEBUG, logger="segapp.core.io"):
        with io._stderr_captured():
            os.write(2, b"libpng error: IDAT: CRC error\n")
        with io._stderr_captured():
            pass
    assert [r.getMessage() for r in caplog.records] == [
        "image library said: libpng error: IDAT: CRC error"]


# ------------------------------------------------------------------ photos
def test_a_photo_smaller_than_2_by_2_is_refused(tmp_path):
    for shape in ((1, 5), (5, 1)):
        pil_save(tmp_path / "t.png", np.zeros(shape, np.uint8))
        with pytest.raises(ImageError) as err:
            load_image(tmp_path / "t.png")
        assert str(err.value) == (f"cannot use image '{tmp_path / 't.png'}': it is smaller "
                                  "than 2×2 pixels")
    pil_save(tmp_path / "t.png", np.zeros((2, 2), np.uint8))
    assert load_image(tmp_path / "t.png").shape == (2, 2)


def test_a_photo_of_32_bit_integers_is_refused_naming_its_type(tmp_path):
    cv2.imwrite(str(tmp_path / "i.tif"), np.full((4, 5), 7, np.int32))
    with pytest.raises(ImageError) as err:
        load_image(tmp_path / "i.tif")
    assert str(err.value) == (f"cannot use image '{tmp_path / 'i.tif'}': unsupported pixel "
                              "type int32")


def test_a_float_photo_is_read_as_stored(tmp_path):
    a = np.random.default_rng(1).random((4, 5, 3)).astype(np.float32)
    cv2.imwrite(str(tmp_path / "f.tif"), a[:, :, ::-1])
    got = load_image(tmp_path / "f.tif")
    assert got.dtype == np.float32 and np.array_equal(got, a)


def test_a_single_channel_tiff_photo_is_grey(tmp_path):
    a = np.random.default_rng(2).integers(0, 255, (4, 5), np.uint8)
    pil_save(tmp_path / "g.tif", a)
    got = load_image(tmp_path / "g.tif")
    assert got.shape == (4, 5) and np.array_equal(got, a)


def test_an_rgba_tiff_keeps_the_colours_of_half_transparent_pixels(tmp_path):
    """Image editors store RGBA TIFFs with unassociated alpha: a half-transparent pixel's colour
    comes back as stored, not darkened by its alpha, and a transparent one not black."""
    a = np.random.default_rng(3).integers(10, 250, (4, 5, 4), np.uint8)
    a[:, :, 3] = 128
    a[0, 0, 3] = 0
    pil_save(tmp_path / "a.tif", a, "RGBA")
    assert np.array_equal(load_image(tmp_path / "a.tif"), a[:, :, :3])


def test_16_bit_and_rgb_tiffs_are_left_to_opencv(tmp_path):
    """A 16-bit RGBA TIFF (which Pillow cannot keep at 16 bits) and an RGB TIFF come back with
    every bit, colours in RGB order."""
    a16 = np.random.default_rng(5).integers(0, 65535, (4, 5, 4), np.uint16)
    a16[:, :, 3] = 65535
    cv2.imwrite(str(tmp_path / "a16.tif"), a16[:, :, [2, 1, 0, 3]])
    got = load_image(tmp_path / "a16.tif")
    assert got.dtype == np.uint16 and np.array_equal(got, a16[:, :, :3])
    rgb = np.random.default_rng(6).integers(0, 255, (4, 5, 3), np.uint8)
    pil_save(tmp_path / "rgb.tif", rgb)
    assert np.array_equal(load_image(tmp_path / "rgb.tif"), rgb)


def test_a_broken_exif_block_leaves_the_photo_as_stored(tmp_path):
    a = np.random.default_rng(7).integers(0, 255, (4, 5, 3), np.uint8)
    im = Image.fromarray(a)
    exif = im.getexif()
    exif[0x0112] = 9  # no such orientation
    im.save(tmp_path / "o9.png", exif=exif.tobytes())
    assert np.array_equal(load_image(tmp_path / "o9.png"), a)
    exif[0x0112] = 0
    im.save(tmp_path / "o0.png", exif=exif.tobytes())
    assert np.array_equal(load_image(tmp_path / "o0.png"), a)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_every_orientation_turns_a_grey_and_a_colour_array_as_exif_says(orientation):
    """The eight EXIF orientations on a 2 x 3 array, each written out by hand (TIFF 6.0)."""
    a = np.array([[1, 2, 3], [4, 5, 6]])
    want = {1: [[1, 2, 3], [4, 5, 6]], 2: [[3, 2, 1], [6, 5, 4]], 3: [[6, 5, 4], [3, 2, 1]],
            4: [[4, 5, 6], [1, 2, 3]], 5: [[1, 4], [2, 5], [3, 6]], 6: [[4, 1], [5, 2], [6, 3]],
            7: [[6, 3], [5, 2], [4, 1]], 8: [[3, 6], [2, 5], [1, 4]]}[orientation]
    got = io.apply_orientation(a, orientation)
    assert got.tolist() == want and got.flags.c_contiguous
    colour = np.stack([a, a + 10, a + 20], axis=-1)
    assert io.apply_orientation(colour, orientation)[..., 1].tolist() == \
        (np.array(want) + 10).tolist()


# ------------------------------------------------------------------ label images
def test_palette_strokes_give_their_index(tmp_path):
    grey = np.zeros((4, 5), np.uint8)
    grey[1, 1:4], grey[3, 0] = 1, 2
    im = Image.fromarray(grey, "P")
    im.putpalette([0, 0, 0, 255, 0, 0, 0, 0, 255] + [0] * (768 - 9))
    im.save(tmp_path / "pal.png")
    assert Image.open(tmp_path / "pal.png").mode == "P"  # the premise
    got = load_label_image(tmp_path / "pal.png", (4, 5), 2)
    assert got.dtype == np.int32 and np.array_equal(got, grey)
    # a palette PNG as a photo is its colours
    photo = load_image(tmp_path / "pal.png")
    assert photo[1, 1].tolist() == [255, 0, 0] and photo[3, 0].tolist() == [0, 0, 255]


def test_a_corrupt_palette_png_is_one_sentence(tmp_path):
    buf = bytesio.BytesIO()
    Image.fromarray(np.ones((4, 5), np.uint8), "P").save(buf, format="PNG")
    data = bytearray(buf.getvalue())
    data[-20:] = b"\0" * 20  # the data and the end chunk damaged
    (tmp_path / "pal.png").write_bytes(bytes(data))
    with pytest.raises(ImageError) as err:
        load_label_image(tmp_path / "pal.png", what="strokes")
    assert str(err.value) == (f"cannot read strokes '{tmp_path / 'pal.png'}': not a supported "
                              "image file or corrupt")


def test_float_strokes_are_refused_not_truncated(tmp_path):
    cv2.imwrite(str(tmp_path / "f.tif"), np.full((4, 5), 1.5, np.float32))
    with pytest.raises(ImageError) as err:
        load_label_image(tmp_path / "f.tif", what="strokes")
    assert str(err.value) == (f"strokes '{tmp_path / 'f.tif'}' holds non-integer values (such "
                              "as 1.5): a label image holds whole numbers, 0 = none, k = label k")
    nan = np.ones((4, 5), np.float32)
    nan[2, 3] = np.nan
    cv2.imwrite(str(tmp_path / "n.tif"), nan)
    with pytest.raises(ImageError, match=r"non-integer values \(such as nan\)"):
        load_label_image(tmp_path / "n.tif")


def test_whole_float_strokes_are_their_labels(tmp_path):
    a = np.array([[0, 1, 2], [2, 1, 0]], np.float32)
    cv2.imwrite(str(tmp_path / "f.tif"), a)
    got = load_label_image(tmp_path / "f.tif", (2, 3), 2)
    assert got.dtype == np.int32 and got.tolist() == [[0, 1, 2], [2, 1, 0]]


def test_negative_labels_are_refused_naming_the_lowest(tmp_path):
    cv2.imwrite(str(tmp_path / "n.tif"), np.array([[0, -1, -3], [1, 2, 0]], np.int16))
    with pytest.raises(ImageError) as err:
        load_label_image(tmp_path / "n.tif", what="hard constraints")
    assert str(err.value) == (f"hard constraints '{tmp_path / 'n.tif'}' holds negative values "
                              "(down to -3): a label image holds whole numbers, 0 = none, "
                              "k = label k")


def test_a_colour_label_image_is_refused_unless_its_channels_agree(tmp_path):
    same = np.zeros((4, 5, 3), np.uint8)
    same[1, 2] = 2
    pil_save(tmp_path / "same.png", same)
    assert load_label_image(tmp_path / "same.png").tolist() == same[:, :, 0].tolist()
    differ = same.copy()
    differ[0, 0] = (1, 0, 0)
    pil_save(tmp_path / "differ.png", differ)
    with pytest.raises(ImageError) as err:
        load_label_image(tmp_path / "differ.png", what="strokes")
    assert str(err.value) == (f"strokes '{tmp_path / 'differ.png'}' must be a single-channel "
                              "label image (or a palette PNG whose index is the label)")


def test_a_label_image_of_another_size_or_with_a_label_above_k_is_refused(tmp_path):
    a = np.zeros((4, 5), np.uint8)
    a[0, 0] = 3
    save_labels(tmp_path / "s.png", a)
    with pytest.raises(ImageError) as err:
        load_label_image(tmp_path / "s.png", (5, 4), what="strokes")
    assert str(err.value) == f"strokes '{tmp_path / 's.png'}' is 5×4 but the image is 4×5"
    with pytest.raises(ImageError) as err:
        load_label_image(tmp_path / "s.png", (4, 5), 2)
    assert str(err.value) == f"label image '{tmp_path / 's.png'}' has label 3 but K = 2"
    assert load_label_image(tmp_path / "s.png", [4, 5], 3)[0, 0] == 3


def test_16_bit_labels_keep_their_values(tmp_path):
    a = np.array([[0, 300], [1, 2]], np.uint16)
    cv2.imwrite(str(tmp_path / "l.png"), a)
    assert load_label_image(tmp_path / "l.png").tolist() == [[0, 300], [1, 2]]


# ------------------------------------------------------------------ writing
def test_labels_outside_0_to_255_are_refused_and_nothing_written(tmp_path):
    for bad in ([[0, 256]], [[-1, 0]]):
        with pytest.raises(ValueError, match="labels must lie in 0..255"):
            save_labels(tmp_path / "l.png", np.array(bad))
        assert not (tmp_path / "l.png").exists()
    save_labels(tmp_path / "l.png", np.array([[0, 255], [255, 0]]))
    assert cv2.imread(str(tmp_path / "l.png"), cv2.IMREAD_UNCHANGED).tolist() == \
        [[0, 255], [255, 0]]


def test_an_image_without_a_suffix_is_written_as_png(tmp_path):
    rgb = np.random.default_rng(8).integers(0, 255, (4, 5, 3), np.uint8)
    save_image(tmp_path / "shot", rgb)
    assert (tmp_path / "shot").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert np.array_equal(np.asarray(Image.open(tmp_path / "shot")), rgb)
    save_image(tmp_path / "shot.PNG", rgb)
    assert (tmp_path / "shot.PNG").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_failure_after_a_new_file_was_placed_removes_it(tmp_path, monkeypatch):
    """Write every file or none: the first target placed, the second's rename failing, the new
    first file is taken away and an old one would stay."""
    (tmp_path / "old.txt").write_bytes(b"old")
    real = os.replace
    done = []

    def replace(src, dst):
        if done:
            raise PermissionError(13, "Permission denied")
        done.append(dst)
        return real(src, dst)
    monkeypatch.setattr(io.os, "replace", replace)
    with pytest.raises(PermissionError) as err:
        write_files_atomic([(tmp_path / "new.txt", b"n"), (tmp_path / "b.txt", b"b")])
    assert err.value.filename == str(tmp_path / "b.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.txt"]
    done.clear()
    with pytest.raises(PermissionError):
        write_files_atomic([(tmp_path / "old.txt", b"n"), (tmp_path / "b.txt", b"b")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.txt"]


def test_an_error_without_an_errno_names_the_target(tmp_path, monkeypatch):
    def fail(*_a, **_k):
        raise OSError("disk said no")
    monkeypatch.setattr(io.os, "fsync", fail)
    with pytest.raises(OSError) as err:
        write_files_atomic([(tmp_path / "a.txt", b"a")])
    assert str(err.value) == f"cannot write '{tmp_path / 'a.txt'}': disk said no"
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_while_writing_leaves_nothing_and_is_not_renamed(tmp_path, monkeypatch):
    def stop(*_a, **_k):
        raise KeyboardInterrupt
    monkeypatch.setattr(io.os, "fsync", stop)
    with pytest.raises(KeyboardInterrupt):
        write_files_atomic([(tmp_path / "a.txt", b"a")])
    assert list(tmp_path.iterdir()) == []


def test_a_file_in_the_working_folder_is_written_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_files_atomic([("plain.txt", b"x")])
    assert (tmp_path / "plain.txt").read_bytes() == b"x"


# ------------------------------------------------------------------ colours shown
def test_the_palette_for_more_than_8_labels_is_distinct_hues(tmp_path):
    small = label_palette(8)
    assert small.shape == (8, 3) and len({tuple(c) for c in small}) == 8
    assert np.array_equal(label_palette(3), small[:3])
    big = label_palette(12)
    assert big.shape == (12, 3) and big.dtype == np.uint8
    assert len({tuple(c) for c in big}) == 12
    hsv = cv2.cvtColor(big[None], cv2.COLOR_RGB2HSV)[0].astype(int)
    assert np.all(np.abs(hsv[:, 1] - 200) <= 2) and np.all(np.abs(hsv[:, 2] - 230) <= 1)
    hues = hsv[:, 0]
    assert np.all(np.abs(hues - np.linspace(0, 179, 12, endpoint=False).astype(int)) <= 1)


def test_a_copy_of_the_palette_is_the_callers(tmp_path):
    p = label_palette(2)
    p[:] = 0
    assert label_palette(2).any()


def test_grey_with_alpha_shows_as_grey(tmp_path):
    ga = np.zeros((2, 3, 2), np.uint8)
    ga[..., 0] = [[0, 100, 200], [50, 150, 250]]
    ga[..., 1] = 7
    shown = to_rgb8(ga)
    assert shown.shape == (2, 3, 3)
    assert np.array_equal(shown, np.repeat(ga[..., :1], 3, axis=2))
    one = ga[..., :1]
    assert np.array_equal(to_rgb8(one), shown)


def test_a_float_photo_shows_rounded_and_clipped():
    f = np.array([[-0.5, 0.0, 0.4 / 255], [0.5, 1.0, 2.0]])
    assert to_rgb8(f)[..., 0].tolist() == [[0, 0, 0], [128, 255, 255]]
    assert to_rgb8(f.astype(np.float32))[..., 0].tolist() == [[0, 0, 0], [128, 255, 255]]


def test_an_overlay_without_labels_is_the_photo_and_alpha_blends():
    rgb = np.random.default_rng(9).integers(0, 255, (3, 4, 3), np.uint8)
    assert np.array_equal(overlay(rgb, np.zeros((3, 4), int)), rgb)
    assert np.array_equal(overlay(rgb, np.zeros((3, 4), int), alpha=0.9), rgb)
    labels = np.zeros((3, 4), int)
    labels[0, 0], labels[2, 3] = 1, 2
    pal = label_palette(2).astype(float)
    for alpha in (0.0, 0.25, 1.0):
        out = overlay(rgb, labels, alpha)
        assert out[0, 0].tolist() == np.round((1 - alpha) * rgb[0, 0] + alpha * pal[0]).tolist()
        assert out[2, 3].tolist() == np.round((1 - alpha) * rgb[2, 3] + alpha * pal[1]).tolist()
        assert np.array_equal(out[1], rgb[1])


def test_an_overlay_file_is_the_overlay_in_rgb(tmp_path):
    rgb = np.random.default_rng(10).integers(0, 255, (3, 4, 3), np.uint8)
    labels = np.zeros((3, 4), int)
    labels[1, 1] = 1
    save_overlay(tmp_path / "o.png", rgb, labels, alpha=0.3)
    assert np.array_equal(np.asarray(Image.open(tmp_path / "o.png")), overlay(rgb, labels, 0.3))


def test_a_new_output_gets_the_mode_a_plainly_created_file_gets(tmp_path):
    """An output written atomically (through a temporary file) ends with the permissions a
    file opened for writing would have had: 0o666 less the umask, never an executable bit."""
    plain = tmp_path / "plain.bin"
    plain.write_bytes(b"x")
    labels = np.ones((4, 5), np.uint8)
    save_labels(tmp_path / "labels.png", labels)
    mode = (tmp_path / "labels.png").stat().st_mode & 0o777
    assert mode == plain.stat().st_mode & 0o777
    assert not mode & 0o111


def test_only_a_png_header_gives_a_colour_type():
    """The palette check reads a PNG's IHDR colour type; any other file, however long, has
    none (a TIFF or JPEG whose 26th byte happens to be 3 is not a palette image)."""
    png = Image.new("P", (3, 2))
    buf = bytesio.BytesIO()
    png.save(buf, format="PNG")
    assert io._png_colour_type(buf.getvalue()) == 3
    other = bytearray(b"II*\x00" + bytes(40))
    other[25] = 3
    assert io._png_colour_type(bytes(other)) is None
    assert io._png_colour_type(b"\x89PNG\r\n\x1a\n") is None  # (too short for its IHDR)


def test_a_cutout_of_no_label_and_labels_beyond_a_byte_are_refused_in_words():
    photo = np.zeros((4, 5, 3), np.uint8)
    labels = np.ones((4, 5), np.int32)
    with pytest.raises(ValueError, match="^a cut-out needs at least one label to keep$"):
        io.cutout(photo, labels, [])
    with pytest.raises(ValueError, match=r"^labels must lie in 0\.\.255 to be saved as an "
                                         r"8-bit PNG$"):
        io.palette_png(np.full((2, 2), 300, np.int32))
