"""Side panels: solver parameters and run results (with overlay, compare and replay)."""
from __future__ import annotations

import math

from PyQt6.QtCore import Qt, pyqtSignal
from PyQt6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from segapp.model import SolverSettings
from solver.names import BACKENDS, COLOUR_MODELS

#: How the parameter panel names each backend and colour model of :mod:`solver.names`.
BACKEND_TEXT = {"cpu": "CPU", "gpu": "GPU", "auto": "Auto"}
COLOUR_MODEL_TEXT = {"gmm": "Gaussian mixture (GrabCut)", "histogram": "Colour histogram"}


def _dspin(lo: float, hi: float, dec: int, step: float, special: str, tip: str) -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(lo, hi)
    s.setDecimals(dec)
    s.setSingleStep(step)
    s.setSpecialValueText(special)
    s.setToolTip(tip)
    s.setKeyboardTracking(False)
    return s


class ParamsPanel(QWidget):
    """Editable solver settings; emits ``changed(SolverSettings)`` on every edit."""

    changed = pyqtSignal(object)

    ADMM = (  # key, label, lo, hi, decimals, step, tooltip; the minimum means "default"
        ("rho0", "ρ₀", 0.0, 1e4, 3, 0.5, "Initial ADMM penalty ρ. Small: x explores longer; "
         "large: x is pulled to the box and sphere quickly."),
        ("rho_growth", "ρ growth", 1.0, 2.0, 3, 0.01, "Factor by which ρ grows; faster growth "
         "converges sooner to a binary x, possibly a worse one."),
        ("gamma", "γ", 0.0, 2.0, 2, 0.1, "Step size of the dual (multiplier) updates."),
        ("max_iter", "max iterations", 0, 100000, 0, 50, "Stop after this many ADMM iterations."),
        ("tol", "tolerance", 0.0, 1.0, 6, 1e-4, "Stop when the primal residuals, relative to "
         "‖x‖, fall below this."),
    )

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        model = QGroupBox("Energy")
        f = QFormLayout(model)
        self.lam = _dspin(0.0, 1e5, 3, 0.5, "default", "Smoothness weight λ: larger gives "
                          "smoother regions with shorter boundaries; 'default' = library default.")
        self.beta = _dspin(0.0, 1e4, 5, 0.001, "auto", "Edge sensitivity β in exp(−β‖cᵢ−cⱼ‖²); "
                           "'auto' sets it from the image's mean neighbour contrast.")
        self.colour = QComboBox()
        for key in COLOUR_MODELS:
            text = COLOUR_MODEL_TEXT.get(key, key)
            self.colour.addItem(text, key)
        self.colour.setToolTip("Colour model fitted to each label's strokes; the data term is its "
                               "negative log-likelihood.")
        f.addRow("λ (smoothness)", self.lam)
        f.addRow("β (edges)", self.beta)
        f.addRow("colour model", self.colour)
        lay.addWidget(model)
        admm = QGroupBox("ℓ₂-box ADMM")
        g = QFormLayout(admm)
        self.admm: dict[str, QDoubleSpinBox | QSpinBox] = {}
        for key, label, lo, hi, dec, step, tip in self.ADMM:
            if dec == 0:
                w: QDoubleSpinBox | QSpinBox = QSpinBox()
                w.setRange(int(lo), int(hi))
                w.setSingleStep(int(step))
                w.setSpecialValueText("default")
                w.setToolTip(tip)
            else:
                w = _dspin(lo, hi, dec, step, "default", tip)
            w.setKeyboardTracking(False)
            g.addRow(label, w)
            self.admm[key] = w
        self.backend = QComboBox()
        for key in BACKENDS:
            text = BACKEND_TEXT.get(key, key)
            self.backend.addItem(text, key)
        self.backend.setToolTip("Where the ADMM linear algebra runs. GPU needs CuPy and CUDA; "
                                "without them the run falls back to the CPU.")
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setToolTip("Random seed (ADMM start point, colour-model fitting).")
        g.addRow("backend", self.backend)
        g.addRow("seed", self.seed)
        lay.addWidget(admm)
        self.reference = QCheckBox("compute reference (min-cut / α-expansion)")
        self.reference.setChecked(True)
        self.reference.setToolTip("Also solve exactly (K = 2) or by α-expansion (K > 2) to "
                                  "compare ADMM against; with constraints, the parametric or "
                                  "layered min-cut, or a best-effort Lagrangian swap.")
        lay.addWidget(self.reference)
        lay.addStretch(1)
        for w in (self.lam, self.beta, *self.admm.values(), self.seed):
            w.valueChanged.connect(self._emit)
        self.colour.currentIndexChanged.connect(self._emit)
        self.backend.currentIndexChanged.connect(self._emit)
        self._loading = False

    def _emit(self, *_):
        if not self._loading:
            self.changed.emit(self.settings())

    def settings(self) -> SolverSettings:
        """Settings as currently shown."""
        admm = {}
        for key, *_ in self.ADMM:
            w = self.admm[key]
            if w.value() != w.minimum():
                admm[key] = int(w.value()) if isinstance(w, QSpinBox) else float(w.value())
        return SolverSettings(
            lam=self.lam.value() or None, beta=self.beta.value() or None,
            colour_model=self.colour.currentData(), backend=self.backend.currentData(),
            seed=int(self.seed.value()), admm=admm)

    def set_settings(self, s: SolverSettings) -> None:
        """Show ``s`` without emitting ``changed``."""
        self._loading = True
        try:
            self.lam.setValue(s.lam or 0.0)
            self.beta.setValue(s.beta or 0.0)
            self.colour.setCurrentIndex(max(self.colour.findData(s.colour_model), 0))
            self.backend.setCurrentIndex(max(self.backend.findData(s.backend), 0))
            self.seed.setValue(int(s.seed))
            for key, *_ in self.ADMM:
                w = self.admm[key]
                w.setValue(s.admm.get(key, w.minimum()))
        finally:
            self._loading = False


