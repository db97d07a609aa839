"""Bad inputs through the real ``segapp`` console script: each exits with its status and one
line on stderr, and nothing the user owns is replaced or left half-written.

The table in docs/testing.md ("Bad inputs") lists every case with the test that checks it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest

from segapp.core.io import save_labels

#: The console script the package installs (beside the interpreter), as a user runs it.
SEGAPP = shutil.which("segapp", path=str(Path(sys.executable).parent)) or shutil.which("segapp")


def segapp(*args, cwd: Path, env: dict | None = None, timeout: float = 300):
    """Run the console script; returns (status, stdout, stderr lines)."""
    assert SEGAPP, "the segapp console script is not installed beside the interpreter"
    e = {**os.environ, "QT_QPA_PLATFORM": "offscreen", **(env or {})}
    p = subprocess.run([SEGAPP, *map(str, args)], cwd=cwd, env=e, capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr.strip().splitlines()


def digest(folder: Path) -> dict[str, str]:
    """Every file in ``folder`` and its content's hash (links resolved)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir()) if p.is_file()}


def one_error(status, out, err, expected_status=2, match=""):
    assert status == expected_status, (status, err)
    assert len(err) == 1, err
    assert err[0].startswith("segapp: error: "), err
    assert match in err[0], err[0]


@pytest.fixture
def photo(tmp_path):
    """A small photo and K = 2 strokes in a folder of their own."""
    rng = np.random.default_rng(0)
    img = np.full((40, 50, 3), 40, np.uint8)
    img[10:30, 15:35] = 200
    img = np.clip(img + rng.normal(0, 8, img.shape), 0, 255).astype(np.uint8)
    cv2.imwrite(str(tmp_path / "p.png"), img)
    strokes = np.zeros((40, 50), np.uint8)
    strokes[2, 2:48] = 1
    strokes[20, 20:30] = 2
    save_labels(tmp_path / "s.png", strokes)
    return tmp_path


# ------------------------------------------------------------------ outputs that are inputs
@pytest.mark.slow
@pytest.mark.parametrize("args, match", [
    (["p.png", "--strokes", "s.png", "--out", "p.png"], "--out 'p.png': it is the image file"),
    (["p.png", "--strokes", "s.png", "--out", "l.png", "--report", "p.png"],
     "--report 'p.png': it is the image file"),
    (["p.png", "--strokes", "s.png", "--out", "l.png", "--overlay", "p.png"],
     "--overlay 'p.png': it is the image file"),
    (["p.png", "--strokes", "s.png", "--out", "s.png"], "--out 's.png': it is the --strokes"),
    (["p.png", "--strokes", "s.png", "--hard", "s.png", "--out", "./sub/../s.png"],
     "it is the --strokes"),
])
def test_an_output_that_is_an_input_is_refused(photo, args, match):
    (photo / "sub").mkdir()
    before = digest(photo)
    one_error(*segapp("segment", *args, cwd=photo), match=match)
    assert digest(photo) == before


@pytest.mark.slow
@pytest.mark.parametrize("how", ["symlink", "hardlink"])
def test_the_same_file_reached_another_way_is_the_input(photo, how):
    """The photo reached through a symbolic or a hard link is still the photo."""
    (os.symlink if how == "symlink" else os.link)(photo / "p.png", photo / "alias.png")
    before = digest(photo)
    one_error(*segapp("segment", "alias.png", "--strokes", "s.png", "--out", "p.png",
                      cwd=photo), match="it is the image file 'alias.png'")
    one_error(*segapp("segment", "p.png", "--strokes", "s.png", "--out", "alias.png",
                      cwd=photo), match="it is the image file 'p.png'")
    assert digest(photo) == before


def test_bench_json_cannot_be_its_image(photo):
    before = digest(photo)
    one_error(*segapp("bench", "--image", "p.png", "--strokes", "s.png", "--json", "p.png",
                      cwd=photo), match="--json 'p.png': it is the --image file")
    assert digest(photo) == before


@pytest.mark.slow
def test_an_output_that_is_not_a_regular_file_is_not_replaced(photo):
    """A pipe (or a device such as /dev/full) stays what it was."""
    fifo = photo / "pipe"
    os.mkfifo(fifo)
    one_error(*segapp("segment", "p.png", "--strokes", "s.png", "--out", "l.png", "--report",
                      fifo, cwd=photo), match="is not a regular file")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert not (photo / "l.png").exists()
    one_error(*segapp("segment", "p.png", "--strokes", "s.png", "--out", "l.png", "--report",
                      "/dev/null", cwd=photo), match="is not a regular file")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


