"""The small dialogs an export asks before its save dialog: which labels a cut-out keeps, and
how soft its edge is."""
from __future__ import annotations

import logging
from collections.abc import Sequence

from PyQt6.QtGui import QColor, QIcon, QPixmap
from PyQt6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

log = logging.getLogger(__name__)

#: The feather the dialog offers first (a hard edge: the labels as they are).
DEFAULT_FEATHER_PX = 0.0


def _swatch(rgb: Sequence[int]) -> QIcon:
    """A small square of a label's colour, for its check box."""
    pix = QPixmap(14, 14)
    pix.fill(QColor(int(rgb[0]), int(rgb[1]), int(rgb[2])))
    return QIcon(pix)


class CutoutDialog(QDialog):
    """File → Export cut-out's first question: the labels the cut-out keeps (one check box per
    label, in its colour) and the soft edge in pixels.

    Parameters
    ----------
    k : int
        How many labels the result has.
    kept : sequence of int
        The labels checked at first (label 1, the object, where nothing else was chosen).
    feather_px : float
        The soft edge shown at first.
    parent : QWidget, optional
    """

    def __init__(self, k: int, kept: Sequence[int] = (1,), feather_px: float = DEFAULT_FEATHER_PX,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from segapp.core.io import MAX_FEATHER_PX, label_palette
        self.setWindowTitle("Export cut-out")
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Keep the photo's pixels where the label is (transparent "
                                "elsewhere):"))
        colours = label_palette(k)
        self.boxes: list[QCheckBox] = []
        for j in range(1, k + 1):
            box = QCheckBox(f"Label {j}" + (" (the object)" if j == 1 else ""))
            box.setIcon(_swatch(colours[j - 1]))
            box.setChecked(j in set(kept))
            box.toggled.connect(self._update)
            layout.addWidget(box)
            self.boxes.append(box)
        form = QFormLayout()
        self.feather = QDoubleSpinBox()
        self.feather.setRange(0.0, MAX_FEATHER_PX)
        self.feather.setDecimals(1)
        self.feather.setSingleStep(0.5)
        self.feather.setSuffix(" px")
        self.feather.setValue(float(feather_px))
        self.feather.setToolTip("0: a hard edge. N: the edge fades from opaque to transparent "
                                "over N pixels, centred on the labels' boundary.")
        form.addRow("Soft edge (feather):", self.feather)
        layout.addLayout(form)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Export…")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self._update()

    def _update(self, *_args) -> None:
        """Export is possible only with at least one label checked."""
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(bool(self.labels()))

    def labels(self) -> list[int]:
        """The checked labels, in order."""
        return [j for j, box in enumerate(self.boxes, start=1) if box.isChecked()]

    def feather_px(self) -> float:
        """The soft edge's width in pixels."""
        return float(self.feather.value())


__all__ = ["DEFAULT_FEATHER_PX", "CutoutDialog"]
