"""Every number on screen agrees with every other (issue "The app as people use it", item 6).

What a person saw: the status bar's "limit 4000" while Parameters said 1000 max iterations (the
solver's limit summed over the pyramid's levels); "polish (after ADMM iteration 739)…" while the
result said 925 iterations (a coarse level's polish, not the last); the histogram's "between:
-0%"; a K = 3 run without constraints plotting a "constraints" residual (the one-hot rows); area
bounds rounded to one decimal (0.01 % became 0.0) and the error then speaking of "upper bound 0"
in pixels; dialog messages in the command line's lower-case words.
"""
from __future__ import annotations

import re
import time

import numpy as np
import pytest
from PyQt6.QtCore import Qt
from PyQt6.QtTest import QTest
from PyQt6.QtWidgets import QMessageBox

from tests.segapp.conftest import (bands, disc_image, open_image, painted_texts, run_to_end,
                                   slow_job)


# ------------------------------------------------------------------ iterations and limits
@pytest.fixture
def pyramid_run(win, qtbot, monkeypatch):
    """A coarse-to-fine run (a 200 x 200 photo: three levels) with max iterations 40 in the
    Parameters tab and a polish that takes a second (so the window sees each level's pause):
    ``(outcome, progress texts, polish texts: the progress text at each polish stage)``."""
    from solver.mrf.solve import coarse_to_fine
    real = coarse_to_fine.pipeline.polish_labels

    def slow_polish(*args, **kwargs):
        time.sleep(1.2)
        return real(*args, **kwargs)

    monkeypatch.setattr(coarse_to_fine.pipeline, "polish_labels", slow_polish)
    img, strokes = slow_job(200, 200)
    open_image(win, qtbot, img, strokes)
    win.params_panel.admm["max_iter"].setValue(40)
    win.params_panel.reference.setChecked(False)
    progress: list[str] = []
    polish: list[str] = []
    # connected after the window's own slots: they see the text those slots set
    win.solver.records.connect(lambda _batch: progress.append(win.iter_label.text()))
    win.solver.phase.connect(lambda name: name.startswith("polish:")
                             and polish.append(win.iter_label.text()))
    outcome = run_to_end(win, qtbot)
    return outcome, progress, polish


@pytest.mark.slow
def test_the_status_bars_limit_is_the_max_iterations_parameters_shows(win, pyramid_run):
    outcome, progress, _ = pyramid_run
    shown = win.params_panel.admm["max_iter"].value()
    assert shown == 40
    limits = {int(v) for t in progress for v in re.findall(r"(?:limit|at most) (\d+)", t)}
    assert limits == {shown}, progress[-3:]
    # the level (and any re-estimation round) in progress and its own iteration are named:
    # the limit counts those
    levels = {m for t in progress for m in re.findall(r"level (\d+ of \d+)", t)}
    assert levels == {"1 of 3", "2 of 3", "3 of 3"}, sorted(levels)
    for t in progress:
        total = int(re.match(r"ADMM iteration (\d+)", t).group(1))
        m = re.search(r"its iteration (\d+)", t)
        if m is None:  # (a solve that is the whole run: its iteration is the run's)
            assert total <= shown, t
        else:
            assert int(m.group(1)) <= shown, t
    # the results: the total the status bar and the plot count, each part within the limit
    total = win.results_panel.fields["iterations"].text()
    assert int(total) == outcome.iterations == win.plot.iterations()[-1], total
    text = win.results_panel.fields["parts"].text()
    parts = [int(v) for v in re.findall(r"(\d+) in (?:\d+ colour-model rounds?|the final solve)",
                                          text)]
    levels_part = re.search(r"([\d + ]+) over (\d+) levels", text)
    if parts:
        assert sum(parts) == outcome.iterations, text
    if levels_part:
        each = [int(v) for v in levels_part.group(1).split(" + ")]
        assert len(each) == int(levels_part.group(2)) and all(0 < v <= shown for v in each)
        if not parts:
            assert sum(each) == outcome.iterations, text
    assert parts or levels_part, text
    assert f"after {outcome.iterations} iterations" in win.statusBar().currentMessage()