# ------------------------------------------------------------------ images that cannot be read
def huge_png(path: Path, w: int = 40000, h: int = 40000) -> None:
    """A PNG whose header claims ``w`` × ``h`` pixels (more than 2**30), with almost no data."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (len(data).to_bytes(4, "big") + kind + data
                + (zlib.crc32(kind + data) & 0xFFFFFFFF).to_bytes(4, "big"))
    ihdr = w.to_bytes(4, "big") + h.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
                     + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


def corrupt_png(path: Path) -> None:
    """A PNG whose compressed data is damaged (libpng complains on stderr as it reads it)."""
    ok, buf = cv2.imencode(".png", np.random.default_rng(0).integers(0, 255, (50, 50), np.uint8))
    data = bytearray(buf.tobytes())
    data[60] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.slow
@pytest.mark.parametrize("which", ["image", "strokes", "hard", "bench"])
def test_an_image_claiming_more_than_2_to_the_30_pixels_is_one_sentence(photo, which):
    huge_png(photo / "huge.png")
    args = {"image": ["segment", "huge.png", "--rect", "1,1,5,5", "--out", "l.png"],
            "strokes": ["segment", "p.png", "--strokes", "huge.png", "--out", "l.png"],
            "hard": ["segment", "p.png", "--strokes", "s.png", "--hard", "huge.png",
                     "--out", "l.png"],
            "bench": ["bench", "--image", "huge.png", "--strokes", "s.png", "--json", "b.json"],
            }[which]
    one_error(*segapp(*args, cwd=photo), match="'huge.png': it claims more than the 1073741824")
    assert not (photo / "l.png").exists() and not (photo / "b.json").exists()


@pytest.mark.slow
def test_a_corrupt_png_is_one_line_without_the_librarys_own(photo):
    corrupt_png(photo / "bad.png")
    status, out, err = segapp("segment", "bad.png", "--rect", "1,1,5,5", "--out", "l.png",
                              cwd=photo)
    one_error(status, out, err, match="'bad.png': not a supported image file or corrupt")
    assert not any("libpng" in line for line in err)


@pytest.mark.slow
def test_float_strokes_are_refused_not_truncated(photo):
    cv2.imwrite(str(photo / "f.tif"), np.full((40, 50), 1.5, np.float32))
    one_error(*segapp("segment", "p.png", "--strokes", "f.tif", "--out", "l.png", cwd=photo),
              match="non-integer values (such as 1.5)")
    assert not (photo / "l.png").exists()


# ------------------------------------------------------------------ bench's arguments
@pytest.mark.parametrize("args, match", [
    (["--sizes", "inf"], "sizes must be finite"),
    (["--sizes", "1e3,nan"], "sizes must be finite"),
    (["--sizes", "1e12"], "1e+12-pixel image"),
    (["--strokes", "s.png"], "--strokes needs --image"),
    (["--methods", ""], "--methods is empty"),
    (["--methods", ","], "--methods is empty"),
])
def test_bench_refuses_bad_arguments_before_compiling(photo, args, match):
    """One line, before the kernels compile (no 'compiling' line), and no JSON."""
    one_error(*segapp("bench", *args, "--json", "b.json", cwd=photo), match=match)
    assert not (photo / "b.json").exists()


# ------------------------------------------------------------------ apart pairs no labelling meets
@pytest.mark.slow
def test_apart_pairs_that_no_labelling_meets_are_refused_before_solving(photo):
    strokes = np.zeros((40, 50), np.uint8)
    strokes[2, 2:48], strokes[20, 20:30], strokes[37, 5:45] = 1, 2, 3
    save_labels(photo / "s3.png", strokes)
    before = digest(photo)
    status, out, err = segapp("segment", "p.png", "--strokes", "s3.png", "--k", 3,
                              "--apart", "1,2", "--apart", "1,3", "--apart", "2,3",
                              "--out", "l.png", "--report", "r.json", cwd=photo)
    one_error(status, out, err, match="only one label could appear")
    status, out, err = segapp("segment", "p.png", "--strokes", "s3.png", "--k", 3,
                              "--apart", "1,2", "--apart", "1,3", "--out", "l.png", cwd=photo)
    one_error(status, out, err, match="labels 1 and 2 both have strokes")
    assert digest(photo) == before


# ------------------------------------------------------------------ one line on stderr
@pytest.mark.slow
def test_lam_0_runs_without_a_numpy_warning(photo):
    status, out, err = segapp("segment", "p.png", "--strokes", "s.png", "--lam", 0, "--out",
                              "l.png", "-q", cwd=photo)
    assert status == 0 and err == [], err
    labels = cv2.imread(str(photo / "l.png"), cv2.IMREAD_UNCHANGED)
    assert labels.shape == (40, 50) and set(np.unique(labels)) <= {1, 2}


def test_the_demo_screenshot_path_is_checked_before_the_demo_runs(photo):
    ro = photo / "ro"
    ro.mkdir()
    for path, match in ((ro / "x.png", "ro/x.png"), (photo / "x.gif", "name a .png")):
        if path.parent == ro:
            os.chmod(ro, 0o555)
            if os.access(ro, os.W_OK):  # (root writes anywhere: a read-only place instead)
                path = Path("/proc/segapp-shot.png")
                match = "cannot create files in folder '/proc'"
        status, out, err = segapp("--demo-screenshot", path, cwd=photo, timeout=60)
        one_error(status, out, err, match=match)
        assert not path.exists()


def test_no_display_is_one_sentence_not_an_abort(photo, monkeypatch):
    """Without a display Qt aborts (SIGABRT) after five lines; segapp says so in one line and
    exits 2, whether or not the system has Qt's X11 libraries."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    p = subprocess.run([SEGAPP, "p.png"], cwd=photo, env=env, capture_output=True, text=True,
                       timeout=60)
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(err) == 1 and err[0].startswith("segapp: error: "), err
    assert "no display found" in err[0] or "needs system libraries" in err[0]


