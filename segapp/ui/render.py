"""numpy → Qt: an RGB(A) array as a QImage (the colouring is :mod:`segapp.core.colouring`)."""

from __future__ import annotations

import numpy as np
from PyQt6.QtGui import QImage


def to_qimage(arr: np.ndarray) -> QImage:
    """Copy an (H,W) gray, (H,W,3) RGB or (H,W,4) RGBA uint8 array into a QImage."""
    a = np.ascontiguousarray(arr, dtype=np.uint8)
    h, w = a.shape[:2]
    if a.ndim == 2:
        fmt, ch = QImage.Format.Format_Grayscale8, 1
    elif a.shape[2] == 3:
        fmt, ch = QImage.Format.Format_RGB888, 3
    else:
        fmt, ch = QImage.Format.Format_RGBA8888, 4
    return QImage(a.data, w, h, w * ch, fmt).copy()
