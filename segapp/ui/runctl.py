"""Running the solver from the main window: start, live frames, finish, compare, replay."""
from __future__ import annotations

import logging
import time

import numpy as np

from segapp.core.colouring import disagreement_rgba, labels_rgb, palette, probabilities_rgb
from segapp.ui.frames import FrameStore
from segapp.ui.worker import SolveController, SolveJob, WarmUp

#: How the results panel and the status bar name the way a run ended.
STATUS_TEXT = {"converged": "converged", "settled": "settled (every pixel decided)",
               "max_iter": "iteration limit", "cancelled": "cancelled", "paused": "paused"}

log = logging.getLogger(__name__)


def build_params(k: int, settings):
    """:class:`segapp.core.pipeline.SegmentParams` from the document's settings (ValueError
    for a constraint text that does not parse)."""
    from segapp.core.constraint_text import parse_apart, parse_area
    from segapp.core.pipeline import SegmentParams
    from solver.mrf import Constraints
    constraints = Constraints(area=tuple(parse_area(t) for t in settings.area),
                              apart=tuple(parse_apart(t) for t in settings.apart))
    return SegmentParams(k=k, lam=settings.lam, beta=settings.beta,
                         colour_model=settings.colour_model, solver="admm",
                         backend=settings.backend, seed=settings.seed, admm=dict(settings.admm),
                         constraints=constraints or None)


