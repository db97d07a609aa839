"""The file formats segapp writes: the lossless formats a label image needs, and the image
formats an overlay can be written in, each checked in one sentence before anything is written.

The command line and the app take their lists from here, so they refuse the same names.
"""
from __future__ import annotations

import functools
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

#: Formats that keep label values exactly (OpenCV writes TIFF with lossless compression); a
#: JPEG of labels 1..K holds other values round every boundary.
LABEL_FORMATS = (".png", ".tif", ".tiff")

#: The image formats an error suggests for a photo-like output (an overlay).
SUGGESTED_IMAGE_FORMATS = (".png", ".jpg")


def _either(exts: tuple[str, ...]) -> str:
    """``(".png", ".tif", ".tiff")`` as ``".png, .tif or .tiff"``."""
    return exts[0] if len(exts) == 1 else f"{', '.join(exts[:-1])} or {exts[-1]}"


def check_label_path(path: str | os.PathLike[str], what: str = "labels") -> None:
    """Refuse a label image's path whose extension names a lossy or unknown format.

    Parameters
    ----------
    path : str or os.PathLike
        The path as given (it is named in the error as given).
    what : str
        What the file is, for the error (``"labels"``; the command line says ``"--out"``).

    Raises
    ------
    ValueError
        ``cannot write labels 'l.jpg': labels need a lossless format, so name a .png, .tif or
        .tiff file``.
    """
    if Path(path).suffix.lower() not in LABEL_FORMATS:
        raise ValueError(f"cannot write {what} '{path}': labels need a lossless format, so "
                         f"name a {_either(LABEL_FORMATS)} file")


@functools.lru_cache(maxsize=64)
def can_encode(ext: str) -> bool:
    """Whether this OpenCV build has an encoder for the image format ``ext`` names.

    Parameters
    ----------
    ext : str
        An extension with its dot, ``".png"`` (any case).

    Returns
    -------
    bool
        False for ``""`` and for an extension no encoder claims.
    """
    import cv2

    from segapp.core.io import quiet_opencv

    if not ext or not ext.startswith(".") or len(ext) < 2:
        return False
    try:
        with quiet_opencv():
            return bool(cv2.haveImageWriter("x" + ext.lower()))
    except cv2.error as exc:  # (a build that cannot even say)
        log.debug("no writer for %r: %s", ext, exc)
        return False


def check_image_path(path: str | os.PathLike[str], what: str = "overlay") -> None:
    """Refuse an image's path whose extension names no format this build can write.

    Parameters
    ----------
    path : str or os.PathLike
        The path as given (named in the error as given).
    what : str
        What the file is, for the error (``"overlay"``).

    Raises
    ------
    ValueError
        ``cannot write overlay 'x.xyz': unknown image format '.xyz'; name a .png or .jpg
        file``.
    """
    ext = Path(path).suffix
    hint = f"name a {_either(SUGGESTED_IMAGE_FORMATS)} file"
    if not ext:
        raise ValueError(f"cannot write {what} '{path}': its name has no extension to say "
                         f"the image format; {hint}")
    if not can_encode(ext):
        raise ValueError(f"cannot write {what} '{path}': unknown image format '{ext}'; {hint}")


#: Formats that keep a cut-out's transparency (an alpha channel), in the order the save
#: dialog offers them.
CUTOUT_FORMATS = (".png", ".tif", ".tiff", ".webp")


def check_cutout_path(path: str | os.PathLike[str], what: str = "cut-out") -> None:
    """Refuse a cut-out's path whose extension names a format without transparency.

    Parameters
    ----------
    path : str or os.PathLike
        The path as given (named in the error as given).
    what : str
        What the file is, for the error (``"cut-out"``; the command line says ``"--cutout"``).

    Raises
    ------
    ValueError
        ``cannot write cut-out 'c.jpg': JPEG has no transparency, so name a .png, .tif, .tiff
        or .webp file``.
    """
    ext = Path(path).suffix.lower()
    if ext in CUTOUT_FORMATS:
        return
    hint = f"name a {_either(CUTOUT_FORMATS)} file"
    if ext in (".jpg", ".jpeg", ".jpe"):
        raise ValueError(f"cannot write {what} '{path}': JPEG has no transparency, so {hint}")
    if not ext:
        raise ValueError(f"cannot write {what} '{path}': its name has no extension to say "
                         f"the image format; {hint}")
    raise ValueError(f"cannot write {what} '{path}': a cut-out needs a format with "
                     f"transparency, so {hint}")
