"""The Constraints tab: bounds on each label's area, and labels that must not touch.

Each label has a row: a check box that turns its bound on, the minimum and maximum (in % of
the image or in pixels) and its current area (of the live iterate while a run goes, of the
result after). Below, a K × K grid of "must not touch" boxes (the upper triangle), with a one-click
"nest" for K = 3 (label 3 inside label 2, apart from label 1). The panel speaks the text forms
of :mod:`segapp.core.constraint_text` (``"2:0.2-0.3"``, ``"1,3"``), which the document's
settings keep and sessions save.
"""

from __future__ import annotations

import logging

import numpy as np
from PyQt6.QtCore import pyqtSignal
from PyQt6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QGroupBox,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from segapp.core.colouring import palette
from segapp.core.constraint_text import parse_apart, parse_area
from segapp.ui.tools import swatch

log = logging.getLogger(__name__)

UNITS = (("%", "fraction"), ("px", "px"))
#: Decimals a bound in % keeps: 0.0001 % is a pixel of a 1-megapixel image, so a bound the
#: person types (0.01 %, 12.5 %) is the bound the run takes, never rounded to one decimal.
PERCENT_DECIMALS = 4


class AreaSpin(QDoubleSpinBox):
    """A bound's spin box: as many decimals as :data:`PERCENT_DECIMALS` (none in pixels),
    shown without trailing zeros ("25", "0.01", "12.5"), so that what the person typed is what
    it shows and what the run takes."""

    def textFromValue(self, value: float) -> str:  # noqa: N802 - Qt API
        loc = self.locale()
        text = loc.toString(float(value), "f", self.decimals())
        point = loc.decimalPoint()
        if self.decimals() > 0 and point in text:
            text = text.rstrip("0").rstrip(point)
        return text.replace(loc.groupSeparator(), "") if loc.groupSeparator() else text


def decimals_shown(value: float, most: int = PERCENT_DECIMALS) -> int:
    """The decimals ``value`` needs, at most ``most`` (``0.01`` → 2, ``25.0`` → 0)."""
    text = f"{value:.{most}f}".rstrip("0")
    return len(text.split(".")[1]) if "." in text else 0


class _AreaRow:
    """The widgets of one label's area bound."""

    def __init__(self, label: int, rgb, grid: QGridLayout, row: int, changed) -> None:
        self.label = label
        self.on = QCheckBox()
        self.on.setIcon(swatch(rgb, label))
        self.on.setToolTip(f"Bound the area of label {label}")
        self.lo, self.hi = AreaSpin(), AreaSpin()
        for spin, tip in ((self.lo, "smallest area"), (self.hi, "largest area")):
            spin.setDecimals(PERCENT_DECIMALS)
            spin.setRange(0.0, 100.0)
            spin.setKeyboardTracking(False)
            spin.setToolTip(f"The {tip} label {label} may cover")
            spin.valueChanged.connect(changed)
        self.hi.setValue(100.0)
        self.unit = QComboBox()
        for text, key in UNITS:
            self.unit.addItem(text, key)
        self.unit.setToolTip("Percent of the image or pixels")
        self.now = QLabel("—")
        self.now.setToolTip(f"Label {label}'s area now (live during a run)")
        self.now.setMinimumWidth(64)
        self.on.toggled.connect(changed)  # (a unit change: the panel sets the range, then emits)
        for col, w in enumerate((self.on, self.lo, self.hi, self.unit, self.now)):
            grid.addWidget(w, row, col)

    def set_unit_range(self, n_pixels: int) -> None:
        """Spin ranges for the unit chosen (% or pixels of an ``n_pixels`` image)."""
        px = self.unit.currentData() == "px"
        top = float(max(n_pixels, 1)) if px else 100.0
        for spin in (self.lo, self.hi):
            spin.blockSignals(True)
            spin.setDecimals(0 if px else PERCENT_DECIMALS)
            spin.setRange(0.0, top)
            spin.blockSignals(False)

    def text(self) -> str | None:
        """The bound as ``segapp segment --area`` takes it, or None when off."""
        if not self.on.isChecked():
            return None
        if self.unit.currentData() == "px":
            return f"{self.label}:{self.lo.value():.0f}px-{self.hi.value():.0f}px"
        # (the fraction in full: 0.01 % is 0.0001, 12.3456 % is 0.123456)
        lo, hi = (round(v.value() / 100, PERCENT_DECIMALS + 2) for v in (self.lo, self.hi))
        return f"{self.label}:{lo:.10g}-{hi:.10g}"

    def percent_decimals(self) -> int:
        """The decimals the bound's % are given in (at least 1: the area "now" beside them is
        shown to as many, so that it reads against them)."""
        return max(1, *(decimals_shown(s.value()) for s in (self.lo, self.hi)))


