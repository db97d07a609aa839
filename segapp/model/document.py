"""The segmentation document: image, strokes, hard constraints, rectangle, K, settings.

Qt-free. Views subscribe with :meth:`Document.subscribe` and are told what
changed (``"image"``, ``"strokes"``, ``"hard"``, ``"rect"``, ``"k"``, ``"settings"``)
and, for layers, which box.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np

from segapp.model.brush import BBox, paint_segment, union_bbox
from segapp.model.undo import AttrEdit, CompoundEdit, Edit, MaskEdit, Rect, UndoStack

log = logging.getLogger(__name__)

K_MIN, K_MAX = 2, 8
LAYERS = ("strokes", "hard")
STROKE_MODES = ("strokes", "hard", "erase")

Listener = Callable[[str, "BBox | None"], None]


@dataclass
class SolverSettings:
    """Solver parameters as the user set them (None means library default / auto).

    Mirrors :class:`segapp.core.pipeline.SegmentParams` without ``k``; the constraints are
    kept as the command line writes them (``area``: ``"2:0.2-0.3"``, ``"1:500px-900px"``;
    ``apart``: ``"1,3"``; :mod:`segapp.core.constraint_text`).
    """

    lam: float | None = None
    beta: float | None = None
    colour_model: str = "gmm"
    solver: str = "admm"
    backend: str = "cpu"
    seed: int = 0
    admm: dict[str, Any] = field(default_factory=dict)
    area: list[str] = field(default_factory=list)
    apart: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        d = asdict(self)
        d["admm"] = dict(self.admm)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SolverSettings":
        """Build from :meth:`to_dict` output, ignoring unknown keys."""
        known = {f: d[f] for f in cls.__dataclass_fields__ if f in d}
        s = cls(**known)
        s.admm = dict(s.admm or {})
        s.area = [str(t) for t in (s.area or [])]
        s.apart = [str(t) for t in (s.apart or [])]
        return s


class Document:
    """Everything the user made, with undo/redo.

    Parameters
    ----------
    k : int
        Initial number of labels.
    """

    def __init__(self, k: int = 2) -> None:
        self.image: np.ndarray | None = None
        self.image_path: str | None = None
        self._k = int(k)
        self._rect: Rect | None = None
        self.strokes: np.ndarray = np.zeros((0, 0), np.uint8)
        self.hard: np.ndarray = np.zeros((0, 0), np.uint8)
        self.settings = SolverSettings()
        self.undo_stack = UndoStack()
        self.dirty = False
        self._listeners: list[Listener] = []
        self._stroke: dict[str, np.ndarray] | None = None
        self._stroke_mode: str | None = None

    # ----------------------------------------------------------- observers
    def subscribe(self, fn: Listener) -> None:
        """Call ``fn(kind, bbox)`` after every change."""
        self._listeners.append(fn)

    def notify(self, kind: str, bbox: BBox | None = None) -> None:
        """Tell listeners that ``kind`` changed (inside ``bbox`` for layers)."""
        if kind != "image":
            self.dirty = True
        for fn in list(self._listeners):
            fn(kind, bbox)

    # ----------------------------------------------------------- properties
    @property
    def k(self) -> int:
        """Number of labels K."""
        return self._k

    @property
    def rect(self) -> Rect | None:
        """GrabCut rectangle ``(x, y, w, h)`` in pixels, or None."""
        return self._rect

    @property
    def shape(self) -> tuple[int, int]:
        """(H, W) of the image, (0, 0) without one."""
        return tuple(self.strokes.shape)  # type: ignore[return-value]

    @property
    def has_image(self) -> bool:
        """Whether an image is loaded."""
        return self.image is not None

    def layer(self, name: str) -> np.ndarray:
        """The ``"strokes"`` or ``"hard"`` array."""
        if name not in LAYERS:
            raise ValueError(f"unknown layer {name!r}")
        return getattr(self, name)

    # ----------------------------------------------------------- image
    def set_image(self, image: np.ndarray, path: str | None = None,
                  keep_layers: bool = False) -> None:
        """Load a new image; clears strokes, rectangle and history unless kept.

        ``keep_layers`` keeps strokes/hard/rect when the new image has the same size.
        """
        h, w = image.shape[:2]
        same = self.strokes.shape == (h, w)
        self.image = image
        self.image_path = path
        if not (keep_layers and same):
            self.strokes = np.zeros((h, w), np.uint8)
            self.hard = np.zeros((h, w), np.uint8)
            self._rect = None
            self.undo_stack.clear()
        self.dirty = False
        self.notify("image", None)
        self.dirty = False

    def set_layers(self, strokes: np.ndarray | None = None, hard: np.ndarray | None = None,
                   undoable: bool = True) -> None:
        """Replace whole layers (e.g. loaded example strokes)."""
        edits: list[Edit] = []
        for name, new in (("strokes", strokes), ("hard", hard)):
            if new is None:
                continue
            new = np.asarray(new)
            if new.shape != self.shape:
                raise ValueError(f"{name} has size {new.shape[::-1]}, image has {self.shape[::-1]}")
            old = self.layer(name)
            e = MaskEdit.from_arrays(name, old, new.astype(np.uint8), "load " + name)
            if e is not None:
                e.redo(self)
                edits.append(e)
        if edits and undoable:
            self.undo_stack.push(CompoundEdit(edits, "load layers"))

    # ----------------------------------------------------------- strokes
    def begin_stroke(self, mode: str) -> None:
        """Start a stroke: ``"strokes"`` (soft), ``"hard"`` or ``"erase"`` (both layers)."""
        if mode not in STROKE_MODES:
            raise ValueError(f"unknown stroke mode {mode!r}")
        names = LAYERS if mode == "erase" else (mode,)
        self._stroke = {n: self.layer(n).copy() for n in names}
        self._stroke_mode = mode

    def stroke_to(self, p0: tuple[float, float], p1: tuple[float, float], radius: float,
                  label: int = 0) -> BBox | None:
        """Paint a segment of the current stroke with ``label`` (ignored when erasing)."""
        if self._stroke is None:
            raise RuntimeError("stroke_to() without begin_stroke()")
        value = 0 if self._stroke_mode == "erase" else int(label)
        if value and not 1 <= value <= self._k:
            raise ValueError(f"label {value} outside 1..{self._k}")
        box = None
        for name in self._stroke:
            b = paint_segment(self.layer(name), p0, p1, radius, value)
            box = union_bbox(box, b)
        if box is not None:
            for name in self._stroke:
                self.notify(name, box)
        return box

    def end_stroke(self) -> Edit | None:
        """Finish the stroke and record its diff; returns the edit (None if nothing changed)."""
        if self._stroke is None:
            return None
        edits = [e for n, old in self._stroke.items()
                 if (e := MaskEdit.from_arrays(n, old, self.layer(n))) is not None]
        self._stroke = None
        self._stroke_mode = None
        if not edits:
            return None
        edit: Edit = edits[0] if len(edits) == 1 else CompoundEdit(edits, "erase")
        self.undo_stack.push(edit)
        return edit

    @property
    def stroking(self) -> bool:
        """Whether a stroke is in progress."""
        return self._stroke is not None

    # ----------------------------------------------------------- rect / K / clear
    def set_rect(self, rect: Rect | None) -> None:
        """Set (undoably) the GrabCut rectangle, clipped to the image; None removes it."""
        if rect is not None:
            h, w = self.shape
            x, y, rw, rh = (int(round(v)) for v in rect)
            if rw < 0:
                x, rw = x + rw, -rw
            if rh < 0:
                y, rh = y + rh, -rh
            x0, y0 = max(x, 0), max(y, 0)
            x1, y1 = min(x + rw, w), min(y + rh, h)
            rect = (x0, y0, x1 - x0, y1 - y0) if x1 - x0 >= 2 and y1 - y0 >= 2 else None
        if rect == self._rect:
            return
        edit = AttrEdit("rect", self._rect, rect, "rectangle")
        edit.redo(self)
        self.undo_stack.push(edit)

    def set_k(self, k: int) -> None:
        """Set K (undoably); strokes and constraints of labels above K are removed."""
        k = int(k)
        if not K_MIN <= k <= K_MAX:
            raise ValueError(f"K must be in {K_MIN}..{K_MAX}, got {k}")
        if k == self._k:
            return
        edits: list[Edit] = []
        for name in LAYERS:
            old = self.layer(name)
            new = np.where(old > k, 0, old).astype(np.uint8)
            e = MaskEdit.from_arrays(name, old, new, "drop labels")
            if e is not None:
                edits.append(e)
        edits.append(AttrEdit("k", self._k, k, "K"))
        edit = CompoundEdit(edits, "K")
        edit.redo(self)
        self.undo_stack.push(edit)

    def clear(self) -> None:
        """Remove (undoably) all strokes, hard constraints and the rectangle."""
        edits: list[Edit] = []
        for name in LAYERS:
            old = self.layer(name)
            e = MaskEdit.from_arrays(name, old, np.zeros_like(old), "clear")
            if e is not None:
                edits.append(e)
        if self._rect is not None:
            edits.append(AttrEdit("rect", self._rect, None, "clear"))
        if not edits:
            return
        edit = CompoundEdit(edits, "clear")
        edit.redo(self)
        self.undo_stack.push(edit)

    def set_settings(self, settings: SolverSettings) -> None:
        """Replace solver settings (not part of the undo history)."""
        self.settings = settings
        self.notify("settings", None)

    # ----------------------------------------------------------- undo
    def undo(self) -> bool:
        """Undo one edit; False when there is none."""
        return self.undo_stack.undo(self) is not None

    def redo(self) -> bool:
        """Redo one edit; False when there is none."""
        return self.undo_stack.redo(self) is not None

    # ----------------------------------------------------------- queries
    def label_counts(self) -> np.ndarray:
        """Number of soft-stroke plus hard pixels per label 1..K, shape (K,)."""
        both = np.where(self.hard > 0, self.hard, self.strokes)
        return np.bincount(both.ravel(), minlength=self._k + 1)[1:self._k + 1]

    def has_annotations(self) -> bool:
        """Whether anything was drawn (strokes, hard constraints or rectangle)."""
        return bool(self.strokes.any() or self.hard.any() or self._rect is not None)
