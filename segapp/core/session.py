"""Session files: JSON with image path, K, rectangle, settings and PNG-embedded layers."""
from __future__ import annotations

import base64
import json
import logging
import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from segapp.core.io import write_atomic
from segapp.model.document import K_MAX, K_MIN, Document, SolverSettings

log = logging.getLogger(__name__)

FORMAT = "segapp-session"
VERSION = 1


@dataclass
class SessionData:
    """What a session file holds (the image itself is referenced by path)."""

    image_path: str | None
    k: int
    rect: tuple[int, int, int, int] | None
    settings: SolverSettings
    strokes: np.ndarray | None
    hard: np.ndarray | None
    extra: dict[str, Any] = field(default_factory=dict)
    shape: tuple[int, int] | None = None  # (H, W) the layers were saved for


def _encode(arr: np.ndarray) -> str:
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(arr, dtype=np.uint8))
    if not ok:  # pragma: no cover - cv2 always encodes uint8
        raise ValueError("could not encode layer as PNG")
    return base64.b64encode(buf.tobytes()).decode("ascii")


def save_session(path: str | os.PathLike, doc: Document,
                 extra: dict[str, Any] | None = None) -> None:
    """Write ``doc`` as a session JSON file.

    Parameters
    ----------
    path : str or path-like
        Destination ``.json`` file.
    doc : Document
        The document; its image is stored by path (absolute and relative to the file).
    extra : dict, optional
        Additional JSON-able data (e.g. view state).
    """
    path = Path(path)
    image_path = doc.image_path
    rel = None
    if image_path:
        try:
            rel = os.path.relpath(Path(image_path).resolve(), path.resolve().parent)
        except ValueError:  # different drive on Windows
            rel = None
    data = {
        "format": FORMAT,
        "version": VERSION,
        "image_path": str(Path(image_path).resolve()) if image_path else None,
        "image_relpath": rel,
        "shape": list(doc.shape),
        "k": doc.k,
        "rect": list(doc.rect) if doc.rect is not None else None,
        "settings": doc.settings.to_dict(),
        "strokes_png": _encode(doc.strokes) if doc.has_image else None,
        "hard_png": _encode(doc.hard) if doc.has_image else None,
        "extra": extra or {},
    }
    write_atomic(path, json.dumps(data, indent=1).encode())
    log.info("saved session %s", path)


def _shown(value: Any) -> str:
    """``value`` as the session file spells it (JSON), cut short."""
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _bad(name: str, expected: str, value: Any) -> ValueError:
    return ValueError(f"session field {name!r}: expected {expected}, got {_shown(value)}")


_MISSING = object()


def _get(d: dict, key: str, name: str, expected: str, default: Any = _MISSING) -> Any:
    """``d[key]``; a missing key is an error unless a default is given."""
    if key in d:
        return d[key]
    if default is _MISSING:
        raise ValueError(f"session field {name!r}: missing (expected {expected})")
    return default


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _int(v: Any, name: str, lo: int, hi: int) -> int:
    if not (_is_int(v) and lo <= v <= hi):
        raise _bad(name, f"an integer from {lo} to {hi}", v)
    return int(v)


def _opt_str(v: Any, name: str, expected: str) -> str | None:
    if v is not None and not isinstance(v, str):
        raise _bad(name, expected, v)
    return v


#: The app shows integers in spin boxes (C ints): a larger stored value could not be shown.
_INT_MAX = 2**31 - 1


