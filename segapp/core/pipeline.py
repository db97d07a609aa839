"""Photo + user input → MRF → labels: the one path shared by the CLI, the GUI worker and tests.

Qt-free. ``run_segmentation`` builds the MRF, then runs the chosen solver and, optionally, the
yardstick: in this process before the solver (the CLI), or in a child process beside it (the
app: ADMM starts at once, and a live plot draws the reference line when it arrives).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from segapp.core.isolated import IsolatedReference, PendingReference, ReferenceStopped
from segapp.core.isolated import shared as shared_reference
from segapp.core.memory import check_memory
from solver.admm.params import ADMMParams
from solver.admm.records import IterationRecord
from solver.backend import GPUUnavailableError, get_backend, gpu_errors
from solver.mrf import (
    DEFAULT_LAMBDA,
    ConstraintReport,
    Constraints,
    MRFIterationState,
    MRFProblem,
    auto_backend,
    DEFAULT_MODEL,
    ModelOptions,
    SolveOptions,
    constrained_variant,
    prepare,
    solve_mrf,
    yardstick_method,
)
from solver.mrf.build.constraints import LevelConstraints
from solver.mrf.options import DEFAULT_OPTIONS
from solver.mrf.result import Verdicts
from solver.names import BACKENDS, COLOUR_MODELS, METHODS

log = logging.getLogger(__name__)

#: The most re-estimation rounds a run takes.
MAX_ROUNDS = 20


@dataclass
class SegmentParams:
    """Everything that decides a segmentation besides the image and the user's drawing.

    Attributes
    ----------
    k : int
        Number of labels (2..32).
    lam : float or None
        Smoothness weight λ (None: ``solver.mrf.DEFAULT_LAMBDA``).
    beta : float or None
        Contrast parameter β (None: estimated from the image).
    colour_model : {"gmm", "histogram"}
    solver : {"admm", "mincut", "expansion", "lp"}
    backend : {"cpu", "gpu", "auto"}
        ADMM's backend; "gpu" without a GPU falls back to the CPU with a warning in the outcome.
    seed : int or None
        Seed of ADMM's random start (None: start at 1/2) and of the colour-model fit (None: 0).
    admm : ADMMParams
        ADMM's parameters (:class:`solver.ADMMParams`; the fields left None are chosen for the
        problem). A mapping of its fields is taken too and checked at once (a session file's
        ``settings.admm``).
    options : SolveOptions
        The solve's switches (:class:`solver.mrf.SolveOptions`): ``options.polish.enabled``
        finishes ADMM with the polish (:func:`solver.mrf.polish.polish_labels`; never raises
        the energy).
    constraints : Constraints or None
        Area bounds and apart pairs (:class:`solver.mrf.Constraints`); None: none.
    rounds : int or None
        GrabCut-style re-estimation (:func:`solver.mrf.reestimate`): the colour models are
        refitted to the solver's answer and the image solved again, warm-started, up to this
        many times; the answer, its energy and the reference are the final models'. None: the
        default for the input (:meth:`rounds_for`).
    model : ModelOptions
        How the model is made from the drawing (:class:`solver.mrf.ModelOptions`: strokes
        as seeds, the rounds' defaults, the reduced copy).
    """

    k: int = 2
    lam: float | None = None
    beta: float | None = None
    colour_model: str = "gmm"
    solver: str = "admm"
    backend: str = "cpu"
    seed: int | None = None
    admm: ADMMParams = field(default_factory=ADMMParams)
    options: SolveOptions = DEFAULT_OPTIONS
    constraints: Constraints | None = None
    rounds: int | None = None
    model: ModelOptions = DEFAULT_MODEL

    def __post_init__(self) -> None:
        if isinstance(self.admm, Mapping):
            self.admm = ADMMParams.from_kwargs(**self.admm)
        elif not isinstance(self.admm, ADMMParams):
            raise ValueError(f"admm must be ADMM parameters (solver.ADMMParams or a mapping of "
                             f"its fields), got {type(self.admm).__name__}")
        if not isinstance(self.options, SolveOptions):
            raise ValueError(f"options must be solver.mrf.SolveOptions, got "
                             f"{type(self.options).__name__}")

    @classmethod
    def from_settings(cls, k: int, settings: Any, solver: str | None = None) -> SegmentParams:
        """The parameters a document's or a session's settings hold.

        Parameters
        ----------
        k : int
            The number of labels.
        settings : segapp.model.document.SolverSettings
            λ, β, the colour model, solver, backend, seed, ADMM parameters and the constraints
            as the command line writes them.
        solver : str, optional
            The solver to take instead of the settings' (the app always runs ADMM).

        Returns
        -------
        SegmentParams

        Raises
        ------
        ValueError
            One line, for a constraint text that does not parse or a bad setting.
        """
        from segapp.core.constraint_text import parse_apart, parse_area  # noqa: PLC0415

        constraints = Constraints(area=tuple(parse_area(t) for t in settings.area),
                                  apart=tuple(parse_apart(t) for t in settings.apart))
        return cls(k=k, lam=settings.lam, beta=settings.beta,
                   colour_model=settings.colour_model, solver=solver or settings.solver,
                   backend=settings.backend, seed=settings.seed, admm=dict(settings.admm),
                   constraints=constraints or None)

    def rounds_for(self, rect: object | None) -> int:
        """The re-estimation rounds a run makes: ``rounds`` where given, else the model's
        default for its input (:meth:`solver.mrf.ModelOptions.rounds_for`)."""
        return self.model.rounds_for(rect) if self.rounds is None else int(self.rounds)

    def checked(self, shape: tuple[int, int], *, seeds: np.ndarray | None = None,
                hard: np.ndarray | None = None) -> LevelConstraints | None:
        """Every check a run's settings can fail before anything is fitted, for a photo of
        ``shape``: :meth:`validated`, then the constraints against K and the photo (and the
        seeds and hard pixels where given) and against the solver. The app calls it before a
        run's thread starts, :func:`run_segmentation` as it starts.

        Returns
        -------
        LevelConstraints or None
            The constraints in solver form (None without constraints).

        Raises
        ------
        ValueError
            One line naming the first problem.
        """
        self.validated()
        if not self.constraints:
            return None
        level = self.constraints.validate(self.k, tuple(shape), seeds=seeds, hard=hard)
        constrained_variant(self.solver, self.k, level)
        return level

    def validated(self) -> SegmentParams:
        """Check the choices that are not checked downstream; returns self."""
        if self.solver not in METHODS:
            raise ValueError(f"unknown solver {self.solver!r}: expected one of {', '.join(METHODS)}")
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r}: expected one of {', '.join(BACKENDS)}")
        if self.colour_model not in COLOUR_MODELS:
            raise ValueError(f"unknown colour model {self.colour_model!r}: expected one of "
                             f"{', '.join(COLOUR_MODELS)}")
        if self.solver == "mincut" and self.k != 2 and not self.constraints:
            raise ValueError(f"min-cut needs K = 2 (got K = {self.k}); use --solver expansion")
        if self.rounds is not None and (isinstance(self.rounds, bool)
                                        or not isinstance(self.rounds, int)
                                        or not 0 <= self.rounds <= MAX_ROUNDS):
            raise ValueError(f"rounds must be an integer from 0 to {MAX_ROUNDS}, got "
                             f"{self.rounds!r}")
        return self


@dataclass
class SegmentationResult(Verdicts):
    """What a segmentation produced.

    Attributes
    ----------
    labels : numpy.ndarray
        ``(H, W)`` int32, values 1..K.
    energy : float
    method, backend : str
        Solver used and the backend it actually ran on.
    iterations : int
    time_s : float
        Wall-clock seconds of the solve, its set-up and polish included (as every result's
        ``time_s``); building the model and the reference are ``build_time_s`` and
        ``reference_time_s``.
    status : str
        How the solver ended (:data:`solver.admm.records.STATUSES`); ``converged`` says whether
        that was on its own terms.
    history : list of IterationRecord
    reference_labels, reference_energy
        The yardstick's answer, when asked for: min-cut (K = 2) or α-expansion (K > 2), and
        under constraints the variant :func:`solver.mrf.yardstick_for` picks.
    reference_bound : float or None
        A lower bound on the optimum from the yardstick, where it proves one.
    reference_method : str
        The yardstick's method name (``"mincut"`` or ``"expansion"``).
    reference_detail : str
        The yardstick's algorithm (e.g. "parametric min-cut"; "" without constraints).
    constraints : list of ConstraintReport
        Whether each area bound and apart pair holds for ``labels`` (empty without any).
    variant : str
        The algorithm ``method`` ran under constraints (e.g. "layered min-cut"; "" without).
    x_final : numpy.ndarray or None
        ``(n, K)`` last continuous ADMM iterate, for warm starts.
    problem : MRFProblem
    warnings : list of str
        Things the user should be told (e.g. the GPU fallback, or an isolated reference that
        stopped).
    build_time_s, reference_time_s : float
    total_time_s : float or None
        Wall-clock seconds from the model's build to the end. With the reference in a child
        process it solves beside the chosen solver, so this is less than the phases' sum
        (None: not measured, the phases' sum stands for it).
    energy_admm : float or None
        The energy of ADMM's own labels before its final polish (ADMM only; None otherwise).
    rounds : int
        Re-estimation rounds made before the final solve (the colour models refitted this many
        times); ``iterations``, ``time_s`` and ``history`` count every round's solve, numbered
        across rounds as across pyramid levels.
    stages : tuple of StageReport
        ADMM's final polish stage by stage (:attr:`solver.mrf.MRFResult.stages`): each
        stage's time and the energy it took off; empty for the other solvers.
    """

    labels: np.ndarray
    energy: float
    method: str
    backend: str
    iterations: int
    time_s: float
    status: str
    history: list[IterationRecord]
    reference_labels: np.ndarray | None
    reference_energy: float | None
    x_final: np.ndarray | None
    problem: MRFProblem
    warnings: list[str] = field(default_factory=list)
    build_time_s: float = 0.0
    reference_time_s: float = 0.0
    reference_bound: float | None = None
    reference_method: str = ""
    reference_detail: str = ""
    constraints: list[ConstraintReport] = field(default_factory=list)
    variant: str = ""
    energy_admm: float | None = None
    total_time_s: float | None = None
    rounds: int = 0
    stages: tuple = ()

    @property
    def gap(self) -> float | None:
        """Relative energy gap to the reference, ``(E - E_ref) / |E_ref|``."""
        if self.reference_energy is None or self.reference_energy == 0:
            return None
        return (self.energy - self.reference_energy) / abs(self.reference_energy)

    def as_dict(self) -> dict[str, Any]:
        """The run's figures as plain JSON values (no arrays), with the names of the command
        line's report (docs/cli.md): the solve, its times, the energies, the reference and
        its gap, the rounds, the polish's stages and, where there are constraints, each one's
        report and the variants.

        Returns
        -------
        dict
        """
        h, w = self.labels.shape[:2]
        out: dict[str, Any] = {
            "energy": float(self.energy), "solver": self.method, "backend": self.backend,
            "iterations": int(self.iterations), "time_s": float(self.time_s),
            "n_pixels": int(self.labels.size), "k": int(self.problem.k),
            "status": self.status, "converged": self.converged,
            "width": int(w), "height": int(h),
            "lam": float(self.problem.lam), "beta": float(self.problem.beta),
            "reference_method": self.reference_method,
            "reference_energy": (None if self.reference_energy is None
                                 else float(self.reference_energy)),
            "gap": self.gap,
            "energy_admm": None if self.energy_admm is None else float(self.energy_admm),
            "rounds": int(self.rounds), "build_time_s": float(self.build_time_s),
            "polish_s": round(float(sum(s.time_s for s in self.stages)), 6),
            "stages": [s.as_dict() for s in self.stages],
        }
        if self.problem.constraints is not None:
            out["constraints"] = [r.as_dict() for r in self.constraints]
            out["feasible"] = self.feasible
            out["variant"] = self.variant or self.method
            out["reference_variant"] = self.reference_detail or None
            out["bound"] = None if self.reference_bound is None else float(self.reference_bound)
        return out


def resolve_backend(name: str, warn: Callable[[str], None], n: int, k: int) -> str:
    """The backend that will actually run: "gpu" without a GPU becomes "cpu" with a warning;
    "auto" for a problem of ``n`` pixels and ``k`` labels is :func:`solver.mrf.auto_backend`'s
    choice (the GPU only where it is faster). A GPU that fails during the solve is handled by
    :func:`run_segmentation`, which runs the solve again on the CPU."""
    if name == "cpu":
        return "cpu"
    if name == "auto":
        return auto_backend(n, k)
    try:
        return get_backend(name).name
    except GPUUnavailableError as exc:
        warn(f"{exc}; running on the CPU instead")
        return "cpu"


def run_segmentation(
    image: np.ndarray,
    strokes: np.ndarray | None,
    params: SegmentParams,
    *,
    rect: tuple[int, int, int, int] | None = None,
    hard: np.ndarray | None = None,
    callback: Callable[[MRFIterationState], bool | None] | None = None,
    x0: np.ndarray | None = None,
    reference: bool = True,
    notice: Callable[[str], None] | None = None,
    phase: Callable[[str], None] | None = None,
    isolate_reference: bool | IsolatedReference = False,
    cancelled: Callable[[], bool] | None = None,
    solved: Callable[[np.ndarray, float], None] | None = None,
    previous: np.ndarray | None = None,
    models: Sequence[Any] | None = None,
) -> SegmentationResult:
    """Segment ``image`` from strokes / rectangle / hard constraints.

    Parameters
    ----------
    image : numpy.ndarray
        ``(H, W)`` or ``(H, W, 3|4)``, uint8/uint16/float.
    strokes : numpy.ndarray or None
        ``(H, W)`` int labels, 0 = none.
    params : SegmentParams
    rect : (x, y, w, h), optional
        GrabCut-style rectangle (any K): outside is hard background (label 2), label 1 takes
        the unlabelled inside, labels 3..K compete with it there from their strokes.
    hard : numpy.ndarray, optional
        ``(H, W)`` hard-constraint labels, 0 = none.
    callback : callable, optional
        The live view: called with each ADMM iteration's :class:`solver.mrf.MRFIterationState`
        (the rounds' too, numbered on), whose ``reference_energy`` is set (None when no
        reference was asked for, or while an isolated one is still solving). Its return value
        is not read: ``cancelled`` stops a run.
    notice : callable, optional
        Called at once with each warning the user should see (a GPU that is missing or fails,
        and the solve runs on the CPU instead); every warning is also in the result's
        ``warnings``.
    phase : callable, optional
        Called with the name of each step as it starts: ``"model"`` (building the MRF),
        ``"reference"`` (the yardstick, when asked for) and ``"solve"`` (the chosen solver,
        ADMM's polish included), so a front end can say what it waits for; within ADMM's
        solves (the rounds' too) each polish stage as ``"polish:<stage>"``
        (:data:`solver.mrf.polish.stages.STAGES`). An isolated reference solves beside the
        solver: its step is named only if the run waits for it after the solve.
    x0 : numpy.ndarray, optional
        Warm start (a previous outcome's ``x_final``); ignored if its size does not fit.
    reference : bool
        Also solve the yardstick (min-cut for K = 2, α-expansion otherwise; under
        constraints :func:`solver.mrf.yardstick_for`'s choice).
    isolate_reference : bool or IsolatedReference
        Solve the yardstick in a child process (:mod:`segapp.core.isolated`): that given, or
        with True the process-wide one (:func:`segapp.core.isolated.shared`). A child that
        ends (a native library's ``exit()`` when memory runs out) or runs out of memory costs
        only the reference: the run goes on without it, and ``warnings`` says so. The child
        is started before the model is built, so its start-up overlaps the build, and solves
        while the chosen solver runs here (``callback``'s state carries its energy from the
        first iteration after it arrives); the run then waits for it. ADMM's ``time_s`` is
        then measured beside it (``segapp bench`` times them apart). False (the CLI's choice,
        whose own exit status reports a death): in this process, before the solver.
    cancelled : callable, optional
        The one way to stop a run: the answer the solver's callback gives at every iteration
        and polish poll (:func:`solver.mrf.solve_mrf`), read after each yardstick round, and
        polled while an isolated reference runs. Once True the run ends with the labels it
        has (status ``"cancelled"``) and an isolated reference still solving is abandoned (its
        child ended). A solve that raises abandons it too.
    solved : callable, optional
        Called with the solver's ``(H, W)`` labels and their energy when the solve is done and
        the run is about to wait for an isolated reference that is still solving, so that a
        front end can show the answer meanwhile (not called when nothing is left to wait for).
    previous : numpy.ndarray, optional
        A correction (:func:`solver.mrf.prepare`): the last answer's ``(H, W)`` labels for the
        same photo, K, rectangle and constraints. The colour models are fitted once to it, the
        new strokes at their labels, and the solve starts from it, without rounds (ADMM; the
        other solvers take only the models). ``x0`` is then ignored.
    models : sequence of colour models, optional
        K colour models fitted on another photo (``problem.models`` of a run on it: a batch's
        ``--model``), taken as they are: no fit and no rounds; the strokes, rectangle and hard
        pixels, if any, still fix their pixels.

    Returns
    -------
    SegmentationResult

    Raises
    ------
    ValueError
        For bad input, with a one-line message naming the problem; also
        :class:`segapp.core.memory.InsufficientMemoryError` (a ValueError) when the machine
        has too little memory for the image, checked before anything is built.
    """
    # (the cheap checks first: nothing is fitted for a bad bound)
    level = params.checked(np.shape(image)[:2])
    warnings: list[str] = []

    def warn(msg: str) -> None:
        log.info(msg)  # (the caller shows it: in the result's warnings and through notice)
        warnings.append(msg)
        if notice is not None:
            notice(msg)

    def step(name: str) -> None:
        if phase is not None:
            phase(name)

    shown_phase = {"name": "admm"}

    def relay(show: Callable[[MRFIterationState], Any] | None
              ) -> Callable[[MRFIterationState], bool] | None:
        """The solver's one callback for a solve of this run: ``show`` (the live view) sees
        each iteration, ``phase`` each polish stage as it starts ("polish:tv", ...), and every
        call answers ``cancelled``, the run's one stop. None where nobody listens."""
        if show is None and phase is None and cancelled is None:
            return None

        def live(state: MRFIterationState) -> bool:
            name = state.phase
            if name == "admm":
                if show is not None:
                    show(state)
            elif name.startswith("polish:") and name != shown_phase["name"] and phase:
                phase(name)  # (a reduced copy's are "model:...": not shown)
            shown_phase["name"] = name
            return bool(cancelled is not None and cancelled())
        return live

    ref_method = yardstick_method(params.k, level)
    h, w = np.shape(image)[:2]
    with_reference = reference and params.solver != ref_method
    # (an isolated reference solves beside the solve where both peaks fit, else before it)
    beside = check_memory(h * w, params.k, with_reference, isolated=bool(isolate_reference))
    isolated = None
    if with_reference and isolate_reference:
        isolated = (isolate_reference if isinstance(isolate_reference, IsolatedReference)
                    else shared_reference())
        isolated.start()  # (returns at once: the child's imports overlap the build)
    step("model")
    t0 = time.perf_counter()
    backend = "cpu"
    if params.solver == "admm":
        backend = resolve_backend(params.backend, warn, h * w, params.k)
        if x0 is not None and np.size(x0) != h * w * params.k:
            log.info("warm start ignored: it has %d entries, the problem needs %d",
                     np.size(x0), h * w * params.k)
            x0 = None

    offset = 0  # iterations of the rounds before: the live view numbers them across rounds
    history: list[IterationRecord] = []
    ref_energy = ref_bound = None

    def solve(prob: MRFProblem, start: np.ndarray | None,
              cb: Callable[[MRFIterationState], bool | None] | None):
        """One solve of ``prob`` by the chosen solver (ADMM from ``start``, with the GPU's
        fallback to the CPU), its history added to the run's."""
        nonlocal backend, offset
        if params.solver != "admm":
            res = solve_mrf(prob, params.solver)
            if cancelled is not None and cancelled():  # (ends the rounds: no iterations)
                res = replace(res, status="cancelled")
        else:
            show = cb
            if cb is not None and offset:
                base = offset

                def show(state: MRFIterationState) -> Any:
                    state.offset += base
                    return cb(state)
            admm = dict(seed=params.seed, x0=start, callback=relay(show),
                        options=params.options, admm=params.admm)
            try:
                res = solve_mrf(prob, "admm", backend=backend, **admm)
            except gpu_errors() as exc:
                if backend != "gpu":
                    raise
                text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                warn(f"the GPU solve failed ({text}); running on the CPU instead")
                backend = "cpu"
                res = solve_mrf(prob, "admm", backend="cpu", **admm)
        history.extend(replace(r, iteration=r.iteration + offset) for r in res.history)
        offset = history[-1].iteration if history else offset
        return res

    def round_callback(state: MRFIterationState) -> Any:
        state.reference_energy = state.reference_bound = None  # (a model not yet final)
        return callback(state)

    prep = prepare(
        image, strokes, params.k, rect=rect, hard=hard,
        lam=DEFAULT_LAMBDA if params.lam is None else params.lam, beta=params.beta,
        colour_model=params.colour_model, seed=params.seed, constraints=params.constraints,
        model=params.model, rounds=params.rounds_for(rect), method=params.solver,
        previous=previous, models=models,
        solve=lambda prob, prev: solve(prob, x0 if prev is None else prev.x_continuous,
                                       round_callback if callback is not None else None),
        callback=relay(None), step=step, options=params.options, admm=params.admm)
    problem = prep.problem
    if params.solver == "admm" and prep.x0 is not None and (x0 is None or prep.results
                                                            or previous is not None):
        x0 = prep.x0  # (the caller's warm start stands where the rounds ran on a copy)
    done_rounds = list(prep.results)
    last_round = done_rounds[-1] if done_rounds else None
    stopped = prep.stopped and last_round is not None
    if stopped:
        done_rounds = done_rounds[:-1]
    rounds_solve_s = sum(r.time_s for r in prep.results)
    build_time = time.perf_counter() - t0 - rounds_solve_s
    log.info("model: %d refits%s in %.3f s", prep.rounds,
             f" on a 1/{prep.copy_factor} copy" if prep.copy_factor > 1 else "", prep.time_s)

    ref_labels = None
    ref_detail = ""
    ref_time = 0.0
    pending = None
    if with_reference and not stopped and isolated is None:
        step("reference")
        ref = solve_mrf(problem, ref_method)
        ref_labels, ref_energy, ref_time = ref.labels, ref.energy, ref.time_s
        ref_bound, ref_detail = ref.bound, ref.detail
    elif with_reference and not stopped:  # in the child, beside the solve
        pending = PendingReference(isolated, problem, ref_method, cancelled)
        if not beside:
            log.info("the reference solves before ADMM: no memory for both at once")

    failed = False  # the child raised: the wait after the solve raises it, once

    def collect(wait: bool) -> None:
        """Take the child's answer if it is in (or, with ``wait``, once it is). A reference
        that stopped is a warning; any other error is raised, by the wait after the solve."""
        nonlocal pending, failed, ref_labels, ref_energy, ref_time, ref_bound, ref_detail
        if pending is None or not (wait or (pending.done() and not failed)):
            return
        try:
            ref = pending.result()
        except ReferenceStopped as exc:
            ref = None
            warn(str(exc))
        except Exception:
            failed = True
            if not wait:
                return
            pending = None
            raise
        if ref is not None:
            ref_labels, ref_energy, ref_time = ref.labels, ref.energy, pending.time_s
            ref_bound, ref_detail = ref.bound, ref.detail
        pending = None

    try:
        if not beside and pending is not None:
            step("reference")
            collect(wait=True)
        step("solve")
        cb = callback
        if callback is not None:
            def cb(state: MRFIterationState) -> Any:
                collect(wait=False)
                state.reference_energy = ref_energy  # a live plot draws the line on arrival
                state.reference_bound = ref_bound
                return callback(state)
        if stopped:  # (cancelled during the rounds: their last answer is the run's)
            res = last_round
        else:
            res = solve(problem, x0, cb)
        if pending is not None and not pending.done():
            if solved is not None:
                solved(res.labels, float(res.energy))
            step("reference")
        collect(wait=True)
    except BaseException:
        if pending is not None:  # (a failed run: no answer to compare it with)
            pending.abandon()
        raise
    if ref_labels is None and params.solver == ref_method and reference:
        ref_labels, ref_energy, ref_time = res.labels, res.energy, res.time_s
        ref_bound, ref_detail = res.bound, res.detail
    return SegmentationResult(
        labels=res.labels, energy=res.energy, method=res.method,
        backend=res.backend, iterations=res.iterations + sum(r.iterations for r in done_rounds),
        time_s=res.time_s + sum(r.time_s for r in done_rounds), status=res.status,
        history=history, reference_labels=ref_labels, reference_energy=ref_energy,
        x_final=res.x_continuous, problem=problem, warnings=warnings,
        build_time_s=build_time,
        reference_time_s=ref_time, reference_bound=ref_bound,
        reference_detail=ref_detail, constraints=list(res.constraints), variant=res.detail,
        reference_method=ref_method,
        energy_admm=res.energy_admm if params.solver == "admm" else None,
        total_time_s=time.perf_counter() - t0,
        rounds=prep.rounds, stages=tuple(res.stages),
    )
