"""Runs :func:`segapp.pipeline.run_segmentation` off the GUI thread.

A :class:`SolveWorker` lives in a ``QThread``; it emits throttled frames of the
continuous solution, batches of per-iteration records, and the outcome. Cancel
sets a flag that the solver callback returns, so the solve stops at the next
iteration and still returns the best labels so far.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from PyQt6.QtCore import QObject, QThread, pyqtSignal, pyqtSlot

log = logging.getLogger(__name__)

FRAME_INTERVAL = 1.0 / 15.0   # at most ~15 frames a second
RECORD_INTERVAL = 1.0 / 30.0  # energy batches at most ~30 times a second


@dataclass
class Record:
    """One ADMM iteration as plotted (copied out of the solver's state)."""

    iteration: int
    energy_continuous: float
    energy_rounded: float
    residual_box: float
    residual_sphere: float
    rho: float
    max_iter: int
    reference_energy: float | None = None


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


class SolveWorker(QObject):
    """Solver driver living in a worker thread.

    Signals
    -------
    frame(int, object)
        Iteration and (H, W, K) float32 label weights of the continuous solution.
    records(object)
        List of :class:`Record` since the last batch.
    notice(str)
        Something the user should know (e.g. GPU fallback).
    finished(object)
        The ``SegmentationOutcome``.
    failed(str)
        One-line error message.
    """

    frame = pyqtSignal(int, object)
    records = pyqtSignal(object)
    notice = pyqtSignal(str)
    finished = pyqtSignal(object)
    failed = pyqtSignal(str)

    def __init__(self, job: SolveJob) -> None:
        super().__init__()
        self.job = job
        self._cancel = threading.Event()
        self._batch: list[Record] = []
        self._last_frame = 0.0
        self._last_batch = 0.0

    def cancel(self) -> None:
        """Ask the solve to stop at its next iteration (thread-safe)."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        """Whether cancel was requested."""
        return self._cancel.is_set()

    def _callback(self, state: Any) -> bool:
        now = time.monotonic()
        rec = Record(int(state.iteration), float(state.energy_continuous),
                     float(state.energy_rounded), float(state.residual_box),
                     float(state.residual_sphere), float(state.rho),
                     int(getattr(state, "max_iter", 0) or 0),
                     getattr(state, "reference_energy", None))
        self._batch.append(rec)
        last = rec.max_iter and rec.iteration >= rec.max_iter
        if now - self._last_batch >= RECORD_INTERVAL or last:
            self._flush()
            self._last_batch = now
        if now - self._last_frame >= FRAME_INTERVAL or last:
            self._last_frame = now
            try:
                probs = np.asarray(state.probabilities(), np.float32)
                self.frame.emit(rec.iteration, probs)
            except Exception:  # noqa: BLE001 - a frame is optional
                log.exception("could not get probabilities")
        return self._cancel.is_set()

    def _flush(self) -> None:
        if self._batch:
            batch, self._batch = self._batch, []
            self.records.emit(batch)

    def _run(self, backend: str | None = None):
        from segapp.pipeline import run_segmentation
        job = self.job
        params = job.params
        if backend is not None:
            params = _with_backend(params, backend)
        return run_segmentation(job.image, job.strokes, params, rect=job.rect, hard=job.hard,
                                callback=self._callback, x0=job.x0, reference=job.reference)

    @pyqtSlot()
    def run(self) -> None:
        """Solve; emits ``finished`` or ``failed`` exactly once."""
        try:
            try:
                outcome = self._run()
            except RuntimeError as exc:
                if "gpu" not in str(exc).lower() or getattr(self.job.params, "backend", "") == "cpu":
                    raise
                self.notice.emit(f"{str(exc).splitlines()[0]} — running on the CPU instead")
                outcome = self._run("cpu")
            self._flush()
            for w in getattr(outcome, "warnings", None) or []:
                self.notice.emit(str(w))
            self.finished.emit(outcome)
        except Exception as exc:  # noqa: BLE001 - reported to the user
            self._flush()
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if not isinstance(exc, (ValueError, RuntimeError)):
                log.exception("solve failed")
                msg = f"{type(exc).__name__}: {msg}"
            self.failed.emit(msg)


def _with_backend(params: Any, backend: str) -> Any:
    import dataclasses
    if dataclasses.is_dataclass(params):
        return dataclasses.replace(params, backend=backend)
    params.backend = backend
    return params


class SolveController(QObject):
    """Owns the worker thread of at most one running solve; re-emits its signals."""

    frame = pyqtSignal(int, object)
    records = pyqtSignal(object)
    notice = pyqtSignal(str)
    finished = pyqtSignal(object)
    failed = pyqtSignal(str)
    running_changed = pyqtSignal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thread: QThread | None = None
        self._worker: SolveWorker | None = None

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
        thread = QThread()
        worker = SolveWorker(job)
        worker.moveToThread(thread)
        thread.started.connect(worker.run)
        worker.frame.connect(self.frame)
        worker.records.connect(self.records)
        worker.notice.connect(self.notice)
        worker.finished.connect(self._on_finished)
        worker.failed.connect(self._on_failed)
        self._thread, self._worker = thread, worker
        thread.start()
        self.running_changed.emit(True)

    def cancel(self) -> None:
        """Ask the running solve (if any) to stop."""
        if self._worker is not None:
            self._worker.cancel()

    def _stop_thread(self) -> None:
        thread, self._thread, self._worker = self._thread, None, None
        if thread is not None:
            thread.quit()
            thread.wait(5000)
        self.running_changed.emit(False)

    def _on_finished(self, outcome: Any) -> None:
        self._stop_thread()
        self.finished.emit(outcome)

    def _on_failed(self, msg: str) -> None:
        self._stop_thread()
        self.failed.emit(msg)

    def shutdown(self, timeout_ms: int = 5000) -> None:
        """Cancel and wait for the thread (used when the window closes)."""
        if self._worker is not None:
            self._worker.cancel()
        if self._thread is not None:
            self._thread.quit()
            self._thread.wait(timeout_ms)
            self._thread = self._worker = None
