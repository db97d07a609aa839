"""Input validation for the MRF builders: one-line ValueErrors naming the problem."""

from __future__ import annotations

import numpy as np

#: Largest supported number of labels.
MAX_LABELS: int = 32


def label_image(name: str, arr: np.ndarray | None, shape: tuple[int, int], k: int) -> np.ndarray:
    """Validate a stroke/hard label image and return it as ``(H, W)`` int32 (zeros if None)."""
    if arr is None:
        return np.zeros(shape, dtype=np.int32)
    a = np.asarray(arr)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.shape != shape:
        raise ValueError(f"{name} image shape {a.shape} differs from image shape {shape}")
    if not (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
        if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            raise ValueError(f"{name} image must hold integer labels")
    if a.size and (a.min() < 0 or a.max() > k):
        raise ValueError(f"{name} values must lie in 0..{k}, got {a.min()}..{a.max()}")
    return a.astype(np.int32)


#: The label a GrabCut rectangle's outside is fixed to, for every K: the background of K = 2.
RECT_BACKGROUND = 2
#: The label the rectangle's unlabelled inside trains (the object of K = 2); labels 3..K, for
#: K > 2, train on their own strokes and compete with it inside the rectangle.
RECT_OBJECT = 1


def check_rect(rect: tuple[int, int, int, int], shape: tuple[int, int], k: int) -> tuple:
    """Validate a GrabCut rectangle ``(x, y, w, h)`` (any K: see :data:`RECT_BACKGROUND`)."""
    if len(rect) != 4:
        raise ValueError(f"rectangle must be (x, y, w, h), got {rect!r}")
    x, y, w, h = (int(v) for v in rect)
    if w <= 0 or h <= 0:
        raise ValueError(f"rectangle is empty: {(x, y, w, h)}")
    if x < 0 or y < 0 or x + w > shape[1] or y + h > shape[0]:
        raise ValueError(f"rectangle {(x, y, w, h)} is not inside the {shape[1]}x{shape[0]} image")
    return x, y, w, h


def check_scalar(name: str, value: float, positive: bool = False,
                 upper: float | None = None) -> float:
    """Check a scalar parameter is finite and non-negative (or positive), and at most
    ``upper`` when given."""
    v = float(value)
    if not np.isfinite(v) or v < 0 or (positive and v == 0):
        raise ValueError(f"{name} must be finite and {'positive' if positive else 'non-negative'}, got {v}")
    if upper is not None and v > upper:
        raise ValueError(f"{name} must be at most {upper:g}, got {v:g}")
    return v


def seed_map(strokes: np.ndarray, hard: np.ndarray, k: int, rect_given: bool,
             required: bool = True) -> np.ndarray:
    """Combine strokes and hard labels (hard wins) and, where the colour models are to be
    fitted to them (``required``), check every label has seeds."""
    seeds = np.where(hard > 0, hard, strokes)
    if not required:
        return seeds
    present = np.bincount(seeds.ravel(), minlength=k + 1)
    stand_in = {RECT_OBJECT, RECT_BACKGROUND} if rect_given else set()
    for label in range(1, k + 1):
        if present[label] == 0 and label not in stand_in:
            raise ValueError(f"label {label} has no strokes" + (
                f" (with a rectangle, label {RECT_OBJECT} takes the rectangle's inside and "
                f"label {RECT_BACKGROUND} its outside; labels 3 to {k} need strokes)"
                if rect_given else ""))
    return seeds
