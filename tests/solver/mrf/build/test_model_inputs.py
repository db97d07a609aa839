"""The model's inputs, checked against hand-built expectations: for strokes, hard pixels, a GrabCut
rectangle and their mixtures, the seed map :func:`build_problem` records, the pixels each label's
colour model is fitted on (its training set), which pixels the problem fixes and to what, and the
unaries the fitted models give.

Rules (``build_problem`` and ``fit_colour_models``, docs/algorithm.md, The model):

- label ``k`` is fitted on the pixels seeded ``k``, where the seed map is the hard label where
  there is one and the stroke elsewhere (hard wins);
- with a rectangle (any K) every pixel outside it is hard background (label 2): it is seeded 2
  (over any stroke) and trains label 2; inside, the unseeded pixels and the label-1 seeds train
  label 1 and the label-2 seeds (strokes or hard) train label 2, not label 1;
- only hard pixels (and a rectangle's outside) are fixed; strokes only train;
- the unaries are the fitted models' ``-log p_k(c_i)`` for every pixel, fixed ones included.

The test images give every pixel a colour that encodes its row and column, so the colours a model
is fitted on name exactly the pixels it was fitted on.
"""

from __future__ import annotations

import numpy as np
import pytest

from solver.mrf.build.colour import GaussianMixtureModel, HistogramModel, fit_colour_models
from solver.mrf.build.graph import image_to_float
from solver.mrf.build.problem import build_problem
from solver.reference import mincut

H, W = 12, 16


def coded_image() -> np.ndarray:
    """A 12 x 16 RGB uint8 image whose red encodes the row and green the column of each pixel."""
    r, c = np.mgrid[0:H, 0:W]
    return np.stack([20 * r + 10, 15 * c + 5, (29 * r + 47 * c) % 256], axis=-1).astype(np.uint8)


def decode(samples: np.ndarray) -> np.ndarray:
    """The ``(H, W)`` bool mask of the pixels whose colours ``samples`` are, each exactly once."""
    v = np.rint(np.asarray(samples)[:, :2] * 255).astype(np.int64)
    rows, cols = (v[:, 0] - 10) // 20, (v[:, 1] - 5) // 15
    assert np.array_equal(20 * rows + 10, v[:, 0]) and np.array_equal(15 * cols + 5, v[:, 1]), \
        "a training colour is no pixel's colour"
    mask = np.zeros((H, W), dtype=bool)
    mask[rows, cols] = True
    assert mask.sum() == len(samples), "a pixel trains a model twice"
    return mask


@pytest.fixture(params=["gmm", "histogram"])
def colour_model(request):
    """Both colour models."""
    return request.param


@pytest.fixture
def fits(monkeypatch):
    """Records every colour-model fit: ``(model, samples)`` in call order."""
    record = []
    for cls in (GaussianMixtureModel, HistogramModel):
        original = cls.fit

        def fit(self, samples, seed=0, _original=original):
            record.append((self, np.array(samples, dtype=np.float64, copy=True)))
            return _original(self, samples, seed=seed)

        monkeypatch.setattr(cls, "fit", fit)
    return record


def built(fits, image, strokes, k, colour_model, **kw):
    """``build_problem``'s problem and the training mask of each label (index ``k - 1``), read
    from the samples its models were fitted on; checks the unaries are those models'."""
    problem = build_problem(image, strokes, k, colour_model=colour_model, **kw)
    assert len(fits) == k, "one fit per label"
    by_model = {id(model): samples for model, samples in fits}
    masks = [decode(by_model[id(model)]) for model in problem.models]
    flat = image_to_float(image).reshape(H * W, -1)
    for label, model in enumerate(problem.models):
        kind = {"gmm": GaussianMixtureModel, "histogram": HistogramModel}[colour_model]
        assert type(model) is kind
        np.testing.assert_array_equal(problem.unary[:, label], model.neg_log_likelihood(flat))
    return problem, masks


