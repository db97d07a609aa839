"""A guided demo for a lecture: the geometry of ℓ2-box ADMM on a tiny problem, then a photo.

Teach → Guided demo opens a small card with one or two sentences per step and Back / Next
buttons; each step sets the scene (a preset in the Geometry window, the walk played, the
cameraman sample, a run, the histogram, the probe) before its text is read.

The demo replaces the window's photo with the cameraman at its sixth step: whether to save the
work it replaces is asked once, when the demo starts (not in the middle of the lecture), and a
window that already shows the cameraman with two labels and strokes for both keeps it, strokes
and all. The steps on
the photo speak of the cameraman only while it is the photo shown, and the run is on it. The
card keeps one size for every step (the tallest step's), so Back and Next stay under the mouse.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PyQt6.QtCore import QObject, QPoint, QRect, QSize, Qt
from PyQt6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from segapp.model.teaching import PRESETS

log = logging.getLogger(__name__)


#: The photo the demo's later steps show and run on: the bundled sample's name and its K.
DEMO_PHOTO, DEMO_K = "cameraman", 2

#: The question the demo asks, once, at its start, where the window holds unsaved work.
ASK_TITLE = "Guided demo"
ASK_TEXT = ("The guided demo opens the cameraman sample, with its example strokes, in this "
            "window. Save the current session first?")
#: What a step on the photo says where the cameraman is not shown (the person kept their work
#: when asked, or the sample could not be read).
NO_PHOTO = ("The cameraman photo is not open (the work in the window was kept), so this step "
            "has nothing to show; open it from Samples (cameraman — 2 labels) to go on.")


@dataclass(frozen=True)
class DemoStep:
    """One step: a title, one or two sentences, and what to do on screen first.

    ``action`` returns None, or a text that replaces the step's own where the scene could not
    be set (the photo did not open, say)."""

    title: str
    text: str
    action: Callable[[], str | None]


def demo_sample() -> tuple[Path, Path | None, int] | None:
    """The demo's photo as a bundled sample: ``(image, strokes, K)``, or None where it is not
    bundled."""
    from segapp.ui.fileops import list_samples
    for _title, image, strokes, k in list_samples():
        if image.stem == DEMO_PHOTO and k == DEMO_K:
            return image, strokes, k
    return None


def card_position(screen: QRect, window: QRect, size: QSize, gap: int = 8) -> QPoint:
    """Where the demo's card goes: beside the window the lecture shows, not over it.

    Below the window where the screen has room, else to its right, else in the screen's
    bottom-right corner (over the window's corner, away from the middle of the picture, where
    a window manager would centre a tool window over its parent).

    Parameters
    ----------
    screen : QRect
        The screen's available area.
    window : QRect
        The shown window's frame.
    size : QSize
        The card's size.
    gap : int
        Pixels between the window and the card.

    Returns
    -------
    QPoint
        The card's top-left corner, with the whole card on the screen.
    """
    w, h = size.width(), size.height()

    def clamp(x: int, y: int) -> QPoint:
        return QPoint(max(screen.left(), min(x, screen.right() + 1 - w)),
                      max(screen.top(), min(y, screen.bottom() + 1 - h)))

    below = window.bottom() + 1 + gap
    if below + h <= screen.bottom() + 1:
        return clamp(window.left(), below)
    right = window.right() + 1 + gap
    if right + w <= screen.right() + 1:
        return clamp(right, window.top())
    return clamp(screen.right() + 1 - w, screen.bottom() + 1 - h)


def _preset_index(prefix: str) -> int:
    return next(i for i, p in enumerate(PRESETS) if p.title.startswith(prefix))


class DemoCard(QWidget):
    """The floating card that shows a step's text, with Back / Next / Close."""

    def __init__(self, demo: GuidedDemo, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Tool)
        self.setWindowTitle("Guided demo")
        self.setMinimumWidth(520)
        self._fixed = False
        self.setStyleSheet("QLabel#title { font-size: 13pt; font-weight: bold; color: #9fb4dd; }"
                           "QLabel#text { font-size: 11pt; }")
        lay = QVBoxLayout(self)
        self.title = QLabel("")
        self.title.setObjectName("title")
        self.text = QLabel("")
        self.text.setObjectName("text")
        self.text.setWordWrap(True)
        # (at the top: a step shorter than the tallest leaves its room below, not around it)
        self.text.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.count = QLabel("")
        self.count.setStyleSheet("color: #9a9aa4;")
        lay.addWidget(self.title)
        lay.addWidget(self.text, 1)
        row = QHBoxLayout()
        row.addWidget(self.count)
        row.addStretch(1)
        self.back = QPushButton("◀ Back")
        self.next = QPushButton("Next ▶")
        self.close_button = QPushButton("Close")
        self.back.clicked.connect(demo.back)
        self.next.clicked.connect(demo.next)
        self.close_button.clicked.connect(demo.stop)
        for b in (self.back, self.next, self.close_button):
            row.addWidget(b)
        lay.addLayout(row)

    def show_step(self, title: str, text: str, count: str) -> None:
        """Show one step's title, text and count."""
        self.title.setText(title)
        self.text.setText(text)
        self.count.setText(count)

    def fix_size(self, pages: list[tuple[str, str, str]]) -> QSize:
        """Give the card one size for all its pages ``(title, text, count)``: as wide as the
        widest title needs (at least its minimum width) and as tall as the tallest wrapped
        text at that width, so that the card, and Back and Next on it, stay where they are
        from step to step (sized to each step's text it grew and shrank under the mouse).

        Returns
        -------
        QSize
            The size fixed.
        """
        shown = (self.title.text(), self.text.text(), self.count.text())
        self.setMinimumSize(0, 0)
        self.setMaximumSize(16777215, 16777215)
        width = self.minimumWidth() or 520
        for page in pages:
            self.show_step(*page)
            width = max(width, self.minimumSizeHint().width(), 520)
        lay = self.layout()
        height = 0
        for page in pages:
            self.show_step(*page)
            lay.invalidate()
            height = max(height, lay.totalHeightForWidth(width), self.minimumSizeHint().height())
        self.show_step(*shown)
        self.setFixedSize(width, height)
        self._fixed = True
        return QSize(width, height)


