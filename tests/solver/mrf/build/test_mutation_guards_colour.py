"""The colour models' densities against the documented formulas, worked out here by hand or by
a plain transcription (no scipy), and what the fit's seed does.

The histogram (``HistogramModel``, docs: "Smoothed colour histogram density on [0, 1]^C"):
``bins`` bins per channel (a colour ``v`` falls in bin ``floor(v * bins)``, colours outside
the cube in the nearest edge bin), the counts smoothed by a Gaussian of ``sigma`` bins (the
edge bins repeated beyond the edge), scaled back to the number of samples, plus ``floor`` in
every bin, normalised, and divided by the bin's volume ``bins ** -C``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from solver.mrf import GaussianMixtureModel, HistogramModel, fit_colour_models, unary_costs


def smooth_nearest(counts: np.ndarray, sigma: float) -> np.ndarray:
    """Counts smoothed along every axis by a Gaussian of ``sigma`` bins cut at 4 sigma, the
    edge bins repeated beyond the edge, written out as sums."""
    out = counts.astype(float)
    if sigma == 0:
        return out
    r = int(4 * sigma + 0.5)
    w = [math.exp(-t * t / (2 * sigma * sigma)) for t in range(-r, r + 1)]
    w = [x / sum(w) for x in w]
    for axis in range(out.ndim):
        moved = np.moveaxis(out, axis, 0)
        n = moved.shape[0]
        new = np.zeros_like(moved)
        for j in range(n):
            for t in range(-r, r + 1):
                new[j] += w[t + r] * moved[min(max(j + t, 0), n - 1)]
        out = np.moveaxis(new, 0, axis)
    return out


def density(samples: np.ndarray, colours: np.ndarray, bins: int, sigma: float,
            floor: float) -> np.ndarray:
    """The documented histogram density of ``colours`` fitted on ``samples``."""
    c = samples.shape[1]
    counts = np.zeros((bins,) * c)
    index = lambda v: tuple(min(max(int(math.floor(x * bins)), 0), bins - 1) for x in v)
    for v in samples:
        counts[index(v)] += 1
    smooth = smooth_nearest(counts, sigma)
    smooth = smooth * len(samples) / smooth.sum() + floor
    prob = smooth / smooth.sum()
    return np.array([prob[index(v)] * bins ** c for v in colours])


def test_a_histogram_without_smoothing_is_the_counts_plus_the_pseudo_count():
    """Four bins, no smoothing, a pseudo-count of 1: counts 2, 1, 0, 2 (1.0 and 1.5 fall in the
    last bin, -0.2 in the first) give densities 4 * (3, 2, 1, 3) / 9."""
    samples = np.array([[0.1], [-0.2], [0.3], [1.0], [1.5]])
    model = HistogramModel(bins=4, sigma=0.0, floor=1.0).fit(samples)
    colours = np.array([[0.0], [0.24], [0.25], [0.6], [0.75], [0.99], [1.0], [-1.0], [7.0]])
    want = 4 * np.array([3, 3, 2, 1, 3, 3, 3, 3, 3]) / 9
    np.testing.assert_allclose(model.neg_log_likelihood(colours), -np.log(want), rtol=1e-12)
    half = HistogramModel(bins=4, sigma=0.0, floor=0.5).fit(samples)
    np.testing.assert_allclose(half.neg_log_likelihood(colours),
                               -np.log(4 * np.array([2.5, 2.5, 1.5, .5, 2.5, 2.5, 2.5, 2.5, 2.5])
                                       / 7), rtol=1e-12)


@pytest.mark.parametrize("channels, m", [(1, 1), (1, 7), (2, 9), (3, 25)])
def test_the_default_histogram_is_the_documented_one(channels, m):
    """16 bins per channel, smoothed by one bin, a pseudo-count of 1 (the defaults the class
    documents), for one sample alone in the second bin (part of whose smoothed mass falls
    beyond the edge) and for samples spread over the cube."""
    rng = np.random.default_rng(channels * 10 + m)
    samples = rng.random((m, channels)) if m > 1 else np.full((1, channels), 1.5 / 16)
    colours = np.vstack([rng.random((40, channels)), samples])
    model = HistogramModel().fit(samples)
    np.testing.assert_allclose(model.neg_log_likelihood(colours),
                               -np.log(density(samples, colours, 16, 1.0, 1.0)), rtol=1e-10)
    other = HistogramModel(bins=5, sigma=0.7, floor=0.3).fit(samples)
    np.testing.assert_allclose(other.neg_log_likelihood(colours),
                               -np.log(density(samples, colours, 5, 0.7, 0.3)), rtol=1e-10)


def test_one_bin_is_the_uniform_density_and_none_is_refused():
    model = HistogramModel(bins=1).fit(np.random.default_rng(0).random((20, 3)))
    np.testing.assert_allclose(model.neg_log_likelihood(np.random.default_rng(1).random((5, 3))),
                               0.0, atol=1e-12)
    with pytest.raises(ValueError) as err:
        HistogramModel(bins=0)
    assert str(err.value) == "bins must be >= 1, got 0"


def test_a_histogram_used_before_fitting_or_on_other_channels_says_so():
    with pytest.raises(ValueError) as err:
        HistogramModel().neg_log_likelihood(np.zeros((2, 3)))
    assert str(err.value) == "HistogramModel is not fitted"
    model = HistogramModel().fit(np.random.default_rng(0).random((10, 3)))
    with pytest.raises(ValueError) as err:
        model.neg_log_likelihood(np.zeros((4, 1)))
    assert str(err.value) == "expected 3 colour channels, got 1"


def test_an_unknown_colour_model_names_the_known_ones():
    image = np.zeros((4, 4))
    strokes = np.zeros((4, 4), int)
    strokes[0, 0], strokes[3, 3] = 1, 2
    with pytest.raises(ValueError) as err:
        fit_colour_models(image, strokes, 2, model="kde")
    assert str(err.value) == "unknown colour model 'kde': expected one of gmm, histogram"


def _job():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 255, (12, 16, 3), dtype=np.uint8)
    strokes = np.zeros((12, 16), int)
    strokes[:6], strokes[6:] = 1, 2
    return image, strokes


def test_the_seed_chooses_the_mixtures_fits_and_repeats_them():
    """On colours spread over the cube the mixture's fit depends on its start: another seed
    gives other unaries (the premise), the same seed the same ones, and no seed those of seed 0
    (the documented default)."""
    image, strokes = _job()
    run = lambda **kw: unary_costs(image, fit_colour_models(image, strokes, 2, **kw))
    assert not np.allclose(run(seed=3), run(seed=4))
    np.testing.assert_array_equal(run(seed=3), run(seed=3))
    np.testing.assert_array_equal(run(), run(seed=0))


def test_each_label_gets_a_start_of_its_own():
    """Two labels trained on the same colours (the photo twice, label 1 on the top copy, label
    2 on the bottom one) are fitted from different starts: from one start for all, their
    models, and so their unaries, would be the same."""
    image, _ = _job()
    twice = np.vstack([image, image])
    strokes = np.zeros(twice.shape[:2], int)
    strokes[:12], strokes[12:] = 1, 2
    models = fit_colour_models(twice, strokes, 2)
    assert all(isinstance(m, GaussianMixtureModel) for m in models)
    d = unary_costs(twice, models)
    assert not np.allclose(d[:, 0], d[:, 1])


def test_the_unlabelled_label_must_be_one_of_the_k():
    """``unlabelled`` names a label 1..K; the lowest and highest are taken, 0 and K + 1 are
    refused in one sentence."""
    rng = np.random.default_rng(0)
    image = rng.random((12, 12, 3))
    strokes = np.zeros((12, 12), np.int32)
    strokes[:2] = 1
    strokes[-2:] = 2
    strokes[5, :3] = 3
    for label in (1, 3):
        models = fit_colour_models(image, strokes, 3, unlabelled=label, seed=0)
        assert len(models) == 3
    for label in (0, 4):
        with pytest.raises(ValueError, match="unlabelled"):
            fit_colour_models(image, strokes, 3, unlabelled=label, seed=0)
