"""Images, label images, overlays and cut-outs on disk (OpenCV, headless build; Pillow for
palette PNGs and RGBA TIFFs).

Images come back as RGB (never BGR); writes are atomic (a temporary file renamed into place), so a
failed write never leaves a partial output.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import cv2
import numpy as np

log = logging.getLogger(__name__)

#: Bundled sample images and example strokes.
ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets"

_PALETTE = np.array([
    [230, 57, 70], [69, 123, 157], [42, 157, 143], [244, 162, 97],
    [131, 56, 236], [255, 209, 102], [6, 214, 160], [239, 71, 111],
], dtype=np.uint8)


class ImageError(ValueError):
    """An image or label file that cannot be used (missing, corrupt, wrong size or values)."""


def label_palette(k: int) -> np.ndarray:
    """Distinct RGB colours for labels 1..k (label ``j`` uses row ``j - 1``), ``(k, 3)`` uint8."""
    if k <= len(_PALETTE):
        return _PALETTE[:k].copy()
    hues = np.linspace(0, 179, k, endpoint=False).astype(np.uint8)
    hsv = np.stack([hues, np.full(k, 200, np.uint8), np.full(k, 230, np.uint8)], axis=1)
    return cv2.cvtColor(hsv[None], cv2.COLOR_HSV2RGB)[0]


_LOG_LOCK = threading.Lock()


@contextlib.contextmanager
def quiet_opencv() -> Iterator[None]:
    """OpenCV's own log lines (``[ WARN:0@...] ... PNG input buffer is incomplete``, written
    to the C-level stderr) silenced for the duration; every failure is reported by the caller
    in its own words instead. The previous level is put back after."""
    with _LOG_LOCK:
        level = cv2.utils.logging.getLogLevel()
        cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)
        try:
            yield
        finally:
            cv2.utils.logging.setLogLevel(level)


@contextlib.contextmanager
def _stderr_captured() -> Iterator[None]:
    """The C-level standard error (file descriptor 2) sent to a temporary file for the
    duration, then logged at debug level: image libraries (libpng's ``libpng error: IDAT: CRC
    error``) write their complaints there before OpenCV reports the failure, and the caller
    reports it in one sentence of its own. Where the descriptor cannot be redirected, nothing
    is."""
    try:
        saved = os.dup(2)
    except OSError:  # pragma: no cover - no stderr at all
        yield
        return
    with tempfile.TemporaryFile() as sink:
        try:
            os.dup2(sink.fileno(), 2)
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text = sink.read().decode(errors="replace").strip()
            if text:
                log.debug("image library said: %s", text)


#: The most pixels OpenCV decodes (its ``CV_IO_MAX_IMAGE_PIXELS``, 2**30 unless set).
MAX_IMAGE_PIXELS = int(os.environ.get("OPENCV_IO_MAX_IMAGE_PIXELS", 2**30))

#: EXIF's orientation tag, and what each value asks of the stored pixels to show them upright.
_EXIF_ORIENTATION = 0x0112


def _header(data: bytes) -> tuple[tuple[int, int] | None, int]:
    """What a file's header says, without decoding its pixels (Pillow opens lazily): the
    ``(width, height)`` it claims (None where Pillow cannot tell; OpenCV may still read it) and
    its EXIF orientation, 1..8 (1 where it declares none or cannot be read)."""
    try:
        import io as _bytesio

        from PIL import Image
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (Pillow's decompression-bomb warning)
            with Image.open(_bytesio.BytesIO(data)) as im:
                size = (int(im.size[0]), int(im.size[1]))
                try:
                    value = int(im.getexif().get(_EXIF_ORIENTATION, 1))
                except Exception:  # noqa: BLE001 - a broken EXIF block: as stored
                    value = 1
    except Exception:  # noqa: BLE001 - not a file Pillow knows
        return None, 1
    return size, (value if 1 <= value <= 8 else 1)


def apply_orientation(img: np.ndarray, orientation: int) -> np.ndarray:
    """Stored pixels turned upright as EXIF ``orientation`` (1..8) says: 2 mirrored, 3 turned
    half round, 4 flipped, 5 transposed, 6 turned a quarter clockwise, 7 transversed, 8 turned a
    quarter anticlockwise (the TIFF 6.0 / EXIF 2.3 meanings).

    Parameters
    ----------
    img : numpy.ndarray
        ``(H, W)`` or ``(H, W, C)``.
    orientation : int

    Returns
    -------
    numpy.ndarray
        A contiguous array (``(W, H, ...)`` for 5 to 8).
    """
    a = img
    if orientation in (5, 6, 7, 8):
        a = np.swapaxes(a, 0, 1)  # transposed: row r of the result is column r of the file
        a = {5: a, 6: a[:, ::-1], 7: a[::-1, ::-1], 8: a[::-1]}[orientation]
    else:
        a = {1: a, 2: a[:, ::-1], 3: a[::-1, ::-1], 4: a[::-1]}.get(orientation, a)
    return np.ascontiguousarray(a)


def _png_colour_type(data: bytes) -> int | None:
    """A PNG's colour type (3 = palette-indexed) from its header; None for other files."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) > 25:
        return data[25]
    return None


