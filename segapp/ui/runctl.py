"""Running the solver from the main window: start, live frames, finish, compare, replay."""
from __future__ import annotations

import hashlib
import logging
import time

import numpy as np
from PyQt6.QtCore import QTimer
from PyQt6.QtWidgets import QLabel, QMessageBox, QProgressBar

from segapp.core.colouring import disagreement_rgba, labels_rgb, palette, probabilities_rgb
from segapp.core.isolated import release_memory
from segapp.ui.frames import FrameStore
from segapp.ui.messages import person_sentence
from segapp.ui.panels import STAGE_NAMES, warning_line
from segapp.ui.worker import SolveController, SolveJob, WarmUp, compile_text

#: How the results panel and the status bar name the way a run ended.
STATUS_TEXT = {"converged": "converged", "settled": "settled (every pixel decided)",
               "max_iter": "iteration limit", "cancelled": "cancelled", "paused": "paused"}

#: What the progress text says while each step of a run (the pipeline's phases) goes on. The
#: app's reference solves in its child beside ADMM: its phase starts only if ADMM ends first.
PHASE_TEXT = {"model": "building the model…",
              "reference": "waiting for the reference{name}…",
              "solve": "ADMM: setting up…"}


log = logging.getLogger(__name__)


def level_text(level: int, levels: int) -> str:
    """A pyramid level as the person counts it, in the order solved: the coarsest is "level 1
    of 4", the full image (level 0 of the solver) "level 4 of 4"."""
    return f"level {levels - level} of {levels}"


class RunCount:
    """How a run's iterations divide, as its records arrive: the colour models' re-estimation
    rounds solved before the final solve (the pipeline names the final solve's phase
    ``"solve"``), and the final solve's pyramid levels. Every number the window shows about
    the iterations comes from here, so that they agree: the iteration numbered across all of
    them (as the plot and the result count it), and the iteration within its solve or level,
    which the Parameters tab's max iterations limits.
    """

    def __init__(self) -> None:
        self.final = False       # the final solve has begun (its phase was named)
        self.rounds = 0          # re-estimation rounds seen
        self.round_iterations = 0
        self.levels: dict[int, int] = {}  # the final solve's iterations by level
        self.last = None         # the newest record
        self._within = 0

    def final_solve(self) -> None:
        """The pipeline named the final solve's phase: the records from now on are its."""
        self.final = True
        self._within = 0

    def add(self, records) -> None:
        """Count a batch of :class:`segapp.ui.worker.Record`."""
        for r in records:
            within = int(getattr(r, "level_iteration", 0) or 0)
            levels = int(getattr(r, "levels", 1) or 1)
            level = int(getattr(r, "level", 0) or 0)
            if not self.final:
                # a solve starts again at iteration 1 of its first (coarsest) level
                if self.last is None or (within < self._within and level == levels - 1):
                    self.rounds += 1
                self.round_iterations += 1
            else:
                self.levels[level] = self.levels.get(level, 0) + 1
            self._within = within
            self.last = r

    def part(self, record) -> str:
        """What the solve in progress is: ``"level 2 of 4"``, ``"colour-model round 2"``, ``"the
        final solve, level 3 of 4"``; ``""`` for a solve that is the whole run."""
        parts = []
        if not self.final:
            parts.append(f"colour-model round {max(self.rounds, 1)}")
        elif self.rounds:
            parts.append("the final solve")
        levels = int(getattr(record, "levels", 1) or 1)
        if levels > 1:
            parts.append(level_text(int(getattr(record, "level", 0) or 0), levels))
        return ", ".join(parts)

    def progress(self, record) -> str:
        """The status bar's progress while ADMM iterates.

        The iteration is numbered across the rounds and levels, as the plot and the result
        count it; the limit is the Parameters tab's max iterations, which bounds each solve
        and level: where the run has more than one, the text names the one in progress and
        its own iteration, which the limit counts ("ADMM iteration 739: level 3 of 4, its
        iteration 120 of at most 1000").
        """
        it, limit = int(record.iteration), int(getattr(record, "max_iter", 0) or 0)
        energy = f"   E = {record.energy_rounded:.6g}"
        part = self.part(record)
        within = int(getattr(record, "level_iteration", 0) or 0)
        if not part and (not within or within == it):
            return f"ADMM iteration {it}" + (f" (limit {limit})" if limit else "") + energy
        return (f"ADMM iteration {it}: {part or 'this solve'}, its iteration {within}"
                + (f" of at most {limit}" if limit else "") + energy)

    def pause(self, iteration: int, stage: str = "") -> str:
        """What the window says while the polish after ``iteration`` runs its stage ``stage``
        (:data:`solver.mrf.polish.stages.STAGES`): the polish of a round (then the colour
        models' refit), of a coarse level (then the next level's set-up), or the final
        polish, e.g. ``"polish (after ADMM iteration 213): TV…"`` (the stages named as the
        results panel names them, :data:`segapp.ui.panels.STAGE_NAMES`)."""
        rec = self.last
        levels = int(getattr(rec, "levels", 1) or 1)
        level = int(getattr(rec, "level", 0) or 0)
        doing = f": {STAGE_NAMES.get(stage, stage)}" if stage else ""
        if levels > 1 and level > 0:
            return (f"polish of {level_text(level, levels)} (after ADMM iteration {iteration})"
                    f"{doing}, then {level_text(level - 1, levels)}…")
        if not self.final:
            return (f"polish of colour-model round {max(self.rounds, 1)} (after ADMM iteration "
                    f"{iteration}){doing}, then the colour models refitted…")
        return f"polish (after ADMM iteration {iteration}){doing}…"

    def per_level(self) -> list[int]:
        """The final solve's iterations by level, coarsest first."""
        return [self.levels[lv] for lv in sorted(self.levels, reverse=True)]


