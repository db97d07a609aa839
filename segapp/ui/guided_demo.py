"""A guided demo for a lecture: the geometry of ℓ2-box ADMM on a tiny problem, then a photo.

Teach → Guided demo opens a small card with one or two sentences per step and Back / Next
buttons; each step sets the scene (a preset in the Geometry window, the walk played, the
cameraman sample, a run, the histogram, the probe) before its text is read.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from PyQt6.QtCore import QObject, QPoint, QRect, QSize, Qt
from PyQt6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from segapp.model.teaching import PRESETS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DemoStep:
    """One step: a title, one or two sentences, and what to do on screen first."""

    title: str
    text: str
    action: Callable[[], None]


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
        self.setStyleSheet("QLabel#title { font-size: 13pt; font-weight: bold; color: #9fb4dd; }"
                           "QLabel#text { font-size: 11pt; }")
        lay = QVBoxLayout(self)
        self.title = QLabel("")
        self.title.setObjectName("title")
        self.text = QLabel("")
        self.text.setObjectName("text")
        self.text.setWordWrap(True)
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

    def fit(self) -> None:
        """Make the card tall enough for its wrapped text (a window is sized once, from its
        first text's hint, and a longer step's lines would overlap and be cut off)."""
        w = max(self.width(), self.minimumWidth())
        self.resize(w, max(self.heightForWidth(w), self.minimumSizeHint().height()))


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
            view.set_caption(f"<b>{step.title}.</b> {step.text}")

    def _photo(self) -> None:
        from segapp.ui.fileops import list_samples
        if self.win.geometry_view is not None:
            self.win.geometry_view.pause()
        samples = [s for s in list_samples() if s[1].stem == "cameraman" and s[3] == 2]
        if samples and not (self.win.doc.image_path or "").endswith("cameraman.png"):
            _, image, strokes, k = samples[0]
            self.win.open_sample(image, strokes, k)
        self.win.raise_()
        self.win.activateWindow()

    def _run(self) -> None:
        self.win.show_teaching_dock()
        if not self.win.running:
            self.win.act_warm.setChecked(False)
            self.win.start_run()

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
    def start(self) -> None:
        """Open the card at the first step."""
        if self.card is None:
            self.card = DemoCard(self, self.win)
        self.card.show()
        self.go(0)
        self.place_card()

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
        try:
            step.action()
        except Exception:  # noqa: BLE001 - a demo step that fails must not end the lecture
            log.exception("guided demo step %r failed", step.title)
        self._caption()
        if self.card is not None:
            self.card.title.setText(step.title)
            self.card.text.setText(step.text)
            self.card.count.setText(f"step {self.index + 1} of {len(self.steps)}")
            self.card.back.setEnabled(self.index > 0)
            self.card.next.setEnabled(self.index < len(self.steps) - 1)
            self.card.fit()
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


__all__ = ["DemoCard", "DemoStep", "GuidedDemo"]