def _fmt(v: float | None, spec: str = ".6g") -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def constraint_line(r) -> str:
    """One line of the results panel for a :class:`solver.mrf.ConstraintReport`."""
    mark = "✓ holds" if r.satisfied else "✗ violated"
    if r.kind == "area":
        return f"area of {r.labels[0]}: {r.value:,.0f} px in [{r.lo:,.0f}, {r.hi:,.0f}]  {mark}"
    return f"{r.labels[0]} and {r.labels[1]} apart: {r.value:,.0f} touching  {mark}"


def phase_times(solve_s: float, build_s: float | None = None,
                reference_s: float | None = None) -> str:
    """The results panel's time: the total, then each phase (a phase not given is left out;
    the reference only when one was solved)."""
    parts = []
    if build_s is not None:
        parts.append(f"model {build_s:.2f} s")
    if reference_s:
        parts.append(f"reference {reference_s:.2f} s")
    if not parts:
        return f"{solve_s:.2f} s"
    parts.append(f"ADMM incl. polish {solve_s:.2f} s")
    total = solve_s + (build_s or 0.0) + (reference_s or 0.0)
    return f"{total:.2f} s in all\n" + " · ".join(parts)


#: How a pipeline warning about a GPU fallback ends (segapp.core.pipeline.resolve_backend).
_FALLBACK_TAIL = "; running on the CPU instead"


def warning_line(text: str) -> str:
    """A run's warning as the results panel shows it under the backend: a GPU fallback reads
    "GPU not available: ran on the CPU (reason)"."""
    if text.endswith(_FALLBACK_TAIL):
        return f"GPU not available: ran on the CPU ({text[:-len(_FALLBACK_TAIL)]})"
    return text