def _settings(d: Any, k: int) -> SolverSettings:
    """The ``settings`` object as :class:`SolverSettings`; missing fields take their defaults,
    unknown ones are ignored (forward compatible). Checks reused from where the values are
    consumed: the method names (:mod:`solver.names`), λ and β (the MRF builder's
    ``check_scalar``), ADMM's fields (:meth:`solver.ADMMParams.from_kwargs`) and the constraint
    texts (:mod:`segapp.core.constraint_text`)."""
    from segapp.core.constraint_text import parse_apart, parse_area
    from solver.admm.params import ADMMParams, INTEGER_FIELDS
    from solver.mrf.build.checks import check_scalar
    from solver.names import BACKENDS, COLOUR_MODELS, METHODS

    if not isinstance(d, dict):
        raise _bad("settings", "an object", d)
    default = SolverSettings()
    out: dict[str, Any] = {}
    for key, label in (("lam", "lambda"), ("beta", "beta")):
        v = d.get(key)
        if v is not None:
            if not _is_real(v):
                raise _bad(f"settings.{key}", "null or a non-negative number", v)
            try:
                v = check_scalar(label, v)
            except ValueError as exc:
                raise ValueError(f"session field 'settings.{key}': {exc}") from None
        out[key] = v
    for key, names in (("colour_model", COLOUR_MODELS), ("solver", METHODS),
                       ("backend", BACKENDS)):
        v = d.get(key, getattr(default, key))
        if v not in names:
            raise _bad(f"settings.{key}", "one of " + ", ".join(map(repr, names)), v)
        out[key] = v
    out["seed"] = _int(d.get("seed", default.seed), "settings.seed", 0, _INT_MAX)
    admm = d.get("admm", {})
    if not isinstance(admm, dict):
        raise _bad("settings.admm", "an object of ADMM parameters", admm)
    for key, v in admm.items():
        name = f"settings.admm.{key}"
        try:
            ADMMParams.from_kwargs(**{key: v})
        except (ValueError, TypeError) as exc:
            raise ValueError(f"session field {name!r}: {exc}") from None
        if key in INTEGER_FIELDS:
            _int(v, name, 1, _INT_MAX)
    out["admm"] = dict(admm)
    for key, parse in (("area", parse_area), ("apart", parse_apart)):
        texts = d.get(key, [])
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise _bad(f"settings.{key}", "a list of texts", texts)
        for i, t in enumerate(texts):
            try:
                parsed = parse(t)
            except ValueError as exc:
                raise ValueError(f"session field 'settings.{key}[{i}]': {exc}") from None
            labels = (parsed.label,) if key == "area" else parsed
            if not all(1 <= lab <= k for lab in labels):
                raise _bad(f"settings.{key}[{i}]", f"labels from 1 to K = {k}", t)
        out[key] = list(texts)
    return SolverSettings(**out)


def _layer(text: Any, name: str, shape: tuple[int, int], k: int) -> np.ndarray | None:
    """A base64 PNG layer: single channel, ``shape``, values 0..k (None stays None)."""
    from solver.mrf.build.checks import label_image
    if text is None:
        return None
    if not isinstance(text, str):
        raise _bad(name, "null or a base64 PNG text", text)
    try:
        buf = np.frombuffer(base64.b64decode(text, validate=True), np.uint8)
    except ValueError:
        raise _bad(name, "a base64 PNG text", text) from None
    arr = cv2.imdecode(buf, cv2.IMREAD_UNCHANGED) if buf.size else None
    if arr is None or arr.ndim != 2 or arr.dtype != np.uint8:
        raise _bad(name, "a single-channel 8-bit PNG", text)
    if arr.shape != shape:
        raise ValueError(f"session field {name!r}: expected a {shape[1]}x{shape[0]} layer "
                         f"(the session's shape), got {arr.shape[1]}x{arr.shape[0]}")
    try:
        label_image(name, arr, shape, k)  # values 0..K
    except ValueError as exc:
        raise ValueError(f"session field {name!r}: {exc}") from None
    return arr


def _rect(v: Any, shape: tuple[int, int]) -> tuple[int, int, int, int] | None:
    if v is None:
        return None
    h, w = shape
    expected = f"null or [x, y, width, height] inside the {w}x{h} image"
    if not (isinstance(v, list) and len(v) == 4 and all(_is_int(t) for t in v)):
        raise _bad("rect", expected, v)
    x, y, rw, rh = (int(t) for t in v)
    if x < 0 or y < 0 or rw < 1 or rh < 1 or x + rw > w or y + rh > h:
        raise _bad("rect", expected, v)
    return x, y, rw, rh


