"""Session files (``segapp.core.session``): the sentence a user reads for each field that
cannot be used, word for word, what a file of an older segapp (fields left out) opens as, and
what an opened session shows in the window."""
from __future__ import annotations

import base64
import copy
import json
import math

import cv2
import numpy as np
import pytest

from segapp.core.session import (
    SessionData,
    apply_session,
    check_session_image,
    load_session,
    parse_session,
    save_session,
)
from segapp.model import Document, SolverSettings
from tests.segapp.core.test_session_validation import png_b64

H, W = 36, 50  # not square: a message that swaps width and height shows it


@pytest.fixture
def good(tmp_path):
    """A saved session of K = 3 for a 50 x 36 photo beside it, as JSON."""
    img = np.random.default_rng(0).integers(0, 255, (H, W, 3), np.uint8)
    cv2.imwrite(str(tmp_path / "p.png"), img[:, :, ::-1])
    doc = Document()
    doc.set_image(img, str(tmp_path / "p.png"))
    doc.set_k(3)
    path = tmp_path / "s.json"
    save_session(path, doc)
    return json.loads(path.read_text())


def changed(good, key: str, value):
    d = copy.deepcopy(good)
    *parents, last = key.split(".")
    t = d
    for p in parents:
        t = t[p]
    t[last] = value
    return d


SHAPE = f"null or [x, y, width, height] inside the {W}x{H} image"
BAD = [  # (field changed, its new value, the message)
    ("settings", [1], "session field 'settings': expected an object, got [1]"),
    ("settings.lam", "3",
     "session field 'settings.lam': expected null or a non-negative number, got \"3\""),
    ("settings.beta", True,
     "session field 'settings.beta': expected null or a non-negative number, got true"),
    ("settings.lam", -1.0,
     "session field 'settings.lam': lambda must be finite and non-negative, got -1.0"),
    ("settings.beta", 1e400,
     "session field 'settings.beta': beta must be finite and non-negative, got inf"),
    ("settings.colour_model", "rainbow",
     "session field 'settings.colour_model': expected one of 'gmm', 'histogram', got "
     "\"rainbow\""),
    ("settings.solver", "magic",
     "session field 'settings.solver': expected one of 'admm', 'mincut', 'expansion', 'lp', "
     "'gco', got \"magic\""),
    ("settings.backend", 3,
     "session field 'settings.backend': expected one of 'cpu', 'gpu', 'auto', got 3"),
    ("settings.seed", -1,
     "session field 'settings.seed': expected an integer from 0 to 2147483647, got -1"),
    ("settings.seed", 2**31,
     "session field 'settings.seed': expected an integer from 0 to 2147483647, "
     "got 2147483648"),
    ("settings.admm", [1, 2],
     "session field 'settings.admm': expected an object of ADMM parameters, got [1, 2]"),
    ("settings.admm", {"max_iter": 0},
     "session field 'settings.admm.max_iter': ADMM parameter max_iter must be an integer "
     ">= 1, got 0"),
    ("settings.area", "1:0.1-0.2",
     "session field 'settings.area': expected a list of texts, got \"1:0.1-0.2\""),
    ("settings.area", [1], "session field 'settings.area': expected a list of texts, got [1]"),
    ("settings.apart", [[1, 2]],
     "session field 'settings.apart': expected a list of texts, got [[1, 2]]"),
    ("settings.area", ["1:0.1-0.2", "4:0.1-0.2"],
     "session field 'settings.area[1]': expected labels from 1 to K = 3, got \"4:0.1-0.2\""),
    ("settings.apart", ["1,4"],
     "session field 'settings.apart[0]': expected labels from 1 to K = 3, got \"1,4\""),
    ("rect", [1, 2], f"session field 'rect': expected {SHAPE}, got [1, 2]"),
    ("rect", [True, 0, 5, 5], f"session field 'rect': expected {SHAPE}, got [true, 0, 5, 5]"),
    ("rect", [-1, 0, 5, 5], f"session field 'rect': expected {SHAPE}, got [-1, 0, 5, 5]"),
    ("rect", [0, -1, 5, 5], f"session field 'rect': expected {SHAPE}, got [0, -1, 5, 5]"),
    ("rect", [0, 0, 0, 5], f"session field 'rect': expected {SHAPE}, got [0, 0, 0, 5]"),
    ("rect", [0, 0, 5, 0], f"session field 'rect': expected {SHAPE}, got [0, 0, 5, 0]"),
    ("rect", [46, 0, 5, 5], f"session field 'rect': expected {SHAPE}, got [46, 0, 5, 5]"),
    ("rect", [0, 32, 5, 5], f"session field 'rect': expected {SHAPE}, got [0, 32, 5, 5]"),
    ("strokes_png", 12,
     "session field 'strokes_png': expected null or a base64 PNG text, got 12"),
    ("strokes_png", "%%%", "session field 'strokes_png': expected a base64 PNG text, got \"%%%\""),
    ("strokes_png", "", "session field 'strokes_png': expected a single-channel 8-bit PNG, "
                        "got \"\""),
    ("strokes_png", base64.b64encode(b"hello there").decode(),
     "session field 'strokes_png': expected a single-channel 8-bit PNG, got "
     "\"aGVsbG8gdGhlcmU=\""),
    ("hard_png", png_b64(np.zeros((H, W, 3), np.uint8)),
     "session field 'hard_png': expected a single-channel 8-bit PNG, got "
     "\"iVBORw0KGgoAAAANSUhEUgAAADIAAAAkCAIA..."),
    ("strokes_png", png_b64(np.zeros((H, W), np.uint16)),
     "session field 'strokes_png': expected a single-channel 8-bit PNG, got "
     "\"iVBORw0KGgoAAAANSUhEUgAAADIAAAAkEAAA..."),
    ("strokes_png", png_b64(np.zeros((10, 20), np.uint8)),
     "session field 'strokes_png': expected a 50x36 layer (the session's shape), got 20x10"),
    ("hard_png", png_b64(np.full((H, W), 7, np.uint8)),
     "session field 'hard_png': hard_png values must lie in 0..3, got 7..7"),
    ("version", 2,
     "session field 'version': expected 1 (the session format this segapp reads), got 2"),
    ("version", "1",
     "session field 'version': expected 1 (the session format this segapp reads), got \"1\""),
    ("image_path", 5, "session field 'image_path': expected the image's path or null, got 5"),
    ("image_relpath", 5,
     "session field 'image_relpath': expected a relative path or null, got 5"),
    ("shape", "36x50", "session field 'shape': expected [height, width], got \"36x50\""),
    ("shape", [36, -1], "session field 'shape': expected [height, width], got [36, -1]"),
    ("k", 9, "session field 'k': expected an integer from 2 to 8, got 9"),
    ("k", math.nan, "session field 'k': expected an integer from 2 to 8, got NaN"),
    ("extra", [1], "session field 'extra': expected an object, got [1]"),
    ("extra.opacity", 2, "session field 'extra.opacity': expected a number from 0 to 1, got 2"),
    # a value spelt in 40 characters is shown whole; a longer one is cut to 37 and "..."
    ("image_path", ["x" * 36],
     "session field 'image_path': expected the image's path or null, got "
     f"[\"{'x' * 36}\"]"),
    ("image_path", ["x" * 37],
     "session field 'image_path': expected the image's path or null, got "
     f"[\"{'x' * 35}..."),
]


