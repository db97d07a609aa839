"""Side panels: solver parameters and run results (with overlay, compare and replay)."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import fields as dataclass_fields

from PyQt6.QtCore import Qt, pyqtSignal
from PyQt6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
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


#: The integer fields accept at most a C int (the session file's limit, as the seed's).
INT_MAX = 2**31 - 1

#: How the invalid text of a parameter field looks (not applied; see :class:`ParamField`).
INVALID_STYLE = "QLineEdit { color: #ff6b6b; border: 1px solid #d04848; }"


def _number_text(v: float | int) -> str:
    """A parameter as its field shows it: integers plainly, floats in at most 10 digits."""
    return str(int(v)) if isinstance(v, int) else format(float(v), ".10g")


class ParamField(QLineEdit):
    """A number field whose empty state means "the library's default".

    Empty, it shows ``placeholder`` (e.g. "default (10)", the default's value). Text is
    checked as it is typed with ``check`` (the library's own check, raising ValueError):
    invalid text turns red, says why in the tooltip and is never applied. A valid value is
    committed (``valueChanged``) by Enter or leaving the field, by Up/Down (Page Up/Down: ten
    steps of ``step``, from the value shown or from ``default``), and emptying the field (the
    clear button, or deleting the text) commits the default at once; leaving the field with
    invalid text puts back the committed value.

    ``value()`` is what the field stands for: the valid value shown (None when empty: the
    default), or while the text is invalid the committed value. ``setValue`` shows and commits
    one, emitting ``valueChanged`` when it changes, like a spin box.
    """

    valueChanged = pyqtSignal(object)

    def __init__(self, placeholder: str, check: Callable[[float | int], object],
                 integer: bool = False, step: float = 1.0, default: float | None = None,
                 tip: str = "", parent=None) -> None:
        super().__init__(parent)
        self.integer = integer
        self.step = step
        self.default = default
        self._check = check
        self._tip = tip
        self._value: float | int | None = None  # committed
        self._shown: float | int | None = None  # the valid text's value
        self._error = ""
        self._setting = False
        self.setPlaceholderText(placeholder)
        self.setClearButtonEnabled(True)
        self.setToolTip(tip)
        self.textChanged.connect(self._on_text)
        self.editingFinished.connect(self._on_finished)

    # -- the value
    def value(self) -> float | int | None:
        """The value in effect: a number, or None for the library's default."""
        return self._value if self._error else self._shown

    def setValue(self, v: float | int | None) -> None:  # noqa: N802 - Qt naming
        """Show ``v`` (None: empty, the default) and commit it."""
        if v is not None:
            v = int(v) if self.integer else float(v)
        self._setting = True
        try:
            self.setText("" if v is None else _number_text(v))
        finally:
            self._setting = False
        self._shown = v
        self._set_error("")
        self._commit(v)

    def is_valid(self) -> bool:
        """Whether the text shown is valid (empty, or a value ``check`` accepts)."""
        return not self._error

    def shown_text(self) -> str:
        """What the field shows: its text, or when empty the placeholder."""
        return self.text() or self.placeholderText()

    def parse(self, text: str) -> float | int | None:
        """``text`` as a value (None for empty); ValueError saying why it is not valid."""
        t = text.strip().replace(",", ".")
        if not t:
            return None
        try:
            v = float(t)
        except ValueError:
            raise ValueError("not a number") from None
        if not math.isfinite(v):
            raise ValueError("must be a finite number")
        if self.integer:
            if v != int(v):
                raise ValueError("must be a whole number")
            v = int(v)
            if v > INT_MAX:
                raise ValueError(f"must be at most {INT_MAX}")
        self._check(v)
        return v

    # -- internals
    def _commit(self, v: float | int | None) -> None:
        if v != self._value or (v is None) != (self._value is None):
            self._value = v
            self.valueChanged.emit(v)

    def _set_error(self, message: str) -> None:
        self._error = message
        self.setStyleSheet(INVALID_STYLE if message else "")
        self.setToolTip(self._tip + (f"\n\n✗ {message}: not applied" if message else ""))

    def _on_text(self, text: str) -> None:
        if self._setting:
            return
        try:
            v = self.parse(text)
        except ValueError as exc:
            self._set_error(str(exc))
            return
        self._shown = v
        self._set_error("")
        if v is None:  # emptied: the default, at once
            self._commit(None)

    def _on_finished(self) -> None:
        if self._error:  # leave the field showing what is in effect
            self.setValue(self._value)
        else:
            self._commit(self._shown)

    def keyPressEvent(self, e) -> None:  # noqa: N802 - Qt API
        steps = {Qt.Key.Key_Up: 1, Qt.Key.Key_Down: -1,
                 Qt.Key.Key_PageUp: 10, Qt.Key.Key_PageDown: -10}.get(e.key())
        if steps is None:
            super().keyPressEvent(e)
            return
        base = self.value()
        if base is None:
            base = self.default if self.default is not None else 0
        v = base + steps * self.step
        v = int(round(v)) if self.integer else round(v, 12)
        try:
            self._check(v)
        except ValueError:
            return  # a step out of range does nothing, as a spin box at its end
        self.setValue(v)


def _choices(keys: tuple[str, ...], texts: dict[str, str]) -> QComboBox:
    """A combo box offering ``keys``, each shown as its text (the key itself where none)."""
    box = QComboBox()
    for key in keys:
        box.addItem(texts.get(key, key), key)
    return box


def _library_defaults() -> dict[str, float | int]:
    """The numbers a parameter left empty takes: the MRF builder's λ and ADMM's own (for those
    chosen for the problem, the value where nothing chooses; their tooltips say when)."""
    from solver.admm.params import ADMMParams
    from solver.mrf.options import DEFAULT_LAMBDA
    params = ADMMParams().resolved()
    d = {f.name: getattr(params, f.name) for f in dataclass_fields(ADMMParams)}
    d["lam"] = DEFAULT_LAMBDA
    return d


def _check_admm(key: str) -> Callable[[float | int], object]:
    """ADMM's own check of field ``key`` (:meth:`solver.ADMMParams.from_kwargs`)."""
    from solver.admm.params import ADMMParams

    def check(v):
        try:
            return ADMMParams.from_kwargs(**{key: v})
        except (TypeError, ValueError) as exc:
            text = str(exc)
            raise ValueError(text.removeprefix(f"ADMM parameter {key} ")) from None
    return check


def _check_scalar(name: str) -> Callable[[float | int], object]:
    """The MRF builder's check of λ or β (finite and non-negative)."""
    from solver.mrf.build.checks import check_scalar

    def check(v):
        try:
            return check_scalar(name, v)
        except ValueError as exc:
            raise ValueError(str(exc).removeprefix(f"{name} ").split(", got")[0]) from None
    return check


class ParamsPanel(QWidget):
    """Editable solver settings; emits ``changed(SolverSettings)`` on every committed edit.

    λ, β and ADMM's fields are :class:`ParamField`: empty means the library's default (None in
    the settings, as sessions store it), and the field then shows that default's number.
    """

    changed = pyqtSignal(object)

    ADMM = (  # key, label, step, tooltip (an empty field: ADMM's default, shown in it)
        ("rho0", "ρ₀", 0.1, "Initial ADMM penalty ρ, relative to the problem's scale. Small: "
         "x explores longer; large: x is pulled to the box and sphere quickly."),
        ("rho_growth", "ρ growth", 0.01, "Factor by which ρ grows; faster growth converges "
         "sooner to a binary x, possibly a worse one."),
        ("gamma", "γ", 0.1, "Step size of the dual (multiplier) updates, in (0, 2)."),
        ("max_iter", "max iterations", 100, "Stop after this many ADMM iterations, on each "
         "level: a large photo is solved coarse to fine, each level of its pyramid with at most "
         "this many iterations, and the status bar and the results count the iterations across "
         "the levels (the level and its own iteration are named while it runs)."),
        ("tol", "tolerance", 1e-4, "Stop when the primal residuals, relative to ‖x‖, fall "
         "below this."),
    )

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        from solver.mrf.options import CoarseToFineOptions
        defaults = _library_defaults()
        self.defaults = defaults
        ctf = CoarseToFineOptions()
        empty = "Empty (✕ or delete the text): the default. Up/Down step the value."
        lay = QVBoxLayout(self)
        model = QGroupBox("Energy")
        f = QFormLayout(model)
        lam = defaults["lam"]
        self.lam = ParamField(f"default ({_number_text(lam)})", _check_scalar("lambda"),
                              step=0.5, default=lam,
                              tip="Smoothness weight λ ≥ 0: larger gives smoother regions with "
                              f"shorter boundaries; 0: no smoothing. {empty}")
        self.beta = ParamField("auto (from the image)", _check_scalar("beta"), step=0.001,
                               tip="Edge sensitivity β ≥ 0 in exp(−β‖cᵢ−cⱼ‖²); 0: edges do "
                               "not matter. Empty: set from the image's mean neighbour "
                               "contrast. Up/Down step the value.")
        self.colour = _choices(COLOUR_MODELS, COLOUR_MODEL_TEXT)
        self.colour.setToolTip("Colour model fitted to each label's strokes; the data term is its "
                               "negative log-likelihood.")
        f.addRow("λ (smoothness)", self.lam)
        f.addRow("β (edges)", self.beta)
        f.addRow("colour model", self.colour)
        lay.addWidget(model)
        admm = QGroupBox("ℓ₂-box ADMM")
        g = QFormLayout(admm)
        self.admm: dict[str, ParamField] = {}
        # the slow schedule of small images (and of the coarsest level of large ones)
        slow = (f" Images of at most {ctf.whole_max:,} px, and the coarsest level of larger "
                f"ones, use a slower schedule unless ρ₀ or ρ growth is set: growth "
                f"{_number_text(ctf.small_growth)}, and for K > 2 ρ₀ = "
                f"{_number_text(ctf.small_rho0_multi)}.")
        for key, label, step, tip in self.ADMM:
            d = defaults[key]
            integer = isinstance(d, int)
            w = ParamField(f"default ({_number_text(d)})", _check_admm(key), integer=integer,
                           step=step, default=d,
                           tip=tip + (slow if key in ("rho0", "rho_growth") else "")
                           + f" {empty}")
            g.addRow(label, w)
            self.admm[key] = w
        self.backend = _choices(BACKENDS, BACKEND_TEXT)
        self.backend.setToolTip("Where the ADMM linear algebra runs. GPU needs CuPy and CUDA; "
                                "without them the run falls back to the CPU.")
        self.seed = QSpinBox()
        self.seed.setRange(0, INT_MAX)
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

    def number_fields(self) -> dict[str, ParamField]:
        """The number fields by settings key (``lam``, ``beta`` and ADMM's)."""
        return {"lam": self.lam, "beta": self.beta, **self.admm}

    def _emit(self, *_):
        if not self._loading:
            self.changed.emit(self.settings())

    def settings(self) -> SolverSettings:
        """Settings as shown (an empty field: None, the default; text that is not valid is
        not applied: its field's committed value counts)."""
        admm = {key: w.value() for key, w in self.admm.items() if w.value() is not None}
        return SolverSettings(
            lam=self.lam.value(), beta=self.beta.value(),
            colour_model=self.colour.currentData(), backend=self.backend.currentData(),
            seed=int(self.seed.value()), admm=admm)

    def set_settings(self, s: SolverSettings) -> None:
        """Show ``s`` without emitting ``changed`` (None, or an ADMM field not given: the
        default)."""
        self._loading = True
        try:
            self.lam.setValue(s.lam)
            self.beta.setValue(s.beta)
            self.colour.setCurrentIndex(max(self.colour.findData(s.colour_model), 0))
            self.backend.setCurrentIndex(max(self.backend.findData(s.backend), 0))
            self.seed.setValue(int(s.seed))
            for key, w in self.admm.items():
                w.setValue((s.admm or {}).get(key))
        finally:
            self._loading = False


def _megabytes(nbytes: int) -> str:
    """Bytes as the results panel shows them: "37.2 MB" (10⁶ bytes), "640 kB" below 1 MB."""
    if nbytes < 1_000_000:
        return f"{nbytes / 1000:.0f} kB"
    return f"{nbytes / 1e6:.1f} MB"


def replay_memory_text(frames: int, nbytes: int) -> str:
    """The replay's memory line: "42 frames kept, 37.2 MB"."""
    return f"{frames} frame{'s' if frames != 1 else ''} kept, {_megabytes(nbytes)}"


def iterations_text(total: int, per_level: list[int] | None = None,
                    rounds: tuple[int, int] = (0, 0)) -> str:
    """How a run's ``total`` iterations divide, for the results panel's "of which" row (the
    iterations row gives the total, as the plot's axis and the status bar count it; the
    Parameters tab's max iterations bounds each solve and level): ``"412 + 301 + 130 + 82 over
    4 levels, coarsest first"`` for a coarse-to-fine solve, ``"120 in 3 colour-model rounds,
    28 in the final solve"`` after re-estimation rounds in the window's view.

    Parameters
    ----------
    total : int
        The run's iterations.
    per_level : list of int, optional
        The final solve's iterations by level, coarsest first.
    rounds : (int, int)
        The rounds seen and their iterations.

    Returns
    -------
    str
        ``""`` where the run is one solve of one level, or where the parts do not add up to
        ``total``.
    """
    n_rounds, in_rounds = rounds
    final = sum(per_level or [])
    levels = ""
    if per_level and len(per_level) > 1:
        levels = (" + ".join(map(str, per_level)) + f" over {len(per_level)} levels, "
                  "coarsest first")
    if n_rounds and in_rounds and in_rounds + final == total:
        return (f"{in_rounds} in {n_rounds} colour-model round{'s' if n_rounds != 1 else ''}, "
                f"{final} in the final solve" + (f" ({levels})" if levels else ""))
    if levels and final == total:
        return levels
    return ""


#: The polish stages' names as the results panel writes them (solver.mrf.polish.stages.STAGES).
STAGE_NAMES = {"icm": "ICM", "fill": "fill", "regions": "regions", "split": "splits",
               "descent": "descents", "tv": "TV", "tv-expansion": "TV expansions",
               "local": "local re-solves", "edge-snap": "edge snapping",
               "level-sets": "level sets", "warm-fusion": "warm-start fusion",
               "constrained": "constrained moves", "area-relaxation": "area relaxation"}


def polish_text(stages) -> str:
    """The results panel's polish row: the stages that lowered the energy, most first, with
    what each took off (``"TV −6,486 · ICM −206 · fill −59"``), then on a second line the
    polish's time and how many stages took nothing (``"0.30 s, 3 stages took nothing"``).

    Parameters
    ----------
    stages : sequence of StageReport
        A run's :attr:`segapp.core.pipeline.SegmentationResult.stages`.

    Returns
    -------
    str
        ``""`` without stages (no polish, or another solver).
    """
    if not stages:
        return ""
    gained = sorted((s for s in stages if s.gain > 0), key=lambda s: -s.gain)
    # (no break inside a stage's name and gain: the row wraps between stages)
    head = " · ".join(f"{STAGE_NAMES.get(s.name, s.name)} −{s.gain:,.{_digits(s.gain)}f}"
                      .replace(" ", "\u00a0") for s in gained) or "nothing taken off"
    idle = len(stages) - len(gained)
    tail = f"{sum(s.time_s for s in stages):.2f} s"
    if idle:
        tail += f", {idle} stage{'s' if idle != 1 else ''} took nothing"
    return f"{head}\n{tail}"


def _digits(v: float) -> int:
    """Decimals for a gain: none from 100 up, else enough to show it (at most 3)."""
    return 0 if v >= 100 else 1 if v >= 1 else 3


def _fmt(v: float | None, spec: str = ".6g") -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def constraint_line(r) -> str:
    """One line of the results panel for a :class:`solver.mrf.ConstraintReport`."""
    mark = "✓ holds" if r.satisfied else "✗ violated"
    if r.kind == "area":
        return f"area of {r.labels[0]}: {r.value:,.0f} px in [{r.lo:,.0f}, {r.hi:,.0f}]  {mark}"
    return f"{r.labels[0]} and {r.labels[1]} apart: {r.value:,.0f} touching  {mark}"


def phase_times(solve_s: float, build_s: float | None = None,
                reference_s: float | None = None, total_s: float | None = None) -> str:
    """The results panel's time: the total, then each phase (a phase not given is left out;
    the reference only when one was solved). ``total_s``: the run's wall time, less than the
    phases' sum when the reference solved beside ADMM (None: that sum)."""
    parts = []
    if build_s is not None:
        parts.append(f"model {build_s:.2f}")
    if reference_s:
        parts.append(f"reference {reference_s:.2f}")
    if not parts:
        return f"{solve_s:.2f} s"
    parts.append(f"ADMM {solve_s:.2f} s")  # (its polish included: see the field's tooltip)
    total = solve_s + (build_s or 0.0) + (reference_s or 0.0) if total_s is None else total_s
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
                ("unpolished", "before polish", "Energy of ADMM's own rounded labels before the "
                 "final polish (ICM, region moves, fusion with level sets and TV proposals), "
                 "and its gap to the reference: what the polish added"),
                ("polish", "polish", "The final polish stage by stage: what each stage that "
                 "lowered the energy took off, most first, and the polish's time (ADMM's "
                 "time includes it)"),
                ("disagree", "disagreeing px", "Pixels labelled differently by ADMM and reference"),
                ("iterations", "iterations", "ADMM iterations run, numbered across the levels of "
                 "a coarse-to-fine solve (a large photo: the coarsest level first) and the "
                 "colour models' re-estimation rounds; the Parameters tab's max iterations "
                 "bounds each solve and level"),
                ("parts", "of which", "How the iterations divide between the re-estimation "
                 "rounds and the final solve, and between the final solve's pyramid levels "
                 "(each at most the max iterations)"),
                ("time", "time", "Wall-clock time of the run and of each phase: building the model "
                 "(colour models, edge weights), the reference, and ADMM with its polish. The "
                 "reference solves in its own process beside ADMM, so the phases overlap and "
                 "ADMM's time is measured sharing the cores (segapp bench times them apart)"),
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
            if key in ("backend", "time", "parts", "polish"):
                lab.setWordWrap(True)  # (a fallback's reason; the phases; the parts; stages)
            f.addRow(text, lab)
            self.fields[key] = lab
        self._show_constraint_rows(False)
        self._form.setRowVisible(self.fields["unpolished"], False)  # (an ADMM run's only)
        self._form.setRowVisible(self.fields["polish"], False)  # (a polished run's only)
        self._form.setRowVisible(self.fields["parts"], False)  # (a run of several parts')
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
        rep = QGroupBox("Replay")
        rv = QVBoxLayout(rep)
        r = QHBoxLayout()
        self.replay = QSlider(Qt.Orientation.Horizontal)
        self.replay.setToolTip("Scrub through the stored iterations of the last run")
        self.replay.setEnabled(False)
        self.replay.valueChanged.connect(self.replay_changed)
        self.replay_label = QLabel("—")
        self.replay_label.setMinimumWidth(64)
        r.addWidget(self.replay, 1)
        r.addWidget(self.replay_label)
        rv.addLayout(r)
        # what the replay keeps in memory (the frame store's bytes)
        self.replay_memory = QLabel("")
        self.replay_memory.setStyleSheet("color: #9a9aa4;")
        rv.addWidget(self.replay_memory)
        # the replay first: what a person drags after a run (and the guided demo asks for)
        # stays in view at 1440 x 900 however many rows the run's numbers take (below them, it
        # was under the fold, to be scrolled to)
        lay.addWidget(rep)
        lay.addWidget(box)
        lay.addWidget(view)
        #: The replay's :class:`segapp.ui.frames.FrameStore`, whose memory the panel reports
        #: (None: the window's ``frames``, where it has one).
        self.frame_store = None
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
        self._form.setRowVisible(self.fields["unpolished"], False)
        self._form.setRowVisible(self.fields["polish"], False)
        self._form.setRowVisible(self.fields["parts"], False)
        self.set_replay_count(0)
        self._fit_wrapped()

    def show_outcome(self, energy: float, reference: float | None, ref_name: str,
                     disagree: int | None, iterations: int, time_s: float, status: str,
                     backend: str, constraints: list | None = None,
                     bound: float | None = None, build_s: float | None = None,
                     reference_s: float | None = None,
                     warnings: list[str] | None = None,
                     unpolished: float | None = None,
                     total_s: float | None = None,
                     per_level: list[int] | None = None,
                     rounds: tuple[int, int] = (0, 0), stages=()) -> None:
        """Fill in the numbers of a finished run (``constraints``: its
        :class:`solver.mrf.ConstraintReport` list; ``bound``: the yardstick's lower bound;
        ``time_s``: ADMM's with its polish, ``build_s`` and ``reference_s``: building the model
        and the reference, shown as phases with their total; ``warnings``: the run's, e.g. a
        GPU fallback, shown with the backend; ``unpolished``: the energy of ADMM's own labels
        before the final polish, shown with its gap where there is a reference, its row hidden
        when None; ``total_s``: the run's wall time, see :func:`phase_times`; ``per_level``:
        the final solve's iterations by pyramid level, coarsest first, and ``rounds``: the
        re-estimation rounds and their iterations, see :func:`iterations_text`; ``stages``:
        the final polish's :class:`solver.mrf.polish.stages.StageReport` list, see
        :func:`polish_text`, its row hidden when empty)."""
        self.fields["energy"].setText(_fmt(energy))
        self.fields["reference"].setText(f"{_fmt(reference)}  ({ref_name})" if reference
                                         is not None else "—")
        if reference is not None and reference != 0:
            gap = (energy - reference) / abs(reference)
            self.fields["gap"].setText(f"{gap * 100:+.3f} %")
        else:
            self.fields["gap"].setText("—")
        text = _fmt(unpolished)
        if unpolished is not None and reference is not None and reference != 0:
            text += f"  ({(unpolished - reference) / abs(reference) * 100:+.3f} %)"
        self.fields["unpolished"].setText(text)
        self._form.setRowVisible(self.fields["unpolished"], unpolished is not None)
        polished = polish_text(stages)
        self.fields["polish"].setText(polished or "—")
        self._form.setRowVisible(self.fields["polish"], bool(polished))
        self.fields["disagree"].setText("—" if disagree is None else f"{disagree:,}")
        self.fields["iterations"].setText(str(iterations))
        parts = iterations_text(iterations, per_level, rounds)
        self.fields["parts"].setText(parts or "—")
        self._form.setRowVisible(self.fields["parts"], bool(parts))
        self.fields["time"].setText(phase_times(time_s, build_s, reference_s, total_s))
        self.fields["status"].setText(status)
        self.fields["backend"].setText("\n".join([backend, *map(warning_line, warnings or [])]))
        self.fields["bound"].setText(_fmt(bound))
        self.fields["constraints"].setText(
            "\n".join(constraint_line(r) for r in constraints) if constraints else "—")
        self._show_constraint_rows(bool(constraints))
        self._fit_wrapped()

    def _fit_wrapped(self) -> None:
        """Give each wrapping field the height its text takes at its width: the form gave it
        its unwrapped height, and a line wrapped at the panel's width ("… ADMM 10.76" then
        "s") was cut off."""
        for key in ("backend", "time", "parts", "polish"):
            lab = self.fields[key]
            if lab.width() > 0:
                need = lab.heightForWidth(lab.width())
                if need > 0 and need != lab.minimumHeight():
                    lab.setMinimumHeight(need)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._fit_wrapped()

    def _show_constraint_rows(self, shown: bool) -> None:
        """The lower bound and constraint rows, only for a run that had constraints."""
        for key in ("bound", "constraints"):
            self._form.setRowVisible(self.fields[key], shown)

    def set_replay_count(self, n: int) -> None:
        """Enable the replay slider over ``n`` stored frames (at the last one), and say what
        they take in memory (:meth:`show_replay_memory`)."""
        self.replay.blockSignals(True)
        self.replay.setRange(0, max(n - 1, 0))
        self.replay.setValue(max(n - 1, 0))
        self.replay.blockSignals(False)
        self.replay.setEnabled(n > 1)
        if n == 0:
            self.replay_label.setText("—")
        self.show_replay_memory()

    def _store(self):
        from segapp.ui.frames import FrameStore
        store = self.frame_store
        return store if isinstance(store, FrameStore) else None

    def show_replay_memory(self) -> None:
        """The frame store's size under the replay slider ("42 frames kept, 37.2 MB", its
        limits in the tooltip); nothing when it holds none."""
        store = self._store()
        if store is None or not len(store):
            self.replay_memory.setText("")
            self.replay_memory.setToolTip("")
            return
        self.replay_memory.setText(replay_memory_text(len(store), store.nbytes()))
        self.replay_memory.setToolTip(
            "Memory the replay holds: the run's stored iterates, downsampled, one byte per "
            f"label and pixel; at most {store.capacity} frames and {_megabytes(store.max_bytes)} "
            "(beyond either, every other frame is dropped, the first and the last kept). "
            "Freed by the next run or image.")

    def set_replay_label(self, text: str) -> None:
        """Text next to the replay slider."""
        self.replay_label.setText(text)
