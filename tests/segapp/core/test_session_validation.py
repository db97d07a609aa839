"""Saved sessions with bad fields (issue 34, item 4): every one is refused with a ValueError
naming the field, and in the window with one error dialog, before anything changes."""
from __future__ import annotations

import base64
import json

import cv2
import numpy as np
import pytest

from PyQt6.QtCore import QStandardPaths
from PyQt6.QtWidgets import QMessageBox

from segapp.core.session import load_session, save_session
from segapp.model import K_MAX, K_MIN, Document, SolverSettings

QStandardPaths.setTestModeEnabled(True)

H, W = 36, 50  # the session's image; the window's own image is another size


def picture(h: int, w: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 255, (h, w, 3), dtype=np.uint8)


def png_b64(arr: np.ndarray) -> str:
    ok, buf = cv2.imencode(".png", arr)
    assert ok
    return base64.b64encode(buf.tobytes()).decode("ascii")


@pytest.fixture
def good(tmp_path):
    """A valid session file (its image beside it) and its JSON as a dict."""
    img = picture(H, W, 1)
    cv2.imwrite(str(tmp_path / "other.png"), img[:, :, ::-1])
    doc = Document()
    doc.set_image(img, str(tmp_path / "other.png"))
    doc.set_k(2)
    s = np.zeros((H, W), np.uint8)
    s[2:5, 2:20] = 1
    s[20:23, 10:30] = 2
    doc.set_layers(strokes=s)
    doc.set_rect((3, 4, 20, 15))
    doc.set_settings(SolverSettings(lam=7.0, colour_model="histogram", seed=5,
                                    admm={"max_iter": 40, "rho0": 2.0}, area=["1:0.1-0.9"],
                                    apart=[]))
    path = tmp_path / "other.json"
    save_session(path, doc, extra={"opacity": 0.3})
    return path, json.loads(path.read_text())


def settings(**kw):
    return lambda d: d["settings"].update(kw)


def drop(key):
    def change(d):
        del d[key]
    return change


def put(key, value):
    return lambda d: d.__setitem__(key, value)


# (case id, change to the good session's JSON, the field the message must name)
BAD = [
    ("opacity-null", lambda d: d["extra"].update(opacity=None), "extra.opacity"),
    ("opacity-string", lambda d: d["extra"].update(opacity="0.5"), "extra.opacity"),
    ("opacity-2", lambda d: d["extra"].update(opacity=2), "extra.opacity"),
    ("extra-list", put("extra", [1]), "extra"),
    ("rect-2-numbers", put("rect", [1, 2]), "rect"),
    ("rect-strings", put("rect", ["1", "2", "3", "4"]), "rect"),
    ("rect-outside", put("rect", [40, 30, 20, 20]), "rect"),
    ("lam-string", settings(lam="3"), "settings.lam"),
    ("lam-negative", settings(lam=-1.0), "settings.lam"),
    ("beta-list", settings(beta=[1]), "settings.beta"),
    ("seed-null", settings(seed=None), "settings.seed"),
    ("seed-negative", settings(seed=-1), "settings.seed"),
    ("seed-float", settings(seed=1.5), "settings.seed"),
    ("seed-huge", settings(seed=2**40), "settings.seed"),
    ("max_iter-10.5", settings(admm={"max_iter": 10.5}), "settings.admm.max_iter"),
    ("max_iter-0", settings(admm={"max_iter": 0}), "settings.admm.max_iter"),
    ("max_iter-huge", settings(admm={"max_iter": 2**40}), "settings.admm.max_iter"),
    ("rho0-string", settings(admm={"rho0": "big"}), "settings.admm.rho0"),
    ("admm-unknown", settings(admm={"speed": 3}), "settings.admm.speed"),
    ("admm-list", settings(admm=[1, 2]), "settings.admm"),
    ("colour-model", settings(colour_model="rainbow"), "settings.colour_model"),
    ("backend-number", settings(backend=3), "settings.backend"),
    ("area-garbage", settings(area=["nope"]), "settings.area[0]"),
    ("area-label-beyond-k", settings(area=["5:0.1-0.2"]), "settings.area[0]"),
    ("apart-string", settings(apart="1,2"), "settings.apart"),
    ("settings-string", put("settings", "fast"), "settings"),
    ("k-0", put("k", 0), "'k'"),
    ("k-1", put("k", 1), "'k'"),
    ("k-minus-3", put("k", -3), "'k'"),
    ("k-50", put("k", 50), "'k'"),
    ("k-300", put("k", 300), "'k'"),
    ("k-string", put("k", "3"), "'k'"),
    ("k-float", put("k", 2.5), "'k'"),
    ("k-true", put("k", True), "'k'"),
    ("image_path-number", put("image_path", 5), "image_path"),
    ("image_relpath-number", put("image_relpath", 5), "image_relpath"),
    ("shape-string", put("shape", "36x50"), "shape"),
    ("strokes-wrong-size", put("strokes_png", png_b64(np.zeros((10, 20), np.uint8))),
     "strokes_png"),
    ("hard-wrong-size", put("hard_png", png_b64(np.zeros((H + 1, W), np.uint8))), "hard_png"),
    ("strokes-label-beyond-k", put("strokes_png", png_b64(np.full((H, W), 7, np.uint8))),
     "strokes_png"),
    ("strokes-colour", put("strokes_png", png_b64(np.zeros((H, W, 3), np.uint8))),
     "strokes_png"),
    ("strokes-not-base64", put("strokes_png", "%%%"), "strokes_png"),
    ("strokes-number", put("strokes_png", 12), "strokes_png"),
    ("version-2", put("version", 2), "version"),
    ("missing-k", drop("k"), "'k'"),
    ("missing-settings", drop("settings"), "settings"),
    ("missing-strokes", drop("strokes_png"), "strokes_png"),
    ("missing-image_path", drop("image_path"), "image_path"),
]

