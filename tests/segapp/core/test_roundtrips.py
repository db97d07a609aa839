"""Round trips a user relies on, as properties over random inputs (Hypothesis):

- a document saved as a session and reopened is the same document: image, K, strokes, hard
  pixels, rectangle (anywhere, the right and bottom edges and the whole image included) and
  every solver setting (λ = 0, β unset, seeds, ADMM fields, area bounds, apart pairs);
- a photo written by another program (PNG, TIFF; 8 or 16 bits; grey, RGB, RGBA; float TIFF)
  and read by segapp is the photo: the pixels as stored, RGB not BGR, alpha dropped, and its
  8-bit view (what the overlay and the canvas show) is the independent conversion
  ``round(v / 257)`` of 16 bits, so 65535 stays white and 0 black;
- a label image saved and read again is the same labels, for every value 0..255.

The photos are written by the test's own PNG encoder (``png_bytes``) or by Pillow, not by the
OpenCV calls segapp reads them with, so a channel order both sides got wrong cannot pass.
"""
from __future__ import annotations

import base64
import io as bytes_io
import json
import os
import struct
import tempfile
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from segapp.core.colouring import display_rgb
from segapp.core.io import load_image, load_label_image, overlay, save_labels, to_rgb8
from segapp.core.session import apply_session, check_session_image, load_session, save_session
from segapp.model.document import K_MAX, K_MIN, Document, SolverSettings
from solver.names import BACKENDS, COLOUR_MODELS, METHODS

#: The label colours a user sees, label 1 first, as RGB (the palette of segapp's overlay and
#: canvas). Written out here so that a changed or channel-swapped palette is caught.
PALETTE_RGB = np.array([
    (230, 57, 70), (69, 123, 157), (42, 157, 143), (244, 162, 97),
    (131, 56, 236), (255, 209, 102), (6, 214, 160), (239, 71, 111),
], dtype=np.int64)