def constraint_bounds(settings) -> list:
    """The area bounds of ``settings`` that parse (for the unit an error about them uses)."""
    from segapp.core.constraint_text import parse_area
    out = []
    for text in getattr(settings, "area", None) or []:
        try:
            out.append(parse_area(text))
        except ValueError:
            pass
    return out


def _scene_hash(image: np.ndarray, k: int, rect, constraints):
    """A blake2b fed with the image, K, the rectangle and the constraints."""
    h = hashlib.blake2b(digest_size=16)
    a = np.ascontiguousarray(image)
    h.update(f"{a.shape}{a.dtype.str};".encode())
    h.update(a.data)
    h.update(f"k={int(k)};".encode())
    h.update(repr(None if rect is None else tuple(int(v) for v in rect)).encode())
    h.update(repr(constraints or None).encode())
    return h


def fingerprints(image: np.ndarray, k: int, strokes: np.ndarray, hard: np.ndarray | None,
                 rect, constraints) -> tuple[str, str]:
    """``(annotation_fingerprint, scene_fingerprint)`` of a document, the image hashed once."""
    h = _scene_hash(image, k, rect, constraints)
    scene = h.hexdigest()
    for a in (np.asarray(strokes, np.int32),
              None if hard is None or not np.any(hard) else np.asarray(hard, np.int32)):
        if a is None:
            h.update(b"none;")
            continue
        a = np.ascontiguousarray(a)
        h.update(f"{a.shape}{a.dtype.str};".encode())
        h.update(a.data)
    return h.hexdigest(), scene


def annotation_fingerprint(image: np.ndarray, k: int, strokes: np.ndarray,
                           hard: np.ndarray | None, rect, constraints) -> str:
    """A digest of what a run's answer depends on besides the solver's parameters: the image,
    K, the strokes, the hard constraints, the rectangle and the area/apart constraints. Two runs
    with the same digest differ at most in parameters (λ, β, ADMM's settings…), the one case
    where the last answer is itself the start (a warm start)."""
    return fingerprints(image, k, strokes, hard, rect, constraints)[0]


def scene_fingerprint(image: np.ndarray, k: int, rect, constraints) -> str:
    """A digest of what a correction keeps: the image, K, the rectangle and the constraints.
    Two runs with the same digest differ at most in strokes, hard pixels and parameters; the
    last answer is then the start of a correction (:func:`solver.mrf.prepare`'s
    ``previous``)."""
    return _scene_hash(image, k, rect, constraints).hexdigest()