# the whole file is wrong: (case id, text, what the message says)
BAD_FILES = [
    ("not-json", "this is not JSON", "cannot read session"),
    ("json-list", "[1, 2, 3]", "not a segapp session"),
    ("json-string", '"segapp-session"', "not a segapp session"),
    ("empty", "", "cannot read session"),
    ("deep", "[" * 100000 + "]" * 100000, "cannot read session"),
]


@pytest.mark.parametrize("change,field", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_load_session_names_the_bad_field(good, change, field):
    path, data = good
    change(data)
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="session field") as info:
        load_session(path)
    assert field in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("text,words", [b[1:] for b in BAD_FILES], ids=[b[0] for b in BAD_FILES])
def test_load_session_refuses_a_file_that_is_no_session(tmp_path, text, words):
    path = tmp_path / "s.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=words):
        load_session(path)


def test_the_message_says_what_was_expected(good):
    path, data = good
    data["k"] = 300
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError) as info:
        load_session(path)
    assert str(info.value) == (f"session field 'k': expected an integer from {K_MIN} to "
                               f"{K_MAX}, got 300")


def test_a_good_session_loads_whole(good):
    path, _ = good
    data = load_session(path)
    assert data.k == 2 and data.rect == (3, 4, 20, 15) and data.shape == (H, W)
    assert data.settings.lam == 7.0 and data.settings.admm == {"max_iter": 40, "rho0": 2.0}
    assert data.settings.area == ["1:0.1-0.9"] and data.extra == {"opacity": 0.3}
    assert data.strokes.shape == (H, W) and data.strokes.max() == 2


# ---------------------------------------------------------------- in the window

