"""Runs :func:`segapp.core.pipeline.run_segmentation` off the GUI thread.

A :class:`SolveWorker` lives in a ``QThread``; it emits throttled frames of the
continuous solution, batches of per-iteration records, and the outcome. Cancel
sets a flag that the solver callback returns, so the solve stops at the next
iteration and still returns the best labels so far.

Frames are live views, not results: at most :data:`FRAME_MAX_SIDE` pixels a side (a
photo's frame is its ``[::s, ::s]``, made for those pixels alone), and a new one only once
the window has shown the last (:meth:`SolveWorker.frame_shown`), so frames never queue up
faster than the window draws them and a large photo's memory stays bounded.
"""
from __future__ import annotations

import logging
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from PyQt6.QtCore import QObject, QThread, pyqtSignal, pyqtSlot

from segapp.core.isolated import IsolatedReference
from segapp.core.probe import sample_values

log = logging.getLogger(__name__)

FRAME_INTERVAL = 1.0 / 10.0   # at most ~10 frames a second
FRAME_MAX_SIDE = 1600         # live frames' longest side (the result itself is full size)
RECORD_INTERVAL = 1.0 / 10.0  # energy batches (and plot redraws) at most ~10 times a second
PROBE_INTERVAL = 1.0 / 50.0   # probe samples (x, z1, z2 on a coarse grid): each of the first
PROBE_FIRST = 10              # iterations, then at most ~50 a second; while a sample takes more
PROBE_CHEAP = 0.005           # than this, they take at most a tenth of a run's time after those


@dataclass
class Record:
    """One ADMM iteration as plotted (copied out of the solver's state).

    Attributes
    ----------
    iteration : int
        Numbered across the pyramid's levels (and re-estimation rounds), as the plot and the
        result count them.
    max_iter : int
        The iteration limit of one level: ADMM's ``max_iter``, the Parameters tab's "max
        iterations" (a coarse-to-fine solve's levels each have it; the solver's
        ``max_iter_total`` is their sum, which no field of the app shows).
    level, levels : int
        The pyramid level (0 = full resolution, solved last) and how many levels the solve
        has (1: solved whole).
    level_iteration : int
        The iteration within its level, the number ``max_iter`` limits.
    """

    iteration: int
    energy_continuous: float
    energy_rounded: float
    residual_box: float
    residual_sphere: float
    rho: float
    max_iter: int
    reference_energy: float | None = None
    residual_constraints: float = 0.0
    reference_bound: float | None = None
    level: int = 0
    levels: int = 1
    level_iteration: int = 0