@pytest.mark.slow
def test_the_polish_text_counts_as_the_result_counts(win, pyramid_run):
    outcome, _, polish = pyramid_run
    polish = list(dict.fromkeys(t for t in polish if "polish" in t))
    assert polish, "the window saw the polish"
    from segapp.ui.panels import STAGE_NAMES
    finals = [t for t in polish if t.startswith("polish (")]
    # the final polish's stages as they ran, named as the result reports them
    named = dict.fromkeys(STAGE_NAMES[s.name] for s in outcome.stages)
    assert finals == [f"polish (after ADMM iteration {outcome.iterations}): {n}…"
                      for n in named], polish
    for t in polish:
        if t not in finals:  # a coarse level's polish, or a re-estimation round's
            assert re.fullmatch(r"polish of (level [12] of 3 \(after ADMM iteration \d+\): "
                                r"[^,]+, then level [23] of 3…|colour-model round \d \(after "
                                r"ADMM iteration \d+\): [^,]+, then the colour models "
                                r"refitted…)", t), t
            assert int(re.search(r"iteration (\d+)", t).group(1)) < outcome.iterations


def test_the_polish_row_names_the_stages_that_took_something_most_first():
    from segapp.ui.panels import polish_text
    from solver.mrf.polish.stages import StageReport
    stages = (StageReport("icm", 0.01, 206.3), StageReport("fill", 0.02, 0.0),
              StageReport("tv", 0.25, 6486.38), StageReport("level-sets", 0.02, 0.42),
              StageReport("warm-fusion", 0.001, 0.0))
    nb = "\u00a0"  # (a stage's name and gain stay on one line)
    assert polish_text(stages) == (f"TV{nb}−6,486 · ICM{nb}−206 · level{nb}sets{nb}−0.420\n"
                                   "0.30 s, 2 stages took nothing")
    assert polish_text((StageReport("regions", 0.5, 0.0),)) == (
        "nothing taken off\n0.50 s, 1 stage took nothing")
    assert polish_text(()) == ""


# ------------------------------------------------------------------ the histogram
@pytest.mark.parametrize("low", [0.064, 0.199, 0.7, 0.005, 0.996])
def test_the_histograms_shares_are_never_negative_and_add_up_to_100(win, qtbot, low,
                                                                     monkeypatch):
    from segapp.ui import histogram
    win.show_teaching_dock()
    n = 1000
    x = np.zeros(n, np.float32)
    x[int(round(low * n)):] = 1.0  # every value decided: none between
    probs = np.stack([x, 1 - x], axis=1).reshape(25, 40, 2)
    hist = win.teaching.histogram
    hist.set_frame(3, probs)
    line = next(t for t in painted_texts(hist, histogram, monkeypatch) if "between" in t)
    assert "-" not in line, line
    shares = re.findall(r"(<1|>99|\d+)%", line)
    assert len(shares) == 3 and shares[1] == "0", line
    whole = [int(s) for s in shares if s.isdigit()]
    if len(whole) == 3:
        assert sum(whole) == 100, line
    assert all(f >= 0 for f in hist.fractions())


# ------------------------------------------------------------------ the residual curves
@pytest.mark.slow
def test_a_k3_run_without_constraints_plots_no_constraints_residual(win, qtbot):
    img, strokes = bands(3)
    open_image(win, qtbot, img, strokes, k=3)
    assert not win.doc.settings.area and not win.doc.settings.apart
    run_to_end(win, qtbot)
    names = win.plot._rleg.names()
    assert "constraints" not in names, names


@pytest.mark.slow
def test_a_k2_run_without_constraints_has_no_constraint_curve(win, qtbot):
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    run_to_end(win, qtbot)
    names = win.plot._rleg.names()
    assert names == ["‖x − z₁‖ box", "‖x − z₂‖ sphere"], names


# ------------------------------------------------------------------ area bounds
def type_into(spin, text: str) -> None:
    spin.setFocus()
    spin.selectAll()
    QTest.keyClicks(spin, text)
    QTest.keyClick(spin, Qt.Key.Key_Return)


