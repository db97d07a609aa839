"""Qt-free document model: image, strokes, hard constraints, rectangle, K, undo."""
from segapp.model.brush import paint_segment
from segapp.model.document import K_MAX, K_MIN, Document, SolverSettings
from segapp.model.undo import UndoStack

__all__ = ["Document", "SolverSettings", "UndoStack", "paint_segment", "K_MIN", "K_MAX"]
