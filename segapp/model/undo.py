"""Undoable edits on the document: one diff per stroke, rectangle and K changes.

Qt-free: edits are plain objects that know how to apply themselves forwards
and backwards to a :class:`~segapp.model.document.Document`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: What an edit applies itself to: a :class:`segapp.model.document.Document` (which imports this
#: module, so it is not imported back here).
Document = Any

log = logging.getLogger(__name__)

Rect = tuple[int, int, int, int]


class Edit:
    """Base class of an undoable edit."""

    label = "edit"

    def undo(self, doc: Document) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def redo(self, doc: Document) -> None:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass
class MaskEdit(Edit):
    """Change of one label layer inside a bounding box.

    Parameters
    ----------
    layer : str
        ``"strokes"`` or ``"hard"``.
    y0, x0 : int
        Top-left corner of the changed box.
    before, after : numpy.ndarray
        Contents of the box before and after the edit.
    """

    layer: str
    y0: int
    x0: int
    before: np.ndarray
    after: np.ndarray
    label: str = "stroke"

    def _put(self, doc: Document, data: np.ndarray) -> None:
        arr = doc.layer(self.layer)
        h, w = data.shape
        arr[self.y0:self.y0 + h, self.x0:self.x0 + w] = data
        doc.notify(self.layer, (self.y0, self.y0 + h, self.x0, self.x0 + w))

    def undo(self, doc: Document) -> None:
        self._put(doc, self.before)

    def redo(self, doc: Document) -> None:
        self._put(doc, self.after)

    @staticmethod
    def from_arrays(layer: str, old: np.ndarray, new: np.ndarray, label: str = "stroke"
                    ) -> "MaskEdit | None":
        """Build the smallest box diff between two full layers, or None if equal."""
        diff = old != new
        if not diff.any():
            return None
        rows = np.flatnonzero(diff.any(axis=1))
        cols = np.flatnonzero(diff.any(axis=0))
        y0, y1, x0, x1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
        return MaskEdit(layer, int(y0), int(x0), old[y0:y1, x0:x1].copy(),
                        new[y0:y1, x0:x1].copy(), label)


@dataclass
class AttrEdit(Edit):
    """Change of a plain document attribute (``rect`` or ``k``)."""

    name: str
    before: Any
    after: Any
    label: str = "change"

    def undo(self, doc: Document) -> None:
        setattr(doc, "_" + self.name, self.before)
        doc.notify(self.name, None)

    def redo(self, doc: Document) -> None:
        setattr(doc, "_" + self.name, self.after)
        doc.notify(self.name, None)


@dataclass
class CompoundEdit(Edit):
    """Several edits undone and redone as one step."""

    edits: list[Edit] = field(default_factory=list)
    label: str = "edit"

    def undo(self, doc: Document) -> None:
        for e in reversed(self.edits):
            e.undo(doc)

    def redo(self, doc: Document) -> None:
        for e in self.edits:
            e.redo(doc)


class UndoStack:
    """A linear undo/redo history with an optional depth limit.

    Parameters
    ----------
    limit : int
        Maximum number of edits kept; the oldest are dropped first.
    """

    def __init__(self, limit: int = 200) -> None:
        self.limit = limit
        self._done: list[Edit] = []
        self._undone: list[Edit] = []

    def push(self, edit: Edit) -> None:
        """Record an edit that has already been applied."""
        self._done.append(edit)
        self._undone.clear()
        if len(self._done) > self.limit:
            del self._done[0]

    def can_undo(self) -> bool:
        """Whether there is an edit to undo."""
        return bool(self._done)

    def can_redo(self) -> bool:
        """Whether there is an edit to redo."""
        return bool(self._undone)

    def undo(self, doc: Document) -> Edit | None:
        """Undo the latest edit on ``doc``; return it (or None)."""
        if not self._done:
            return None
        e = self._done.pop()
        e.undo(doc)
        self._undone.append(e)
        return e

    def redo(self, doc: Document) -> Edit | None:
        """Redo the latest undone edit on ``doc``; return it (or None)."""
        if not self._undone:
            return None
        e = self._undone.pop()
        e.redo(doc)
        self._done.append(e)
        return e

    def clear(self) -> None:
        """Forget the whole history."""
        self._done.clear()
        self._undone.clear()

    def __len__(self) -> int:
        return len(self._done)