def build_params(k: int, settings):
    """:class:`segapp.core.pipeline.SegmentParams` from the document's settings, with ADMM as
    the solver (ValueError for a constraint text that does not parse)."""
    from segapp.core.pipeline import SegmentParams
    return SegmentParams.from_settings(k, settings, solver="admm")


class RunMixin:
    """Mixed into the main window (needs doc, canvas, plot, panels, actions)."""

    outcome = None

    def init_run(self) -> None:
        """Create the solve controller and run state."""
        self.solver = SolveController(self)
        self.solver.frame.connect(self.on_frame)
        self.solver.records.connect(self.on_records)
        self.solver.notice.connect(self.on_notice)
        self.solver.phase.connect(self.on_phase)
        self.solver.solved.connect(self.on_solved)
        self.solver.provisional.connect(self.on_provisional)
        self.solver.finished.connect(self.on_finished)
        self.solver.failed.connect(self.on_failed)
        self.solver.running_changed.connect(self.on_running_changed)
        self.frames = FrameStore()
        self.results_panel.frame_store = self.frames  # (its memory line reads the store)
        self.frames_received = 0
        self.records_received = 0
        self._cancelled = False
        self._live_probs: np.ndarray | None = None
        # ADMM's answer while the run waits for the reference (None otherwise)
        self._solved_labels: np.ndarray | None = None
        self._max_iter = 0
        self._t0 = 0.0
        self._warm = self._correction = False
        self._run_fingerprint: str | None = None      # of the run in progress
        self._outcome_fingerprint: str | None = None  # of the run that gave self.outcome
        self._run_scene: str | None = None            # scene_fingerprint of the run
        self._outcome_scene: str | None = None        # ... and of self.outcome's
        self._rerun = False       # a stroke came during a following run: run again after it
        self._following = False   # the run in progress was started by a stroke (follow mode)
        self._run_params = self._outcome_params = None  # the same for their SegmentParams
        self._phase = ""
        self._last_iteration = 0
        self._polishing = False  # the solve named a polish stage after its last iteration
        self.run_count = RunCount()  # how the run's iterations divide (rounds, levels)
        self._build_run_status()

    def _build_run_status(self) -> None:
        """Permanent status-bar widgets for what must stay in view (a temporary message goes
        as soon as the mouse is over a menu or toolbar item that has a status tip): the
        kernels' compile, with a busy bar, and the last run's GPU fallback."""
        sb = self.statusBar()
        self.compile_label = QLabel("")
        self.compile_bar = QProgressBar()
        self.compile_bar.setRange(0, 0)  # busy: how long a compile takes is not known
        self.compile_bar.setMaximumWidth(60)
        self.compile_bar.setTextVisible(False)
        self.notice_label = QLabel("")
        self.notice_label.setStyleSheet("color: #e0a040;")
        for i, w in enumerate((self.compile_label, self.compile_bar, self.notice_label)):
            w.hide()
            sb.insertPermanentWidget(i, w)
        self._compiling: set[str] = set()  # who waits for a compile: "warm-up", "run"

    def _set_compiling(self, who: str, on: bool) -> None:
        """Show the compile notice while the warm-up or a run waits for kernels to compile."""
        (self._compiling.add if on else self._compiling.discard)(who)
        if self._compiling:
            # short: a permanent widget is never elided, and the window must fit 1366 pixels
            self.compile_label.setText("Compiling the solver's kernels (first run only)…")
            self.compile_label.setToolTip(compile_text())
        self.compile_label.setVisible(bool(self._compiling))
        self.compile_bar.setVisible(bool(self._compiling))

    def start_warm_up(self):
        """Compile the solver's kernels in a child process, watched from a background thread
        (returned), while the user opens an image and paints; on the first run on a machine,
        when that takes about a minute, the status bar says so until they are compiled, then
        that the solver is ready."""
        self.kernel_warm_up = WarmUp(self)
        self.kernel_warm_up.compiling.connect(lambda _text: self._set_compiling("warm-up", True))
        self.kernel_warm_up.ready.connect(self._on_warm_up_ready)
        self.kernel_warm_up.failed.connect(lambda: self._set_compiling("warm-up", False))
        return self.kernel_warm_up.start()

    def stop_warm_up(self) -> None:
        """End the warm-up's child process if it still compiles (the window closes)."""
        warm = getattr(self, "kernel_warm_up", None)
        if warm is not None:
            warm.stop()

    def _on_warm_up_ready(self, seconds: float, compiled: bool) -> None:
        self._set_compiling("warm-up", False)
        if self.params_panel.reference.isChecked() and self.isVisible():  # (not once closed)
            # the reference's child process too, now that the cores are free: started by the
            # first run instead, its imports added about a second to that run's reference
            self.solver.reference_process.start()
        if compiled and not self.running:
            self.statusBar().showMessage(f"Solver ready (compiled in {seconds:.0f} s)", 8000)

    def on_notice(self, text: str) -> None:
        """A notice from the running solve: the compile (in the compile widgets until the
        iterations start) or a GPU fallback (kept in view until the next run or image, and in
        the results panel with the outcome)."""
        if text == compile_text():
            self._set_compiling("run", True)
            return
        line = warning_line(text)
        # the reason in the tooltip (and the results panel): it can be long
        self.notice_label.setText(line.split(" (", 1)[0])
        self.notice_label.setToolTip(line)
        self.notice_label.show()
        self.statusBar().showMessage(line, 10000)

    def on_phase(self, name: str) -> None:
        """The running solve started a phase: say which in the progress text (a polish
        stage, ``"polish:<stage>"``, in the words of :meth:`RunCount.pause`)."""
        if name.startswith("polish:"):
            if self.running:
                self._polishing = True
                self.iter_label.setText(self.run_count.pause(self._last_iteration,
                                                             name.split(":", 1)[1]))
            return
        self._phase = name
        if name == "solve":
            self.run_count.final_solve()
        ref = ""
        if name == "reference" and not (self.doc.settings.area or self.doc.settings.apart):
            ref = " (min-cut)" if self.doc.k == 2 else " (α-expansion)"
        self.iter_label.setText(PHASE_TEXT.get(name, name + "…").format(name=ref))

    def _end_of_run(self) -> None:
        """Forget what only a running solve needs: its progress text (the status bar then
        holds the outcome's one energy), its compile notice and its last live frame (the
        replay keeps its own, downsampled copies)."""
        self._phase = ""
        self.iter_label.clear()
        self._set_compiling("run", False)
        self._live_probs = None
        self._solved_labels = None
        self.statusBar().setToolTip("")  # (an exact preview's, see on_provisional)

    @property
    def running(self) -> bool:
        """Whether a solve is in progress."""
        return self.solver.running

    def forget_run(self) -> None:
        """Drop the last outcome and overlays (new image)."""
        if self.running:
            self.solver.shutdown()
        self.outcome = None
        self._outcome_fingerprint = self._outcome_params = self._outcome_scene = None
        self._end_of_run()
        self.notice_label.hide()
        self.frames.clear()
        self.plot.reset()
        self.results_panel.clear()
        self.canvas.set_result(None)
        self.canvas.set_compare(None)
        self.update_actions()
        release_memory()

    def start_run(self) -> bool:
        """Start ADMM on the current document, from the last run's answer where that helps
        (Warm start checked): warm-started where only parameters changed since (the
        annotations' fingerprint matches); a correction where only strokes or hard pixels
        changed (the photo, K, rectangle and constraints as they were: the colour models are
        refitted to the last answer with the new strokes and the solve starts from it);
        otherwise cold. The status bar says which."""
        if self.running or not self.doc.has_image:
            return False
        try:
            settings = self.current_settings()
            params = build_params(self.doc.k, settings)
            # refused here, before a thread starts
            params.checked(self.doc.shape, hard=self.doc.hard,
                           seeds=np.where(self.doc.hard > 0, self.doc.hard, self.doc.strokes))
        except (ValueError, TypeError) as exc:
            h, w = self.doc.shape
            self.error("Cannot run", person_sentence(
                str(exc), constraint_bounds(self.current_settings()), h * w))
            return False
        self.doc.settings = settings
        hard = self.doc.hard.astype(np.int32) if self.doc.hard.any() else None
        fingerprint, scene = fingerprints(self.doc.image, self.doc.k, self.doc.strokes, hard,
                                          self.doc.rect, params.constraints)
        x0 = previous = None
        prev = self.outcome
        start_note = ""
        if self.act_warm.isChecked() and prev is not None:
            if prev.labels.shape != self.doc.shape:
                start_note = " (cold start: the annotations changed since the last run)"
            elif (fingerprint == self._outcome_fingerprint):
                # the answer the user saw (after the polish), not ADMM's continuous iterate:
                # on a large photo the re-run then solves only a band round its boundaries
                # and ends no worse than it (docs/algorithm.md, Coarse to fine)
                x0 = np.eye(self.doc.k, dtype=np.float32)[prev.labels.ravel() - 1]
                start_note = (" (warm start: same annotations, new parameters)"
                              if params != self._outcome_params
                              else " (warm start: from the last answer)")
            elif scene == self._outcome_scene and (self.doc.strokes.any() or hard is not None):
                # a correction: strokes or hard pixels changed, the rest did not; the colour
                # models are refitted to the last answer with the new strokes, and the solve
                # starts from it (no rounds)
                previous = prev.labels
                start_note = " (correction: from the last answer, colours re-learnt)"
            else:
                start_note = " (cold start: the photo's rectangle, K or constraints changed)"
        self._warm, self._correction = x0 is not None, previous is not None
        self._run_fingerprint, self._run_params = fingerprint, params
        self._run_scene = scene
        job = SolveJob(image=self.doc.image, strokes=self.doc.strokes.astype(np.int32),
                       params=params, rect=self.doc.rect, hard=hard,
                       x0=x0, reference=self.params_panel.reference.isChecked(),
                       previous=previous,
                       # the first run on a machine, its kernels compiling: the exact
                       # solver's cut first (seconds), ADMM's when they are ready
                       provisional="warm-up" in self._compiling)
        self.frames.clear()
        self.frames_received = self.records_received = 0
        self._cancelled = False
        self._max_iter = int(self.doc.settings.admm.get("max_iter", 0) or 0)
        self.run_count = RunCount()
        self.plot.reset()
        # the constraint residual's curve: the person's constraints, or for K > 2 the one-hot
        # rows every pixel's weights keep (no curve for K = 2 without constraints)
        self.plot.set_constraint_curve("constraints" if params.constraints
                                       else "one-hot Σₖxₖ = 1" if self.doc.k > 2 else None)
        self.results_panel.clear()
        self.canvas.set_compare(None)
        # Busy (no percentage) for the whole run: how many iterations ADMM takes is not known
        # beforehand (it stops on convergence, mostly far below the iteration limit, and coarse
        # to fine adds levels), so iteration / limit sat near 10 % and then jumped to the end.
        # The text beside it says which phase runs and, while ADMM runs, its iteration.
        self.progress.setRange(0, 0)
        self.progress.show()
        self.notice_label.hide()
        self._phase = ""
        self._last_iteration = 0
        self._polishing = False
        self.iter_label.setText("starting…")
        self._t0 = time.monotonic()
        self.solver.start(job)
        self.statusBar().showMessage("Solving" + start_note)
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
        if self.results_panel.view_mode() != "photo" and not self._following:
            # (a run that follows the brush leaves the last answer on screen until its own)
            self.canvas.set_result(probabilities_rgb(probs, palette(probs.shape[2])))

    def on_records(self, batch) -> None:
        """Extend the plot and progress with per-iteration records."""
        self.records_received += len(batch)
        self.plot.add_records(batch)
        last = batch[-1]
        self.run_count.add(batch)
        ref = getattr(last, "reference_energy", None)
        if ref is not None:
            self.plot.set_reference(ref, getattr(last, "reference_bound", None))
        if not getattr(last, "max_iter", 0) and self._max_iter:
            last.max_iter = self._max_iter
        self._set_compiling("run", False)  # iterating: the kernels it waited for are there
        self._phase = "solve"
        if not self._cancelled:  # (a cancelled run still sends its last, batched records)
            self._polishing = False
        self._last_iteration = int(last.iteration)
        self.iter_label.setText(self.run_count.progress(last))

    def on_running_changed(self, running: bool) -> None:
        """Enable/disable actions while solving."""
        if not running:
            self.progress.hide()
        self.update_actions()

    def on_solved(self, labels: np.ndarray, energy: float) -> None:
        """ADMM is done and the run waits for the reference: show ADMM's answer meanwhile
        (the results, the gap and the comparison come with the reference)."""
        self._solved_labels = labels
        self._live_probs = None
        if self.results_panel.view_mode() != "photo":
            self.canvas.set_result(labels_rgb(labels, palette(self.doc.k)))
        # (short: the progress text beside it says what the run waits for)
        self.statusBar().showMessage(f"ADMM's answer: E = {energy:.6g}")

    def on_provisional(self, labels: np.ndarray, energy: float, name: str) -> None:
        """The exact solver's answer to the run's model while ADMM's kernels still compile
        (the first run on a machine): shown until ADMM's live iterates take its place."""
        if self.results_panel.view_mode() != "photo":
            self.canvas.set_result(labels_rgb(labels, palette(self.doc.k)))
        # (short: beside the compile notice and the progress text a 1440-pixel window has room
        # for about 25 characters in a real window; which solver and its energy are in the tip)
        self.statusBar().showMessage("Exact cut shown; ADMM next")
        self.statusBar().setToolTip(
            f"The exact {name} answer to this model (E = {energy:.6g}), shown while ADMM's "
            "kernels compile (first run only); ADMM's run follows")

    # ---------------------------------------------------------------- done
    def follow_stroke(self) -> None:
        """A stroke ended: with Segment → Follow the brush checked, run again (a correction,
        from the last answer); a run in progress that a stroke started is superseded (it is
        cancelled, and the new run starts when it has stopped)."""
        if not self.act_follow.isChecked() or not self.doc.has_image:
            return
        if self.running:
            if self._following:
                self._rerun = True
                self.cancel_run()
            return
        self._following = self.start_run()

    def _run_again(self) -> bool:
        """After a run ends: start the run a newer stroke asked for, if one did."""
        if not self._rerun:
            self._following = False
            return False
        self._rerun = False
        QTimer.singleShot(0, lambda: setattr(self, "_following", self.start_run()))
        return True

    def on_finished(self, outcome) -> None:
        """Show the outcome: overlay, numbers, compare layer, replay frames."""
        self._end_of_run()
        if self._rerun and self._cancelled:  # superseded by a newer stroke: not shown
            self._run_again()
            self.update_actions()
            return
        self._following = False
        self.outcome = outcome
        self._outcome_fingerprint = self._run_fingerprint
        self._outcome_scene = self._run_scene
        self._outcome_params = self._run_params
        # a warm start takes the labels, so the continuous iterate (n × K floats) is not kept
        outcome.x_final = None
        k = int(outcome.problem.k)
        onehot = (outcome.labels[:, :, None] == np.arange(1, k + 1)).astype(np.float32)
        self.frames.add(int(outcome.iterations), onehot)
        ref = outcome.reference_energy
        ref_name = (getattr(outcome, "reference_detail", "")
                    or ("min-cut" if k == 2 else "α-expansion"))
        # the plot's line carries the name the results panel gives the yardstick
        self.plot.set_reference(ref, getattr(outcome, "reference_bound", None), ref_name)
        if outcome.method == "admm":  # where the polish took ADMM's last rounded iterate
            its = self.plot.iterations()
            self.plot.set_final(its[-1] if its else int(outcome.iterations),
                                float(outcome.energy))
        self.constraints_panel.show_areas(
            np.bincount(outcome.labels.ravel() - 1, minlength=k).astype(float),
            int(outcome.labels.size))
        disagree = None
        if outcome.reference_labels is not None:
            _, disagree = disagreement_rgba(outcome.labels, outcome.reference_labels)
        if self._cancelled and outcome.status == "cancelled":
            # (the polish polls the cancel too: a cancel while the iterations had paused for it
            # stopped the run there; the iterations row says how many ran)
            status = ("cancelled in the polish" if self._polishing
                      else f"cancelled at iteration {outcome.iterations}")
        else:  # (a cancel while the run waited for the reference skipped only the reference)
            status = STATUS_TEXT.get(outcome.status, outcome.status)
            last = self.run_count.last
            levels = int(getattr(last, "levels", 1) or 1)
            if outcome.status == "max_iter" and levels > 1:
                # (the status is the last level's: it ran up to the limit each level has)
                status += f" ({last.max_iter} iterations on {level_text(0, levels)})"
            if self._cancelled and outcome.reference_energy is None:
                status += "; reference cancelled"
        if self._warm:
            status += " (warm start)"
        elif self._correction:
            status += " (correction)"
        self.results_panel.show_outcome(
            float(outcome.energy), None if ref is None else float(ref), ref_name, disagree,
            int(outcome.iterations), float(outcome.time_s), status, str(outcome.backend),
            constraints=list(getattr(outcome, "constraints", [])),
            bound=getattr(outcome, "reference_bound", None),
            build_s=getattr(outcome, "build_time_s", None),
            reference_s=getattr(outcome, "reference_time_s", None),
            warnings=list(getattr(outcome, "warnings", []) or []),
            unpolished=getattr(outcome, "energy_admm", None),
            total_s=getattr(outcome, "total_time_s", None),
            per_level=self.run_count.per_level(),
            rounds=(self.run_count.rounds, self.run_count.round_iterations),
            stages=tuple(getattr(outcome, "stages", ()) or ()))
        self.results_panel.set_replay_count(len(self.frames))
        self.results_panel.set_replay_label("final")
        self.side_tabs.setCurrentWidget(self.results_panel)
        self.show_view()
        msg = f"ADMM {status}: E = {outcome.energy:.6g} after {outcome.iterations} iterations"
        if ref is not None and ref != 0:
            msg += f" (gap {(outcome.energy - ref) / abs(ref) * 100:+.3f} % to the reference)"
        if getattr(outcome, "warnings", None):
            msg += " — " + warning_line(outcome.warnings[-1])
        self.statusBar().showMessage(msg)
        self.update_actions()
        # what the run no longer needs is gone (its solver, states, live frames, continuous
        # iterate): hand the pages it freed back to the system, or the idle app keeps its peak
        release_memory()

    def on_failed(self, message: str) -> None:
        """Report a failed solve; strokes are untouched. Where the image would fit in memory
        without the reference, offer to run again without it."""
        from segapp.core.memory import WITHOUT_REFERENCE
        self._end_of_run()
        if self._rerun and self._cancelled:  # (superseded before it had an answer)
            self._run_again()
            self.update_actions()
            return
        self._rerun = self._following = False
        self.canvas.set_result(None)
        if WITHOUT_REFERENCE in message and self.params_panel.reference.isChecked():
            log.warning("Cannot segment: %s", message)
            answer = QMessageBox.question(
                self, "Not enough memory",
                f"{person_sentence(message)}\n\nRun without the reference?",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
            self.update_actions()
            if answer == QMessageBox.StandardButton.Yes:
                self.params_panel.reference.setChecked(False)
                self.start_run()
            return
        params = self._run_params
        bounds = list(params.constraints.area) if params is not None and params.constraints else []
        h, w = self.doc.shape if self.doc.has_image else (0, 0)
        self.error("Cannot segment", person_sentence(message, bounds, h * w or None))
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
            if self._solved_labels is not None:
                self.canvas.set_result(labels_rgb(self._solved_labels, pal))
            elif self._live_probs is not None:
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


__all__ = ["RunMixin", "annotation_fingerprint", "build_params", "fingerprints",
           "scene_fingerprint"]
