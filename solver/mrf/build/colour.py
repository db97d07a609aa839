"""Colour models for the unary costs: a Gaussian mixture (GrabCut style) and a smoothed histogram.

Colours are float rows in ``[0, 1]^C`` (see :func:`solver.mrf.build.graph.image_to_float`); both
models are densities on that cube, so their negative log-likelihoods are comparable.
"""

from __future__ import annotations

import logging
from typing import Protocol

import numpy as np
from scipy.ndimage import gaussian_filter

from solver.mrf.build.checks import RECT_BACKGROUND, RECT_OBJECT
from solver.mrf.build.gmm import DensityModel, GaussianMixtureModel, as_samples
from solver.names import COLOUR_MODELS
from solver.mrf.build.graph import image_to_float

__all__ = [
    "COLOUR_MODELS",
    "ColourModel",
    "GaussianMixtureModel",
    "HistogramModel",
    "fit_colour_models",
    "unary_costs",
]

logger = logging.getLogger(__name__)

class ColourModel(Protocol):
    """What a colour model offers: fit to samples, score colours."""

    def fit(self, samples: np.ndarray, seed: int = 0) -> "ColourModel":
        """Fit to ``(m, C)`` colour samples."""

    def neg_log_likelihood(self, colours: np.ndarray) -> np.ndarray:
        """``-log p(c)`` for ``(m, C)`` colours."""


class HistogramModel(DensityModel):
    """Smoothed colour histogram density on ``[0, 1]^C``.

    Parameters
    ----------
    bins : int, default 16
        Bins per channel.
    sigma : float, default 1.0
        Gaussian smoothing, in bins.
    floor : float, default 1.0
        Laplace pseudo-count added to every bin after smoothing, so no colour has zero density.
    """

    def __init__(self, bins: int = 16, sigma: float = 1.0, floor: float = 1.0) -> None:
        if bins < 1:
            raise ValueError(f"bins must be >= 1, got {bins}")
        self.bins = int(bins)
        self.sigma = float(sigma)
        self.floor = float(floor)
        self.log_density_: np.ndarray | None = None

    def _bin_index(self, x: np.ndarray) -> np.ndarray:
        """Flat bin index of each colour row."""
        idx = np.clip((x * self.bins).astype(np.int64), 0, self.bins - 1)
        return np.ravel_multi_index(tuple(idx.T), (self.bins,) * x.shape[1])

    def fit(self, samples: np.ndarray, seed: int = 0) -> "HistogramModel":
        """Fit the histogram to colour samples.

        Parameters
        ----------
        samples : numpy.ndarray
            ``(m, C)`` colours.
        seed : int, default 0
            Unused (the fit is deterministic); kept for a common interface.

        Returns
        -------
        HistogramModel
            ``self``, fitted.
        """
        x = as_samples(samples)
        c = x.shape[1]
        shape = (self.bins,) * c
        counts = np.bincount(self._bin_index(x), minlength=self.bins**c).reshape(shape)
        smooth = gaussian_filter(counts.astype(np.float64), self.sigma, mode="nearest")
        smooth *= x.shape[0] / max(smooth.sum(), 1e-300)
        smooth += self.floor
        prob = smooth / smooth.sum()
        self.log_density_ = np.log(prob).ravel() + c * np.log(self.bins)  # per unit volume
        self.channels_ = c
        return self

    def _neg_log_likelihood(self, x: np.ndarray) -> np.ndarray:
        return -self.log_density_[self._bin_index(x)]


def _make_model(model: str) -> ColourModel:
    """Instantiate a colour model by name."""
    if model == "gmm":
        return GaussianMixtureModel()
    if model == "histogram":
        return HistogramModel()
    raise ValueError(f"unknown colour model {model!r}: expected one of {', '.join(COLOUR_MODELS)}")


def fit_colour_models(
    image: np.ndarray,
    strokes: np.ndarray,
    k: int,
    *,
    model: str = "gmm",
    rect: tuple[int, int, int, int] | None = None,
    seed: int = 0,
    unlabelled: int | None = None,
) -> list[ColourModel]:
    """Fit one colour model per label from labelled seed pixels.

    Parameters
    ----------
    image : numpy.ndarray
        Grey, RGB or RGBA image of shape ``(H, W[, C])``.
    strokes : numpy.ndarray
        ``(H, W)`` int seed labels: 0 = unlabelled, ``k`` = label ``k`` (1..K).
    k : int
        Number of labels K.
    model : {"gmm", "histogram"}, default "gmm"
        Colour model type.
    rect : tuple of int, optional
        GrabCut rectangle ``(x, y, w, h)``: label 1 is fitted to the unlabelled pixels inside
        it plus label-1 seeds, label 2 to the pixels outside plus label-2 seeds, labels 3..K to
        their seeds. The rectangle is assumed already validated (see
        :func:`solver.mrf.build_problem`).
    seed : int, default 0
        Random seed for the fits.
    unlabelled : int, optional
        Without a rectangle: the label whose model also takes every unlabelled pixel, as
        GrabCut starts the pixels no hint covers as probable background (then a colour found
        nowhere in the object's strokes is the background's, wherever it is). None: each label
        is fitted to its seeds alone.

    Returns
    -------
    list
        K fitted models; entry ``k - 1`` is the model of label ``k``.

    Raises
    ------
    ValueError
        If a label has no seed pixels.
    """
    colours = image_to_float(image)
    h, w, c = colours.shape
    seeds = np.asarray(strokes).reshape(h, w).astype(np.int64).copy()
    if rect is not None:
        x0, y0, rw, rh = (int(v) for v in rect)
        inside = np.zeros((h, w), dtype=bool)
        inside[y0 : y0 + rh, x0 : x0 + rw] = True
        seeds[(seeds == 0) & inside] = RECT_OBJECT
        seeds[~inside] = RECT_BACKGROUND
    elif unlabelled is not None:
        if not 1 <= int(unlabelled) <= k:
            raise ValueError(f"unlabelled must be a label from 1 to {k}, got {unlabelled}")
        seeds[seeds == 0] = int(unlabelled)
    flat = colours.reshape(-1, c)
    seeds = seeds.ravel()
    models = []
    for label in range(1, k + 1):
        samples = flat[seeds == label]
        if samples.shape[0] == 0:
            raise ValueError(f"label {label} has no strokes")
        models.append(_make_model(model).fit(samples, seed=seed + label))
    return models


def unary_costs(image: np.ndarray, models: list[ColourModel]) -> np.ndarray:
    """Unary costs ``d_ik = -log p_k(c_i)``, pixel-major (``i = row * W + col``).

    Parameters
    ----------
    image : numpy.ndarray
        Grey, RGB or RGBA image.
    models : list
        One fitted colour model per label.

    Returns
    -------
    numpy.ndarray
        ``(n, K)`` float64.
    """
    colours = image_to_float(image)
    flat = colours.reshape(-1, colours.shape[2])
    return np.stack([m.neg_log_likelihood(flat) for m in models], axis=1)
