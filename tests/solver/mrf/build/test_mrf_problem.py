"""MRFProblem energy, builder and its validation."""

import numpy as np
import pytest

from solver.mrf import build_problem, problem_from_unary, refine_colour_models
from solver.reference import mincut
from tests.solver._mrf_helpers import shapes_image


def _hand_problem(lam=0.5):
    image = np.array([[0.0, 0.0, 1.0]] * 3)
    unary = np.column_stack([np.arange(9.0), 10.0 - np.arange(9.0)])
    return problem_from_unary(image, unary, lam=lam, beta=1.0)


def test_energy_by_hand_3x3():
    problem = _hand_problem(lam=0.5)
    labels = np.array([[1, 1, 2]] * 3)
    # Cut pairs all join a 0-pixel (column 1) to a 1-pixel (column 2): ||c_i - c_j||^2 = 1.
    # 3 horizontal pairs (r,1)-(r,2): W = e^-1 each;
    # 2 diagonal pairs (r,1)-(r+1,2) and 2 anti-diagonal pairs (r,2)-(r+1,1): W = e^-1 / sqrt 2.
    pairwise = 3 * np.exp(-1) + 4 * np.exp(-1) / np.sqrt(2)
    # data: label 1 at pixels 0,1,3,4,6,7 costs i -> 21; label 2 at pixels 2,5,8 costs 10 - i -> 15
    data = 21.0 + 15.0
    expected = 0.5 * 2.0 * pairwise + data
    assert problem.energy(labels) == pytest.approx(expected, rel=1e-12)
    assert problem.energy(labels.ravel()) == pytest.approx(expected, rel=1e-12)
    assert problem.energy(np.ones((3, 3), int)) == pytest.approx(36.0)


def test_continuous_energy_matches_on_one_hot():
    problem = _hand_problem()
    rng = np.random.default_rng(0)
    labels = rng.integers(1, 3, 9)
    x = np.eye(2)[labels - 1]
    assert problem.continuous_energy(x) == pytest.approx(problem.energy(labels))
    assert problem.continuous_energy(x.T.ravel()) == pytest.approx(problem.energy(labels))
    assert problem.continuous_energy(x.reshape(3, 3, 2)) == pytest.approx(problem.energy(labels))
    with pytest.raises(ValueError, match="shape"):
        problem.continuous_energy(np.zeros((9, 3)))


def test_energy_and_check_hard_validation():
    problem = problem_from_unary(np.zeros((2, 2)), np.zeros((4, 2)), hard=np.array([[1, 0], [0, 2]]))
    with pytest.raises(ValueError, match="1..2"):
        problem.energy(np.full((2, 2), 3))
    with pytest.raises(ValueError, match="shape"):
        problem.energy(np.ones((3, 3), int))
    problem.check_hard(np.array([[1, 1], [2, 2]]))
    with pytest.raises(ValueError, match="1 hard constraint"):
        problem.check_hard(np.array([[2, 1], [2, 2]]))


def test_build_problem_basic_fields():
    image, truth, strokes = shapes_image(k=3)
    problem = build_problem(image, strokes, 3, lam=2.0, seed=1)
    assert problem.k == 3 and problem.n == image.size and problem.shape == image.shape
    assert problem.unary.shape == (image.size, 3) and problem.unary.dtype == np.float64
    assert problem.hard.shape == (image.size,) and problem.hard.dtype == np.int32
    assert problem.lam == 2.0 and problem.beta > 0 and problem.colour_model == "gmm"
    assert problem.laplacian.shape == (image.size, image.size)
    assert len(problem.models) == 3