class ConstraintsPanel(QWidget):
    """Area bounds and apart pairs; emits ``changed(area_texts, apart_texts)`` on every edit."""

    changed = pyqtSignal(list, list)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._k = 0
        self._n_pixels = 0
        self._areas: tuple[np.ndarray | None, int] = (None, 0)  # the last areas shown
        self._quiet = False
        self.rows: list[_AreaRow] = []
        self.apart: dict[tuple[int, int], QCheckBox] = {}
        lay = QVBoxLayout(self)
        self.area_box = QGroupBox("Area of each label")
        self.area_grid = QGridLayout(self.area_box)
        lay.addWidget(self.area_box)
        self.apart_box = QGroupBox("Labels that must not touch")
        self.apart_grid = QGridLayout(self.apart_box)
        lay.addWidget(self.apart_box)
        self.nest = QPushButton("Nest 3 inside 2 (apart from 1)")
        self.nest.setToolTip("K = 3: label 3 lies inside label 2 with a margin, never touching "
                             "label 1 (a nucleus in a cell, a pupil in an iris)")
        self.nest.clicked.connect(self._nest)
        lay.addWidget(self.nest)
        self.note = QLabel("Only ADMM and the yardsticks named in the results take these; "
                           "min-cut and α-expansion cannot.")
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: #9a9aa6")
        lay.addWidget(self.note)
        lay.addStretch(1)
        self.set_k(2)

    # ------------------------------------------------------------------ building
    def set_k(self, k: int) -> None:
        """Rows and grid for ``k`` labels, keeping what still applies (emits nothing: the
        caller shows the document's constraints next, :meth:`set_texts`)."""
        if k == self._k:
            return
        area, apart = self.texts()
        self._k = int(k)
        self._quiet = True  # new widgets taking their first values are no edits
        try:
            self._rebuild()
        finally:
            self._quiet = False
        self.set_texts(area, apart, emit=False)

    def set_image_pixels(self, n: int) -> None:
        """The image's pixel count (the range of pixel bounds)."""
        self._n_pixels = int(n)
        for r in self.rows:
            r.set_unit_range(n)

    def _rebuild(self) -> None:
        for grid in (self.area_grid, self.apart_grid):
            while grid.count():
                w = grid.takeAt(0).widget()
                if w is not None:
                    w.deleteLater()
        pal = palette(self._k)
        for col, text in enumerate(("label", "min", "max", "unit", "now")):
            self.area_grid.addWidget(QLabel(text), 0, col)
        self.rows = []
        for c in range(1, self._k + 1):
            row = _AreaRow(c, pal[c - 1], self.area_grid, c, self._on_edit)
            row.unit.currentIndexChanged.connect(
                lambda _i, r=row: (r.set_unit_range(self._n_pixels), self._on_edit()))
            row.set_unit_range(self._n_pixels)
            self.rows.append(row)
        self.apart = {}
        for c in range(1, self._k + 1):
            head = QLabel()
            head.setPixmap(swatch(pal[c - 1], c).pixmap(22, 22))
            self.apart_grid.addWidget(head, 0, c)
            side = QLabel()
            side.setPixmap(swatch(pal[c - 1], c).pixmap(22, 22))
            self.apart_grid.addWidget(side, c, 0)
        for a in range(1, self._k + 1):
            for b in range(a + 1, self._k + 1):
                box = QCheckBox()
                box.setToolTip(f"Labels {a} and {b} must not touch (no two 8-neighbours)")
                box.toggled.connect(self._on_edit)
                self.apart_grid.addWidget(box, a, b)
                self.apart[(a, b)] = box
        self.apart_box.setEnabled(self._k >= 3)
        self.apart_box.setToolTip("" if self._k >= 3 else "Needs K ≥ 3: with two labels, "
                                  "apart means one label everywhere")
        self.nest.setVisible(self._k == 3)

    # ------------------------------------------------------------------ values
    def texts(self) -> tuple[list[str], list[str]]:
        """``(area, apart)``: the bounds and pairs switched on, as text."""
        area = [t for t in (r.text() for r in self.rows) if t is not None]
        apart = [f"{a},{b}" for (a, b), box in self.apart.items() if box.isChecked()]
        return area, apart

    def set_texts(self, area: list[str], apart: list[str], emit: bool = True) -> None:
        """Show the bounds and pairs of a document's settings (texts the panel cannot show, a
        label beyond K say, are dropped)."""
        self._quiet = True
        try:
            for r in self.rows:
                r.on.setChecked(False)
            for box in self.apart.values():
                box.setChecked(False)
            for text in area:
                try:
                    b = parse_area(text)
                except ValueError as exc:
                    log.warning("constraint not shown: %s", exc)
                    continue
                if not 1 <= b.label <= len(self.rows):
                    continue
                r = self.rows[b.label - 1]
                r.unit.setCurrentIndex(1 if b.unit == "px" else 0)
                r.set_unit_range(self._n_pixels)
                scale = 1.0 if b.unit == "px" else 100.0
                r.lo.setValue(b.lo * scale)
                r.hi.setValue(b.hi * scale)
                r.on.setChecked(True)
            for text in apart:
                try:
                    a, b = sorted(parse_apart(text))
                except ValueError as exc:
                    log.warning("constraint not shown: %s", exc)
                    continue
                if (a, b) in self.apart:
                    self.apart[(a, b)].setChecked(True)
        finally:
            self._quiet = False
        if emit:
            self._emit()

    def show_areas(self, counts: np.ndarray | None, total: int = 0) -> None:
        """Each label's current area: ``counts`` (K,) pixels of ``total`` (None: unknown), in
        the row's unit, a share in % to as many decimals as the row's bounds are given in."""
        self._areas = (counts, total)
        for c, r in enumerate(self.rows):
            if counts is None or c >= len(counts) or total <= 0:
                r.now.setText("—")
            elif r.unit.currentData() == "px":
                r.now.setText(f"{int(round(counts[c])):,} px")
            else:
                r.now.setText(f"{100.0 * counts[c] / total:.{r.percent_decimals()}f} %")

    def _nest(self) -> None:
        for (a, b), box in self.apart.items():
            box.setChecked((a, b) == (1, 3))

    def _on_edit(self, *_args) -> None:
        if not self._quiet:
            self._emit()
            if self._areas[0] is not None:  # (in the unit and to the decimals now chosen)
                self.show_areas(*self._areas)

    def _emit(self) -> None:
        area, apart = self.texts()
        self.changed.emit(area, apart)