@pytest.fixture
def working(win, tmp_path):
    """The window with work of its own: an image, K = 3, strokes, a rectangle, settings, a
    saved session of its own and a last run (a stand-in outcome)."""
    img = picture(30, 40, 2)
    cv2.imwrite(str(tmp_path / "mine.png"), img[:, :, ::-1])
    assert win.open_path(str(tmp_path / "mine.png"))
    s = np.zeros(win.doc.shape, np.uint8)
    s[3:6, 3:30] = 1
    s[20, 15:25] = 3
    win.doc.set_k(3)
    win.doc.set_layers(strokes=s)
    win.doc.set_rect((4, 5, 25, 20))
    win.params_panel.lam.setValue(3.5)
    win.params_panel.admm["max_iter"].setValue(77)
    win.results_panel.opacity.setValue(80)
    assert win.save_session(str(tmp_path / "mine.json"))
    win.doc.begin_stroke("strokes")
    win.doc.stroke_to((30, 25), (35, 25), 1, 2)
    win.doc.end_stroke()  # unsaved work on top
    win.outcome = outcome = object()
    return outcome


def snapshot(win):
    d = win.doc
    return dict(k=d.k, strokes=d.strokes.copy(), hard=d.hard.copy(), rect=d.rect,
                image=d.image.copy(), image_path=d.image_path, settings=d.settings.to_dict(),
                panel=win.params_panel.settings().to_dict(), dirty=d.dirty,
                title=win.windowTitle(), session_path=win.session_path, outcome=win.outcome,
                k_spin=win.tools.k_spin.value(), opacity=win.results_panel.opacity.value(),
                can_undo=d.undo_stack.can_undo())


def same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], np.ndarray):
            assert np.array_equal(a[key], b[key]), key
        else:
            assert a[key] is b[key] or a[key] == b[key], key


@pytest.fixture
def dialogs(monkeypatch):
    """Every message box the window opens, recorded instead of shown."""
    calls = []

    def record(kind):
        def box(parent, title, text, *args, **kw):
            calls.append((kind, title, text))
            return QMessageBox.StandardButton.Ok
        return staticmethod(box)

    for kind in ("critical", "warning", "information", "question"):
        monkeypatch.setattr(QMessageBox, kind, record(kind))
    return calls


CASES = BAD + [(f"file-{c}", (lambda text: lambda _d: text)(t), w) for c, t, w in BAD_FILES]


@pytest.mark.slow
@pytest.mark.parametrize("change,field", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_session_leaves_the_window_as_it_was(win, working, good, dialogs, change, field):
    path, data = good
    text = change(data)
    path.write_text(text if isinstance(text, str) else json.dumps(data))
    before = snapshot(win)
    assert not win.open_session(str(path))
    assert len(dialogs) == 1, dialogs
    kind, title, message = dialogs[0]
    assert kind == "critical" and title == "Cannot open session"
    assert field in message and "\n" not in message
    same(before, snapshot(win))
    assert win.outcome is working


@pytest.mark.slow
def test_an_image_that_changed_size_is_refused_before_anything_changes(win, working, good,
                                                                        dialogs, tmp_path):
    path, _ = good
    cv2.imwrite(str(tmp_path / "other.png"), picture(H + 4, W, 3))
    before = snapshot(win)
    assert not win.open_session(str(path))
    assert len(dialogs) == 1 and "'shape'" in dialogs[0][2]
    same(before, snapshot(win))


@pytest.mark.slow
def test_a_missing_image_is_refused_naming_image_path(win, working, good, dialogs, tmp_path):
    path, _ = good
    (tmp_path / "other.png").unlink()
    before = snapshot(win)
    assert not win.open_session(str(path))
    assert len(dialogs) == 1 and "image_path" in dialogs[0][2]
    same(before, snapshot(win))


@pytest.mark.slow
def test_a_good_session_still_opens(win, working, good, dialogs):
    path, _ = good
    assert win.open_session(str(path))
    assert not dialogs
    d = win.doc
    assert d.k == 2 and d.rect == (3, 4, 20, 15) and d.shape == (H, W)
    assert d.strokes.max() == 2 and not d.dirty and win.outcome is None
    assert win.session_path == str(path) and "other.json" in win.windowTitle()
    assert win.params_panel.lam.value() == 7.0
    assert win.params_panel.admm["max_iter"].value() == 40
    assert win.results_panel.opacity.value() == 30
    assert win.tools.k_spin.value() == 2