class RunMixin:
    """Mixed into the main window (needs doc, canvas, plot, panels, actions)."""

    outcome = None

    def init_run(self) -> None:
        """Create the solve controller and run state."""
        self.solver = SolveController(self)
        self.solver.frame.connect(self.on_frame)
        self.solver.records.connect(self.on_records)
        self.solver.notice.connect(lambda m: self.statusBar().showMessage(m, 10000))
        self.solver.finished.connect(self.on_finished)
        self.solver.failed.connect(self.on_failed)
        self.solver.running_changed.connect(self.on_running_changed)
        self.frames = FrameStore()
        self.frames_received = 0
        self.records_received = 0
        self._cancelled = False
        self._live_probs: np.ndarray | None = None
        self._max_iter = 0
        self._t0 = 0.0
        self._warm = False

    def start_warm_up(self):
        """Compile the solver's kernels in a background thread (returned) while the user opens
        an image and paints; on the first run on a machine, when that takes about a minute, the
        status bar says so, and again when the solver is ready."""
        self.kernel_warm_up = WarmUp(self)
        self.kernel_warm_up.compiling.connect(
            lambda text: None if self.running else self.statusBar().showMessage(text))
        self.kernel_warm_up.ready.connect(self._on_warm_up_ready)
        return self.kernel_warm_up.start()

    def _on_warm_up_ready(self, seconds: float, compiled: bool) -> None:
        if compiled and not self.running:
            self.statusBar().showMessage(f"Solver ready (compiled in {seconds:.0f} s)", 8000)

    @property
    def running(self) -> bool:
        """Whether a solve is in progress."""
        return self.solver.running

    def forget_run(self) -> None:
        """Drop the last outcome and overlays (new image)."""
        if self.running:
            self.solver.shutdown()
        self.outcome = None
        self.frames.clear()
        self.plot.reset()
        self.results_panel.clear()
        self.canvas.set_result(None)
        self.canvas.set_compare(None)
        self.update_actions()

    def start_run(self) -> bool:
        """Start ADMM on the current document (warm-started from the last run when possible)."""
        if self.running or not self.doc.has_image:
            return False
        try:
            settings = self.current_settings()
            params = build_params(self.doc.k, settings)
            if params.constraints:  # refused here, before a thread starts
                seeds = np.where(self.doc.hard > 0, self.doc.hard, self.doc.strokes)
                params.constraints.validate(self.doc.k, self.doc.shape, seeds=seeds,
                                            hard=self.doc.hard)
        except (ValueError, TypeError) as exc:
            self.error("Bad parameters", str(exc))
            return False
        self.doc.settings = settings
        x0 = None
        prev = self.outcome
        if (self.act_warm.isChecked() and prev is not None and prev.labels.shape == self.doc.shape
                and int(prev.labels.max(initial=0)) <= self.doc.k
                and getattr(prev, "x_final", None) is not None
                and np.asarray(prev.x_final).size == self.doc.strokes.size * self.doc.k):
            # the answer the user saw (after the polish), not ADMM's continuous iterate: on a
            # large photo the re-run then solves only a band round its boundaries and ends no
            # worse than it (docs/algorithm.md, Coarse to fine)
            x0 = np.eye(self.doc.k, dtype=np.float32)[prev.labels.ravel() - 1]
        self._warm = x0 is not None
        job = SolveJob(image=self.doc.image, strokes=self.doc.strokes.astype(np.int32),
                       params=params, rect=self.doc.rect,
                       hard=self.doc.hard.astype(np.int32) if self.doc.hard.any() else None,
                       x0=x0, reference=self.params_panel.reference.isChecked())
        self.frames.clear()
        self.frames_received = self.records_received = 0
        self._cancelled = False
        self._max_iter = int(self.doc.settings.admm.get("max_iter", 0) or 0)
        self.plot.reset()
        self.results_panel.clear()
        self.canvas.set_compare(None)
        self.progress.setRange(0, 0)  # busy until the first iteration arrives
        self.progress.show()
        self.iter_label.setText("building model and reference…")
        self._t0 = time.monotonic()
        self.solver.start(job)
        self.statusBar().showMessage("Solving" + (" (warm start)" if x0 is not None else ""))
        return True

    def cancel_run(self) -> None:
        """Stop the running solve at its next iteration; keeps its best labels."""
        if self.running:
            self._cancelled = True
            self.solver.cancel()
            self.statusBar().showMessage("Cancelling…")

    # ---------------------------------------------------------------- live
    def on_frame(self, iteration: int, probs: np.ndarray) -> None:
        """Show the continuous solution of ``iteration`` and keep it for replay."""
        self.frames_received += 1
        self.frames.add(iteration, probs)
        self._live_probs = probs
        k = probs.shape[2]
        self.constraints_panel.show_areas(
            np.bincount(np.argmax(probs, axis=2).ravel(), minlength=k).astype(float),
            int(probs.shape[0] * probs.shape[1]))
        if self.results_panel.view_mode() != "photo":
            self.canvas.set_result(probabilities_rgb(probs, palette(probs.shape[2])))

    def on_records(self, batch) -> None:
        """Extend the plot and progress with per-iteration records."""
        self.records_received += len(batch)
        self.plot.add_records(batch)
        last = batch[-1]
        ref = getattr(last, "reference_energy", None)
        if ref is not None:
            self.plot.set_reference(ref, getattr(last, "reference_bound", None))
        m = last.max_iter or self._max_iter
        if m:
            self.progress.setRange(0, m)
            self.progress.setValue(min(last.iteration, m))
        self.iter_label.setText(f"iteration {last.iteration}" + (f" / {m}" if m else "")
                                + f"   E = {last.energy_rounded:.6g}")

    def on_running_changed(self, running: bool) -> None:
        """Enable/disable actions while solving."""
        if not running:
            self.progress.hide()
        self.update_actions()

    # ---------------------------------------------------------------- done
    def on_finished(self, outcome) -> None:
        """Show the outcome: overlay, numbers, compare layer, replay frames."""
        self.outcome = outcome
        k = int(outcome.problem.k)
        onehot = (outcome.labels[:, :, None] == np.arange(1, k + 1)).astype(np.float32)
        self.frames.add(int(outcome.iterations), onehot)
        ref = outcome.reference_energy
        ref_name = (getattr(outcome, "reference_detail", "")
                    or ("min-cut" if k == 2 else "α-expansion"))
        # the plot's line carries the name the results panel gives the yardstick
        self.plot.set_reference(ref, getattr(outcome, "reference_bound", None), ref_name)
        self.constraints_panel.show_areas(
            np.bincount(outcome.labels.ravel() - 1, minlength=k).astype(float),
            int(outcome.labels.size))
        disagree = None
        if outcome.reference_labels is not None:
            _, disagree = disagreement_rgba(outcome.labels, outcome.reference_labels)
        if self._cancelled:
            status = f"cancelled at iteration {outcome.iterations}"
        else:
            status = STATUS_TEXT.get(outcome.status, outcome.status)
        if self._warm:
            status += " (warm start)"
        self.results_panel.show_outcome(
            float(outcome.energy), None if ref is None else float(ref), ref_name, disagree,
            int(outcome.iterations), float(outcome.time_s), status, str(outcome.backend),
            constraints=list(getattr(outcome, "constraints", [])),
            bound=getattr(outcome, "reference_bound", None))
        self.results_panel.set_replay_count(len(self.frames))
        self.results_panel.set_replay_label("final")
        self.side_tabs.setCurrentWidget(self.results_panel)
        self.show_view()
        msg = f"ADMM {status}: E = {outcome.energy:.6g} after {outcome.iterations} iterations"
        if ref is not None and ref != 0:
            msg += f" (gap {(outcome.energy - ref) / abs(ref) * 100:+.3f} % to the reference)"
        self.statusBar().showMessage(msg)
        self.update_actions()

    def on_failed(self, message: str) -> None:
        """Report a failed solve; strokes are untouched."""
        self.canvas.set_result(None)
        self.error("Cannot segment", message)
        self.update_actions()

    # ---------------------------------------------------------------- views
    def show_view(self, *_args) -> None:
        """Redraw overlays for the chosen view mode and replay position."""
        mode = self.results_panel.view_mode()
        pal = palette(self.doc.k)
        o = self.outcome
        self.canvas.set_compare(None)
        if mode == "photo":
            self.canvas.set_result(None)
            return
        if self.running:
            if self._live_probs is not None:
                self.canvas.set_result(probabilities_rgb(self._live_probs, pal))
            return
        if o is None:
            self.canvas.set_result(None)
            return
        idx = self.results_panel.replay.value()
        final = idx >= len(self.frames) - 1
        if final:
            self.canvas.set_result(labels_rgb(o.labels, pal))
            self.plot.set_marker(None)
        else:
            it, probs = self.frames.get(idx)
            self.canvas.set_result(probabilities_rgb(probs, pal))
            self.plot.set_marker(it)
        if mode == "compare" and o.reference_labels is not None:
            labels = o.labels if final else self._frame_labels(idx)
            rgba, n = disagreement_rgba(labels, o.reference_labels)
            self.canvas.set_compare(rgba)
            self.statusBar().showMessage(f"{n:,} pixels differ from the reference (magenta)",
                                         5000)

    def _frame_labels(self, idx: int) -> np.ndarray:
        _, probs = self.frames.get(idx)
        small = np.argmax(probs, axis=2).astype(np.int32) + 1
        h, w = self.doc.shape
        ys = np.minimum((np.arange(h) * small.shape[0]) // h, small.shape[0] - 1)
        xs = np.minimum((np.arange(w) * small.shape[1]) // w, small.shape[1] - 1)
        return small[ys][:, xs]

    def on_replay(self, idx: int) -> None:
        """Replay slider moved to stored frame ``idx``."""
        if not len(self.frames):
            return
        it, _ = self.frames.get(idx)
        self.results_panel.set_replay_label("final" if idx >= len(self.frames) - 1
                                            else f"it {it}")
        self.show_view()


__all__ = ["RunMixin", "build_params"]