def parse_session(data: Any, path: str | os.PathLike = "session") -> SessionData:
    """Check a session file's JSON value, all of it, and return what it holds.

    Every field is checked for its type and range before anything is built; relative image
    paths are resolved against ``path``'s folder.

    Raises
    ------
    ValueError
        The first bad field: ``session field 'k': expected an integer from 2 to 8, got 300``.
    """
    path = Path(path)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path.name} is not a segapp session file")
    version = _get(data, "version", "version", f"{VERSION}")
    if not _is_int(version) or version != VERSION:
        raise _bad("version", f"{VERSION} (the session format this segapp reads)", version)
    image_path = _opt_str(_get(data, "image_path", "image_path", "the image's path or null"),
                          "image_path", "the image's path or null")
    rel = _opt_str(data.get("image_relpath"), "image_relpath", "a relative path or null")
    shape_v = _get(data, "shape", "shape", "[height, width]")
    if not (isinstance(shape_v, list) and len(shape_v) == 2
            and all(_is_int(t) and t >= 0 for t in shape_v)):
        raise _bad("shape", "[height, width]", shape_v)
    shape = (int(shape_v[0]), int(shape_v[1]))
    k = _int(_get(data, "k", "k", f"an integer from {K_MIN} to {K_MAX}"), "k", K_MIN, K_MAX)
    rect = _rect(data.get("rect"), shape)
    settings = _settings(_get(data, "settings", "settings", "an object"), k)
    strokes = _layer(_get(data, "strokes_png", "strokes_png", "null or a base64 PNG text"),
                     "strokes_png", shape, k)
    hard = _layer(_get(data, "hard_png", "hard_png", "null or a base64 PNG text"),
                  "hard_png", shape, k)
    extra = data.get("extra")
    if extra is None:
        extra = {}
    if not isinstance(extra, dict):
        raise _bad("extra", "an object", extra)
    if "opacity" in extra:
        op = extra["opacity"]
        if not (_is_real(op) and 0 <= op <= 1):
            raise _bad("extra.opacity", "a number from 0 to 1", op)
    if rel and not (image_path and Path(image_path).exists()):
        cand = path.resolve().parent / rel
        if cand.exists():
            image_path = str(cand)
    return SessionData(image_path=image_path, k=k, rect=rect, settings=settings,
                       strokes=strokes, hard=hard, extra=dict(extra), shape=shape)


def load_session(path: str | os.PathLike) -> SessionData:
    """Read a session file written by :func:`save_session`, checking every field
    (:func:`parse_session`).

    Raises
    ------
    ValueError
        If the file is not a readable session (one line naming the field).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:  # (ValueError: bad JSON or UTF-8)
        raise ValueError(f"cannot read session {path.name}: {exc}") from exc
    return parse_session(data, path)


def check_session_image(data: SessionData, image: np.ndarray) -> None:
    """Check that ``data`` fits ``image`` (its layers, rectangle and stored shape), so that
    :func:`apply_session` cannot fail half-way.

    Raises
    ------
    ValueError
        Naming the field that does not fit.
    """
    h, w = image.shape[:2]
    if data.shape is not None and tuple(data.shape) != (h, w):
        raise ValueError(f"session field 'shape': the session is for a "
                         f"{data.shape[1]}x{data.shape[0]} image, "
                         f"{Path(data.image_path or 'the image').name} is {w}x{h}")
    for name, arr in (("strokes", data.strokes), ("hard", data.hard)):
        if arr is not None and arr.shape != (h, w):
            raise ValueError(f"session {name} are {arr.shape[1]}x{arr.shape[0]}, "
                             f"image is {w}x{h}")
    if data.rect is not None:
        x, y, rw, rh = data.rect
        if x < 0 or y < 0 or x + rw > w or y + rh > h:
            raise ValueError(f"session field 'rect': {list(data.rect)} is not inside the "
                             f"{w}x{h} image")


def apply_session(doc: Document, data: SessionData, image: np.ndarray) -> None:
    """Load ``data`` with its (already read) ``image`` into ``doc``; history is reset.

    Everything is checked (:func:`check_session_image`) before ``doc`` is touched.

    Raises
    ------
    ValueError
        If the stored layers or rectangle do not fit the image.
    """
    check_session_image(data, image)
    doc.set_image(image, data.image_path)
    doc._k = int(data.k)  # noqa: SLF001 - direct restore, not an edit
    doc.set_layers(data.strokes, data.hard, undoable=False)
    doc._rect = data.rect  # noqa: SLF001
    doc.settings = data.settings
    doc.undo_stack.clear()
    for kind in ("k", "rect", "settings"):
        doc.notify(kind, None)
    doc.dirty = False