@pytest.mark.parametrize("key, value, message", BAD,
                         ids=[f"{b[0]}={str(b[1])[:12]}" for b in BAD])
def test_each_bad_field_is_one_sentence_saying_what_was_expected(good, tmp_path, key, value,
                                                                 message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(changed(good, key, value)))
    with pytest.raises(ValueError) as err:
        load_session(path)
    assert str(err.value) == message


@pytest.mark.parametrize("rect", [[0, 0, 1, 5], [0, 0, 5, 1], [49, 35, 1, 1], [0, 0, W, H]])
def test_a_rectangle_one_pixel_wide_or_high_or_the_whole_image_is_kept(good, rect):
    assert parse_session(changed(good, "rect", rect)).rect == tuple(rect)


@pytest.mark.parametrize("key, expected", [
    ("version", "1"), ("image_path", "the image's path or null"), ("shape", "[height, width]"),
    ("k", "an integer from 2 to 8"), ("settings", "an object"),
    ("strokes_png", "null or a base64 PNG text"), ("hard_png", "null or a base64 PNG text")])
def test_a_missing_field_is_named_with_what_it_should_hold(good, key, expected):
    d = copy.deepcopy(good)
    del d[key]
    with pytest.raises(ValueError) as err:
        parse_session(d)
    assert str(err.value) == f"session field '{key}': missing (expected {expected})"


def test_a_value_no_json_spells_is_shown_as_python_writes_it(good):
    with pytest.raises(ValueError) as err:
        parse_session(changed(good, "k", {3}))
    assert str(err.value) == "session field 'k': expected an integer from 2 to 8, got {3}"


def test_what_is_no_session_is_named_by_its_file(tmp_path):
    with pytest.raises(ValueError) as err:
        parse_session([1, 2])
    assert str(err.value) == "session is not a segapp session file"
    with pytest.raises(ValueError) as err:
        parse_session({"format": "other"}, tmp_path / "work.json")
    assert str(err.value) == "work.json is not a segapp session file"


