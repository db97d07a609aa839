"""Tests of the Qt-free document model."""

import numpy as np
import pytest

from segapp.core.session import apply_session, load_session, save_session
from segapp.model import Document, SolverSettings
from segapp.model.brush import paint_segment


def make_doc(h=30, w=40, k=3):
    doc = Document(k=k)
    doc.set_image(np.zeros((h, w, 3), np.uint8), "img.png")
    return doc


def test_paint_segment_disc_and_capsule():
    a = np.zeros((20, 20), np.uint8)
    box = paint_segment(a, (10, 10), (10, 10), 2, 1)
    assert a[10, 10] == 1 and a[10, 12] == 1 and a[10, 13] == 0
    assert box == (8, 13, 8, 13)
    b = np.zeros((20, 20), np.uint8)
    paint_segment(b, (2, 5), (17, 5), 1, 2)
    assert (b[5, 2:18] == 2).all() and b[7, 10] == 0
    assert paint_segment(b, (-10, -10), (-9, -9), 1, 1) is None


def test_stroke_undo_redo_exact():
    doc = make_doc()
    seen = []
    doc.subscribe(lambda kind, box: seen.append(kind))
    doc.begin_stroke("strokes")
    doc.stroke_to((5, 5), (20, 5), 2, 1)
    doc.stroke_to((20, 5), (20, 20), 2, 1)
    doc.end_stroke()
    after1 = doc.strokes.copy()
    doc.begin_stroke("hard")
    doc.stroke_to((30, 25), (35, 25), 3, 3)
    doc.end_stroke()
    after2 = doc.hard.copy()
    assert "strokes" in seen and doc.dirty
    assert doc.undo()
    assert not doc.hard.any() and np.array_equal(doc.strokes, after1)
    assert doc.undo()
    assert not doc.strokes.any()
    assert not doc.undo()
    assert doc.redo() and np.array_equal(doc.strokes, after1)
    assert doc.redo() and np.array_equal(doc.hard, after2)
    assert not doc.redo()


def test_erase_is_one_step_over_both_layers():
    doc = make_doc()
    doc.begin_stroke("strokes"); doc.stroke_to((10, 10), (10, 10), 4, 2); doc.end_stroke()
    doc.begin_stroke("hard"); doc.stroke_to((12, 10), (12, 10), 4, 1); doc.end_stroke()
    s, h = doc.strokes.copy(), doc.hard.copy()
    doc.begin_stroke("erase"); doc.stroke_to((0, 10), (30, 10), 6); doc.end_stroke()
    assert not doc.strokes.any() and not doc.hard.any()
    doc.undo()
    assert np.array_equal(doc.strokes, s) and np.array_equal(doc.hard, h)


def test_empty_stroke_records_nothing():
    doc = make_doc()
    doc.begin_stroke("erase"); doc.stroke_to((1, 1), (2, 2), 3)
    assert doc.end_stroke() is None and len(doc.undo_stack) == 0


def test_rect_k_clear_undo():
    doc = make_doc(k=3)
    doc.set_rect((35, 25, 20, 20))  # clipped
    assert doc.rect == (35, 25, 5, 5)
    doc.set_rect((10, 10, -5, -5))
    assert doc.rect == (5, 5, 5, 5)
    doc.begin_stroke("strokes"); doc.stroke_to((3, 3), (3, 3), 1, 3); doc.end_stroke()
    doc.set_k(2)
    assert doc.k == 2 and not (doc.strokes == 3).any()
    doc.undo()
    assert doc.k == 3 and (doc.strokes == 3).any()
    doc.clear()
    assert doc.rect is None and not doc.strokes.any()
    doc.undo()
    assert doc.rect == (5, 5, 5, 5) and (doc.strokes == 3).any()
    with pytest.raises(ValueError):
        doc.set_k(9)
    with pytest.raises(ValueError):
        doc.begin_stroke("strokes"); doc.stroke_to((1, 1), (1, 1), 1, 5)


def test_label_counts_and_layers():
    doc = make_doc(k=2)
    s = np.zeros(doc.shape, np.uint8); s[0, :5] = 1; s[1, :3] = 2
    doc.set_layers(strokes=s)
    assert list(doc.label_counts()) == [5, 3]
    with pytest.raises(ValueError):
        doc.set_layers(strokes=np.zeros((2, 2)))
    doc.undo()
    assert not doc.strokes.any()


def test_session_round_trip(tmp_path):
    doc = make_doc(k=4)
    doc.image_path = str(tmp_path / "photo.png")
    (tmp_path / "photo.png").write_bytes(b"x")
    doc.set_k(4)
    doc.begin_stroke("strokes"); doc.stroke_to((1, 1), (20, 9), 2, 4); doc.end_stroke()
    doc.begin_stroke("hard"); doc.stroke_to((30, 20), (30, 20), 3, 2); doc.end_stroke()
    doc.set_rect((2, 3, 20, 15))
    doc.set_settings(SolverSettings(lam=2.5, beta=None, colour_model="histogram",
                                    backend="gpu", seed=3, admm={"rho0": 4.0, "max_iter": 50}))
    p = tmp_path / "s.json"
    save_session(p, doc, extra={"opacity": 0.4})
    data = load_session(p)
    assert data.image_path == str((tmp_path / "photo.png").resolve())
    assert data.k == 4 and data.rect == (2, 3, 20, 15)
    assert np.array_equal(data.strokes, doc.strokes) and np.array_equal(data.hard, doc.hard)
    assert data.settings == doc.settings and data.extra == {"opacity": 0.4}
    doc2 = Document()
    apply_session(doc2, data, doc.image)
    assert doc2.k == 4 and doc2.rect == doc.rect and not doc2.dirty
    assert np.array_equal(doc2.strokes, doc.strokes) and doc2.settings == doc.settings
    assert not doc2.undo()


def test_bad_session(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{nope")
    with pytest.raises(ValueError, match="cannot read session"):
        load_session(p)
    p.write_text("{}")
    with pytest.raises(ValueError, match="not a segapp session"):
        load_session(p)
