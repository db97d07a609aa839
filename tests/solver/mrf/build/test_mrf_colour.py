"""Colour models and unary costs."""

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from solver.mrf import GaussianMixtureModel, HistogramModel, fit_colour_models, unary_costs


def _two_clusters(seed=0, m=600):
    rng = np.random.default_rng(seed)
    a = rng.normal([0.2, 0.3, 0.25], 0.03, (m, 3))
    b = rng.normal([0.8, 0.7, 0.35], 0.05, (m, 3))
    return a, b


def test_gmm_recovers_two_clusters():
    a, b = _two_clusters()
    gmm = GaussianMixtureModel(n_components=2).fit(np.vstack([a, b]), seed=3)
    order = np.argsort(gmm.means_[:, 0])
    np.testing.assert_allclose(gmm.means_[order[0]], [0.2, 0.3, 0.25], atol=0.01)
    np.testing.assert_allclose(gmm.means_[order[1]], [0.8, 0.7, 0.35], atol=0.01)
    np.testing.assert_allclose(gmm.weights_, [0.5, 0.5], atol=0.02)
    np.testing.assert_allclose(np.sqrt(np.diagonal(gmm.covariances_[order[1]])), 0.05, atol=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("cls", [GaussianMixtureModel, HistogramModel])
def test_models_separate_colours(cls):
    a, b = _two_clusters(1)
    ma, mb = cls().fit(a, seed=0), cls().fit(b, seed=0)
    assert np.mean(ma.neg_log_likelihood(a) < mb.neg_log_likelihood(a)) > 0.99
    assert np.mean(mb.neg_log_likelihood(b) < ma.neg_log_likelihood(b)) > 0.99


@pytest.mark.parametrize("cls", [GaussianMixtureModel, HistogramModel])
def test_density_integrates_to_one_in_1d(cls):
    rng = np.random.default_rng(2)
    model = cls().fit(np.clip(rng.normal(0.5, 0.1, (500, 1)), 0, 1), seed=0)
    grid = (np.arange(4000) + 0.5) / 4000
    mass = np.exp(-model.neg_log_likelihood(grid[:, None])).mean()
    assert mass == pytest.approx(1.0, abs=0.02)


def test_gmm_degenerate_samples_are_finite():
    gmm = GaussianMixtureModel().fit(np.full((3, 3), 0.4))
    assert np.all(np.isfinite(gmm.neg_log_likelihood(np.random.default_rng(0).random((10, 3)))))


def test_unary_costs_shape_and_order():
    image = np.zeros((6, 8, 3))
    image[:, 4:] = 1.0
    strokes = np.zeros((6, 8), int)
    strokes[:, 0] = 1
    strokes[:, 7] = 2
    for kind in ("gmm", "histogram"):
        models = fit_colour_models(image, strokes, 2, model=kind)
        d = unary_costs(image, models)
        assert d.shape == (48, 2) and d.dtype == np.float64
        left = np.arange(48) % 8 < 4
        assert np.all(d[left, 0] < d[left, 1]) and np.all(d[~left, 1] < d[~left, 0])


def test_fit_colour_models_errors():
    image = np.zeros((4, 4))
    strokes = np.zeros((4, 4), int)
    strokes[0, 0] = 1
    with pytest.raises(ValueError, match="label 2 has no strokes"):
        fit_colour_models(image, strokes, 2)
    strokes[3, 3] = 2
    with pytest.raises(ValueError, match="unknown colour model"):
        fit_colour_models(image, strokes, 2, model="kde")
    with pytest.raises(ValueError, match="not fitted"):
        GaussianMixtureModel().neg_log_likelihood(np.zeros((1, 3)))


@pytest.mark.parametrize("channels", [1, 3])
def test_gmm_negative_log_density_is_the_mixture_density(channels):
    rng = np.random.default_rng(4)
    samples = np.clip(rng.normal(0.5, 0.15, (800, channels)), 0, 1)
    gmm = GaussianMixtureModel(n_components=3).fit(samples, seed=1)
    points = np.vstack([rng.random((50, channels)), np.full((1, channels), 40.0)])
    density = sum(w * multivariate_normal(mu, cov).pdf(points)
                  for w, mu, cov in zip(gmm.weights_, gmm.means_, gmm.covariances_))
    nll = gmm.neg_log_likelihood(points)
    np.testing.assert_allclose(nll[:-1], -np.log(density[:-1]), rtol=1e-10)
    # far from every component the density underflows, the negative log of it does not
    log_terms = [np.log(w) + multivariate_normal(mu, cov).logpdf(points[-1])
                 for w, mu, cov in zip(gmm.weights_, gmm.means_, gmm.covariances_)]
    assert nll[-1] == pytest.approx(-logsumexp(log_terms), rel=1e-10)


def test_gmm_rejects_colours_with_other_channels():
    gmm = GaussianMixtureModel(n_components=2).fit(np.random.default_rng(0).random((50, 3)))
    with pytest.raises(ValueError, match="3 colour channels, got 1"):
        gmm.neg_log_likelihood(np.zeros((4, 1)))