PROPERTY = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------------------- helpers
def png_bytes(arr: np.ndarray) -> bytes:
    """A PNG file of ``arr`` (uint8 or uint16; (H, W) grey, (H, W, 2) grey + alpha, (H, W, 3)
    RGB or (H, W, 4) RGBA, channels in that order), encoded here from the PNG specification:
    unfiltered rows of big-endian samples, one zlib stream."""
    arr = np.asarray(arr)
    h, w = arr.shape[:2]
    c = 1 if arr.ndim == 2 else arr.shape[2]
    depth = {np.dtype(np.uint8): 8, np.dtype(np.uint16): 16}[arr.dtype]
    rows = arr.astype(">u2" if depth == 16 else "u1").reshape(h, w * c)
    raw = b"".join(b"\x00" + row.tobytes() for row in rows)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    ihdr = struct.pack(">IIBBBBB", w, h, depth, {1: 0, 2: 4, 3: 2, 4: 6}[c], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


def write_photo(path: Path, arr: np.ndarray) -> None:
    """Write ``arr`` (channels in RGB(A) order) as ``path``'s format: PNG by ``png_bytes``;
    TIFF by Pillow where it can (8 bits, 16-bit grey), otherwise (16-bit colour, float) by
    OpenCV, whose writer takes BGR(A) order."""
    arr = np.asarray(arr)
    if path.suffix == ".png":
        path.write_bytes(png_bytes(arr))
    elif arr.dtype == np.uint8 or (arr.dtype == np.uint16 and arr.ndim == 2):
        im = Image.fromarray(arr)
        want = "I;16" if arr.dtype == np.uint16 else (
            "L" if arr.ndim == 2 else {3: "RGB", 4: "RGBA"}[arr.shape[2]])
        assert im.mode == want, (im.mode, want)
        im.save(path)
    else:
        bgr = arr if arr.ndim == 2 else arr[:, :, [2, 1, 0, 3][:arr.shape[2]]]
        assert cv2.imwrite(str(path), np.ascontiguousarray(bgr))


def rgb8(photo: np.ndarray) -> np.ndarray:
    """The 8-bit RGB view of a photo, by the rule a user expects: 16 bits scaled by 255/65535
    and rounded (``round(v / 257)``, in integers), floats in [0, 1] times 255 rounded (clipped
    to [0, 1] first), grey repeated in three channels, alpha dropped."""
    a = np.asarray(photo)
    if a.ndim == 2:
        a = a[:, :, None]
    if a.shape[2] in (2, 4):  # (grey or colour with alpha: the alpha goes)
        a = a[:, :, :-1]
    if a.dtype == np.uint16:
        v = (a.astype(np.int64) * 2 + 257) // 514  # round(v / 257), no ties exist
    elif a.dtype == np.uint8:
        v = a.astype(np.int64)
    else:
        v = np.rint(np.clip(a.astype(np.float64), 0.0, 1.0) * 255.0).astype(np.int64)
    if v.shape[2] == 1:
        v = np.repeat(v, 3, axis=2)
    return v


def random_photo(rng: np.random.Generator, h: int, w: int, dtype, channels: int) -> np.ndarray:
    """A random photo whose first pixels are black (0), white (the largest value), 1 and one
    below white in every channel, and for 16 bits also 25828 and 25829 (100 * 257 + 128 and
    + 129, on either side of a rounding step between 8-bit levels 100 and 101)."""
    shape = (h, w) if channels == 1 else (h, w, channels)
    if dtype == np.float32:
        return rng.uniform(-0.2, 1.2, shape).astype(np.float32)
    hi = np.iinfo(dtype).max
    img = rng.integers(0, hi, shape, dtype=dtype, endpoint=True)
    pixels = img.reshape(h * w, -1)  # (a view: one row a pixel, every channel)
    special = [0, hi, 1, hi - 1] + ([257 * 100 + 128, 257 * 100 + 129] if hi == 65535 else [])
    pixels[:len(special)] = np.array(special[:h * w], dtype)[:, None]
    return img


# ------------------------------------------------------------------------------- sessions
AREA_TEXT = st.one_of(
    st.tuples(st.integers(0, 1000), st.integers(0, 1000)).map(
        lambda t: (f"{min(t) / 1000:.3f}", f"{max(t) / 1000:.3f}")),
    st.tuples(st.integers(0, 5000), st.integers(0, 5000)).map(
        lambda t: (f"{min(t)}px", f"{max(t)}px")))


@st.composite
def documents(draw):
    """A random document's content: size, K, layers, a rectangle (or none) and settings."""
    h, w = draw(st.integers(2, 40)), draw(st.integers(2, 40))
    k = draw(st.integers(K_MIN, K_MAX))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    layers = []
    for _ in range(2):
        density = draw(st.sampled_from([0.0, 0.05, 0.5, 1.0]))
        values = rng.integers(1, k + 1, (h, w))
        layers.append(np.where(rng.random((h, w)) < density, values, 0).astype(np.uint8))
    rect = draw(st.one_of(
        st.none(),
        st.just((0, 0, w, h)),  # the whole image
        # a drag anywhere, ending on, before or past the right / bottom edge (then clipped)
        st.tuples(st.integers(-3, w - 2), st.integers(-3, h - 2), st.integers(1, w + 6),
                  st.integers(1, h + 6)),
        # a drag ending exactly on the right and bottom edges
        st.tuples(st.integers(0, w - 2), st.integers(0, h - 2)).map(
            lambda t: (t[0], t[1], w - t[0], h - t[1]))))
    lam = draw(st.one_of(st.none(), st.just(0.0), st.floats(0.0, 1e4)))
    beta = draw(st.one_of(st.none(), st.just(0.0), st.floats(0.0, 1e4)))
    admm = draw(st.fixed_dictionaries({}, optional={
        "max_iter": st.integers(1, 10**6), "rho0": st.floats(1e-3, 10.0),
        "rho_growth": st.floats(1.0, 2.0), "gamma": st.floats(0.05, 1.95)}))
    labels = st.integers(1, k)
    area = draw(st.lists(st.tuples(labels, AREA_TEXT).map(
        lambda t: f"{t[0]}:{t[1][0]}-{t[1][1]}"), max_size=3))
    apart = draw(st.lists(st.tuples(labels, labels).filter(lambda t: t[0] != t[1]).map(
        lambda t: f"{t[0]},{t[1]}"), max_size=3))
    s = SolverSettings(lam=lam, beta=beta, colour_model=draw(st.sampled_from(COLOUR_MODELS)),
                       solver=draw(st.sampled_from(METHODS)),
                       backend=draw(st.sampled_from(BACKENDS)),
                       seed=draw(st.integers(0, 2**31 - 1)), admm=admm, area=area, apart=apart)
    photo = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    return dict(h=h, w=w, k=k, strokes=layers[0], hard=layers[1], rect=rect, settings=s,
                photo=photo)


def make_document(folder: Path, case: dict) -> Document:
    """A document made as the app makes it: the photo opened from a file, K set, the layers
    loaded, the rectangle dragged (clipped to the image), the settings set."""
    photo_path = folder / "photo.png"
    photo_path.write_bytes(png_bytes(case["photo"]))
    doc = Document()
    doc.set_image(load_image(photo_path), str(photo_path))
    doc.set_k(case["k"])
    doc.set_layers(strokes=case["strokes"], hard=case["hard"])
    if case["rect"] is not None:
        doc.set_rect(case["rect"])
    doc.set_settings(case["settings"])
    return doc


def reopen(session: Path) -> Document:
    """Reopen a session as the app does: load, read its image, check, apply to a new document."""
    data = load_session(session)
    image = load_image(data.image_path)
    check_session_image(data, image)
    doc = Document()
    apply_session(doc, data, image)
    return doc


def assert_same_document(got: Document, want: Document) -> None:
    assert got.k == want.k
    assert got.rect == want.rect
    np.testing.assert_array_equal(got.image, want.image)
    assert got.strokes.dtype == np.uint8 and got.hard.dtype == np.uint8
    np.testing.assert_array_equal(got.strokes, want.strokes)
    np.testing.assert_array_equal(got.hard, want.hard)
    assert got.settings == want.settings
    assert Path(got.image_path).resolve() == Path(want.image_path).resolve()
    assert not got.dirty and not got.undo_stack.can_undo()  # (reopened: nothing unsaved)


@pytest.mark.slow
@PROPERTY
@given(case=documents())
def test_a_saved_session_reopens_as_the_same_document(case):
    """A session reopened after saving gives back the same photo, K, strokes, hard pixels,
    rectangle and settings; a rectangle on the image's edge must not make it unopenable."""
    with tempfile.TemporaryDirectory() as tmp:
        doc = make_document(Path(tmp), case)
        session = Path(tmp) / "work.json"
        save_session(session, doc)
        assert_same_document(reopen(session), doc)


@pytest.mark.parametrize("drag", [
    (0, 0, 30, 20),      # the whole image
    (10, 5, 20, 8),      # to the right edge
    (3, 12, 10, 8),      # to the bottom edge
    (28, 18, 2, 2),      # the smallest rectangle, in the bottom-right corner
    (12, 9, 40, 40),     # dragged past the corner: clipped to it
    (-5, -5, 12, 10),    # dragged past the top-left corner
])
def test_a_session_with_its_rectangle_on_the_edge_reopens(tmp_path, drag):
    """A rectangle dragged to (or past) the image's edge is saved and reopens unchanged: the
    session is not refused as "not inside the image"."""
    rng = np.random.default_rng(0)
    case = dict(h=20, w=30, k=2, strokes=np.zeros((20, 30), np.uint8),
                hard=np.zeros((20, 30), np.uint8), rect=drag, settings=SolverSettings(),
                photo=rng.integers(0, 256, (20, 30, 3), dtype=np.uint8))
    doc = make_document(tmp_path, case)
    x, y, rw, rh = doc.rect
    assert x >= 0 and y >= 0 and x + rw <= 30 and y + rh <= 20  # the premise: inside...
    assert x + rw == 30 or y + rh == 20 or (x, y) == (0, 0)  # ... and on an edge
    save_session(tmp_path / "s.json", doc)
    assert_same_document(reopen(tmp_path / "s.json"), doc)


def test_a_session_moved_with_its_photo_finds_the_photo_beside_it(tmp_path):
    """A folder with a photo and its session moved elsewhere (the stored absolute path now
    gone) still reopens, with the photo found by its path relative to the session."""
    rng = np.random.default_rng(1)
    case = dict(h=12, w=17, k=3, strokes=rng.integers(0, 4, (12, 17)).astype(np.uint8),
                hard=np.zeros((12, 17), np.uint8), rect=None,
                settings=SolverSettings(lam=0.0, seed=4),
                photo=rng.integers(0, 256, (12, 17, 3), dtype=np.uint8))
    first = tmp_path / "first"
    first.mkdir()
    doc = make_document(first, case)
    save_session(first / "s.json", doc)
    moved = tmp_path / "moved"
    os.rename(first, moved)
    assert not (first / "photo.png").exists()  # the premise: the stored absolute path is gone
    got = reopen(moved / "s.json")
    assert Path(got.image_path) == (moved / "photo.png").resolve()
    np.testing.assert_array_equal(got.image, case["photo"])
    np.testing.assert_array_equal(got.strokes, case["strokes"])
    assert got.settings == doc.settings and got.k == 3


# ------------------------------------------------------------------------------- photos
@st.composite
def photos(draw):
    h, w = draw(st.integers(2, 24)), draw(st.integers(2, 24))
    dtype = draw(st.sampled_from([np.uint8, np.uint16]))
    channels = draw(st.sampled_from([1, 3, 4]))
    suffix = draw(st.sampled_from([".png", ".tif"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return random_photo(rng, h, w, dtype, channels), suffix


def check_photo_file(photo: np.ndarray, suffix: str) -> None:
    """``photo`` written as a ``suffix`` file reads back as stored and shows as ``rgb8``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"photo{suffix}"
        write_photo(path, photo)
        got = load_image(path)
    stored = photo if photo.ndim == 2 else photo[:, :, :3]
    assert got.dtype == photo.dtype
    np.testing.assert_array_equal(got, stored)
    want = rgb8(photo)
    view = to_rgb8(got)
    assert view.dtype == np.uint8 and view.shape == (*photo.shape[:2], 3)
    np.testing.assert_array_equal(view, want)
    if photo.dtype == np.uint16:
        white = np.all(stored == 65535, axis=-1) if stored.ndim == 3 else stored == 65535
        assert white.any()  # the premise: the photo has white pixels (random_photo's first)
        assert np.all(view[white] == 255)
    # the overlay at opacity 0 is the photo itself; the canvas shows the same pixels
    labels = np.random.default_rng(photo.size).integers(0, 4, photo.shape[:2])
    np.testing.assert_array_equal(overlay(got, labels, alpha=0.0), want)
    np.testing.assert_array_equal(display_rgb(got), want)


@PROPERTY
@given(case=photos())
def test_a_photo_reads_back_as_stored_and_shows_as_its_8_bit_conversion(case):
    """A grey, RGB or RGBA photo of 8 or 16 bits, from a PNG or TIFF file, is read with its
    own pixels (RGB order, alpha dropped, bit depth kept), and its 8-bit view is round(v/257)
    of each 16-bit value: white stays white, black black, no level off by one."""
    check_photo_file(*case)


@pytest.mark.parametrize("suffix", [".png", ".tif"])
@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_every_kind_of_photo_file_reads_back_as_stored(dtype, channels, suffix):
    """Each kind of photo file, every time (a half-transparent RGBA TIFF as image editors write
    it included): its own colours, not darkened by its alpha, and the 8-bit view of them."""
    photo = random_photo(np.random.default_rng(11), 9, 13, dtype, channels)
    if channels == 4:
        assert (photo[..., 3] < np.iinfo(dtype).max // 2).mean() > 0.3  # the premise: see-through
    check_photo_file(photo, suffix)


@PROPERTY
@given(h=st.integers(2, 24), w=st.integers(2, 24), channels=st.sampled_from([1, 3]),
       seed=st.integers(0, 2**32 - 1))
def test_a_float_tiff_reads_back_and_shows_clipped_to_0_1(h, w, channels, seed):
    """A float TIFF (values a little below 0 and above 1 included) is read as stored, and shown
    (overlay at opacity 0, canvas) as round(255 v) clipped to 0..255."""
    photo = random_photo(np.random.default_rng(seed), h, w, np.float32, channels)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "photo.tif"
        write_photo(path, photo)
        got = load_image(path)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, photo)
    want = rgb8(photo)
    np.testing.assert_array_equal(to_rgb8(got), want)
    np.testing.assert_array_equal(overlay(got, np.zeros((h, w), int), alpha=0.0), want)
    np.testing.assert_array_equal(display_rgb(got), want)


@pytest.mark.parametrize("shape", [(5, 6), (5, 6, 1), (5, 6, 2), (5, 6, 3), (5, 6, 4)])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_every_photo_shape_the_solver_takes_shows_in_three_channels(shape, dtype):
    """Every photo layout the solver accepts (grey, grey with a channel axis, grey + alpha, RGB,
    RGBA) blends into a 3-channel overlay and shows on the canvas as its 8-bit conversion,
    instead of failing or showing alpha as a colour."""
    photo = random_photo(np.random.default_rng(7), shape[0], shape[1], dtype,
                         1 if len(shape) == 2 else shape[2])
    photo = photo.reshape(shape)
    want = rgb8(photo)
    assert want.shape == (5, 6, 3)
    np.testing.assert_array_equal(to_rgb8(photo), want)
    np.testing.assert_array_equal(display_rgb(photo), want)
    labels = np.arange(30).reshape(5, 6) % 3
    blend = overlay(photo, labels, alpha=1.0)
    np.testing.assert_array_equal(blend[labels == 0], want[labels == 0])
    np.testing.assert_array_equal(blend[labels > 0], PALETTE_RGB[labels[labels > 0] - 1])


@PROPERTY
@given(h=st.integers(2, 24), w=st.integers(2, 24), k=st.integers(1, 8),
       quarter=st.integers(0, 4), seed=st.integers(0, 2**32 - 1))
def test_the_overlay_blends_the_palette_colours_in_rgb(h, w, k, quarter, seed):
    """The overlay at opacity α (0, ¼, ½, ¾, 1: exact in binary) is round((1-α) photo + α colour)
    with each label's colour from the palette a user knows, in RGB order; unlabelled pixels
    keep the photo."""
    rng = np.random.default_rng(seed)
    photo = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    labels = rng.integers(0, k + 1, (h, w))
    labels.flat[0] = k  # (the largest label is present)
    a = quarter / 4
    colour = np.zeros((h, w, 3), np.int64)
    colour[labels > 0] = PALETTE_RGB[labels[labels > 0] - 1]
    blend = np.rint(((4 - quarter) * photo.astype(np.int64) + quarter * colour) / 4)
    want = np.where((labels > 0)[:, :, None], blend, photo)
    np.testing.assert_array_equal(overlay(photo, labels, alpha=a), want)


# ------------------------------------------------------------------------------- labels
@PROPERTY
@given(h=st.integers(1, 30), w=st.integers(1, 30), top=st.integers(0, 255),
       suffix=st.sampled_from([".png", ".tif"]), seed=st.integers(0, 2**32 - 1))
def test_saved_labels_read_back_unchanged_for_every_value(h, w, top, suffix, seed):
    """Labels 0..255 saved and read again are the same labels, and the file is one 8-bit
    channel another program reads with the same values."""
    labels = np.random.default_rng(seed).integers(0, top + 1, (h, w))
    labels.flat[0] = top
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"labels{suffix}"
        save_labels(path, labels)
        got = load_label_image(path, shape=(h, w))
        with Image.open(path) as im:
            assert im.mode == "L" and im.size == (w, h)
            seen = np.asarray(im)
    np.testing.assert_array_equal(got, labels)
    np.testing.assert_array_equal(seen, labels)


def test_session_layers_are_png_pixels_another_program_reads(tmp_path):
    """The strokes and hard layers inside a session are 8-bit grey PNGs whose pixels are the
    document's labels (a person can extract them; the format is not private)."""
    rng = np.random.default_rng(3)
    case = dict(h=9, w=14, k=8, strokes=rng.integers(0, 9, (9, 14)).astype(np.uint8),
                hard=rng.integers(0, 9, (9, 14)).astype(np.uint8), rect=None,
                settings=SolverSettings(), photo=rng.integers(0, 256, (9, 14, 3), np.uint8))
    doc = make_document(tmp_path, case)
    save_session(tmp_path / "s.json", doc)
    data = json.loads((tmp_path / "s.json").read_text())
    for key, want in (("strokes_png", case["strokes"]), ("hard_png", case["hard"])):
        with Image.open(bytes_io.BytesIO(base64.b64decode(data[key]))) as im:
            assert im.format == "PNG" and im.mode == "L"
            np.testing.assert_array_equal(np.asarray(im), want)
