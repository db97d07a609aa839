"""Full-covariance Gaussian mixture colour model (k-means++ start, a few EM steps).

The k-means iterations and the EM steps are compiled passes over the samples
(:mod:`solver.mrf.build.colour_kernels`), not numpy's ``(G, m, C)`` temporaries, ``einsum`` and
batched solves: a fit is paid for every label on every run (measured: docs/decisions.md, The photo's
build).
"""

from __future__ import annotations

import logging

import numpy as np
from solver.backend.threads import threaded
from solver.mrf.build.colour_kernels import (gmm_moments, gmm_neg_log_likelihood,
                                             gmm_responsibilities, kmeans_assign)

__all__ = ["GaussianMixtureModel", "as_samples"]

logger = logging.getLogger(__name__)

_LOG_2PI = float(np.log(2.0 * np.pi))


def as_samples(samples: np.ndarray) -> np.ndarray:
    """Validate colour samples and return them as a 2-D float64 array."""
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"colour samples must be a non-empty (m, C) array, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("colour samples contain NaN or infinite values")
    return x


def _sq_dist(x: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances, ``(m, G)``."""
    d = (x * x).sum(1)[:, None] - 2.0 * x @ centres.T + (centres * centres).sum(1)[None, :]
    return np.maximum(d, 0.0)


def _kmeans(x: np.ndarray, g: int, rng: np.random.Generator, iters: int = 10) -> np.ndarray:
    """k-means++ seeding followed by a few Lloyd iterations; returns hard assignments ``(m,)``."""
    m = x.shape[0]
    centres = np.empty((g, x.shape[1]))
    centres[0] = x[rng.integers(m)]
    closest = _sq_dist(x, centres[:1])[:, 0]
    for c in range(1, g):
        total = closest.sum()
        pick = rng.integers(m) if total <= 0 else rng.choice(m, p=closest / total)
        centres[c] = x[pick]
        closest = np.minimum(closest, _sq_dist(x, centres[c : c + 1])[:, 0])
    return kmeans_assign(x, centres, iters)


class DensityModel:
    """A colour density fitted to samples; subclasses fit it (setting ``channels_``) and
    evaluate it on checked colours (``_neg_log_likelihood``)."""

    channels_: int | None = None

    def _neg_log_likelihood(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def neg_log_likelihood(self, colours: np.ndarray) -> np.ndarray:
        """Negative log density ``-log p(c)`` of each colour row.

        Parameters
        ----------
        colours : numpy.ndarray
            ``(m, C)`` colours, ``C`` the channels the model was fitted on.

        Returns
        -------
        numpy.ndarray
            ``(m,)`` float64.

        Raises
        ------
        ValueError
            The model is not fitted, or the colours have another number of channels.
        """
        if self.channels_ is None:
            raise ValueError(f"{type(self).__name__} is not fitted")
        x = np.ascontiguousarray(as_samples(colours))
        if x.shape[1] != self.channels_:
            raise ValueError(f"expected {self.channels_} colour channels, got {x.shape[1]}")
        return self._neg_log_likelihood(x)


class GaussianMixtureModel(DensityModel):
    """Full-covariance Gaussian mixture fitted by k-means and a few EM iterations.

    Parameters
    ----------
    n_components : int, default 5
        Number of components (reduced to the number of samples when there are fewer).
    reg : float, default 1e-4
        Added to the covariance diagonals (colour units in ``[0, 1]``; ~2.5 grey levels of
        standard deviation), so flat regions do not give singular covariances.
    em_iters : int, default 8
        EM iterations after the k-means initialisation.
    max_samples : int, default 20000
        Samples beyond this are randomly subsampled before fitting.
    """

    def __init__(
        self, n_components: int = 5, reg: float = 1e-4, em_iters: int = 8, max_samples: int = 20000
    ) -> None:
        if n_components < 1:
            raise ValueError(f"n_components must be >= 1, got {n_components}")
        self.n_components = int(n_components)
        self.reg = float(reg)
        self.em_iters = int(em_iters)
        self.max_samples = int(max_samples)
        self.weights_: np.ndarray | None = None
        self.means_: np.ndarray | None = None
        self.covariances_: np.ndarray | None = None

    def _set_params(self, x: np.ndarray, resp: np.ndarray) -> None:
        """M-step: weights, means and regularised covariances from responsibilities ``(m, G)``."""
        self.weights_, self.means_, self.covariances_ = gmm_moments(
            x, np.ascontiguousarray(resp, dtype=np.float64), self.reg)

    def _cholesky(self) -> tuple[np.ndarray, np.ndarray]:
        """The covariances' lower Cholesky factors ``(G, C, C)`` and log-determinants ``(G,)``."""
        chol = np.linalg.cholesky(self.covariances_)
        return chol, 2.0 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(1)

    def _log_norm(self, chol_logdet: tuple[np.ndarray, np.ndarray], c: int) -> np.ndarray:
        """``log w_g - (log det S_g + C log 2 pi) / 2`` per component."""
        return np.log(self.weights_) - 0.5 * (chol_logdet[1] + c * _LOG_2PI)

    def fit(self, samples: np.ndarray, seed: int = 0) -> "GaussianMixtureModel":
        """Fit the mixture to colour samples.

        Parameters
        ----------
        samples : numpy.ndarray
            ``(m, C)`` colours.
        seed : int, default 0
            Seed for subsampling and the k-means++ initialisation.

        Returns
        -------
        GaussianMixtureModel
            ``self``, fitted.
        """
        x = as_samples(samples)
        rng = np.random.default_rng(seed)
        if x.shape[0] > self.max_samples:
            x = x[rng.choice(x.shape[0], self.max_samples, replace=False)]
        g = min(self.n_components, x.shape[0])
        assign = _kmeans(x, g, rng)
        self._set_params(x, np.eye(g)[assign])
        for _ in range(self.em_iters):
            factors = self._cholesky()
            resp = gmm_responsibilities(x, self.means_, factors[0], self._log_norm(factors,
                                                                                   x.shape[1]))
            self._set_params(x, resp)
        self.channels_ = x.shape[1]
        logger.debug("GMM fitted: %d samples, %d components", x.shape[0], g)
        return self

    def _neg_log_likelihood(self, x: np.ndarray) -> np.ndarray:
        factors = self._cholesky()
        # one compiled pass per pixel (no (G, m, C) numpy temporaries)
        return threaded(gmm_neg_log_likelihood, x, np.ascontiguousarray(self.means_),
                        np.ascontiguousarray(factors[0]), self._log_norm(factors, x.shape[1]))