class ResultsPanel(QWidget):
    """Numbers of the last run plus view controls (overlay, compare, replay)."""

    opacity_changed = pyqtSignal(float)
    view_changed = pyqtSignal(str)
    strokes_toggled = pyqtSignal(bool)
    replay_changed = pyqtSignal(int)

    VIEWS = (("Solution overlay", "solution"), ("Disagreement with reference", "compare"),
             ("Photo only", "photo"))

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        box = QGroupBox("Last run")
        f = QFormLayout(box)
        self._form = f
        self.fields: dict[str, QLabel] = {}
        for key, text, tip in (
                ("energy", "ADMM energy", "Energy of the rounded ADMM labels"),
                ("reference", "reference", "Energy of min-cut (K = 2, optimal) or α-expansion"),
                ("gap", "relative gap", "(E_admm − E_ref) / |E_ref|; ≤ 0 means ADMM is as good"),
                ("disagree", "disagreeing px", "Pixels labelled differently by ADMM and reference"),
                ("iterations", "iterations", "ADMM iterations run"),
                ("time", "time", "Wall-clock time of each phase: building the model (colour "
                 "models, edge weights), the reference solve, and ADMM with its polish"),
                ("status", "status", "Converged, stopped at the iteration limit, or cancelled"),
                ("backend", "backend", "Where it ran (and why, when the GPU was asked for "
                 "but the run fell back to the CPU)"),
                ("bound", "lower bound", "A lower bound on the constrained optimum, where the "
                 "yardstick proves one (the parametric min-cut's Lagrangian bound)"),
                ("constraints", "constraints", "Each area bound and apart pair on the result: "
                 "its value and whether it holds")):
            lab = QLabel("—")
            lab.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            lab.setToolTip(tip)
            if key in ("backend", "time"):
                lab.setWordWrap(True)  # (a fallback's reason; the phases' line)
            f.addRow(text, lab)
            self.fields[key] = lab
        self._show_constraint_rows(False)
        lay.addWidget(box)
        view = QGroupBox("View")
        v = QFormLayout(view)
        self.view = QComboBox()
        for text, key in self.VIEWS:
            self.view.addItem(text, key)
        self.view.setToolTip("What to show over the photo")
        self.view.currentIndexChanged.connect(lambda _: self.view_changed.emit(self.view_mode()))
        self.opacity = QSlider(Qt.Orientation.Horizontal)
        self.opacity.setRange(0, 100)
        self.opacity.setValue(55)
        self.opacity.setToolTip("Opacity of the solution overlay")
        self.opacity.valueChanged.connect(lambda x: self.opacity_changed.emit(x / 100.0))
        self.strokes = QCheckBox("show strokes")
        self.strokes.setChecked(True)
        self.strokes.toggled.connect(self.strokes_toggled)
        v.addRow("show", self.view)
        v.addRow("opacity", self.opacity)
        v.addRow("", self.strokes)
        lay.addWidget(view)
        rep = QGroupBox("Replay")
        r = QHBoxLayout(rep)
        self.replay = QSlider(Qt.Orientation.Horizontal)
        self.replay.setToolTip("Scrub through the stored iterations of the last run")
        self.replay.setEnabled(False)
        self.replay.valueChanged.connect(self.replay_changed)
        self.replay_label = QLabel("—")
        self.replay_label.setMinimumWidth(64)
        r.addWidget(self.replay, 1)
        r.addWidget(self.replay_label)
        lay.addWidget(rep)
        lay.addStretch(1)

    def view_mode(self) -> str:
        """``"solution"``, ``"compare"`` or ``"photo"``."""
        return self.view.currentData()

    def set_view_mode(self, mode: str) -> None:
        """Select a view mode."""
        self.view.setCurrentIndex(max(self.view.findData(mode), 0))

    def clear(self) -> None:
        """Forget the last run."""
        for lab in self.fields.values():
            lab.setText("—")
        self.set_replay_count(0)

    def show_outcome(self, energy: float, reference: float | None, ref_name: str,
                     disagree: int | None, iterations: int, time_s: float, status: str,
                     backend: str, constraints: list | None = None,
                     bound: float | None = None, build_s: float | None = None,
                     reference_s: float | None = None,
                     warnings: list[str] | None = None) -> None:
        """Fill in the numbers of a finished run (``constraints``: its
        :class:`solver.mrf.ConstraintReport` list; ``bound``: the yardstick's lower bound;
        ``time_s``: ADMM's with its polish, ``build_s`` and ``reference_s``: building the model
        and the reference, shown as phases with their total; ``warnings``: the run's, e.g. a
        GPU fallback, shown with the backend)."""
        self.fields["energy"].setText(_fmt(energy))
        self.fields["reference"].setText(f"{_fmt(reference)}  ({ref_name})" if reference
                                         is not None else "—")
        if reference is not None and reference != 0:
            gap = (energy - reference) / abs(reference)
            self.fields["gap"].setText(f"{gap * 100:+.3f} %")
        else:
            self.fields["gap"].setText("—")
        self.fields["disagree"].setText("—" if disagree is None else f"{disagree:,}")
        self.fields["iterations"].setText(str(iterations))
        self.fields["time"].setText(phase_times(time_s, build_s, reference_s))
        self.fields["status"].setText(status)
        self.fields["backend"].setText("\n".join([backend, *map(warning_line, warnings or [])]))
        self.fields["bound"].setText(_fmt(bound))
        self.fields["constraints"].setText(
            "\n".join(constraint_line(r) for r in constraints) if constraints else "—")
        self._show_constraint_rows(bool(constraints))

    def _show_constraint_rows(self, shown: bool) -> None:
        """The lower bound and constraint rows, only for a run that had constraints."""
        for key in ("bound", "constraints"):
            self._form.setRowVisible(self.fields[key], shown)

    def set_replay_count(self, n: int) -> None:
        """Enable the replay slider over ``n`` stored frames (at the last one)."""
        self.replay.blockSignals(True)
        self.replay.setRange(0, max(n - 1, 0))
        self.replay.setValue(max(n - 1, 0))
        self.replay.blockSignals(False)
        self.replay.setEnabled(n > 1)
        if n == 0:
            self.replay_label.setText("—")

    def set_replay_label(self, text: str) -> None:
        """Text next to the replay slider."""
        self.replay_label.setText(text)
