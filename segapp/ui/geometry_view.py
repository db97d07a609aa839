"""The Geometry window: ℓ2-box ADMM on a 2- or 3-variable BQP, drawn in the problem's own space.

Pick a preset (or edit A, b and one equality row), and step through the walk the solver took,
forwards and backwards, or play it at a chosen speed: the iterate ``x`` between its copies
``z1`` on the box and ``z2`` on the sphere, with ``ρ`` and the residuals beside it. The walk is
recorded from :func:`solver.solve_bqp` itself (:func:`segapp.model.teaching.record`).
"""
from __future__ import annotations

import logging

import numpy as np
from PyQt6.QtCore import QPointF, QRectF, Qt, QTimer, pyqtSignal
from PyQt6.QtGui import (
    QColor,
    QFont,
    QKeySequence,
    QPainter,
    QPen,
    QPolygonF,
    QShortcut,
)
from PyQt6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from segapp.model.teaching import PRESETS, TinyBQP, Trace, make_problem, record
from segapp.ui.geometry_scene import C_DIM, C_TEXT, C_Z1, C_Z2, GeometryScene
from segapp.ui.screen_fit import fit_to_screen

log = logging.getLogger(__name__)

C_RHO = QColor(250, 200, 90)
#: Default playing speed, iterations a second.
DEFAULT_SPEED = 12
#: The window's size where the screen has room for it (a 1366x768 laptop's whole screen).
DEFAULT_SIZE = (1366, 768)


def initial_size(widget: QWidget) -> tuple[int, int]:
    """The Geometry window's first size: :data:`DEFAULT_SIZE`, shrunk to the available
    geometry of its screen less room for the frame and title bar (as the main window's), so
    that on a 1366x768 laptop, with its panel, the whole window and its title bar are on
    screen; never below the window's minimum size."""
    w, h = fit_to_screen(widget, DEFAULT_SIZE)
    low = widget.minimumSizeHint()
    return max(w, low.width()), max(h, low.height())


def _vec(v: np.ndarray) -> str:
    return "(" + ", ".join(f"{a:+.3f}" for a in v) + ")"