def _read(path: str | os.PathLike, flags: int, what: str = "image",
          palette_index: bool = False) -> np.ndarray:
    """Decode a file with OpenCV, upright (its EXIF orientation applied), or raise
    :class:`ImageError` in one sentence. ``palette_index``: a palette PNG gives its indices,
    not its colours (label images saved by image editors)."""
    p = Path(path)
    where = f"cannot read {what} '{p}'"
    if p.is_dir():
        raise ImageError(f"{where}: it is a folder, not a file")
    if not p.is_file():
        raise ImageError(f"{where}: no such file")
    try:
        data = np.fromfile(str(p), dtype=np.uint8)
    except OSError as exc:
        raise ImageError(f"{where}: {exc.strerror or exc}") from None
    raw = data.tobytes()
    if palette_index and _png_colour_type(raw) == 3:
        return _palette_indices(raw, where)
    size, orientation = _header(raw)
    if size is not None and size[0] * size[1] > MAX_IMAGE_PIXELS:
        raise ImageError(f"{where}: it claims {size[0]}×{size[1]} pixels, more than the "
                         f"{MAX_IMAGE_PIXELS} this build reads")
    rgba = _tiff_rgba(raw)
    if rgba is not None:  # (OpenCV's channel order, as for every other file)
        return apply_orientation(rgba[:, :, [2, 1, 0, 3]], orientation)
    try:
        with quiet_opencv(), _stderr_captured():
            img = cv2.imdecode(data, flags) if data.size else None
    except cv2.error as exc:
        if "CV_IO_MAX_IMAGE_PIXELS" in str(exc):
            raise ImageError(f"{where}: it claims more than the {MAX_IMAGE_PIXELS} pixels this "
                             "build reads") from None
        raise ImageError(f"{where}: not a supported image file or corrupt") from None
    if img is None:
        raise ImageError(f"{where}: not a supported image file or corrupt")
    return apply_orientation(img, orientation)


def _tiff_rgba(data: bytes) -> np.ndarray | None:
    """An 8-bit RGBA TIFF's pixels as stored, ``(H, W, 4)`` RGBA, decoded by Pillow: OpenCV
    multiplies the colours of such a file (as image editors write them, with unassociated
    alpha) by its alpha, so a half-transparent pixel came back half as bright and a
    transparent one black. None for every other file (OpenCV reads it)."""
    if data[:4] not in (b"II*\x00", b"MM\x00*"):
        return None
    import io as _bytesio

    from PIL import Image
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(_bytesio.BytesIO(data)) as im:
                bits = im.tag_v2.get(258, (8,))  # (BitsPerSample: Pillow shows 16 as 8)
                if im.mode != "RGBA" or any(b != 8 for b in np.atleast_1d(bits)):
                    return None
                return np.array(im, dtype=np.uint8)
    except Exception:  # noqa: BLE001 - Pillow cannot decode it: OpenCV's verdict stands
        return None


def _palette_indices(data: bytes, where: str) -> np.ndarray:
    """A palette PNG's indices as ``(H, W)`` uint8 (Pillow decodes them; OpenCV gives colours)."""
    import io as _bytesio

    from PIL import Image
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(_bytesio.BytesIO(data)) as im:
                w, h = im.size
                if w * h > MAX_IMAGE_PIXELS:
                    raise ImageError(f"{where}: it claims {w}×{h} pixels, more than the "
                                     f"{MAX_IMAGE_PIXELS} this build reads")
                return np.asarray(im.convert("P") if im.mode != "P" else im, dtype=np.uint8)
    except ImageError:
        raise
    except Exception:  # noqa: BLE001 - Pillow's errors vary by cause
        raise ImageError(f"{where}: not a supported image file or corrupt") from None


