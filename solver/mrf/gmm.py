"""Full-covariance Gaussian mixture colour model (k-means++ start, a few EM steps), vectorised."""

from __future__ import annotations

import logging

import numpy as np
from scipy.special import logsumexp

from .colour_kernels import gmm_neg_log_likelihood

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
    assign = np.zeros(m, dtype=np.int64)
    for _ in range(iters):
        assign = _sq_dist(x, centres).argmin(1)
        counts = np.bincount(assign, minlength=g)
        sums = np.zeros_like(centres)
        np.add.at(sums, assign, x)
        nonempty = counts > 0
        centres[nonempty] = sums[nonempty] / counts[nonempty, None]
    return assign


class GaussianMixtureModel:
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
        nk = resp.sum(0) + 1e-10
        self.weights_ = nk / nk.sum()
        self.means_ = (resp.T @ x) / nk[:, None]
        diff = x[None, :, :] - self.means_[:, None, :]  # (G, m, C)
        cov = np.einsum("gm,gmc,gmd->gcd", resp.T, diff, diff) / nk[:, None, None]
        self.covariances_ = cov + self.reg * np.eye(x.shape[1])[None]

    def _cholesky(self) -> tuple[np.ndarray, np.ndarray]:
        """The covariances' lower Cholesky factors ``(G, C, C)`` and log-determinants ``(G,)``."""
        chol = np.linalg.cholesky(self.covariances_)
        return chol, 2.0 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(1)

    def _component_log_prob(self, x: np.ndarray) -> np.ndarray:
        """``log(w_g N(x | mu_g, S_g))`` for every sample and component, ``(m, G)``."""
        chol, logdet = self._cholesky()
        diff = x[None, :, :] - self.means_[:, None, :]  # (G, m, C)
        sol = np.linalg.solve(chol, diff.transpose(0, 2, 1))  # (G, C, m)
        maha = (sol * sol).sum(1).T  # (m, G)
        c = x.shape[1]
        return np.log(self.weights_)[None] - 0.5 * (maha + logdet[None] + c * _LOG_2PI)

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
            logp = self._component_log_prob(x)
            resp = np.exp(logp - logsumexp(logp, axis=1, keepdims=True))
            self._set_params(x, resp)
        logger.debug("GMM fitted: %d samples, %d components", x.shape[0], g)
        return self

    def neg_log_likelihood(self, colours: np.ndarray) -> np.ndarray:
        """Negative log density ``-log p(c)`` of each colour row.

        Parameters
        ----------
        colours : numpy.ndarray
            ``(m, C)`` colours.

        Returns
        -------
        numpy.ndarray
            ``(m,)`` float64.
        """
        if self.means_ is None:
            raise ValueError("GaussianMixtureModel is not fitted")
        x = np.ascontiguousarray(as_samples(colours))
        if x.shape[1] != self.means_.shape[1]:
            raise ValueError(f"expected {self.means_.shape[1]} colour channels, got {x.shape[1]}")
        chol, logdet = self._cholesky()
        log_norm = np.log(self.weights_) - 0.5 * (logdet + x.shape[1] * _LOG_2PI)
        # one compiled pass per pixel (the (G, m, C) numpy temporaries cost seconds per megapixel)
        return gmm_neg_log_likelihood(x, np.ascontiguousarray(self.means_),
                                      np.ascontiguousarray(chol), log_norm)
