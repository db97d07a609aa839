"""Session files: JSON with image path, K, rectangle, settings and PNG-embedded layers."""
from __future__ import annotations

import base64
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from segapp.core.io import write_atomic
from segapp.model.document import Document, SolverSettings

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


def _encode(arr: np.ndarray) -> str:
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(arr, dtype=np.uint8))
    if not ok:  # pragma: no cover - cv2 always encodes uint8
        raise ValueError("could not encode layer as PNG")
    return base64.b64encode(buf.tobytes()).decode("ascii")


def _decode(text: str) -> np.ndarray:
    buf = np.frombuffer(base64.b64decode(text), np.uint8)
    arr = cv2.imdecode(buf, cv2.IMREAD_UNCHANGED)
    if arr is None or arr.ndim != 2:
        raise ValueError("session layer is not a single-channel PNG")
    return arr.astype(np.uint8)


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


def load_session(path: str | os.PathLike) -> SessionData:
    """Read a session file written by :func:`save_session`.

    Raises
    ------
    ValueError
        If the file is not a readable session (one-line message).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read session {path.name}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path.name} is not a segapp session file")
    image_path = data.get("image_path")
    rel = data.get("image_relpath")
    if rel and not (image_path and Path(image_path).exists()):
        cand = path.resolve().parent / rel
        if cand.exists():
            image_path = str(cand)
    rect = data.get("rect")
    strokes = _decode(data["strokes_png"]) if data.get("strokes_png") else None
    hard = _decode(data["hard_png"]) if data.get("hard_png") else None
    return SessionData(
        image_path=image_path,
        k=int(data.get("k", 2)),
        rect=tuple(int(v) for v in rect) if rect else None,  # type: ignore[arg-type]
        settings=SolverSettings.from_dict(data.get("settings") or {}),
        strokes=strokes,
        hard=hard,
        extra=data.get("extra") or {},
    )


def apply_session(doc: Document, data: SessionData, image: np.ndarray) -> None:
    """Load ``data`` with its (already read) ``image`` into ``doc``; history is reset.

    Raises
    ------
    ValueError
        If the stored layers do not match the image size.
    """
    h, w = image.shape[:2]
    for name, arr in (("strokes", data.strokes), ("hard", data.hard)):
        if arr is not None and arr.shape != (h, w):
            raise ValueError(f"session {name} are {arr.shape[1]}x{arr.shape[0]}, "
                             f"image is {w}x{h}")
    doc.set_image(image, data.image_path)
    doc._k = int(data.k)  # noqa: SLF001 - direct restore, not an edit
    doc.set_layers(data.strokes, data.hard, undoable=False)
    doc._rect = data.rect  # noqa: SLF001
    doc.settings = data.settings
    doc.undo_stack.clear()
    for kind in ("k", "rect", "settings"):
        doc.notify(kind, None)
    doc.dirty = False