def assert_trained_on(problem, masks, expected, image):
    """Each label's training mask is the hand-built one; for the histogram (whose fit does not
    depend on the samples' order) the unaries equal a fresh fit on the hand-built sets too."""
    for label, (got, want) in enumerate(zip(masks, expected), start=1):
        np.testing.assert_array_equal(got, want, err_msg=f"label {label}'s training set")
    if problem.colour_model == "histogram":
        flat = image_to_float(image).reshape(H * W, -1)
        for label, want in enumerate(expected):
            fresh = HistogramModel().fit(flat[want.ravel()]).neg_log_likelihood(flat)
            np.testing.assert_array_equal(problem.unary[:, label], fresh)


def stroke_image(k: int) -> np.ndarray:
    """Strokes of labels 1..k: label ``j`` a short bar in row ``2 j - 1`` plus one corner pixel."""
    s = np.zeros((H, W), dtype=np.int32)
    for j in range(1, k + 1):
        s[2 * j - 1, 2 : 2 + 2 * j] = j
    s[H - 1, W - 1] = 1
    s[0, 0] = k
    return s


@pytest.mark.parametrize("k", [2, 3, 4])
def test_strokes_only_train_each_label_on_its_strokes(fits, colour_model, k):
    """Strokes alone: label k trains on exactly the pixels stroked k, the seed map is the strokes
    and nothing is fixed."""
    image = coded_image()
    strokes = stroke_image(k)
    problem, masks = built(fits, image, strokes, k, colour_model)
    expected = []
    for j in range(1, k + 1):
        m = np.zeros((H, W), dtype=bool)
        m[2 * j - 1, 2 : 2 + 2 * j] = True
        expected.append(m)
    expected[0][H - 1, W - 1] = True
    expected[k - 1][0, 0] = True
    assert_trained_on(problem, masks, expected, image)
    np.testing.assert_array_equal(problem.seeds, strokes)
    assert not problem.hard.any()


def test_hard_only_train_and_fix_their_labels(fits, colour_model):
    """Hard pixels alone (K = 3): they train their labels, make the seed map and are exactly the
    problem's fixed pixels, with their labels."""
    image = coded_image()
    hard = np.zeros((H, W), dtype=np.int32)
    hard[0:2, 0:3] = 1
    hard[5, 4:12] = 2
    hard[9:12, 13:16] = 3
    problem, masks = built(fits, image, None, 3, colour_model, hard=hard)
    e1, e2, e3 = (np.zeros((H, W), dtype=bool) for _ in range(3))
    e1[:2, :3] = True
    e2[5, 4:12] = True
    e3[9:, 13:] = True
    assert_trained_on(problem, masks, [e1, e2, e3], image)
    np.testing.assert_array_equal(problem.seeds, hard)
    fixed = problem.hard.reshape(H, W)
    np.testing.assert_array_equal(fixed, e1 * 1 + e2 * 2 + e3 * 3)


def test_hard_wins_over_strokes(fits, colour_model):
    """Strokes and hard pixels (K = 3): where both are given the hard label seeds and trains, the
    stroke's label does not; only the hard pixels are fixed."""
    image = coded_image()
    strokes = np.zeros((H, W), dtype=np.int32)
    strokes[2:6, 2:8] = 1      # a block of label 1 ...
    strokes[8, 0:10] = 3       # ... a bar of label 3 ...
    strokes[10, 10:14] = 2     # ... and one of label 2
    hard = np.zeros((H, W), dtype=np.int32)
    hard[4:7, 6:10] = 2        # overlaps the label-1 block at rows 4-5, cols 6-7
    hard[8, 8:12] = 1          # overlaps the label-3 bar at cols 8-9
    problem, masks = built(fits, image, strokes, 3, colour_model, hard=hard)

    seeds = np.zeros((H, W), dtype=np.int32)
    seeds[2:4, 2:8] = 1
    seeds[4:6, 2:6] = 1
    seeds[4:7, 6:10] = 2
    seeds[8, 0:8] = 3
    seeds[8, 8:12] = 1
    seeds[10, 10:14] = 2
    np.testing.assert_array_equal(problem.seeds, seeds)
    e1, e2, e3 = (np.zeros((H, W), dtype=bool) for _ in range(3))
    e1[2:4, 2:8] = e1[4:6, 2:6] = e1[8, 8:12] = True
    e2[4:7, 6:10] = e2[10, 10:14] = True
    e3[8, :8] = True
    assert_trained_on(problem, masks, [e1, e2, e3], image)
    fixed = np.zeros((H, W), dtype=np.int32)
    fixed[4:7, 6:10] = 2
    fixed[8, 8:12] = 1
    np.testing.assert_array_equal(problem.hard.reshape(H, W), fixed)