def _setup():
    image, truth, strokes = shapes_image(k=2, size=24)
    return image, strokes


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(k=1), "k must be between 2 and 32"),
        (dict(k=33), "k must be between 2 and 32"),
        (dict(strokes=np.zeros((3, 3), int)), "strokes image shape"),
        (dict(hard=np.zeros((3, 3), int)), "hard image shape"),
        (dict(strokes="bad_value"), "strokes values must lie in 0..2"),
        (dict(hard=-1), "hard values must lie in 0..2"),
        (dict(k=3), "label 3 has no strokes"),
        (dict(rect=(0, 0, 30, 5)), "not inside"),
        (dict(rect=(-1, 0, 5, 5)), "not inside"),
        (dict(rect=(2, 2, 0, 5)), "rectangle is empty"),
        (dict(k=3, rect=(2, 2, 5, 5)), r"label 3 has no strokes \(with a rectangle, label 1 takes"),
        (dict(lam=-1.0), "lambda must be finite"),
        (dict(lam=np.nan), "lambda must be finite"),
        (dict(beta=-0.5), "beta must be finite"),
        (dict(beta=np.inf), "beta must be finite"),
        (dict(colour_model="kde"), "unknown colour model"),
        (dict(strokes=0.5), "integer labels"),
    ],
)
def test_build_problem_validation(kwargs, match):
    image, strokes = _setup()
    kwargs = dict(kwargs)
    k = kwargs.pop("k", 2)
    if isinstance(kwargs.get("strokes"), str):
        kwargs["strokes"] = np.where(strokes == 1, 3, strokes)
    elif isinstance(kwargs.get("strokes"), float):
        kwargs["strokes"] = strokes + kwargs["strokes"]
    if isinstance(kwargs.get("hard"), int):
        kwargs["hard"] = np.full(image.shape, kwargs["hard"])
    kwargs.setdefault("strokes", strokes)
    with pytest.raises(ValueError, match=match):
        build_problem(image, k=k, **kwargs)


@pytest.mark.parametrize(
    "image, match",
    [
        (np.full((5, 5), np.nan), "NaN"),
        (np.zeros((2, 2, 2, 2)), "dimensions"),
        (np.zeros((0, 0)), "empty"),
    ],
)
def test_build_problem_bad_image(image, match):
    with pytest.raises(ValueError, match=match):
        build_problem(image, None, 2)


def test_hard_pixels_train_their_label():
    image, truth, strokes = shapes_image(k=2, size=24)
    hard = np.where(strokes == 2, 2, 0)
    problem = build_problem(image, np.where(strokes == 1, 1, 0), 2, hard=hard)
    np.testing.assert_array_equal(problem.hard.reshape(image.shape), hard)
    labels = mincut(problem)
    assert np.mean(labels == truth) > 0.95


def test_rectangle_mode():
    rng = np.random.default_rng(4)
    truth = np.full((40, 40), 2)
    truth[12:28, 10:30] = 1
    image = np.where(truth[..., None] == 1, [0.8, 0.3, 0.2], [0.2, 0.4, 0.7])
    image = np.clip(image + rng.normal(0, 0.05, image.shape), 0, 1)
    problem = build_problem(image, None, 2, rect=(6, 8, 28, 24))
    hard = problem.hard.reshape(40, 40)
    assert np.all(hard[:8] == 2) and np.all(hard[8:32, 6:34] == 0) and np.all(hard[:, 34:] == 2)
    labels = mincut(problem)
    assert np.mean(labels == truth) > 0.98
    refined = refine_colour_models(problem, image, rounds=2)
    assert not np.array_equal(refined.unary, problem.unary)
    assert np.mean(mincut(refined) == truth) > 0.98
    bad_hard = np.zeros((40, 40), int)
    bad_hard[0, 0] = 1
    with pytest.raises(ValueError, match="outside the rectangle"):
        build_problem(image, None, 2, rect=(6, 8, 28, 24), hard=bad_hard)


def test_histogram_and_grabcut_rounds_k3():
    image, truth, strokes = shapes_image(k=3)
    for problem in (build_problem(image, strokes, 3, colour_model="histogram"),
                    refine_colour_models(build_problem(image, strokes, 3), image, rounds=1)):
        assert np.all(np.isfinite(problem.unary))