def test_an_area_bound_keeps_the_precision_typed(win, qtbot):
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    win.side_tabs.setCurrentWidget(win.constraints_panel)
    row = win.constraints_panel.rows[0]
    row.on.setChecked(True)
    type_into(row.lo, "0.01")
    type_into(row.hi, "12.3456")
    assert row.lo.text() == "0.01" and row.hi.text() == "12.3456"
    assert win.doc.settings.area == ["1:0.0001-0.123456"]
    # a session's bound is shown as it was saved
    win.constraints_panel.set_texts(["1:0.00015-0.25"], [])
    assert (row.lo.text(), row.hi.text()) == ("0.015", "25")


def test_an_error_about_an_area_bound_speaks_in_the_unit_typed(win, qtbot):
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    n = img.shape[0] * img.shape[1]
    row = win.constraints_panel.rows[1]  # label 2: its strokes cover more than 0.01 %
    row.on.setChecked(True)
    type_into(row.hi, "0.01")
    assert not win.start_run()
    assert len(win.errors) == 1
    title, text = win.errors[0]
    assert title == "Cannot run"
    assert "0.01 %" in text and "upper bound 0" not in text, text
    covered = int(np.count_nonzero(strokes == 2))
    assert f"{covered:,} pixels" in text and "of the image" in text, text
    assert text[0].isupper() and text.endswith("."), text
    assert int(np.floor(0.0001 * n)) == int(re.search(r"\((\d+) pixels?\)", text).group(1))


# ------------------------------------------------------------------ dialog messages
def test_a_failed_runs_dialog_is_a_sentence_in_the_apps_words(win):
    win.on_failed("label 2 has no strokes")
    win.on_failed("min-cut needs K = 2 (got K = 3); use --solver expansion")
    assert win.errors == [("Cannot segment", "Label 2 has no strokes."),
                          ("Cannot segment", "Min-cut needs K = 2 (got K = 3); use α-expansion.")]


def test_the_memory_question_is_a_sentence(win, monkeypatch):
    from segapp.core.memory import WITHOUT_REFERENCE
    asked: list[str] = []
    monkeypatch.setattr(QMessageBox, "question",
                        lambda _p, _t, text, *a: asked.append(text)
                        or QMessageBox.StandardButton.No)
    win.on_failed(f"a 9.0-megapixel image with K = 2 needs about 9.1 GB with the reference "
                  f"(3.0 GB without it: {WITHOUT_REFERENCE}), but 4.0 GB is available; use a "
                  f"smaller copy of the image")
    assert asked and asked[0].startswith("A 9.0-megapixel image")
    assert asked[0].endswith("use a smaller copy of the image.\n\nRun without the reference?")


def test_library_errors_become_sentences_without_the_command_lines_names():
    from segapp.ui.messages import person_sentence
    from solver.mrf import AreaBound
    assert person_sentence("k must be between 2 and 32, got 40") == \
        "K must be between 2 and 32, got 40."
    assert person_sentence("lambda must be finite and non-negative, got -1") == \
        "λ must be finite and non-negative, got -1."
    text = person_sentence("area bound 1:0.0001-0.2: no whole number of pixels lies between "
                           "the bounds on a 100-pixel image", [AreaBound(1, 0.0001, 0.2)], 100)
    assert text == ("The area bound on label 1 (0.01–20 % of the image): no whole number of "
                    "pixels lies between the bounds on a 100-pixel image.")
    px = person_sentence("area bound on label 2: its strokes and hard constraints cover 5000 "
                         "pixels, more than its upper bound 4000",
                         [AreaBound(2, 0, 4000, "px")], 10000)
    assert px == ("The area bound on label 2: its strokes and hard constraints cover 5,000 "
                  "pixels, more than its upper bound of 4,000 pixels.")
    for cli in ("--area", "--apart", "--solver", "--no-reference"):
        assert cli not in person_sentence(f"something about {cli} went wrong")
    assert person_sentence("") == ""