def test_a_session_of_an_older_segapp_takes_the_defaults(good):
    """Settings written before a field existed (only λ), no ``extra``: every other setting is
    the default, and an ADMM iteration limit of 1 is a limit like any other."""
    d = copy.deepcopy(good)
    d["settings"] = {"lam": 4.0}
    del d["extra"]
    data = parse_session(d)
    assert data.settings == SolverSettings(lam=4.0)
    assert data.extra == {}
    d["settings"] = {"admm": {"max_iter": 1}, "seed": 7, "unknown": "ignored"}
    assert parse_session(d).settings == SolverSettings(admm={"max_iter": 1}, seed=7)


def test_check_session_image_names_what_does_not_fit(good, tmp_path):
    """A session for another size names both sizes and the photo; layers or a rectangle (of
    data built without a stored shape) that do not fit say which and by how much."""
    data = load_session(tmp_path / "s.json")
    other = np.zeros((40, 60, 3), np.uint8)
    with pytest.raises(ValueError) as err:
        check_session_image(data, other)
    assert str(err.value) == ("session field 'shape': the session is for a 50x36 image, "
                              "p.png is 60x40")
    data.image_path = None
    with pytest.raises(ValueError) as err:
        check_session_image(data, other)
    assert str(err.value).endswith("the image is 60x40")
    photo = np.zeros((H, W, 3), np.uint8)
    layer = np.zeros((H + 2, W - 3), np.uint8)
    for name in ("strokes", "hard"):
        loose = SessionData(image_path=None, k=2, rect=None, settings=SolverSettings(),
                            strokes=None, hard=None)
        setattr(loose, name, layer)
        with pytest.raises(ValueError) as err:
            check_session_image(loose, photo)
        assert str(err.value) == f"session {name} are 47x38, image is 50x36"
        setattr(loose, name, np.zeros((H, W), np.uint8))
        check_session_image(loose, photo)
    for rect in ((-1, 0, 5, 5), (0, -1, 5, 5), (46, 0, 5, 5), (0, 32, 5, 5)):
        loose = SessionData(image_path=None, k=2, rect=rect, settings=SolverSettings(),
                            strokes=None, hard=None)
        with pytest.raises(ValueError) as err:
            check_session_image(loose, photo)
        assert str(err.value) == (f"session field 'rect': {list(rect)} is not inside the "
                                  "50x36 image")
    for rect in ((45, 0, 5, 5), (0, 31, 5, 5), (0, 0, W, H)):
        check_session_image(SessionData(image_path=None, k=2, rect=rect,
                                        settings=SolverSettings(), strokes=None, hard=None),
                            photo)


def test_an_opened_session_replaces_the_document_and_cannot_be_undone(good, tmp_path):
    """Opening a session puts its K, layers, rectangle and settings in the document, leaves
    nothing to undo and nothing unsaved."""
    img = np.zeros((H, W, 3), np.uint8)
    src = Document()
    src.set_image(img, str(tmp_path / "p.png"))
    src.set_k(3)
    strokes = np.zeros((H, W), np.uint8)
    strokes[2:5, 3:9], strokes[20, 5:40] = 1, 3
    src.set_layers(strokes=strokes)
    src.set_rect((2, 3, 30, 20))
    src.set_settings(SolverSettings(lam=3.0, seed=4))
    save_session(tmp_path / "t.json", src)
    doc = Document()
    doc.set_image(np.full((H, W, 3), 9, np.uint8))
    doc.set_layers(strokes=np.ones((H, W), np.uint8))
    apply_session(doc, load_session(tmp_path / "t.json"), img)
    assert doc.k == 3 and doc.rect == (2, 3, 30, 20) and doc.settings.lam == 3.0
    assert np.array_equal(doc.strokes, strokes)
    assert not doc.undo_stack.can_undo() and not doc.dirty


def test_an_opened_sessions_rectangle_is_drawn_in_the_window(win, tmp_path):
    """The rectangle a session holds is on the canvas once it is open (the photo, loaded first,
    comes with none), where the session has it."""
    img = np.random.default_rng(1).integers(0, 255, (H, W, 3), np.uint8)
    cv2.imwrite(str(tmp_path / "p.png"), img[:, :, ::-1])
    src = Document()
    src.set_image(img, str(tmp_path / "p.png"))
    src.set_rect((4, 5, 30, 20))
    save_session(tmp_path / "r.json", src)
    assert not win.canvas.rect_item.isVisible()  # the premise
    assert win.open_session(str(tmp_path / "r.json")) and not win.errors
    item = win.canvas.rect_item
    assert item.isVisible()
    r = item.rect()
    assert (r.x(), r.y(), r.width(), r.height()) == (4, 5, 30, 20)


def test_a_session_saved_without_a_photo_reopens_empty(tmp_path):
    """(A window with no photo open can save its settings.) Shape 0 x 0, no layers."""
    doc = Document()
    doc.set_settings(SolverSettings(lam=2.5))
    save_session(tmp_path / "empty.json", doc)
    data = load_session(tmp_path / "empty.json")
    assert data.shape == (0, 0) and data.strokes is None and data.hard is None
    assert data.image_path is None and data.settings.lam == 2.5