def _outside(case: str) -> np.ndarray:
    """The outside of each rectangle case, written out by hand (not from ``(x, y, w, h)``)."""
    out = np.zeros((H, W), dtype=bool)
    if case == "interior":          # rect (3, 2, 9, 7): rows 2..8, cols 3..11
        out[:2, :] = True
        out[9:, :] = True
        out[:, :3] = True
        out[:, 12:] = True
    elif case == "top-left":        # rect (0, 0, 10, 7): rows 0..6, cols 0..9
        out[7:, :] = True
        out[:, 10:] = True
    elif case == "bottom-right":    # rect (6, 5, 10, 7): rows 5..11, cols 6..15
        out[:5, :] = True
        out[:, :6] = True
    elif case == "all-but-last-column":   # rect (0, 0, 15, 12)
        out[:, 15] = True
    elif case == "all-but-first-column":  # rect (1, 0, 15, 12)
        out[:, 0] = True
    elif case == "all-but-last-row":      # rect (0, 0, 16, 11)
        out[11, :] = True
    return out


RECTS = {
    "interior": (3, 2, 9, 7),
    "top-left": (0, 0, 10, 7),
    "bottom-right": (6, 5, 10, 7),
    "all-but-last-column": (0, 0, 15, 12),
    "all-but-first-column": (1, 0, 15, 12),
    "all-but-last-row": (0, 0, 16, 11),
}


@pytest.mark.parametrize("case", list(RECTS))
def test_rectangle_alone_trains_inside_and_outside(fits, colour_model, case):
    """A rectangle alone: label 1 trains on exactly its inside, label 2 on exactly its outside,
    which is seeded and fixed to 2; the inside is free and unseeded."""
    image = coded_image()
    problem, masks = built(fits, image, None, 2, colour_model, rect=RECTS[case])
    outside = _outside(case)
    assert_trained_on(problem, masks, [~outside, outside], image)
    np.testing.assert_array_equal(problem.seeds, np.where(outside, 2, 0))
    np.testing.assert_array_equal(problem.hard.reshape(H, W), np.where(outside, 2, 0))