def test_the_display_check_names_the_cause():
    from segapp.ui.qtcheck import display_problem
    base = {"PATH": "/usr/bin"}
    assert "DISPLAY is not set" in display_problem(env=base, connect=lambda d: True)
    assert "offscreen" in display_problem(env=base, connect=lambda d: True)
    assert "DISPLAY=:7" in display_problem(env={**base, "DISPLAY": ":7"},
                                           connect=lambda d: False)
    assert display_problem(env={**base, "DISPLAY": ":7"}, connect=lambda d: d == ":7") is None
    assert display_problem(env={**base, "QT_QPA_PLATFORM": "offscreen"},
                           connect=lambda d: False) is None


# ------------------------------------------------------------------ photos as people have them
@pytest.mark.slow
def test_exif_orientation_is_applied_and_upright_strokes_fit(photo):
    """A JPEG stored sideways with Orientation = 6 loads upright, as viewers show it, so
    strokes drawn on the upright photo (50 wide, 40 high) fit it."""
    from PIL import Image, ImageOps

    upright = cv2.cvtColor(cv2.imread(str(photo / "p.png")), cv2.COLOR_BGR2RGB)
    stored = np.ascontiguousarray(np.rot90(upright, 1))  # what the camera wrote: 40 wide, 50 high
    im = Image.fromarray(stored)
    exif = im.getexif()
    exif[0x0112] = 6  # "turn a quarter clockwise to view"
    im.save(photo / "cam.jpg", quality=95, exif=exif.tobytes())
    from segapp.core.io import load_image
    loaded = load_image(photo / "cam.jpg")
    expected = np.asarray(ImageOps.exif_transpose(Image.open(photo / "cam.jpg")).convert("RGB"))
    assert loaded.shape == (40, 50, 3) and np.array_equal(loaded, expected)
    assert np.abs(loaded.astype(int) - upright).mean() < 6  # (JPEG's loss only)
    status, out, err = segapp("segment", "cam.jpg", "--strokes", "s.png", "--out", "l.png",
                              "-q", cwd=photo)
    assert status == 0, err
    assert cv2.imread(str(photo / "l.png"), cv2.IMREAD_UNCHANGED).shape == (40, 50)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_every_exif_orientation_matches_pillows_reading(tmp_path, orientation):
    from PIL import Image, ImageOps

    from segapp.core.io import load_image
    a = np.random.default_rng(orientation).integers(0, 255, (5, 7, 3), np.uint8)
    im = Image.fromarray(a)
    exif = im.getexif()
    exif[0x0112] = orientation
    im.save(tmp_path / "o.png", exif=exif.tobytes())
    expected = np.asarray(ImageOps.exif_transpose(Image.open(tmp_path / "o.png")))
    assert np.array_equal(load_image(tmp_path / "o.png"), expected)


@pytest.mark.slow
def test_palette_png_strokes_give_their_index(photo):
    """A palette-indexed PNG (as image editors save label images) is read by its index: the
    same labels as the grey PNG of the same strokes, though its colours are red and blue."""
    from PIL import Image

    grey = cv2.imread(str(photo / "s.png"), cv2.IMREAD_UNCHANGED)
    im = Image.fromarray(grey, "P")
    im.putpalette([0, 0, 0, 255, 0, 0, 0, 0, 255] + [0] * (768 - 9))
    im.save(photo / "pal.png")
    assert Image.open(photo / "pal.png").mode == "P"  # the premise
    from segapp.core.io import load_label_image
    assert np.array_equal(load_label_image(photo / "pal.png"), grey)
    for strokes, out in (("s.png", "a.png"), ("pal.png", "b.png")):
        status, _, err = segapp("segment", "p.png", "--strokes", strokes, "--out", out, "-q",
                                cwd=photo)
        assert status == 0, err
    assert (photo / "a.png").read_bytes() == (photo / "b.png").read_bytes()
