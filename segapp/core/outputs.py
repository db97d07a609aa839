"""A segmentation's files, rendered in memory: the labels, the overlay, the cut-out and the report.

``segapp segment`` and ``segapp batch`` write the same files the same way: every file is encoded
first (:func:`render_outputs`), then all are written together
(:func:`segapp.core.io.write_files_atomic`), so a failure leaves no partial output.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from segapp.core.io import cutout, encode_rgba, overlay, palette_png, quiet_opencv

__all__ = ["OutputPaths", "encode_image", "render_outputs"]


@dataclass(frozen=True)
class OutputPaths:
    """Where a segmentation's files go, and how they are drawn.

    Attributes
    ----------
    labels : pathlib.Path
        The label image (``.png``, ``.tif`` or ``.tiff``; values 1..K).
    overlay, cutout, report : pathlib.Path or None
        The colour overlay, the cut-out (RGBA) and the JSON report, where asked for.
    labels_palette : bool
        Write ``labels`` as a colour-coded palette PNG (:func:`segapp.core.io.palette_png`).
    cutout_labels : tuple of int
        The labels the cut-out keeps.
    feather : float
        The cut-out's soft edge, in pixels (0: a hard edge).
    """

    labels: Path
    overlay: Path | None = None
    cutout: Path | None = None
    report: Path | None = None
    labels_palette: bool = False
    cutout_labels: tuple[int, ...] = (1,)
    feather: float = 0.0

    def files(self) -> list[Path]:
        """Every path this writes, the labels first."""
        return [p for p in (self.labels, self.overlay, self.cutout, self.report) if p]


def encode_image(path: Path, image: np.ndarray) -> bytes:
    """An image encoded in memory in the format ``path``'s extension names.

    Parameters
    ----------
    path : pathlib.Path
        The file it is for (its extension picks the format, checked beforehand).
    image : numpy.ndarray
        8-bit grey or BGR pixels.

    Returns
    -------
    bytes
        The encoded file.

    Raises
    ------
    ValueError
        Where OpenCV cannot encode it, naming the file.
    """
    try:
        with quiet_opencv():
            ok, buf = cv2.imencode(path.suffix.lower(), image)
    except cv2.error:
        ok = False
    if not ok:
        raise ValueError(f"cannot write '{path}': OpenCV could not encode the image")
    return buf.tobytes()


def render_outputs(image: np.ndarray, labels: np.ndarray, k: int, paths: OutputPaths,
                   report: dict[str, Any] | None = None) -> Sequence[tuple[Path, bytes]]:
    """Every file of a segmentation, encoded in memory, ready to be written together.

    Parameters
    ----------
    image : numpy.ndarray
        The photo, as :func:`segapp.core.io.load_image` reads it.
    labels : numpy.ndarray
        ``(H, W)`` labels in 1..K.
    k : int
        The number of labels (the palette's colours).
    paths : OutputPaths
        Where each file goes.
    report : dict, optional
        The report's contents (written where ``paths.report`` is set).

    Returns
    -------
    list of (pathlib.Path, bytes)
        Each file's path and contents, the labels first.

    Raises
    ------
    ValueError
        Where a label does not fit an 8-bit image, or a file cannot be encoded.
    """
    if labels.size and (labels.min() < 0 or labels.max() > 255):
        raise ValueError("labels must lie in 0..255 to be saved as an 8-bit image")
    files = [(paths.labels, palette_png(labels, k) if paths.labels_palette
              else encode_image(paths.labels, labels.astype(np.uint8)))]
    if paths.overlay:
        bgr = cv2.cvtColor(overlay(image, labels), cv2.COLOR_RGB2BGR)
        files.append((paths.overlay, encode_image(paths.overlay, bgr)))
    if paths.cutout:
        rgba = cutout(image, labels, list(paths.cutout_labels), paths.feather)
        files.append((paths.cutout, encode_rgba(rgba, paths.cutout.suffix)))
        del rgba
    if paths.report:
        files.append((paths.report, (json.dumps(report or {}, indent=2) + "\n").encode()))
    return files