def test_rectangle_with_strokes_and_hard_inside(fits, colour_model):
    """A rectangle with strokes and hard pixels of both labels inside and strokes outside:
    background seeds inside train the background and not the foreground, hard wins over
    strokes, a foreground stroke outside is overruled by the outside's hard background."""
    image = coded_image()
    rect = (3, 2, 10, 8)                 # rows 2..9, cols 3..12
    strokes = np.zeros((H, W), dtype=np.int32)
    strokes[3:5, 4:7] = 2                # background strokes inside
    strokes[6:8, 9:12] = 1               # foreground strokes inside
    strokes[0, 0:5] = 1                  # a foreground stroke outside
    strokes[11, 8:14] = 2                # a background stroke outside
    strokes[2, 3] = 2                    # background on the rectangle's top-left pixel
    strokes[9, 12] = 2                   # ... and on its bottom-right pixel
    hard = np.zeros((H, W), dtype=np.int32)
    hard[8, 3:6] = 2                     # hard background inside
    hard[5, 8:11] = 1                    # hard foreground inside
    hard[7, 11] = 2                      # hard background on a foreground stroke
    hard[4, 6] = 1                       # hard foreground on a background stroke
    problem, masks = built(fits, image, strokes, 2, colour_model, rect=rect, hard=hard)

    outside = np.ones((H, W), dtype=bool)
    outside[2:10, 3:13] = False
    inside_bg = np.zeros((H, W), dtype=bool)     # label-2 seeds inside, by hand
    inside_bg[3, 4:7] = True
    inside_bg[4, 4:6] = True                     # (4, 6) is hard 1
    inside_bg[2, 3] = inside_bg[9, 12] = True
    inside_bg[8, 3:6] = True
    inside_bg[7, 11] = True
    inside_fg = np.zeros((H, W), dtype=bool)     # label-1 seeds inside
    inside_fg[6, 9:12] = True
    inside_fg[7, 9:11] = True                    # (7, 11) is hard 2
    inside_fg[5, 8:11] = True
    inside_fg[4, 6] = True

    seeds = np.where(outside, 2, 0)
    seeds[inside_bg] = 2
    seeds[inside_fg] = 1
    np.testing.assert_array_equal(problem.seeds, seeds)
    assert_trained_on(problem, masks, [~outside & ~inside_bg, outside | inside_bg], image)
    fixed = np.where(outside, 2, 0)
    fixed[8, 3:6] = 2
    fixed[7, 11] = 2
    fixed[5, 8:11] = 1
    fixed[4, 6] = 1
    np.testing.assert_array_equal(problem.hard.reshape(H, W), fixed)


def test_fit_colour_models_rectangle_rule(fits, colour_model):
    """``fit_colour_models`` on raw strokes with a rectangle: the outside trains label 2 whatever
    it is stroked, background strokes inside train label 2, the rest of the inside label 1."""
    strokes = np.zeros((H, W), dtype=np.int32)
    strokes[1, 0:6] = 1                  # foreground stroke outside: still background
    strokes[4:6, 5:8] = 2                # background strokes inside
    strokes[7, 9:12] = 1                 # foreground strokes inside
    models = fit_colour_models(image_to_float(coded_image()), strokes, 2, model=colour_model,
                               rect=(4, 3, 9, 6))   # rows 3..8, cols 4..12
    by_model = {id(model): samples for model, samples in fits}
    got = [decode(by_model[id(model)]) for model in models]
    bg = np.ones((H, W), dtype=bool)
    bg[3:9, 4:13] = False
    bg[4:6, 5:8] = True
    np.testing.assert_array_equal(got[0], ~bg, err_msg="label 1's training set")
    np.testing.assert_array_equal(got[1], bg, err_msg="label 2's training set")


def test_whole_image_rectangle_background_from_strokes(fits, colour_model):
    """A rectangle covering the whole image: the background trains on its strokes alone, the
    foreground on every other pixel; nothing is fixed."""
    image = coded_image()
    strokes = np.zeros((H, W), dtype=np.int32)
    strokes[0, :] = 2
    strokes[5:7, 3] = 2
    problem, masks = built(fits, image, strokes, 2, colour_model, rect=(0, 0, W, H))
    bg = np.zeros((H, W), dtype=bool)
    bg[0, :] = True
    bg[5, 3] = bg[6, 3] = True
    assert_trained_on(problem, masks, [~bg, bg], image)
    np.testing.assert_array_equal(problem.seeds, np.where(bg, 2, 0))
    assert not problem.hard.any()