class ResidualStrip(QWidget):
    """Both residuals and ρ over the iterations (log scale), with the current one marked."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMinimumHeight(110)
        self.trace: Trace | None = None
        self.index = 0

    def set_trace(self, trace: Trace | None, index: int = 0) -> None:
        """Show ``trace`` with iterate ``index`` marked."""
        self.trace, self.index = trace, index
        self.update()

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.fillRect(self.rect(), QColor(30, 31, 35))
        if self.trace is None or len(self.trace) < 2:
            return
        its = self.trace.iterates[1:]
        r = QRectF(6, 18, self.width() - 12, self.height() - 24)
        n = len(its)
        series = [(C_Z1, [i.residual_box for i in its]), (C_Z2, [i.residual_sphere for i in its]),
                  (C_RHO, [i.rho for i in its])]
        for colour, vals in series:
            v = np.log10(np.maximum(np.array(vals, dtype=np.float64), 1e-12))
            lo, hi = float(v.min()), float(v.max())
            span = max(hi - lo, 1e-9)
            pts = [QPointF(r.left() + r.width() * j / max(n - 1, 1),
                           r.bottom() - r.height() * (v[j] - lo) / span) for j in range(n)]
            pen = QPen(colour, 1.5)
            p.setPen(pen)
            p.drawPolyline(QPolygonF(pts))
        if self.index >= 1:
            xm = r.left() + r.width() * (self.index - 1) / max(n - 1, 1)
            p.setPen(QPen(C_TEXT, 1.0, Qt.PenStyle.DashLine))
            p.drawLine(QPointF(xm, r.top()), QPointF(xm, r.bottom()))
        f = QFont(self.font())
        f.setPointSizeF(8.5)
        p.setFont(f)
        x = 8.0
        for colour, text in ((C_Z1, "‖x−z₁‖"), (C_Z2, "‖x−z₂‖"), (C_RHO, "ρ"),
                             (C_DIM, "(log scale, each its own)")):
            p.setPen(colour)
            p.drawText(QPointF(x, 13), text)
            x += p.fontMetrics().horizontalAdvance(text) + 12
        p.end()


class GeometryView(QWidget):
    """The Geometry window (a top-level widget).

    Signals
    -------
    index_changed(int)
        The iterate shown changed.
    """

    index_changed = pyqtSignal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setWindowTitle("Geometry of ℓ2-box ADMM — segapp")
        self.trace: Trace | None = None
        self.index = 0
        self.scene = GeometryScene()
        self.strip = ResidualStrip()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self._tick)
        side = QVBoxLayout()
        side.addWidget(self._problem_box())
        side.addWidget(self._play_box(), 1)
        panel = QWidget()
        panel.setLayout(side)
        panel.setFixedWidth(390)
        self.caption = QLabel("")
        self.caption.setWordWrap(True)
        self.caption.setMinimumHeight(44)
        self.caption.setStyleSheet("background: #232428; color: #e8e8ee; padding: 6px 10px; "
                                   "font-size: 11pt; border-radius: 4px;")
        left = QVBoxLayout()
        left.addWidget(self.caption)
        left.addWidget(self.scene, 1)
        # under the drawing, as wide as it: the iteration's numbers in two columns, all in
        # view (in the 390-pixel side panel they needed a scroll box at 1440 x 900)
        left.addWidget(self._numbers_box())
        lay = QHBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(left, 1)
        lay.addWidget(panel)
        for key, slot in ((Qt.Key.Key_Right, self.step_forward), (Qt.Key.Key_Left, self.step_back),
                          (Qt.Key.Key_Space, self.toggle_play), (Qt.Key.Key_Home, self.first),
                          (Qt.Key.Key_End, self.last)):
            QShortcut(QKeySequence(key), self, activated=slot)
        # closed from the keyboard, as a dialog or a document window is (Esc, Ctrl+W)
        # (one shortcut a binding: a QShortcut of the standard Close key takes only its first,
        # Ctrl+F4 on Linux)
        keys = {QKeySequence(Qt.Key.Key_Escape).toString(), "Ctrl+W",
                *(k.toString() for k in QKeySequence.keyBindings(QKeySequence.StandardKey.Close))}
        self.close_keys = [QShortcut(QKeySequence(k), self, activated=self.close)
                           for k in sorted(keys) if k]
        self.set_preset(0)
        self.resize(*initial_size(self))

    # ---------------------------------------------------------------- building
    def _problem_box(self) -> QGroupBox:
        box = QGroupBox("Problem: minimise xᵀAx + bᵀx over x ∈ {0,1}ⁿ")
        g = QGridLayout(box)
        self.presets = QComboBox()
        for pr in PRESETS:
            self.presets.addItem(pr.title)
        self.presets.addItem("Custom (edit below)")
        self.presets.currentIndexChanged.connect(self._on_preset)
        g.addWidget(self.presets, 0, 0, 1, 5)
        self.size_spin = QSpinBox()
        self.size_spin.setRange(2, 3)
        self.size_spin.setPrefix("n = ")
        self.size_spin.valueChanged.connect(lambda _: self._show_editors())
        g.addWidget(self.size_spin, 1, 0)
        self.a_edit = [[self._num() for _ in range(3)] for _ in range(3)]
        self.b_edit = [self._num() for _ in range(3)]
        self.c_edit = [self._num() for _ in range(3)]
        self.d_edit = self._num()
        self.use_c = QCheckBox("C x = d")
        for i in range(3):
            g.addWidget(QLabel(f"A row {i + 1}" if i else "A"), 2 + i, 0)
            for j in range(3):
                g.addWidget(self.a_edit[i][j], 2 + i, 1 + j)
        g.addWidget(QLabel("b"), 5, 0)
        for j in range(3):
            g.addWidget(self.b_edit[j], 5, 1 + j)
        g.addWidget(self.use_c, 6, 0)
        for j in range(3):
            g.addWidget(self.c_edit[j], 6, 1 + j)
        g.addWidget(QLabel("d"), 7, 0)
        g.addWidget(self.d_edit, 7, 1)
        self.seed = QSpinBox()
        self.seed.setRange(-1, 9999)
        self.seed.setSpecialValueText("start at ½")
        self.seed.setPrefix("random start, seed ")
        self.seed.setValue(-1)
        g.addWidget(self.seed, 7, 2, 1, 2)
        self.solve_button = QPushButton("Solve")
        self.solve_button.setToolTip("Run ℓ2-box ADMM on the problem as edited")
        self.solve_button.clicked.connect(self.solve_edited)
        g.addWidget(self.solve_button, 1, 1, 1, 3)
        self.error_label = QLabel("")
        self.error_label.setStyleSheet("color: #e0a040;")
        self.error_label.setWordWrap(True)
        g.addWidget(self.error_label, 8, 0, 1, 5)
        return box

    def _num(self) -> QDoubleSpinBox:
        w = QDoubleSpinBox()
        w.setRange(-99.0, 99.0)
        w.setDecimals(2)
        w.setSingleStep(0.1)
        return w

    def _play_box(self) -> QGroupBox:
        box = QGroupBox("Walk")
        v = QVBoxLayout(box)
        row = QHBoxLayout()
        self.buttons = {}
        for key, text, tip, slot in (
                ("first", "|◀", "Back to the start point (Home)", self.first),
                ("back", "◀ step", "One iteration back (←)", self.step_back),
                ("play", "▶ Play", "Play / pause (Space)", self.toggle_play),
                ("forward", "step ▶", "One iteration forward (→)", self.step_forward),
                ("last", "▶|", "To the last iteration (End)", self.last)):
            b = QPushButton(text)
            b.setToolTip(tip)
            b.clicked.connect(slot)
            row.addWidget(b)
            self.buttons[key] = b
        v.addLayout(row)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.valueChanged.connect(self.set_index)
        v.addWidget(self.slider)
        row = QHBoxLayout()
        row.addWidget(QLabel("speed"))
        self.speed = QSlider(Qt.Orientation.Horizontal)
        self.speed.setRange(1, 60)
        self.speed.setValue(DEFAULT_SPEED)
        self.speed.valueChanged.connect(self._on_speed)
        self.speed_label = QLabel("")
        row.addWidget(self.speed, 1)
        row.addWidget(self.speed_label)
        self.trails = QCheckBox("trails")
        self.trails.setChecked(True)
        self.trails.toggled.connect(self.scene.set_trails)
        row.addWidget(self.trails)
        v.addLayout(row)
        self._on_speed(self.speed.value())
        v.addWidget(self.strip)
        return box

    def _numbers_box(self) -> QGroupBox:
        box = QGroupBox("This iteration")
        v = QVBoxLayout(box)
        v.setContentsMargins(8, 4, 8, 4)
        self.numbers = QLabel("")
        self.numbers.setTextFormat(Qt.TextFormat.RichText)
        self.numbers.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.numbers.setWordWrap(True)
        self.numbers.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        v.addWidget(self.numbers)
        return box

    def _fit_numbers(self) -> None:
        """Keep the numbers' label as tall as its text at its width: every line in view,
        and (the text's rows being the same at every iteration of a problem) a drawing that
        does not jump as the walk is stepped."""
        width = self.numbers.width()
        if width <= 0:
            return
        need = self.numbers.heightForWidth(width)
        if need > 0 and need != self.numbers.minimumHeight():
            self.numbers.setMinimumHeight(need)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._fit_numbers()

    # ---------------------------------------------------------------- problems
    def _on_preset(self, i: int) -> None:
        if 0 <= i < len(PRESETS):
            self.set_preset(i)

    def set_preset(self, i: int) -> None:
        """Show preset ``i`` of :data:`segapp.model.teaching.PRESETS` and solve it."""
        self.presets.blockSignals(True)
        self.presets.setCurrentIndex(i)
        self.presets.blockSignals(False)
        self._fill_editors(PRESETS[i])
        self.set_problem(PRESETS[i])

    def _fill_editors(self, prob: TinyBQP) -> None:
        n = prob.n
        self.size_spin.blockSignals(True)
        self.size_spin.setValue(n)
        self.size_spin.blockSignals(False)
        for i in range(3):
            self.b_edit[i].setValue(prob.b[i] if i < n else 0.0)
            self.c_edit[i].setValue(prob.C[0, i] if prob.C is not None and i < n else 1.0)
            for j in range(3):
                self.a_edit[i][j].setValue(prob.A[i, j] if i < n and j < n else 0.0)
        self.use_c.setChecked(prob.C is not None)
        self.d_edit.setValue(float(prob.d[0]) if prob.C is not None else 1.0)
        self._show_editors()

    def _show_editors(self) -> None:
        n = self.size_spin.value()
        for i in range(3):
            for j in range(3):
                self.a_edit[i][j].setEnabled(i < n and j < n)
            self.b_edit[i].setEnabled(i < n)
            self.c_edit[i].setEnabled(i < n)

    def edited_problem(self) -> TinyBQP:
        """The problem the editors hold (ValueError if it is not one)."""
        n = self.size_spin.value()
        A = [[self.a_edit[i][j].value() for j in range(n)] for i in range(n)]
        b = [self.b_edit[i].value() for i in range(n)]
        C = d = None
        if self.use_c.isChecked():
            C, d = [[self.c_edit[i].value() for i in range(n)]], [self.d_edit.value()]
        return make_problem(A, b, C, d)

    def solve_edited(self) -> bool:
        """Solve the problem as edited (the preset list then says "Custom")."""
        try:
            prob = self.edited_problem()
            self.set_problem(prob)
        except ValueError as exc:
            self.error_label.setText(str(exc))
            return False
        self.presets.blockSignals(True)
        self.presets.setCurrentIndex(len(PRESETS))
        self.presets.blockSignals(False)
        return True

    def set_problem(self, prob: TinyBQP) -> None:
        """Record ADMM's walk on ``prob`` and show it from the start point.

        Raises
        ------
        ValueError
            If the solver refuses the problem (say, a constraint no binary point meets).
        """
        self.pause()
        seed = self.seed.value()
        trace = record(prob, seed=None if seed < 0 else seed)
        self.error_label.setText("")
        self.trace = trace
        self.scene.set_trace(trace)
        self.slider.blockSignals(True)
        self.slider.setRange(0, len(trace) - 1)
        self.slider.blockSignals(False)
        self.index = -1
        self.set_caption(None)
        self.set_index(0)

    def set_caption(self, text: str | None) -> None:
        """The line above the drawing: ``text``, or (None) the problem's own note."""
        if text is None:
            prob = self.trace.problem if self.trace is not None else None
            text = f"<b>{prob.title}.</b> {prob.note}" if prob is not None else ""
        self.caption.setText(text)

    # ---------------------------------------------------------------- walking
    def set_index(self, index: int) -> None:
        """Show iterate ``index`` (0 = the start point)."""
        if self.trace is None:
            return
        index = int(min(max(index, 0), len(self.trace) - 1))
        changed = index != self.index
        self.index = index
        self.scene.set_index(index)
        self.strip.set_trace(self.trace, index)
        if self.slider.value() != index:
            self.slider.blockSignals(True)
            self.slider.setValue(index)
            self.slider.blockSignals(False)
        self._show_numbers()
        if changed:
            self.index_changed.emit(index)

    def current(self):
        """The :class:`segapp.model.teaching.Iterate` shown."""
        return self.trace.iterates[self.index]

    def step_forward(self) -> None:
        """One iteration forward."""
        self.set_index(self.index + 1)

    def step_back(self) -> None:
        """One iteration back."""
        self.set_index(self.index - 1)

    def first(self) -> None:
        """Back to the start point."""
        self.pause()
        self.set_index(0)

    def last(self) -> None:
        """To the last iteration."""
        self.pause()
        self.set_index(len(self.trace) - 1 if self.trace else 0)

    @property
    def playing(self) -> bool:
        """Whether the walk is playing."""
        return self.timer.isActive()

    def play(self) -> None:
        """Play from here (from the start when at the end)."""
        if self.trace is None:
            return
        if self.index >= len(self.trace) - 1:
            self.set_index(0)
        self.timer.start(max(1, int(1000 / self.speed.value())))
        self.buttons["play"].setText("❚❚ Pause")

    def pause(self) -> None:
        """Stop playing."""
        self.timer.stop()
        if hasattr(self, "buttons"):
            self.buttons["play"].setText("▶ Play")

    def toggle_play(self) -> None:
        """Play or pause."""
        self.pause() if self.playing else self.play()

    def _tick(self) -> None:
        if self.trace is None or self.index >= len(self.trace) - 1:
            self.pause()
            return
        self.step_forward()

    def _on_speed(self, v: int) -> None:
        self.speed_label.setText(f"{v}/s")
        if self.playing:
            self.timer.setInterval(max(1, int(1000 / v)))

    def play_to_end(self) -> None:
        """Show the last iteration as playing would end (for screenshots and the demo)."""
        self.last()

    # ---------------------------------------------------------------- numbers
    def _show_numbers(self) -> None:
        t, it = self.trace, self.current()
        prob, res = t.problem, t.result
        rows = []  # the iterate: the left column
        if it.iteration == 0:
            rows.append("<b>start point</b> (iteration 0 of "
                        f"{len(t) - 1}); z₁, z₂ are its projections")
        else:
            rows.append(f"<b>iteration {it.iteration}</b> of {len(t) - 1} &nbsp; "
                        f"ρ = {it.rho:.4g}")
        # (a row at the start point too, so the text keeps its height from step to step)
        rows.append(f"<span style='color:{C_Z1.name()}'>‖x−z₁‖ = {it.residual_box:.2e}"
                    f"</span> &nbsp; <span style='color:{C_Z2.name()}'>‖x−z₂‖ = "
                    f"{it.residual_sphere:.2e}</span> (relative)" if it.iteration else
                    "the residuals start at the first iteration")
        rows.append(f"<tt>x&nbsp;&nbsp;= {_vec(it.x)} &nbsp; y₁ = {_vec(it.y1)}<br>"
                    f"z₁ = {_vec(it.z1)} &nbsp; y₂ = {_vec(it.y2)}<br>"
                    f"z₂ = {_vec(it.z2)}</tt>")
        facts = []  # the values and the problem's answers: the right column
        facts.append(f"‖z₂ − ½‖ = {np.linalg.norm(it.z2 - 0.5):.6f} = √{prob.n}/2 "
                     f"({t.radius:.6f})")
        f_x = float(prob.objective(it.x))
        rounded = np.rint(np.clip(it.x, 0, 1))
        facts.append(f"f(x) = {f_x:.4f}, &nbsp; f(round x) = "
                     f"{float(prob.objective(rounded)):.4f}")
        facts.append(f"ADMM's answer: {tuple(int(v) for v in res.x)}, f = {res.objective:.4f} "
                     f"({res.status}, best at iteration {res.best_iteration})")
        facts.append(f"best binary point (all {2 ** prob.n} tried): "
                     f"{tuple(int(v) for v in t.optimum[1])}, f = {t.optimum[0]:.4f}")
        if t.relaxation is not None:
            facts.append(f"◇ relaxation's minimum over the box: {_vec(t.relaxation[1])}, "
                         f"f = {t.relaxation[0]:.4f}")
        if t.shift > 0:
            facts.append(f"A is indefinite: the solver minimises with A + {t.shift:.3g}·I and "
                         f"b − {t.shift:.3g}·1 (the same on binary points).")
        self.numbers.setText(
            "<table width='100%' cellspacing='0' cellpadding='0'><tr>"
            f"<td width='50%' valign='top' style='padding-right:12px'>{'<br>'.join(rows)}</td>"
            f"<td width='50%' valign='top'>{'<br>'.join(facts)}</td></tr></table>")
        self._fit_numbers()

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt API
        self.pause()
        super().closeEvent(event)


__all__ = ["GeometryView", "ResidualStrip"]
