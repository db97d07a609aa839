"""Left tool bar: drawing tools, K, label palette and brush size."""
from __future__ import annotations

from PyQt6.QtCore import QPointF, QRectF, QSize, Qt, pyqtSignal
from PyQt6.QtGui import (
    QAction,
    QActionGroup,
    QBrush,
    QColor,
    QIcon,
    QKeySequence,
    QPainter,
    QPen,
    QPixmap,
    QPolygonF,
)
from PyQt6.QtWidgets import QLabel, QSlider, QSpinBox, QToolBar

from segapp.core.colouring import palette
from segapp.model import K_MAX, K_MIN

ICON = 28
FG = QColor(220, 222, 228)


def _icon(kind: str) -> QIcon:
    pm = QPixmap(ICON, ICON)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    pen = QPen(FG, 2)
    p.setPen(pen)
    c = QPointF(ICON / 2, ICON / 2)
    if kind == "brush":  # a paint brush, bristles down-left, over a dab of paint
        p.setBrush(QBrush(FG))
        p.drawEllipse(QPointF(7, 22), 4, 2.5)
        p.translate(c)
        p.rotate(45)
        p.setPen(Qt.PenStyle.NoPen)
        p.drawRoundedRect(QRectF(-2, -13, 4, 11), 1.5, 1.5)  # handle
        p.drawRect(QRectF(-3, -2, 6, 3))  # ferrule
        tip = QPolygonF([QPointF(-3, 2), QPointF(3, 2), QPointF(1, 10), QPointF(-1, 10)])
        p.drawPolygon(tip)  # bristles
    elif kind == "eraser":
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.translate(c)
        p.rotate(-35)
        p.drawRect(QRectF(-9, -5, 18, 10))
        p.fillRect(QRectF(-9, -5, 7, 10), FG)
    elif kind == "rect":
        pen.setStyle(Qt.PenStyle.DashLine)
        p.setPen(pen)
        p.drawRect(QRectF(5, 7, 18, 14))
    elif kind == "hard":
        p.setBrush(QBrush(FG, Qt.BrushStyle.BDiagPattern))
        p.setPen(QPen(QColor(255, 255, 255), 2))
        p.drawEllipse(c, 8, 8)
    p.end()
    return QIcon(pm)


def swatch(rgb, number: int | None = None, size: int = 22) -> QIcon:
    """A rounded colour swatch icon, optionally numbered."""
    pm = QPixmap(size, size)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    col = QColor(int(rgb[0]), int(rgb[1]), int(rgb[2]))
    p.setBrush(col)
    p.setPen(QPen(QColor(20, 20, 20), 1))
    p.drawRoundedRect(QRectF(1, 1, size - 2, size - 2), 4, 4)
    if number is not None:
        p.setPen(QColor(0, 0, 0) if col.lightness() > 140 else QColor(255, 255, 255))
        p.drawText(QRectF(0, 0, size, size), Qt.AlignmentFlag.AlignCenter, str(number))
    p.end()
    return QIcon(pm)


class ToolBar(QToolBar):
    """Vertical tool bar.

    Signals
    -------
    tool_changed(str), label_changed(int), k_changed(int), radius_changed(int)
    """

    tool_changed = pyqtSignal(str)
    label_changed = pyqtSignal(int)
    k_changed = pyqtSignal(int)
    radius_changed = pyqtSignal(int)

    TOOLS = (("brush", "Brush", "B", "Paint soft strokes (seeds) for the current label"),
             ("eraser", "Eraser", "E", "Erase strokes and hard constraints"),
             ("rect", "Rectangle", "R", "Drag a GrabCut rectangle: outside is label 2, label 1 "
              "inside (click once, or Shift+R, to remove it)"),
             ("hard", "Hard constraint", "H",
              "Paint pixels fixed to the current label (hatched); the solution must obey them"))

    def __init__(self, parent=None) -> None:
        super().__init__("Tools", parent)
        self.setObjectName("tools")
        self.setOrientation(Qt.Orientation.Vertical)
        self.setIconSize(QSize(ICON, ICON))
        self.setMovable(False)
        self.tool_actions: dict[str, QAction] = {}
        group = QActionGroup(self)
        for key, name, sc, tip in self.TOOLS:
            a = QAction(_icon(key), name, self)
            a.setCheckable(True)
            a.setShortcut(QKeySequence(sc))
            a.setToolTip(f"{name} ({sc}) — {tip}")
            a.triggered.connect(lambda _=False, k=key: self.tool_changed.emit(k))
            group.addAction(a)
            self.addAction(a)
            self.tool_actions[key] = a
        self.tool_actions["brush"].setChecked(True)
        self.addSeparator()
        self.k_spin = QSpinBox()
        self.k_spin.setRange(K_MIN, K_MAX)
        self.k_spin.setPrefix("K=")
        self.k_spin.setToolTip("Number of labels K (2–8)")
        self.k_spin.valueChanged.connect(self.k_changed)
        self.addWidget(self.k_spin)
        self.label_group = QActionGroup(self)
        self.label_actions: list[QAction] = []
        for i in range(1, K_MAX + 1):
            a = QAction(f"Label {i}", self)
            a.setCheckable(True)
            a.setShortcut(QKeySequence(str(i)))
            a.setToolTip(f"Label {i} ({i})")
            a.triggered.connect(lambda _=False, k=i: self.label_changed.emit(k))
            self.label_group.addAction(a)
            self.addAction(a)
            self.label_actions.append(a)
        self.label_actions[0].setChecked(True)
        self.addSeparator()
        self.size_label = QLabel()
        self.size_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.size_slider = QSlider(Qt.Orientation.Vertical)
        self.size_slider.setRange(1, 80)
        self.size_slider.setFixedHeight(140)
        self.size_slider.setToolTip("Brush radius in image pixels ([ and ] change it)")
        self.size_slider.valueChanged.connect(self._radius)
        self.addWidget(self.size_label)
        self.addWidget(self.size_slider)
        self.set_k(2)
        self.size_slider.setValue(6)
        self._radius(6)

    def _radius(self, v: int) -> None:
        self.size_label.setText(f"{v}px")
        self.radius_changed.emit(v)

    def set_k(self, k: int) -> None:
        """Show K label buttons coloured from the palette."""
        pal = palette(k)
        self.k_spin.blockSignals(True)
        self.k_spin.setValue(k)
        self.k_spin.blockSignals(False)
        for i, a in enumerate(self.label_actions):
            a.setVisible(i < k)
            if i < k:
                a.setIcon(swatch(pal[i], i + 1))
        if not any(a.isChecked() for a in self.label_actions[:k]):
            self.label_actions[0].setChecked(True)
            self.label_changed.emit(1)

    def set_tool(self, tool: str) -> None:
        """Check the tool's button (without emitting)."""
        self.tool_actions[tool].setChecked(True)

    def set_label(self, k: int) -> None:
        """Check label k's button (without emitting)."""
        self.label_actions[k - 1].setChecked(True)

    def step_radius(self, factor: float) -> None:
        """Grow or shrink the brush by ``factor`` (at least one pixel)."""
        v = self.size_slider.value()
        nv = max(v + 1, round(v * factor)) if factor > 1 else min(v - 1, round(v * factor))
        self.size_slider.setValue(int(nv))

    def current_label(self) -> int:
        """The checked label."""
        return next(i + 1 for i, a in enumerate(self.label_actions) if a.isChecked())


__all__ = ["ToolBar", "swatch"]
