"""The guided demo as a lecturer uses it (issue "The app as people use it", item 5).

It interrupted at step 6 with "Save the current session before continuing?", then spoke of the
cameraman while another photo was shown and ran on that photo; its card changed height between
steps (114 and 132 px), so Next moved under the mouse. Now it asks once, at the start; the
steps on the photo show and run on the cameraman; the card keeps one size.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PyQt6.QtCore import QPoint
from PyQt6.QtWidgets import QMessageBox

from segapp.ui.fileops import list_samples
from tests.segapp.conftest import disc_image

#: What the demo asks at its start: its own question, which says what it will open.
ASK_TITLE = "Guided demo"


def demo_sample():
    """The bundled cameraman with its two-label strokes: ``(image, strokes, K)``."""
    return next(((img, st, k) for _t, img, st, k in list_samples()
                 if img.stem == "cameraman" and k == 2), None)


def asked_once_at_the_start(asked) -> bool:
    return len(asked) == 1 and asked[0][0] == ASK_TITLE and "cameraman" in asked[0][1]

Button = QMessageBox.StandardButton


def open_other_photo(win, qtbot) -> None:
    """A photo that is not the demo's, with strokes the person has not saved."""
    img, strokes = disc_image(48, 64)
    win.doc.set_image(img, "/tmp/someone_elses_photo.png")
    win.doc.set_layers(strokes=strokes)
    assert win.doc.dirty
    qtbot.wait(10)


@pytest.fixture
def asked(monkeypatch):
    """Every question dialog, as ``(title, text)``, answered with ``asked.answer``."""
    class Asked(list):
        answer = Button.Discard

    out = Asked()

    def question(_parent, title, text, *args, **kwargs):
        out.append((title, text))
        return out.answer

    monkeypatch.setattr(QMessageBox, "question", question)
    return out


@pytest.fixture
def runs(win, monkeypatch):
    """Runs the demo starts, as ``(image path, K)``, stubbed (a 512 x 512 run takes long)."""
    started: list[tuple[str, int]] = []

    def start_run() -> bool:
        started.append((win.doc.image_path, win.doc.k))
        return True

    monkeypatch.setattr(win, "start_run", start_run)
    return started


def cameraman() -> str:
    sample = demo_sample()
    assert sample is not None, "the cameraman sample is bundled"
    return str(Path(sample[0]).resolve())


def step_through(win, qtbot) -> list[dict]:
    """Press Next through every step; what the card and window showed at each."""
    demo, card = win.guided_demo, win.guided_demo.card
    seen = []
    for i in range(len(demo.steps)):
        if i:
            card.next.click()
        qtbot.wait(5)
        seen.append({"index": demo.index, "title": card.title.text(), "text": card.text.text(),
                     "size": (card.width(), card.height()),
                     "next": card.next.mapToGlobal(QPoint(0, 0)),
                     "photo": str(Path(win.doc.image_path).resolve())
                     if win.doc.image_path else None,
                     "k": win.doc.k})
    return seen


@pytest.mark.slow
def test_the_demo_asks_once_at_the_start_and_shows_and_runs_its_own_photo(
        win, qtbot, asked, runs):
    win.confirm_discard = True  # (the fixture's window never asks; the app's does)
    open_other_photo(win, qtbot)
    win.guided_demo.start()
    assert win.guided_demo.card is not None and win.guided_demo.card.isVisible()
    # asked at the start, before the first step, in the demo's words
    assert asked_once_at_the_start(asked), list(asked)
    seen = step_through(win, qtbot)
    assert asked_once_at_the_start(asked), f"asked in the middle of the demo: {list(asked)}"
    photo_steps = [s for s in seen if "cameraman" in s["text"] or s["title"] == "Run ADMM"]
    assert photo_steps, "a step speaks of the cameraman"
    for s in seen[5:]:  # from "The same solver on a photo" on, the cameraman is shown
        assert s["photo"] == cameraman() and s["k"] == 2, s
    assert runs == [(win.doc.image_path, 2)]
    assert str(Path(runs[0][0]).resolve()) == cameraman()