@pytest.mark.parametrize("rect, strokes_at, label", [
    ((0, 0, W, H), None, 2),                 # no outside and no background stroke
    ((2, 2, 4, 3), (slice(2, 5), slice(2, 6)), 1),   # the inside all stroked background
])
def test_rectangle_leaving_a_label_untrained_is_refused(rect, strokes_at, label):
    """A rectangle that leaves a label no training pixel is refused with a message naming it."""
    strokes = np.zeros((H, W), dtype=np.int32)
    if strokes_at is not None:
        strokes[strokes_at] = 2
    with pytest.raises(ValueError, match=f"label {label} has no"):
        build_problem(coded_image(), strokes, 2, rect=rect)


def test_background_strokes_inside_rectangle_change_the_cut(colour_model):
    """What the user sees: a green patch inside the rectangle is foreground by the rectangle
    alone, and background once it is stroked background."""
    rng = np.random.default_rng(7)
    h, w = 24, 32
    img = np.tile([0.15, 0.25, 0.75], (h, w, 1))     # blue background
    img[6:18, 6:17] = [0.85, 0.2, 0.15]              # a red object
    img[6:18, 19:26] = [0.2, 0.8, 0.25]              # a green patch
    img = np.clip(img + rng.normal(0, 0.03, img.shape), 0, 1)
    rect = (4, 4, 24, 16)                            # rows 4..19, cols 4..27
    strokes = np.zeros((h, w), dtype=np.int32)
    strokes[6:18, 19:26] = 2
    plain = mincut(build_problem(img, None, 2, rect=rect, colour_model=colour_model))
    stroked = mincut(build_problem(img, strokes, 2, rect=rect, colour_model=colour_model))
    assert np.all(plain[6:18, 19:26] == 1), "premise: the rectangle alone makes it foreground"
    assert np.all(plain[6:18, 6:17] == 1)
    assert np.all(stroked[6:18, 19:26] == 2)
    assert np.all(stroked[6:18, 6:17] == 1)


@pytest.mark.parametrize("k", [3, 4])
def test_a_rectangle_for_more_labels_keeps_its_background_and_object(fits, colour_model, k):
    """A rectangle with K > 2: the outside is hard label 2 and trains it; the unlabelled inside
    and label 1's strokes train label 1; labels 3..K train on their own strokes inside, and
    their pixels train nothing else."""
    image = coded_image()
    strokes = np.zeros((H, W), dtype=np.int32)
    for j in range(3, k + 1):
        strokes[2 + j, 4:8] = j
    strokes[9, 3:6] = 2  # a background stroke inside
    rect = (2, 1, 11, 10)  # x 2..12, y 1..10
    problem, masks = built(fits, image, strokes, k, colour_model, rect=rect)
    inside = np.zeros((H, W), dtype=bool)
    inside[1:11, 2:13] = True
    expected = [inside & (strokes == 0), ~inside | (strokes == 2)]
    for j in range(3, k + 1):
        expected.append(strokes == j)
    assert_trained_on(problem, masks, expected, image)
    np.testing.assert_array_equal(problem.hard.reshape(H, W), np.where(inside, 0, 2))


def test_a_rectangle_for_three_labels_needs_strokes_of_label_3(fits):
    """Label 3 has nothing to train on without strokes: the error says which labels the
    rectangle stands in for."""
    with pytest.raises(ValueError, match=r"label 3 has no strokes \(with a rectangle, label 1 "
                       r"takes the rectangle's inside and label 2 its outside"):
        build_problem(coded_image(), None, 3, rect=(2, 1, 11, 10))


def test_a_hard_object_label_outside_the_rectangle_is_refused():
    """Outside the rectangle every pixel is label 2: a hard label-3 pixel there is named."""
    hard = np.zeros((H, W), dtype=np.int32)
    hard[0, 0] = 3
    strokes = np.zeros((H, W), dtype=np.int32)
    strokes[5, 5] = 3
    with pytest.raises(ValueError, match="label-3 hard constraint lies outside the rectangle "
                       r"\(at row 0, column 0\)"):
        build_problem(coded_image(), strokes, 3, rect=(2, 1, 11, 10), hard=hard)
