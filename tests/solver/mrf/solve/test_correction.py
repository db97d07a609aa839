"""A correction (:func:`solver.mrf.segment` / ``prepare`` with ``previous``): the colour models
refitted to the last answer with the new strokes, and the solve started from that answer.

What a person expects of a correction stroke: its pixels take its label, the region it was
drawn in follows it, and what was right stays right. Each test first shows its premise (the
last answer is wrong where the stroke goes)."""

import numpy as np
import pytest

from solver.mrf import segment
from solver.mrf.solve.segment import prepare
from tests.solver._mrf_helpers import shapes_image


@pytest.fixture(scope="module")
def case():
    image, truth, strokes = shapes_image(seed=3, k=2, size=48, noise=0.12)
    first, _ = segment(image, strokes, 2)
    return image, truth, strokes, first.labels


def test_a_correction_stroke_takes_back_the_region_it_is_drawn_in(case):
    image, truth, strokes, first = case
    assert np.mean(first == truth) > 0.95  # (the premise: a good first answer)
    # a last answer wrong on a block of the object: label 2 there
    obj = np.argwhere(truth == 1)
    cy, cx = obj[len(obj) // 2]
    wrong = first.copy()
    block = (slice(max(0, cy - 4), cy + 4), slice(max(0, cx - 4), cx + 4))
    wrong[block] = np.where(truth[block] == 1, 2, wrong[block])
    assert np.sum((wrong != truth)[block]) >= 20
    fix = strokes.copy()
    fix[cy - 1:cy + 2, cx - 1:cx + 2] = 1  # a small object stroke in the middle of it
    res, problem = segment(image, fix, 2, previous=wrong)
    assert np.all(res.labels[fix == 1] == 1) and np.all(res.labels[fix == 2] == 2)
    assert np.sum((res.labels != truth)[block]) <= 2  # the block follows the stroke
    assert np.mean(res.labels == truth) >= np.mean(first == truth) - 0.005  # the rest stays
    assert res.energy == pytest.approx(problem.energy(res.labels), rel=1e-9)


def test_a_correction_starts_from_the_last_answer_and_solves_no_rounds(case):
    image, _, strokes, first = case
    solves = []
    prep = prepare(image, strokes, 2, previous=first,
                   solve=lambda prob, prev: solves.append(prob))
    assert solves == [] and prep.results == [] and prep.rounds == 1
    np.testing.assert_array_equal(prep.x0, np.eye(2)[first.ravel() - 1])
    # the models are the last answer's: each label's pixels score best under their own model
    unary = prep.problem.unary.reshape(first.size, 2)
    mine = unary[np.arange(first.size), first.ravel() - 1]
    other = unary[np.arange(first.size), 2 - first.ravel()]
    assert np.mean(mine < other) > 0.9


def test_seeds_override_the_last_answer_in_the_start(case):
    image, _, strokes, first = case
    flipped = 3 - first  # a last answer wrong everywhere, strokes included
    prep = prepare(image, strokes, 2, previous=flipped)
    start = prep.x0.argmax(axis=1).reshape(first.shape) + 1
    seeds = strokes > 0
    np.testing.assert_array_equal(start[seeds], strokes[seeds])
    np.testing.assert_array_equal(start[~seeds], flipped[~seeds])


def test_a_last_answer_of_another_size_or_without_a_label_is_not_used(case):
    image, _, strokes, first = case
    plain, _ = segment(image, strokes, 2)
    other_size, _ = segment(image, strokes, 2, previous=first[:-1])
    np.testing.assert_array_equal(other_size.labels, plain.labels)
    # a rectangle whose last answer lost the object (all label 2) and no stroke of label 1:
    # nothing to fit label 1 to, so the models come from the drawing, and no start
    rect = (8, 8, 30, 30)
    prep = prepare(image, None, 2, rect=rect, previous=np.full_like(first, 2))
    assert prep.x0 is None and prep.rounds == 0
    np.testing.assert_array_equal(prep.problem.unary,
                                  prepare(image, None, 2, rect=rect, rounds=0).problem.unary)