def load_image(path: str | os.PathLike) -> np.ndarray:
    """Read a photo as ``(H, W)`` grey or ``(H, W, 3)`` RGB, keeping 8 or 16 bits.

    Alpha is dropped; an EXIF orientation is applied, so the photo comes back upright, as
    viewers show it. Raises :class:`ImageError` with a one-line message for a missing, corrupt,
    unsupported or oversized file.
    """
    img = _read(path, cv2.IMREAD_UNCHANGED)
    if img.ndim == 3 and img.shape[2] == 4:
        img = cv2.cvtColor(img, cv2.COLOR_BGRA2RGB)
    elif img.ndim == 3 and img.shape[2] == 3:
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    elif img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    if img.dtype not in (np.uint8, np.uint16, np.float32):
        raise ImageError(f"cannot use image '{path}': unsupported pixel type {img.dtype}")
    if min(img.shape[:2]) < 2:
        raise ImageError(f"cannot use image '{path}': it is smaller than 2×2 pixels")
    return img


def load_label_image(path: str | os.PathLike, shape: tuple[int, int] | None = None,
                     k: int | None = None, what: str = "label image") -> np.ndarray:
    """Read a single-channel label PNG (0 = none, j = label j) as ``(H, W)`` int32.

    A palette-indexed PNG gives its indices (as image editors save label images); colour
    images whose channels differ, non-integer values (a float TIFF) and negative values are
    refused in one sentence, as is an image other than ``shape``.

    Parameters
    ----------
    path : path-like
    shape : (H, W), optional
        Required size (the photo's).
    k : int, optional
        Largest allowed label.
    what : str
        Name used in error messages (e.g. ``"strokes"``).
    """
    img = _read(path, cv2.IMREAD_UNCHANGED, what=what, palette_index=True)
    if img.ndim == 3:
        if not (np.all(img == img[:, :, :1])):
            raise ImageError(f"{what} '{path}' must be a single-channel label image (or a "
                             "palette PNG whose index is the label)")
        img = img[:, :, 0]
    if not np.issubdtype(img.dtype, np.integer):
        bad = img[~np.isfinite(img) | (img != np.round(img))] if img.size else img[:0]
        if bad.size:
            raise ImageError(f"{what} '{path}' holds non-integer values (such as {bad.flat[0]:g}):"
                             " a label image holds whole numbers, 0 = none, k = label k")
    if img.size and img.min() < 0:
        raise ImageError(f"{what} '{path}' holds negative values (down to {img.min():g}): a "
                         "label image holds whole numbers, 0 = none, k = label k")
    labels = img.astype(np.int32)
    if shape is not None and labels.shape != tuple(shape):
        raise ImageError(f"{what} '{path}' is {labels.shape[1]}×{labels.shape[0]} but the image "
                         f"is {shape[1]}×{shape[0]}")
    if k is not None and labels.size and labels.max() > k:
        raise ImageError(f"{what} '{path}' has label {labels.max()} but K = {k}")
    return labels