def level_numbers(state: Any) -> tuple[int, int, int, int]:
    """``(per-level limit, level, levels, iteration within the level)`` of a solver state
    (:class:`solver.mrf.MRFIterationState`; a state without levels: one level)."""
    inner = getattr(state, "inner", None)
    limit = int(getattr(inner, "max_iter", 0) or getattr(state, "max_iter", 0) or 0)
    total = int(getattr(state, "max_iter_total", 0) or 0)
    levels = max(1, total // limit) if total and limit else 1
    record = getattr(inner, "record", None)
    within = int(getattr(record, "iteration", 0) or getattr(state, "iteration", 0) or 0)
    return limit, int(getattr(state, "level", 0) or 0), levels, within


@dataclass
class SolveJob:
    """Inputs of one run (arrays are copies, so the user may keep drawing)."""

    image: np.ndarray
    strokes: np.ndarray
    params: Any
    rect: tuple[int, int, int, int] | None = None
    hard: np.ndarray | None = None
    x0: np.ndarray | None = None
    reference: bool = True
    previous: np.ndarray | None = None  # a correction: the last answer's labels
    # the solver's kernels are still compiling (the first run on a machine): answer first with
    # the exact combinatorial solver, which needs few of them, then run ADMM
    provisional: bool = False


class _RunSignals(QObject):
    """The signals of a solve, emitted by :class:`SolveWorker` and re-emitted by
    :class:`SolveController` (the worker's docstring says what each carries)."""

    frame = pyqtSignal(int, object)
    records = pyqtSignal(object)
    notice = pyqtSignal(str)
    phase = pyqtSignal(str)
    solved = pyqtSignal(object, float)
    provisional = pyqtSignal(object, float, str)
    finished = pyqtSignal(object)
    failed = pyqtSignal(str)
    splits = pyqtSignal(int, object)


class SolveWorker(_RunSignals):
    """Solver driver living in a worker thread.

    Signals
    -------
    frame(int, object)
        Iteration and (H, W, K) float32 label weights of the continuous solution.
    records(object)
        List of :class:`Record` since the last batch.
    notice(str)
        Something the user should know (e.g. GPU fallback, or :func:`compile_text` when the
        solve waits for kernels to compile).
    phase(str)
        The step that starts: ``"model"``, ``"reference"`` or ``"solve"`` (see
        :func:`segapp.core.pipeline.run_segmentation`).
    solved(object, float)
        ADMM's ``(H, W)`` labels and energy, when it is done and the run waits for the
        reference (which solves beside it in a child process); ``finished`` follows.
    provisional(object, float, str)
        With :attr:`SolveJob.provisional`: the same model's ``(H, W)`` labels, energy and
        solver's name from the exact solver (min-cut for K = 2, α-expansion above), before
        ADMM starts; not emitted with constraints, or if that solve fails or is cancelled.
    finished(object)
        The ``SegmentationResult``.
    failed(str)
        One-line error message.
    splits(int, object)
        Iteration and ``x``, ``z1``, ``z2`` on a coarse pixel grid, for the probe
        (:func:`segapp.core.probe.sample_values`): each of the first iterations, then at
        most :data:`PROBE_INTERVAL` apart (slow samples take at most a tenth of the run's time),
        and always the run's last iteration (converged, cancelled or at its limit), before
        ``finished``.
    """


    def __init__(self, job: SolveJob, frame_interval: float = FRAME_INTERVAL,
                 isolated: IsolatedReference | None = None) -> None:
        super().__init__()
        self.job = job
        # the child process the reference runs in (an IsolatedReference; None: the shared one)
        self.isolated = isolated
        self.frame_interval = frame_interval  # seconds between live frames, at least
        self._cancel = threading.Event()
        self._batch: list[Record] = []
        # the batch is sent from the solve's thread, and by a timer where the iterations stop
        # (a level's polish): guarded by a lock
        self._batch_lock = threading.Lock()
        self._batch_timer: threading.Timer | None = None
        self._last_frame = 0.0
        self._last_batch = 0.0
        self._last_probe: float | None = 0.0  # (None: sampling failed, none this run)
        self._probe_cost = 0.0  # seconds the last probe sample took
        # the newest iteration's state while it is not sampled: the solve may end on it (a
        # converged run ends after its callback), and then it is sampled after the solve
        self._unsampled: tuple[Any, int] | None = None
        self._frame_free = threading.Event()  # set: the window has shown the last frame
        self._frame_free.set()

    def frame_shown(self) -> None:
        """The window has drawn the last frame: the next may come (thread-safe)."""
        self._frame_free.set()

    def cancel(self) -> None:
        """Ask the solve to stop at its next iteration (thread-safe)."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        """Whether cancel was requested."""
        return self._cancel.is_set()

    def _callback(self, state: Any) -> bool:
        now = time.monotonic()
        limit, level, levels, within = level_numbers(state)
        rec = Record(int(state.iteration), float(state.energy_continuous),
                     float(state.energy_rounded), float(state.residual_box),
                     float(state.residual_sphere), float(state.rho), limit,
                     getattr(state, "reference_energy", None),
                     float(getattr(state, "residual_constraints", 0.0) or 0.0),
                     getattr(state, "reference_bound", None), level, levels, within)
        with self._batch_lock:
            self._batch.append(rec)
        # (a level's last iteration at its limit: the level ends here)
        last = bool(limit) and within >= limit
        if now - self._last_batch >= RECORD_INTERVAL or last:
            self._flush()
        else:
            self._flush_later()
        if (now - self._last_frame >= self.frame_interval and self._frame_free.is_set()) or last:
            self._last_frame = now
            try:
                probs = np.asarray(state.probabilities(max_side=FRAME_MAX_SIDE), np.float32)
                self._frame_free.clear()
                self.frame.emit(rec.iteration, probs)
            except Exception:  # noqa: BLE001 - a frame is optional
                log.exception("could not get probabilities")
        self._probe(state, rec.iteration, now, bool(last))
        return self._cancel.is_set()

    def _probe(self, state: Any, iteration: int, now: float, last: bool) -> None:
        """Emit ``splits`` (the probe's samples): the first iterations each, then at most every
        :data:`PROBE_INTERVAL` seconds; after the first, while a sample takes more than
        :data:`PROBE_CHEAP`, at most a tenth of the time."""
        if self._last_probe is None:
            return
        # (a sample reads three vectors of the solver: on a large photo, or the GPU, it is not
        # free, so it takes at most a tenth of the run's time whatever the schedule says)
        wait = 0.0 if iteration <= PROBE_FIRST else PROBE_INTERVAL
        if iteration > PROBE_FIRST and self._probe_cost > PROBE_CHEAP:
            wait = max(wait, 10 * self._probe_cost)
        if not (last or now - self._last_probe >= wait):
            self._unsampled = (state, iteration)
            return
        self._unsampled = None
        self._last_probe = now
        try:
            self.splits.emit(iteration, sample_values(state))
        except Exception:  # noqa: BLE001 - a probe sample is optional; no more this run
            log.exception("could not sample the probe")
            self._last_probe = None
            return
        self._probe_cost = time.monotonic() - now

    def _probe_end(self) -> None:
        """Sample the run's last iteration if the schedule skipped it (the probe's last sample
        is then the run's final iterate, however the run ended)."""
        pending, self._unsampled = self._unsampled, None
        if pending is not None and self._last_probe is not None:
            self._probe(pending[0], pending[1], time.monotonic(), True)
        self._unsampled = None

    def _phase(self, name: str) -> None:
        """The pipeline started a step (or a polish stage): the records batched so far first,
        so that the window sees the iterations before the step that follows them."""
        self._flush()
        self.phase.emit(name)

    def _flush(self) -> None:
        """Send the records batched so far (from any thread)."""
        with self._batch_lock:
            batch, self._batch = self._batch, []
            self._last_batch = time.monotonic()
            if batch:
                self.records.emit(batch)

    def _flush_later(self) -> None:
        """Send the batch :data:`RECORD_INTERVAL` from now unless an iteration sends it first:
        the iterations stop where a level ends (its polish, the next level's set-up, the
        final polish), and the batch's last records, kept until the next iteration, would
        reach the window only after them; the window's progress then named an iteration
        before the level's last ("polish after iteration 739" of a run that ended at 925)."""
        timer = self._batch_timer
        if timer is not None and timer.is_alive():
            return
        timer = threading.Timer(RECORD_INTERVAL, self._flush_stale)
        timer.daemon = True
        self._batch_timer = timer
        timer.start()

    def _flush_stale(self) -> None:
        with self._batch_lock:
            stale = bool(self._batch) and (time.monotonic() - self._last_batch
                                           >= 0.9 * RECORD_INTERVAL)
        if stale:
            try:
                self._flush()
            except RuntimeError:  # the worker was deleted meanwhile (the window closed)
                pass
        elif self._batch:
            self._batch_timer = None
            self._flush_later()

    def _run(self):
        from segapp.core.pipeline import run_segmentation
        job = self.job
        # (a GPU that is missing or fails is the pipeline's to handle: it runs the solve on
        # the CPU and says so through ``notice`` at once). The reference always runs in a
        # child process: a native library that ends its process (PyMaxflow out of memory)
        # then costs the reference, said in the outcome's warnings, and not the window; a
        # cancel abandons it at once.
        return run_segmentation(job.image, job.strokes, job.params, rect=job.rect, hard=job.hard,
                                callback=self._callback, x0=job.x0, reference=job.reference,
                                notice=self.notice.emit, phase=self._phase,
                                isolate_reference=(True if self.isolated is None
                                                   else self.isolated),
                                cancelled=self._cancel.is_set, solved=self.solved.emit,
                                previous=job.previous)

    def _provisional(self) -> None:
        """The exact solver's answer to the run's model, emitted as ``provisional``. From an
        empty kernel cache it needs the model's kernels only (seconds to compile, where ADMM
        and its polish take most of a minute), so the person sees a cut at once."""
        from dataclasses import replace

        from segapp.core.pipeline import run_segmentation
        job = self.job
        if job.params.constraints or self._cancel.is_set():
            return
        name = "min-cut" if job.params.k == 2 else "α-expansion"
        params = replace(job.params, solver="mincut" if job.params.k == 2 else "expansion")
        try:
            out = run_segmentation(job.image, job.strokes, params, rect=job.rect, hard=job.hard,
                                   reference=False, cancelled=self._cancel.is_set,
                                   previous=job.previous)
        except Exception:  # noqa: BLE001 - only a preview: ADMM's run follows regardless
            log.exception("the provisional %s answer failed", name)
            return
        if not self._cancel.is_set():
            self.provisional.emit(out.labels, float(out.energy), name)

    @pyqtSlot()
    def run(self) -> None:
        """Solve; emits ``finished`` or ``failed`` exactly once (and ``notice`` if the solve
        has to wait for kernels to compile, as on the first run on a machine; ``provisional``
        first where the job asks for it)."""
        from solver.backend.compile_notice import first_compile_notice
        try:
            if self.job.provisional:
                self._provisional()
            with first_compile_notice(lambda: self.notice.emit(compile_text())):
                outcome = self._run()
            self._probe_end()
            self._flush()
            self.finished.emit(outcome)
        except Exception as exc:  # noqa: BLE001 - reported to the user
            self._unsampled = None
            self._flush()
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if not isinstance(exc, (ValueError, RuntimeError)):
                log.exception("solve failed")
                msg = f"{type(exc).__name__}: {msg}"
            self.failed.emit(msg)


def compile_text() -> str:
    """The status-bar line shown while the solver's kernels compile."""
    from solver.backend.compile_notice import COMPILE_MESSAGE
    return COMPILE_MESSAGE[0].upper() + COMPILE_MESSAGE[1:] + "…"


def warm_up_in_child(on_compiling: Callable[[], None], target: str = "solver.mrf:warm_up",
                     started: Callable[[subprocess.Popen], None] | None = None
                     ) -> tuple[float, bool]:
    """Run a warm-up (``MODULE:FUNCTION``, default :func:`solver.mrf.warm_up`) in a child
    process (``python -m solver.mrf.solve.warmup``) and wait for it.

    The kernels it compiles land in numba's on-disk cache, from which this process loads them
    in a fraction of a second. In a thread of this process the compile held the interpreter
    lock for seconds at a time: the window stalled, and a first run started at once took 53 s
    instead of 46 s and its exact preview 16-18 s instead of 8 (2026-12-02, docs/decisions.md).

    Parameters
    ----------
    on_compiling : callable
        Called once, when the child starts a real compile (not with a warm cache).
    target : str
        The warm-up function, as ``module:function``.
    started : callable, optional
        Given the child's :class:`subprocess.Popen` once it runs (to stop it early).

    Returns
    -------
    seconds : float
        The warm-up's own time.
    compiled : bool
        Whether anything compiled.

    Raises
    ------
    RuntimeError
        The child failed or ended without saying it was ready (its last line of stderr).
    """
    # (stderr goes to a file: numba's warnings there could fill a pipe nobody reads yet and
    # block the child before it says it is ready)
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen(  # noqa: S603 - this interpreter, a fixed module
            [sys.executable, "-m", "solver.mrf.solve.warmup", target], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=errors, text=True)
        if started is not None:
            started(proc)
        seconds, compiled = None, False
        try:
            for line in proc.stdout:
                word, _, rest = line.strip().partition(" ")
                if word == "compiling" and not compiled:
                    compiled = True
                    on_compiling()
                elif word == "ready":
                    seconds = float(rest)
            code = proc.wait()
        finally:
            proc.stdin.close()
            proc.stdout.close()
        errors.seek(0)
        err = errors.read().strip().splitlines()
    if code != 0 or seconds is None:
        raise RuntimeError(f"the warm-up process ended with status {code}"
                           + (f": {err[-1]}" if err else ""))
    return seconds, compiled


class WarmUp(QObject):
    """Compiles the solver's kernels in a child process (:func:`warm_up_in_child`, watched
    from a background thread) while the user opens an image and paints, and says so when that
    is the slow first run.

    Signals
    -------
    compiling(str)
        A kernel started compiling (not emitted when numba's on-disk cache is warm); the text
        is for the status bar.
    ready(float, bool)
        Done: seconds taken, and whether anything compiled.
    failed()
        The warm-up failed (the first solve compiles instead); nothing compiles any more.
    """

    compiling = pyqtSignal(str)
    ready = pyqtSignal(float, bool)
    failed = pyqtSignal()

    #: The warm-up the child runs (``module:function``; tests name their own).
    target = "solver.mrf:warm_up"

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._proc: subprocess.Popen | None = None

    def stop(self) -> None:
        """End the child if it still compiles (the window closed): what it compiled stays in
        the cache."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()

    def start(self) -> threading.Thread:
        """Start the warm-up thread (a daemon: it never holds up quitting) and return it."""
        thread = threading.Thread(target=self._run, name="segapp-warm-up", daemon=True)
        thread.start()
        return thread

    def _emit(self, signal: Any, *args: Any) -> None:
        try:
            signal.emit(*args)
        except RuntimeError:  # the window (and this object with it) closed meanwhile
            pass

    def _run(self) -> None:
        try:
            seconds, compiled = warm_up_in_child(
                lambda: self._emit(self.compiling, compile_text()), self.target,
                started=lambda proc: setattr(self, "_proc", proc))
        except Exception:  # noqa: BLE001 - a failed warm-up only means the first run compiles
            log.exception("warm-up failed; the first solve compiles instead")
            self._emit(self.failed)
            return
        self._emit(self.ready, seconds, compiled)


# Solves that shutdown() gave up waiting for, kept with their threads until those end: a
# QThread deleted while it runs aborts the process, and a worker deleted under its run() crashes.
_stale: list[tuple[QThread, SolveWorker]] = []


def _reap_stale() -> None:
    """Forget stale solves whose thread has ended (runs when one of them finishes)."""
    for pair in list(_stale):
        if pair[0].isFinished():
            pair[0].wait()
            _stale.remove(pair)


def wait_stale(timeout_ms: int = 60000) -> list[QObject]:
    """Wait for the threads of solves that outlived :meth:`SolveController.shutdown`.

    Returns
    -------
    list of QObject
        Threads and workers of those still running (empty when all ended): they must not be
        deleted.
    """
    for thread, _worker in list(_stale):
        thread.wait(timeout_ms)
    _reap_stale()
    return [obj for pair in _stale for obj in pair]


def _release(thread: QThread, worker: SolveWorker, timeout_ms: int) -> None:
    """Stop ``thread``'s event loop and wait; if the solve is still running, park it."""
    thread.quit()
    if thread.wait(timeout_ms):
        return
    # still inside a step that does not poll cancel (building the model)
    log.warning("solve still running %d ms after cancel; it finishes in the background",
                timeout_ms)
    _stale.append((thread, worker))
    thread.finished.connect(_reap_stale)


class SolveController(_RunSignals):
    """Owns the worker thread of at most one running solve; re-emits its signals.

    Signals of a worker that was shut down (and may still be finishing in the background) are
    dropped, so a stale frame or outcome never reaches the window.
    """

    running_changed = pyqtSignal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thread: QThread | None = None
        self._worker: SolveWorker | None = None
        # the long-lived child process of the runs' references (started by the first run,
        # reused by the next; ended by shutdown)
        self.reference_process = IsolatedReference()

    @property
    def running(self) -> bool:
        """Whether a solve is in progress."""
        return self._worker is not None

    def start(self, job: SolveJob) -> None:
        """Start solving ``job`` in a new thread.

        Raises
        ------
        RuntimeError
            If a solve is already running.
        """
        if self.running:
            raise RuntimeError("a solve is already running")
        _reap_stale()
        thread = QThread()
        worker = SolveWorker(job, isolated=self.reference_process)
        worker.moveToThread(thread)
        thread.started.connect(worker.run)
        worker.frame.connect(self._on_frame)
        worker.records.connect(self._on_records)
        worker.notice.connect(self._on_notice)
        worker.phase.connect(self._on_phase)
        worker.solved.connect(self._on_solved)
        worker.provisional.connect(self._on_provisional)
        worker.finished.connect(self._on_finished)
        worker.failed.connect(self._on_failed)
        worker.splits.connect(self._on_splits)
        self._thread, self._worker = thread, worker
        thread.start()
        self.running_changed.emit(True)

    def cancel(self) -> None:
        """Ask the running solve (if any) to stop."""
        if self._worker is not None:
            self._worker.cancel()

    def _current(self) -> bool:
        """Whether the signal being handled comes from the running worker."""
        return self._worker is not None and self.sender() is self._worker

    def _stop_thread(self, timeout_ms: int = 5000) -> None:
        thread, worker = self._thread, self._worker
        self._thread = self._worker = None
        if thread is not None:
            _release(thread, worker, timeout_ms)
        self.running_changed.emit(False)

    @pyqtSlot(int, object)
    def _on_frame(self, iteration: int, probs: Any) -> None:
        if self._current():
            self.frame.emit(iteration, probs)  # (drawn by the time emit returns: same thread)
            self._worker.frame_shown()

    @pyqtSlot(int, object)
    def _on_splits(self, iteration: int, values: Any) -> None:
        if self._current():
            self.splits.emit(iteration, values)

    @pyqtSlot(object)
    def _on_records(self, batch: Any) -> None:
        if self._current():
            self.records.emit(batch)

    @pyqtSlot(str)
    def _on_notice(self, msg: str) -> None:
        if self._current():
            self.notice.emit(msg)

    @pyqtSlot(str)
    def _on_phase(self, name: str) -> None:
        if self._current():
            self.phase.emit(name)

    @pyqtSlot(object, float)
    def _on_solved(self, labels: Any, energy: float) -> None:
        if self._current():
            self.solved.emit(labels, energy)

    @pyqtSlot(object, float, str)
    def _on_provisional(self, labels: Any, energy: float, name: str) -> None:
        if self._current():
            self.provisional.emit(labels, energy, name)

    @pyqtSlot(object)
    def _on_finished(self, outcome: Any) -> None:
        if self._current():
            self._stop_thread()
            self.finished.emit(outcome)

    @pyqtSlot(str)
    def _on_failed(self, msg: str) -> None:
        if self._current():
            self._stop_thread()
            self.failed.emit(msg)

    def shutdown(self, timeout_ms: int = 5000) -> None:
        """Cancel the solve, end the reference's child process and wait for the solve's thread
        (used when the window closes).

        A solve that does not stop within ``timeout_ms`` is left to finish in the background
        (see :func:`wait_stale`); its signals are ignored from now on. The child is ended
        without waiting for its solve (a later run starts a fresh one), so closing the window
        never waits for a reference.
        """
        worker = self._worker
        if worker is not None:
            worker.cancel()  # (first: the reference's end then reads as a cancel, not a death)
        self.reference_process.close()
        if worker is not None:
            self._stop_thread(timeout_ms)