def test_cancel_at_the_start_leaves_the_window_and_the_work_as_they_were(
        win, qtbot, asked, runs):
    win.confirm_discard = True
    open_other_photo(win, qtbot)
    strokes = win.doc.strokes.copy()
    asked.answer = Button.Cancel
    win.guided_demo.start()  # (returns False)
    assert asked_once_at_the_start(asked), list(asked)
    card = win.guided_demo.card
    assert card is None or not card.isVisible()
    assert win.doc.image_path == "/tmp/someone_elses_photo.png" and win.doc.dirty
    np.testing.assert_array_equal(win.doc.strokes, strokes)
    assert runs == []


@pytest.mark.slow
def test_the_card_keeps_one_size_and_next_stays_under_the_mouse(win, qtbot, asked, runs):
    win.guided_demo.start()
    assert win.guided_demo.card is not None and win.guided_demo.card.isVisible()
    seen = step_through(win, qtbot)
    sizes = {s["size"] for s in seen}
    nexts = {(s["next"].x(), s["next"].y()) for s in seen}
    assert len(sizes) == 1, f"the card changed size between steps: {sizes}"
    assert len(nexts) == 1, f"Next moved between steps: {nexts}"
    # and every step's text fits the card (none cut off by the one size)
    card = win.guided_demo.card
    for i in range(len(win.guided_demo.steps)):
        win.guided_demo.go(i)
        qtbot.wait(1)
        label = card.text
        assert label.heightForWidth(label.width()) <= label.height(), card.title.text()


@pytest.mark.slow
def test_a_window_that_shows_the_cameraman_keeps_it_and_the_persons_strokes(
        win, qtbot, asked, runs):
    win.confirm_discard = True
    image, strokes_path, k = demo_sample()
    assert win.open_sample(image, strokes_path, k)
    mine = win.doc.strokes.copy()
    mine[10:20, 10:20] = 1
    win.doc.set_layers(strokes=mine)
    assert win.doc.dirty
    win.guided_demo.start()
    assert win.guided_demo.card is not None and win.guided_demo.card.isVisible()
    step_through(win, qtbot)
    assert list(asked) == []  # nothing of the person's is replaced: nothing to ask
    np.testing.assert_array_equal(win.doc.strokes, mine)
    assert len(runs) == 1 and str(Path(runs[0][0]).resolve()) == cameraman()


def test_work_kept_at_the_photo_step_is_never_talked_over_or_run_on(win, qtbot, asked, runs):
    """Work drawn after the start is the window's to ask about at the photo step; kept there
    (Cancel), the steps on the photo say they have nothing to show, and nothing runs on it."""
    win.confirm_discard = True
    win.guided_demo.start()
    for _ in range(4):
        win.guided_demo.card.next.click()
    open_other_photo(win, qtbot)  # (new work, after the start: asked about at the photo step)
    asked.answer = Button.Cancel
    win.guided_demo.card.next.click()  # step 6: the photo
    assert len(asked) == 1  # the window's own question about the new work
    assert win.doc.image_path == "/tmp/someone_elses_photo.png"
    card = win.guided_demo.card
    own = win.guided_demo.steps[5].text  # "Segmenting the cameraman into two labels…"
    assert card.text.text() != own and "is not open" in card.text.text()
    card.next.click()  # step 7: the run
    assert runs == [], "ran on a photo that is not the demo's"
    assert "is not open" in card.text.text()


@pytest.mark.slow
def test_the_bare_cameraman_is_replaced_by_the_sample_with_its_strokes(win, qtbot, asked, runs):
    """The cameraman opened as a photo (File → Open), with a stroke of one label only, is not
    the demo's photo ready to run (label 2 has no strokes): asked about at the start, the
    demo opens the sample, strokes for both labels, and runs on it."""
    win.confirm_discard = True
    image, strokes_path, _k = demo_sample()
    assert win.open_path(str(image))
    mine = win.doc.strokes.copy()
    mine[100:104, 100:140] = 1
    win.doc.set_layers(strokes=mine)
    win.guided_demo.start()
    assert asked_once_at_the_start(asked), list(asked)
    step_through(win, qtbot)
    assert len(asked) == 1
    assert len(runs) == 1 and str(Path(runs[0][0]).resolve()) == cameraman()
    assert set(np.unique(win.doc.strokes)) >= {1, 2}
