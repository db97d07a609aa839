"""numpy → pixels: stroke layers, probability maps, label overlays and disagreement masks, for
the app's canvas (Qt-free; :mod:`segapp.ui.render` turns them into images)."""

from __future__ import annotations

import numpy as np

from segapp.core.io import label_palette, to_rgb8

#: Opacity of painted strokes and of hard constraints on the canvas.
SOFT_ALPHA = 200
HARD_ALPHA = 235
#: Colour of the pixels where ADMM and the reference disagree.
MAGENTA = (255, 0, 255)


def palette(k: int) -> np.ndarray:
    """(K, 3) uint8 label colours; label k uses row k-1 (:func:`segapp.core.io.label_palette`)."""
    return np.asarray(label_palette(k), np.uint8)


def display_rgb(image: np.ndarray) -> np.ndarray:
    """Any (H,W) / (H,W,1|2|3|4) image as contiguous (H,W,3) uint8 for display: the photo's
    pixels as the overlay export and the solver see them (:func:`segapp.core.io.to_rgb8`)."""
    return to_rgb8(image)


def layers_rgba(strokes: np.ndarray, hard: np.ndarray, pal: np.ndarray,
                origin: tuple[int, int] = (0, 0)) -> np.ndarray:
    """Render soft strokes (translucent) and hard constraints (hatched, outlined) as RGBA.

    Parameters
    ----------
    strokes, hard : numpy.ndarray
        (h, w) label crops, 0 = none.
    pal : numpy.ndarray
        (K, 3) palette.
    origin : tuple of int
        ``(y, x)`` of the crop in the full image, so hatching lines up across crops.
    """
    h, w = strokes.shape
    out = np.zeros((h, w, 4), np.uint8)
    lut = np.zeros((256, 3), np.uint8)
    lut[1:len(pal) + 1] = pal
    soft = strokes > 0
    out[soft, :3] = lut[strokes[soft]]
    out[soft, 3] = SOFT_ALPHA
    hm = hard > 0
    if hm.any():
        yy, xx = np.mgrid[origin[0]:origin[0] + h, origin[1]:origin[1] + w]
        stripe = ((xx + yy) // 3) % 2 == 0
        col = lut[hard].astype(np.int16)
        dark = (col * 0.45).astype(np.int16)
        rgb = np.where(stripe[:, :, None], col, dark).astype(np.uint8)
        out[hm, :3] = rgb[hm]
        out[hm, 3] = HARD_ALPHA
        # outline: hard pixels with a differently-labelled 4-neighbour
        p = np.pad(hard, 1, mode="edge")
        edge = hm & ((p[:-2, 1:-1] != hard) | (p[2:, 1:-1] != hard)
                     | (p[1:-1, :-2] != hard) | (p[1:-1, 2:] != hard))
        out[edge] = (255, 255, 255, 255)
    return out


def _k2_lut(pal: np.ndarray) -> np.ndarray:
    """256-entry diverging LUT: label-1 colour → neutral grey (undecided) → label-2 colour."""
    t = np.linspace(0.0, 1.0, 256)[:, None]
    grey = np.array([[70.0, 70.0, 74.0]])
    a, b = pal[0:1].astype(np.float64), pal[1:2].astype(np.float64)
    lo = a + (grey - a) * np.clip(2 * t, 0, 1)
    hi = grey + (b - grey) * np.clip(2 * t - 1, 0, 1)
    return np.where(t < 0.5, lo, hi).astype(np.uint8)


def probabilities_rgb(probs: np.ndarray, pal: np.ndarray) -> np.ndarray:
    """Colour a continuous solution (H,W,K): K = 2 diverging map of label 2, K > 2 colour mix."""
    p = np.asarray(probs, np.float32)
    k = p.shape[2]
    if k == 2:
        s = p[:, :, 1] / np.maximum(p.sum(axis=2), 1e-6)
        idx = np.clip(s * 255.0 + 0.5, 0, 255).astype(np.uint8)
        return _k2_lut(pal)[idx]
    w = np.clip(p, 0, None)
    w = w / np.maximum(w.sum(axis=2, keepdims=True), 1e-6)
    return np.clip(w @ pal[:k].astype(np.float32), 0, 255).astype(np.uint8)


def labels_rgb(labels: np.ndarray, pal: np.ndarray) -> np.ndarray:
    """(H,W) labels 1..K → (H,W,3) palette colours (0 → black)."""
    lut = np.zeros((256, 3), np.uint8)
    lut[1:len(pal) + 1] = pal
    return lut[np.clip(labels, 0, 255).astype(np.uint8)]


def disagreement_rgba(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    """Magenta where label maps ``a`` and ``b`` differ; returns (RGBA, count)."""
    diff = np.asarray(a) != np.asarray(b)
    out = np.zeros(diff.shape + (4,), np.uint8)
    out[diff] = MAGENTA + (255,)
    return out, int(diff.sum())


def downsample(arr: np.ndarray, max_side: int) -> np.ndarray:
    """Stride-downsample an (H,W[,C]) array so its longer side is at most ``max_side``."""
    step = max(1, int(np.ceil(max(arr.shape[:2]) / max_side)))
    return arr[::step, ::step]