class GuidedDemo(QObject):
    """The demo's steps, driven from a :class:`DemoCard` (or by calling :meth:`next`).

    Parameters
    ----------
    win : MainWindow
        With the teaching additions (:func:`segapp.ui.teaching_panel.install_teaching`).
    """

    def __init__(self, win) -> None:
        super().__init__(win)
        self.win = win
        self.index = -1
        self.card: DemoCard | None = None
        self.steps = self._steps()
        #: The text the card shows for the current step (its own, or why it shows nothing).
        self.shown_text = ""
        # the document's changes, counted, and their count when the person last said what to
        # do with their work (None: not asked yet): changes since then are new work
        self._changes = 0
        self._answered_at: int | None = None
        win.doc.subscribe(self._on_doc)

    def _on_doc(self, _kind: str, _box) -> None:
        self._changes += 1

    # ---------------------------------------------------------------- the photo
    def shows_demo_photo(self) -> bool:
        """Whether the window shows the demo's photo (the bundled cameraman) with its K."""
        doc, sample = self.win.doc, demo_sample()
        if sample is None or not doc.has_image or not doc.image_path or doc.k != sample[2]:
            return False
        try:
            return Path(doc.image_path).resolve() == Path(sample[0]).resolve()
        except OSError:
            return False

    def demo_photo_ready(self) -> bool:
        """Whether the window shows the demo's photo ready to run: the cameraman, two labels,
        strokes (or hard pixels) for each (the photo opened bare, from File → Open, is not:
        the demo opens the sample with its strokes)."""
        if not self.shows_demo_photo():
            return False
        doc = self.win.doc
        seeds = np.where(doc.hard > 0, doc.hard, doc.strokes)
        return bool(np.all(np.bincount(seeds.ravel(), minlength=doc.k + 1)[1:doc.k + 1] > 0))

    def _unsaved_work_at_stake(self) -> bool:
        """Whether opening the demo's photo would replace work the person has not saved (and
        has not said what to do with since it changed)."""
        win = self.win
        return (bool(win.doc.dirty) and not self.demo_photo_ready()
                and self._answered_at != self._changes
                and bool(getattr(win, "confirm_discard", True)))

    def ask_first(self) -> bool:
        """Before the first step: where the demo's photo would replace unsaved work, ask once
        whether to save it (Save, Discard, Cancel).

        Returns
        -------
        bool
            False where the person cancelled (or the save failed): the demo does not start.
        """
        if not self._unsaved_work_at_stake():
            self._answered_at = self._changes
            return True
        buttons = QMessageBox.StandardButton
        answer = QMessageBox.question(self.win, ASK_TITLE, ASK_TEXT,
                                      buttons.Save | buttons.Discard | buttons.Cancel,
                                      buttons.Save)
        if answer == buttons.Save:
            if not self.win.save_session():
                return False
        elif answer != buttons.Discard:
            return False
        self._answered_at = self._changes
        return True

    # ---------------------------------------------------------------- the steps
    def _geometry(self, preset: str, index: int | None = None, play: bool = False) -> None:
        view = self.win.open_geometry()
        i = _preset_index(preset)
        if view.presets.currentIndex() != i:
            view.set_preset(i)
        view.pause()
        if index is not None:
            view.set_index(index if index >= 0 else len(view.trace) - 1)
        if play:
            view.play()

    def _caption(self) -> None:
        view = self.win.geometry_view
        if view is not None and 0 <= self.index < len(self.steps):
            step = self.steps[self.index]
            view.set_caption(f"<b>{step.title}.</b> {self.shown_text or step.text}")

    def _photo(self) -> str | None:
        """Show the demo's photo: kept where the window shows it already, else opened (the
        person was asked about their work when the demo started; work made since is asked
        about again, by the window)."""
        win = self.win
        if win.geometry_view is not None:
            win.geometry_view.pause()
        if not self.demo_photo_ready() and not win.running:
            sample = demo_sample()
            if sample is not None:
                asked = not self._unsaved_work_at_stake()
                keep = getattr(win, "confirm_discard", True)
                win.confirm_discard = keep and not asked  # (answered at the start)
                try:
                    opened = win.open_sample(*sample)
                finally:
                    win.confirm_discard = keep
                if opened:
                    self._answered_at = self._changes
        win.raise_()
        win.activateWindow()
        return None if self.demo_photo_ready() else NO_PHOTO

    def _run(self) -> str | None:
        """Run ADMM on the demo's photo (opened first where another photo is shown)."""
        win = self.win
        win.show_teaching_dock()
        if win.running:
            return None
        if not self.demo_photo_ready():
            # opened here only where nothing is at stake: work the person kept at the photo
            # step is neither replaced nor run on under the cameraman's words
            if self._unsaved_work_at_stake() or self._photo() is not None:
                return NO_PHOTO
        win.act_warm.setChecked(False)
        win.start_run()
        return None

    def _replay_start(self) -> None:
        self.win.show_teaching_dock()
        if not self.win.running and len(self.win.frames):
            self.win.side_tabs.setCurrentWidget(self.win.results_panel)
            self.win.results_panel.replay.setValue(0)

    def _probe(self) -> None:
        self.win.show_teaching_dock()
        self.win.teaching.set_probing(True)
        if self.win.doc.has_image:
            h, w = self.win.doc.shape
            self.win.teaching.probe(w // 2 - w // 10, h // 2)  # on the man's coat

    def _steps(self) -> list[DemoStep]:
        g = self._geometry
        return [
            DemoStep("Binary points are where a box meets a sphere",
                     "{0,1}ⁿ is the box [0,1]ⁿ intersected with the sphere of radius √n/2 around "
                     "½: the four corners of the square are exactly the square's points on the "
                     "circle.", lambda: g("Rounding", 0)),
            DemoStep("Two copies, two projections",
                     "ℓ2-box ADMM keeps x and two copies: z₁ projected onto the box, z₂ onto the "
                     "sphere. Each iteration moves x towards both (the dashed lines).",
                     lambda: g("Rounding", 1)),
            DemoStep("The penalty grows until they agree",
                     "ρ grows every iteration, pulling x ever harder towards z₁ and z₂; when all "
                     "three coincide, x lies on the box and on the sphere: it is binary.",
                     lambda: g("Rounding", 0, play=True)),
            DemoStep("Rounding the relaxation is not enough",
                     "The relaxation's minimum (◇) rounds to (1, 0); ADMM ends at (0, 0), the "
                     "best of the four corners (green ring).", lambda: g("Rounding", -1)),
            DemoStep("Three variables, one constraint",
                     "In 3-D the sphere passes through all eight corners of the cube; a one-hot "
                     "row keeps x on the green triangle. Drag the drawing to rotate it.",
                     lambda: g("One-hot", 0, play=True)),
            DemoStep("The same solver on a photo",
                     "Segmenting the cameraman into two labels is a BQP with one variable per "
                     "pixel: 262,144 of them, so the box and sphere live in 262,144 dimensions.",
                     self._photo),
            DemoStep("Run ADMM",
                     "The overlay shows the continuous iterate; the histogram shows its values, "
                     "which leave the middle for 0 and 1 as ρ grows.", self._run),
            DemoStep("Where the mass goes",
                     "Drag the replay slider (Results tab): the histogram follows it, from the "
                     "first iterations, with much of the mass between 0 and 1, to the end, all "
                     "at 0 and 1.", self._replay_start),
            DemoStep("Probe a pixel",
                     "Click any pixel to follow its x, z₁ (box) and z₂ (sphere) over the "
                     "iterations: they meet at 0 or 1.", self._probe),
        ]

    # ---------------------------------------------------------------- driving
    def pages(self) -> list[tuple[str, str, str]]:
        """Every text the card may show: each step's ``(title, text, count)``, and the text a
        step on the photo shows where the photo could not be opened."""
        n = len(self.steps)
        out = [(s.title, s.text, f"step {i + 1} of {n}") for i, s in enumerate(self.steps)]
        return out + [(s.title, NO_PHOTO, f"step {i + 1} of {n}")
                      for i, s in enumerate(self.steps) if s.action in (self._photo, self._run)]

    def start(self) -> bool:
        """Open the card at the first step, having asked once about unsaved work the demo's
        photo would replace (:meth:`ask_first`).

        Returns
        -------
        bool
            False where the person cancelled: no card, nothing changed.
        """
        if not self.ask_first():
            return False
        if self.card is None:
            self.card = DemoCard(self, self.win)
            self.card.fix_size(self.pages())
        self.card.show()
        self.go(0)
        self.place_card()
        return True

    def place_card(self) -> None:
        """Put the card beside the window the first step shows (:func:`card_position`)."""
        if self.card is None:
            return
        shown = self.win.geometry_view or self.win
        screen = (shown.screen() or self.win.screen()).availableGeometry()
        self.card.move(card_position(screen, shown.frameGeometry(), self.card.frameGeometry()
                                     .size()))

    def go(self, index: int) -> None:
        """Do step ``index`` and show its text."""
        self.index = max(0, min(index, len(self.steps) - 1))
        step = self.steps[self.index]
        text = step.text
        try:
            text = step.action() or step.text
        except Exception:  # noqa: BLE001 - a demo step that fails must not end the lecture
            log.exception("guided demo step %r failed", step.title)
        self.shown_text = text
        self._caption()
        if self.card is not None:
            self.card.show_step(step.title, text, f"step {self.index + 1} of {len(self.steps)}")
            self.card.back.setEnabled(self.index > 0)
            self.card.next.setEnabled(self.index < len(self.steps) - 1)
            self.card.raise_()

    def next(self) -> None:
        """The next step."""
        self.go(self.index + 1)

    def back(self) -> None:
        """The previous step."""
        self.go(self.index - 1)

    def stop(self) -> None:
        """Close the card (the windows stay as they are)."""
        if self.card is not None:
            self.card.hide()
        if self.win.geometry_view is not None:
            self.win.geometry_view.set_caption(None)


__all__ = ["DEMO_K", "DEMO_PHOTO", "DemoCard", "DemoStep", "GuidedDemo", "demo_sample"]