def _new_file_mode() -> int:
    """The mode a newly created file gets in this process: ``0o666`` less the umask."""
    mask = os.umask(0o022)  # (read by setting; put back at once)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (:func:`write_files_atomic` of one file).

    Parameters
    ----------
    path : str or os.PathLike
        Where to write.
    data : bytes
        The file's contents.
    """
    write_files_atomic([(path, data)])


def write_files_atomic(files: Sequence[tuple[str | os.PathLike, bytes]]) -> None:
    """Write every file or none: each first to a uniquely named temporary file beside it,
    flushed to disk, then all renamed into place, so a failure never leaves a partial file.

    Each file gets the mode of the file it replaces, or that of any new file (``0o666`` less
    the umask), not the temporary file's private ``0o600``. On a failure the temporary files
    are removed, and so is any file this call already created; the error names the path
    given, not the temporary file.

    Parameters
    ----------
    files : sequence of (path, bytes)
        Each file's path and contents.

    Raises
    ------
    OSError
        Of the kind the failure was (``FileNotFoundError``, ...), naming the path given.
    """
    staged: list[tuple[Path, Path, bool]] = []  # (temporary, target, target existed)
    placed: list[tuple[Path, bool]] = []
    target: Path | None = None
    try:
        for path, data in files:
            target = Path(path)
            try:
                mode, existed = target.stat().st_mode & 0o7777, True
            except OSError:
                mode, existed = _new_file_mode(), False
            fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".",
                                       prefix=f".{target.name}.", suffix=".tmp")
            staged.append((Path(tmp), target, existed))
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, mode)
        for tmp, target, existed in staged:
            os.replace(tmp, target)
            placed.append((target, existed))
    except BaseException as exc:
        for tmp, *_ in staged:
            tmp.unlink(missing_ok=True)
        for done, existed in placed:
            if not existed:
                done.unlink(missing_ok=True)
        if isinstance(exc, OSError) and target is not None:
            if exc.errno is not None:  # (the same kind of OSError, naming the target)
                raise OSError(exc.errno, exc.strerror, str(target)) from exc
            raise OSError(f"cannot write '{target}': {exc}") from exc
        raise


def _write_atomic(path: str | os.PathLike, img: np.ndarray) -> None:
    p = Path(path)
    ext = p.suffix.lower() or ".png"
    ok, buf = cv2.imencode(ext, img)
    if not ok:
        raise ImageError(f"cannot write '{p}': unsupported image format '{ext}'")
    write_atomic(p, buf.tobytes())


def save_labels(path: str | os.PathLike, labels: np.ndarray, palette: bool = False,
                k: int | None = None) -> None:
    """Write labels (values 0..255) as a single-channel 8-bit image, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Where to write; its extension names the format (PNG, TIFF).
    labels : numpy.ndarray
        ``(H, W)`` integer labels, 0..255.
    palette : bool
        Write a colour-coded label image instead: an indexed (palette) PNG whose index is the
        label (:func:`palette_png`), so viewers show each label in its colour and
        :func:`load_label_image` reads the same labels back. Only ``.png`` takes it.
    k : int, optional
        With ``palette``: the number of labels the colours are chosen for (default: the
        largest label), so a K = 3 result that uses only labels 1 and 2 keeps K = 3's colours.
    """
    labels = np.asarray(labels)
    if labels.size and (labels.min() < 0 or labels.max() > 255):
        raise ValueError("labels must lie in 0..255 to be saved as an 8-bit PNG")
    if not palette:
        _write_atomic(path, labels.astype(np.uint8))
        return
    if Path(path).suffix.lower() != ".png":
        raise ValueError(f"cannot write colour-coded labels '{path}': a colour-coded label "
                         "image is a palette PNG, so name a .png file")
    write_atomic(path, palette_png(labels, k))


def palette_png(labels: np.ndarray, k: int | None = None) -> bytes:
    """Labels encoded as an 8-bit indexed (palette) PNG whose index is the label.

    Palette entry 0 is black and entry ``j`` (1..k) label ``j``'s colour
    (:func:`label_palette`, the app's colours); the other entries up to 255 are black. The
    palette always has 256 entries, so the file is 8 bits a pixel, as label tools (PASCAL VOC's
    format) expect. Most readers give the colours (RGB); :func:`load_label_image` and Pillow
    give the indices, i.e. the labels.

    Parameters
    ----------
    labels : numpy.ndarray
        ``(H, W)`` integer labels, 0..255.
    k : int, optional
        How many labels to colour (default: the largest label in ``labels``).

    Returns
    -------
    bytes
        The PNG file's contents.
    """
    import io as _bytesio

    from PIL import Image
    labels = np.asarray(labels)
    if labels.ndim != 2:
        raise ValueError(f"labels must be an (H, W) array, got shape {labels.shape}")
    if labels.size and (labels.min() < 0 or labels.max() > 255):
        raise ValueError("labels must lie in 0..255 to be saved as an 8-bit PNG")
    top = int(labels.max()) if labels.size else 0
    k = max(top, int(k or 0), 0)
    table = np.zeros((256, 3), np.uint8)
    if k:
        table[1:k + 1] = label_palette(min(k, 255))
    im = Image.fromarray(np.ascontiguousarray(labels.astype(np.uint8)))  # ("L": 8 bits)
    im.putpalette(table.ravel().tolist())  # ("L" becomes "P": the values are the indices)
    buf = _bytesio.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def to_rgb8(image: np.ndarray) -> np.ndarray:
    """Any image the solver takes as ``(H, W, 3)`` uint8 RGB for display: grey ``(H, W)`` or
    ``(H, W, 1)``, grey + alpha ``(H, W, 2)``, RGB or RGBA; alpha is dropped and grey repeated.
    uint16 is scaled as the solver reads it (``v / 65535``), rounded to the nearest 8-bit level
    (``round(v / 257)``: 65535 stays white); floats are the solver's 0..1, clipped."""
    img = np.asarray(image)
    if img.ndim == 3 and img.shape[2] in (2, 4):  # (grey or colour with alpha)
        img = img[:, :, :-1]
    if img.dtype == np.uint16:  # round(v / 257) in integers (v / 257 never ends in .5)
        img = ((img.astype(np.uint32) * 2 + 257) // 514).astype(np.uint8)
    elif img.dtype != np.uint8:
        img = (np.clip(img.astype(np.float64), 0.0, 1.0) * 255.0).round().astype(np.uint8)
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    if img.ndim == 2:
        img = np.repeat(img[:, :, None], 3, axis=2)
    return np.ascontiguousarray(img)


def overlay(image: np.ndarray, labels: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """Blend label colours (labels 1..K; 0 = none) over the photo, ``(H, W, 3)`` uint8 RGB."""
    rgb = to_rgb8(image).astype(np.float32)
    labels = np.asarray(labels)
    k = int(labels.max()) if labels.size else 0
    if k == 0:
        return rgb.astype(np.uint8)
    colours = np.vstack([np.zeros((1, 3), np.uint8), label_palette(k)]).astype(np.float32)
    mask = (labels > 0)[..., None]
    out = np.where(mask, (1.0 - alpha) * rgb + alpha * colours[labels], rgb)
    return out.round().astype(np.uint8)


def save_overlay(path: str | os.PathLike, image: np.ndarray, labels: np.ndarray,
                 alpha: float = 0.5) -> None:
    """Write :func:`overlay` as a colour image (atomically)."""
    _write_atomic(path, cv2.cvtColor(overlay(image, labels, alpha), cv2.COLOR_RGB2BGR))


def save_image(path: str | os.PathLike, rgb: np.ndarray) -> None:
    """Write an RGB uint8 image atomically."""
    _write_atomic(path, cv2.cvtColor(to_rgb8(rgb), cv2.COLOR_RGB2BGR))


# ---------------------------------------------------------------------------------- cut-outs
#: The widest soft edge (feather) a cut-out takes, in pixels.
MAX_FEATHER_PX = 100.0


def cutout_alpha(kept: np.ndarray, feather_px: float = 0.0) -> np.ndarray:
    """A cut-out's alpha from the mask of the pixels it keeps, ``(H, W)`` uint8.

    Without a feather (``feather_px`` ≤ 0) alpha is 255 on ``kept`` and 0 elsewhere. With one,
    alpha is a linear ramp across the mask's boundary: with ``d_in`` the Euclidean distance
    from a kept pixel's centre to the nearest centre of a pixel not kept, and ``d_out`` the
    distance from a pixel not kept to the nearest kept one (``cv2.distanceTransform``, exact
    L2), the signed distance to the boundary, which lies halfway between the two pixels, is
    ``s = d_in - 1/2`` inside and ``s = 1/2 - d_out`` outside, and

        alpha = 255 · clip(1/2 + s / feather_px, 0, 1), rounded.

    So alpha is 255 from ``feather_px / 2`` inside the boundary on, 0 from ``feather_px / 2``
    outside it on, and crosses 127.5 on the boundary: a soft edge ``feather_px`` pixels wide,
    centred on the labels' edge. A ramp of 1 pixel or less is the hard edge (neighbouring
    pixels are 1 apart, so each is already at its end of the ramp). The image's own border is
    no boundary: an object cut by the frame stays opaque up to it.

    Parameters
    ----------
    kept : numpy.ndarray
        ``(H, W)`` bool, the pixels the cut-out keeps.
    feather_px : float
        The soft edge's width in pixels, 0 to :data:`MAX_FEATHER_PX`.

    Returns
    -------
    numpy.ndarray
    """
    kept = np.asarray(kept, bool)
    feather = float(feather_px)
    if not np.isfinite(feather) or feather < 0 or feather > MAX_FEATHER_PX:
        raise ValueError(f"the feather must be a width from 0 to {MAX_FEATHER_PX:g} pixels, "
                         f"got {feather_px}")
    if feather <= 0 or kept.all() or not kept.any():
        return np.where(kept, 255, 0).astype(np.uint8)
    inside = cv2.distanceTransform(kept.astype(np.uint8), cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
    outside = cv2.distanceTransform((~kept).astype(np.uint8), cv2.DIST_L2,
                                    cv2.DIST_MASK_PRECISE)
    signed = np.where(kept, inside.astype(np.float64) - 0.5, 0.5 - outside.astype(np.float64))
    del inside, outside
    ramp = np.clip(0.5 + signed / feather, 0.0, 1.0)
    return np.rint(ramp * 255.0).astype(np.uint8)


def cutout(image: np.ndarray, labels: np.ndarray, labels_kept: Sequence[int],
           feather_px: float = 0.0) -> np.ndarray:
    """The object cut out of the photo: ``(H, W, 4)`` uint8 RGBA.

    The colour is the photo's own 8-bit RGB (:func:`to_rgb8`) and the alpha
    :func:`cutout_alpha` of the pixels whose label is in ``labels_kept``: 255 on them, 0
    elsewhere, with ``feather_px`` a soft edge of that many pixels across their boundary.
    Where alpha is 0 the colour is 0 too (black), so the file holds nothing of the photo
    outside the cut-out (a viewer that ignores alpha shows the object on black).

    Parameters
    ----------
    image : numpy.ndarray
        The photo, any form :func:`to_rgb8` takes.
    labels : numpy.ndarray
        ``(H, W)`` labels 1..K, the photo's size.
    labels_kept : sequence of int
        The labels the cut-out keeps (at least one).
    feather_px : float
        The soft edge's width in pixels, 0 (a hard edge) to :data:`MAX_FEATHER_PX`.

    Returns
    -------
    numpy.ndarray
    """
    labels = np.asarray(labels)
    rgb = to_rgb8(image)
    if labels.shape != rgb.shape[:2]:
        raise ValueError(f"the labels are {labels.shape[1]}×{labels.shape[0]} but the image is "
                         f"{rgb.shape[1]}×{rgb.shape[0]}")
    kept_labels = sorted({int(v) for v in labels_kept})
    if not kept_labels:
        raise ValueError("a cut-out needs at least one label to keep")
    alpha = cutout_alpha(np.isin(labels, kept_labels), feather_px)
    out = np.empty(rgb.shape[:2] + (4,), np.uint8)
    out[:, :, :3] = np.where(alpha[:, :, None] > 0, rgb, 0)
    out[:, :, 3] = alpha
    return out


def encode_rgba(rgba: np.ndarray, ext: str) -> bytes:
    """An RGBA image encoded in memory as the format ``ext`` names, alpha kept.

    PNG and WebP (lossless) are written by OpenCV; TIFF by Pillow, whose TIFF marks the fourth
    channel as (unassociated) alpha, where OpenCV's leaves it unspecified and some viewers
    then show it opaque.

    Parameters
    ----------
    rgba : numpy.ndarray
        ``(H, W, 4)`` uint8.
    ext : str
        ``".png"``, ``".webp"``, ``".tif"`` or ``".tiff"``.

    Returns
    -------
    bytes
    """
    ext = ext.lower()
    if ext in (".tif", ".tiff"):
        import io as _bytesio

        from PIL import Image
        buf = _bytesio.BytesIO()
        Image.fromarray(np.ascontiguousarray(rgba)).save(buf, format="TIFF",
                                                         compression="tiff_adobe_deflate")
        return buf.getvalue()
    if ext not in (".png", ".webp"):
        raise ValueError(f"cannot encode a cut-out as '{ext}': name a .png, .tif, .tiff or "
                         ".webp file")
    bgra = cv2.cvtColor(np.ascontiguousarray(rgba), cv2.COLOR_RGBA2BGRA)
    with quiet_opencv():
        ok, buf = cv2.imencode(ext, bgra)  # (WebP without a quality: lossless)
    if not ok:
        raise ValueError(f"cannot encode a cut-out as '{ext}': OpenCV could not encode it")
    return buf.tobytes()


def save_cutout(path: str | os.PathLike, image: np.ndarray, labels: np.ndarray,
                labels_kept: Sequence[int], feather_px: float = 0.0) -> None:
    """Write :func:`cutout` atomically, in the format ``path``'s extension names (one with
    transparency: :data:`segapp.core.formats.CUTOUT_FORMATS`)."""
    rgba = cutout(image, labels, labels_kept, feather_px)
    write_atomic(path, encode_rgba(rgba, Path(path).suffix))
