"""Qt tests (offscreen) of what a user sees and relies on after a run in the app.

They guard the results a person looks at or takes away, checked pixel by pixel and value by
value rather than "a pixmap is there":

- the replay slider shows the stored iteration it points at (the continuous solution of that
  iteration, or the final labels at its end), and the plot's marker follows it;
- the disagreement view paints exactly the pixels where ADMM's labels and the reference's
  differ, for the final labels and for a replayed iteration;
- the opacity slider blends the solution over the photo at the chosen opacity;
- File → Export overlay writes the photo blended with the labels at the chosen opacity;
- File → Export energy history writes, column by column, the run's recorded energies,
  residuals and penalties;
- Segment → Warm start hands the previous run's continuous solution to the solver (and only
  when it is checked);
- hard constraints painted with the hard tool and a rectangle dragged with the rectangle tool
  reach the solver, and the labels obey them.
"""
from __future__ import annotations

import csv

import numpy as np
import pytest

from PyQt6.QtCore import QPointF, QRectF, QStandardPaths, Qt
from PyQt6.QtGui import QColor, QImage, QPainter
from PyQt6.QtTest import QTest
from PyQt6.QtWidgets import QFileDialog

from segapp.core.colouring import (
    MAGENTA,
    display_rgb,
    labels_rgb,
    palette,
    probabilities_rgb,
)
from tests.segapp.conftest import run_to_end as run

QStandardPaths.setTestModeEnabled(True)

#: Largest per-channel difference allowed between a composited pixel and its exact blend
#: (Qt quantises an item's opacity to 8 bits).
BLEND_TOL = 3


# ------------------------------------------------------------------------------- images
def disc_image(h: int = 40, w: int = 40, seed: int = 0, grey: tuple[int, int] = (190, 50),
               noise: float = 12.0) -> tuple[np.ndarray, np.ndarray]:
    """A disc of grey level ``grey[0]`` on a background of ``grey[1]`` with Gaussian noise, and
    strokes for both labels (1: a band along the top, 2: a bar in the disc's middle)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    disc = (yy - h / 2) ** 2 + (xx - w / 2) ** 2 < (min(h, w) / 4) ** 2
    img = np.clip(np.where(disc, *grey) + rng.normal(0, noise, (h, w)), 0, 255).astype(np.uint8)
    rgb = np.dstack([img, img, (img * 0.8).astype(np.uint8)])
    strokes = np.zeros((h, w), np.uint8)
    strokes[2:5, 2:w - 2] = 1
    strokes[h // 2 - 1:h // 2 + 2, w // 2 - 4:w // 2 + 4] = 2
    return rgb, strokes


def two_discs(h: int = 40, w: int = 56, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Two equally bright discs (left and right) on a dark background; returns the image and
    the left disc's mask."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    left = (yy - h / 2) ** 2 + (xx - w / 4) ** 2 < 7 ** 2
    right = (yy - h / 2) ** 2 + (xx - 3 * w / 4) ** 2 < 7 ** 2
    img = np.clip(np.where(left | right, 200, 40) + rng.normal(0, 10, (h, w)), 0, 255)
    img = img.astype(np.uint8)
    return np.dstack([img, (img * 0.9).astype(np.uint8), img]), left


# ------------------------------------------------------------------------------- window
def open_image(win, qtbot, image: np.ndarray, strokes: np.ndarray | None = None) -> None:
    win.doc.set_image(image, "synthetic.png")
    if strokes is not None:
        win.doc.set_layers(strokes=strokes)
    win.canvas.fit_to_window()
    qtbot.wait(10)


def drag(win, points) -> None:
    """Press, move through and release the left button at image pixels ``points``."""
    vp = win.canvas.viewport()

    def at(x, y):
        return win.canvas.mapFromScene(QPointF(x + 0.5, y + 0.5))

    QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, at(*points[0]))
    for p in points[1:]:
        QTest.mouseMove(vp, at(*p))
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                       at(*points[-1]))


def bound_label_2(win, lo: float = 25.0, hi: float = 30.0) -> None:
    """In the constraints panel, bound label 2's area to ``lo``-``hi`` % of the image (on
    :func:`disc_image`, ADMM's labels and energy then differ from the reference's)."""
    row = win.constraints_panel.rows[1]
    row.unit.setCurrentIndex(0)
    row.lo.setValue(lo)
    row.hi.setValue(hi)
    row.on.setChecked(True)


def set_view(win, mode: str) -> None:
    """Choose a view in the results panel's combo box, as a user does."""
    combo = win.results_panel.view
    combo.setCurrentIndex(combo.findData(mode))
    assert win.results_panel.view_mode() == mode


def spy_pipeline(monkeypatch) -> dict[str, list[dict]]:
    """Record the arguments the pipeline hands to the solver (``build_problem`` and the ADMM
    ``solve_mrf`` call) while still running them."""
    import solver.mrf.solve.segment as segment_module
    from segapp.core import pipeline
    calls: dict[str, list[dict]] = {"build": [], "admm": []}
    real_build, real_solve = segment_module.build_problem, pipeline.solve_mrf

    def build(*args, **kw):
        calls["build"].append(kw)
        return real_build(*args, **kw)

    def solve(problem, method, *args, **kw):
        if method == "admm":
            calls["admm"].append(kw)
        return real_solve(problem, method, *args, **kw)

    monkeypatch.setattr(segment_module, "build_problem", build)
    monkeypatch.setattr(pipeline, "solve_mrf", solve)
    return calls


# ------------------------------------------------------------------------------- pixels
def qimage_array(img: QImage) -> np.ndarray:
    """A QImage as an (H, W, 4) uint8 RGBA array."""
    img = img.convertToFormat(QImage.Format.Format_RGBA8888)
    h, w = img.height(), img.width()
    ptr = img.constBits()
    ptr.setsize(img.sizeInBytes())
    rows = np.frombuffer(ptr, np.uint8).reshape(h, img.bytesPerLine())
    return rows[:, :w * 4].reshape(h, w, 4).copy()


def item_pixels(item) -> np.ndarray:
    """RGBA pixels of a canvas pixmap item (empty (0, 0, 4) when it shows nothing)."""
    pm = item.pixmap()
    if pm.isNull():
        return np.zeros((0, 0, 4), np.uint8)
    return qimage_array(pm.toImage())


def seen(win) -> np.ndarray:
    """What the canvas shows over the image, one pixel per image pixel, as (H, W, 3) RGB."""
    h, w = win.doc.shape
    img = QImage(w, h, QImage.Format.Format_ARGB32_Premultiplied)
    img.fill(QColor(0, 0, 0))
    p = QPainter(img)
    win.canvas.scene().render(p, QRectF(0, 0, w, h), QRectF(0, 0, w, h))
    p.end()
    return qimage_array(img)[:, :, :3]


def max_diff(a: np.ndarray, b: np.ndarray) -> int:
    assert a.shape == b.shape, (a.shape, b.shape)
    return int(np.abs(a.astype(np.int16) - b.astype(np.int16)).max())


# ------------------------------------------------------------------------------- replay
@pytest.mark.slow
def test_replay_slider_shows_the_stored_iteration(win, qtbot):
    """Each position of the replay slider shows that iteration's continuous solution (the one
    the solver sent for it), the last one the final labels; the plot marks the iteration."""
    # a faint disc and a strong smoothness weight: ADMM's first iterates are undecided
    img, strokes = disc_image(grey=(130, 100), noise=30.0)
    open_image(win, qtbot, img, strokes)
    win.params_panel.lam.setValue(50.0)
    sent: dict[int, np.ndarray] = {}
    win.solver.frame.connect(lambda it, probs: sent.__setitem__(it, np.array(probs)))
    o = run(win, qtbot)
    pal = palette(2)
    slider = win.results_panel.replay
    n = len(win.frames)
    assert n >= 2 and slider.isEnabled() and slider.maximum() == n - 1
    assert slider.value() == n - 1  # a run ends on its final labels
    final = labels_rgb(o.labels, pal)
    assert max_diff(item_pixels(win.canvas.result)[:, :, :3], final) == 0
    shown = {}
    for idx in range(n):
        slider.setValue(idx)
        pixels = item_pixels(win.canvas.result)[:, :, :3]
        it = win.frames.iterations[idx]
        if idx == n - 1:
            assert max_diff(pixels, final) == 0
            assert win.results_panel.replay_label.text() == "final"
            assert not win.plot.marker.isVisible()
        else:
            expected = probabilities_rgb(sent[it], pal)  # 8-bit storage: a few levels off
            assert max_diff(pixels, expected) <= 8
            assert win.results_panel.replay_label.text() == f"it {it}"
            assert win.plot.marker.isVisible() and win.plot.marker.value() == it
        shown[idx] = pixels
    # the first stored iteration is the solver's first and looks nothing like the answer
    assert win.frames.iterations[0] == min(sent)
    assert np.abs(shown[0].astype(int) - final).mean() > 10
    # back to the start after visiting the end: the view follows the slider both ways
    slider.setValue(0)
    assert max_diff(item_pixels(win.canvas.result)[:, :, :3], shown[0]) == 0


# ------------------------------------------------------------------------------- compare
@pytest.mark.slow
def test_disagreement_view_marks_where_admm_and_reference_differ(win, qtbot):
    """A run under an area bound, where ADMM and the constrained min-cut disagree: the
    disagreement view is magenta exactly on those pixels (also for a replayed iteration) and
    the count in the results panel is theirs."""
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    bound_label_2(win)  # label 2: 25-30 % of the image
    o = run(win, qtbot)
    diff = o.labels != o.reference_labels
    assert diff.any(), "premise: this run's ADMM labels differ from the reference's somewhere"
    shown_count = int(win.results_panel.fields["disagree"].text().replace(",", ""))
    assert shown_count == int(diff.sum())
    win.results_panel.strokes.setChecked(False)  # the strokes would cover some pixels
    assert win.results_panel.replay_label.text() == "final"
    set_view(win, "compare")
    assert win.statusBar().currentMessage() == \
        f"{int(diff.sum()):,} pixels differ from the reference (magenta)"
    rgba = item_pixels(win.canvas.compare)
    assert rgba.shape == diff.shape + (4,)
    magenta = (rgba[:, :, 3] == 255) & np.all(rgba[:, :, :3] == MAGENTA, axis=2)
    assert np.array_equal(magenta, diff)
    assert (rgba[~diff, 3] == 0).all()
    screen = seen(win)
    assert (screen[diff] == MAGENTA).all()
    assert not (screen[~diff] == MAGENTA).all(axis=1).any()
    # a replayed iteration is compared through its own labels
    win.results_panel.replay.setValue(0)
    first, probs = win.frames.get(0)
    frame_diff = (np.argmax(probs, axis=2) + 1) != o.reference_labels
    assert frame_diff.any() and not np.array_equal(frame_diff, diff)
    assert win.results_panel.replay_label.text() == f"it {first}"
    assert win.statusBar().currentMessage() == \
        f"{int(frame_diff.sum()):,} pixels differ from the reference (magenta)"
    rgba = item_pixels(win.canvas.compare)
    assert np.array_equal(rgba[:, :, 3] == 255, frame_diff)
    # the solution view has no disagreement layer
    set_view(win, "solution")
    assert item_pixels(win.canvas.compare).size == 0


# ------------------------------------------------------------------------------- opacity
@pytest.mark.slow
def test_opacity_slider_blends_the_solution_over_the_photo(win, qtbot):
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    o = run(win, qtbot)
    win.results_panel.strokes.setChecked(False)
    photo = display_rgb(img).astype(np.float64)
    colours = labels_rgb(o.labels, palette(2)).astype(np.float64)
    views = {}
    for percent in (15, 85):
        win.results_panel.opacity.setValue(percent)
        a = percent / 100
        views[percent] = seen(win)
        assert max_diff(views[percent], np.round((1 - a) * photo + a * colours)) <= BLEND_TOL
    assert np.abs(views[15].astype(int) - views[85]).max() > 40


# ------------------------------------------------------------------------------- exports
def export(win, monkeypatch, action, path) -> None:
    """Trigger a File → Export action, answering its save dialog with ``path``."""
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(path), ""))
    assert action.isEnabled()
    action.trigger()
    assert not win.errors, win.errors


@pytest.mark.slow
def test_exported_overlay_blends_at_the_chosen_opacity(win, qtbot, monkeypatch, tmp_path):
    """The exported overlay is the photo with the labels' colours blended at the opacity of
    the slider: the blend factor read back from each pixel is that opacity."""
    import cv2
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    o = run(win, qtbot)
    photo = display_rgb(img).astype(np.float64)
    colours = labels_rgb(o.labels, palette(2)).astype(np.float64)
    contrast = np.abs(colours - photo) >= 40  # where the blend factor can be read back well
    assert contrast.any(axis=2).mean() > 0.9
    for percent in (30, 80):
        win.results_panel.opacity.setValue(percent)
        path = tmp_path / f"overlay{percent}.png"
        export(win, monkeypatch, win.act_overlay, path)
        raw = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        assert raw is not None and raw.shape == img.shape and raw.dtype == np.uint8
        out = cv2.cvtColor(raw, cv2.COLOR_BGR2RGB).astype(np.float64)
        alpha = (out - photo)[contrast] / (colours - photo)[contrast]
        assert np.abs(alpha - percent / 100).max() <= 0.02
        assert max_diff(out, np.round((1 - percent / 100) * photo + percent / 100 * colours)) <= 1


# ------------------------------------------------------------------------------- numbers
@pytest.mark.slow
def test_results_panel_plot_and_status_bar_state_the_run(win, qtbot):
    """After a run the results panel, the areas column, the plot's reference line and the
    status bar give the run's numbers, with the yardstick named (min-cut for K = 2,
    α-expansion for K = 3, the constrained yardstick under a bound, with its lower bound)."""
    from segapp.ui.panels import _fmt, constraint_line, polish_text
    from segapp.ui.runctl import STATUS_TEXT
    img, strokes = disc_image()
    for k, name, constrained in ((2, "min-cut", False), (3, "α-expansion", False),
                                 (2, None, True)):
        s = strokes.copy()
        if k == 3:
            s[36:39, 2:38] = 3
        win.doc.set_k(k)
        open_image(win, qtbot, img, s)
        if constrained:
            bound_label_2(win)
        o = run(win, qtbot)
        assert o.problem.k == k
        name = name or o.reference_detail
        f = {key: w.text() for key, w in win.results_panel.fields.items()}
        ref = o.reference_energy
        gap = (o.energy - ref) / abs(ref)
        assert f["energy"] == _fmt(o.energy)
        assert f["reference"] == f"{_fmt(ref)}  ({name})"
        assert f["gap"] == f"{gap * 100:+.3f} %"
        assert f["disagree"] == f"{int((o.labels != o.reference_labels).sum()):,}"
        assert f["iterations"] == str(o.iterations) and f["backend"] == "cpu"
        assert f["status"] == STATUS_TEXT[o.status]
        if constrained:
            assert f["bound"] == _fmt(o.reference_bound) and o.reference_bound is not None
            assert f["constraints"] == "\n".join(constraint_line(r) for r in o.constraints)
        assert win.plot.ref_line.isVisible() and win.plot.ref_line.value() == ref
        assert f"{name} {ref:.6g}" in win.plot.legend_names()
        # ADMM's own labels before the final polish, and where the polish took them
        form, row = win.results_panel._form, win.results_panel.fields["unpolished"]
        if not constrained:
            assert o.energy_admm is not None and o.energy_admm >= o.energy
        if o.energy_admm is not None:
            assert form.isRowVisible(row)
            assert f["unpolished"] == (f"{_fmt(o.energy_admm)}  "
                                       f"({(o.energy_admm - ref) / abs(ref) * 100:+.3f} %)")
        # the polish stage by stage, the row shown for a polished run
        assert o.stages and form.isRowVisible(win.results_panel.fields["polish"])
        assert f["polish"] == polish_text(o.stages)
        assert sum(st.gain for st in o.stages) == pytest.approx(o.energy_admm - o.energy,
                                                                rel=1e-9, abs=1e-6)
        assert win.plot.final_point() == (float(win.plot.iterations()[-1]), float(o.energy))
        assert f"after polish {o.energy:.6g}" in win.plot.legend_names()
        lo, hi = win.plot.y_range()
        assert lo <= o.energy <= hi
        counts = np.bincount(o.labels.ravel() - 1, minlength=k)
        for c in range(k):
            row = win.constraints_panel.rows[c]
            assert row.now.text() == f"{100.0 * counts[c] / o.labels.size:.1f} %"
        assert win.statusBar().currentMessage() == (
            f"ADMM {STATUS_TEXT[o.status]}: E = {o.energy:.6g} after {o.iterations} "
            f"iterations (gap {gap * 100:+.3f} % to the reference)")
        assert len(win.frames) == win.results_panel.replay.maximum() + 1
        last_it, last = win.frames.get(len(win.frames) - 1)
        assert last_it == o.iterations and last.shape == (*o.labels.shape, k)
        np.testing.assert_array_equal(last.argmax(axis=2) + 1, o.labels)
        if constrained:
            bound_label_2(win, 0.0, 100.0)
            win.constraints_panel.rows[1].on.setChecked(False)


def test_a_failed_run_says_why_in_a_dialog(win, qtbot):
    img, strokes = disc_image()
    open_image(win, qtbot, img, np.where(strokes == 2, 0, strokes).astype(np.uint8))
    win.act_run.trigger()
    qtbot.waitUntil(lambda: not win.running, timeout=60000)
    assert win.errors == [("Cannot segment", "Label 2 has no strokes.")]


EXPORTS = [  # action, method, dialog title, suggested suffix, filter, error title, status word
    ("act_labels", "save_labels", "Save labels", "_labels.png",
     "PNG (*.png);;TIFF (*.tif *.tiff)", "Cannot save labels", "labels"),
    ("act_overlay", "save_overlay", "Save overlay", "_overlay.png",
     "PNG (*.png);;JPEG (*.jpg *.jpeg)", "Cannot save overlay", "overlay"),
    ("act_csv", "save_history", "Save energy history", "_history.csv", "CSV (*.csv)",
     "Cannot save history", "energy history"),
]


@pytest.mark.slow
def test_exported_labels_are_the_result(win, qtbot, monkeypatch, tmp_path):
    import cv2
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    o = run(win, qtbot)
    export(win, monkeypatch, win.act_labels, tmp_path / "labels.png")
    np.testing.assert_array_equal(cv2.imread(str(tmp_path / "labels.png"),
                                             cv2.IMREAD_UNCHANGED), o.labels)


@pytest.mark.slow
@pytest.mark.parametrize("action, method, title, suffix, filt, error, word", EXPORTS)
def test_each_export_suggests_a_name_and_reports_what_happened(
        win, qtbot, monkeypatch, tmp_path, action, method, title, suffix, filt, error, word):
    """Before a run there is nothing to save (said in a dialog); the save dialog is titled and
    suggests the photo's name with the export's suffix; cancelling it writes nothing; a path
    that cannot be written is reported in a dialog; a save is confirmed in the status bar."""
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    assert getattr(win, method)(str(tmp_path / "early")) is False
    assert win.errors == [("Nothing to save", "run a segmentation first")]
    win.errors.clear()
    run(win, qtbot)
    asked = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        lambda parent, *a: asked.append((parent, *a)) or ("", ""))
    getattr(win, action).trigger()
    assert asked == [(win, title, "synthetic" + suffix, filt)]
    assert getattr(win, method)() is False  # the dialog cancelled again, from the method
    assert list(tmp_path.iterdir()) == [] and win.errors == []
    assert getattr(win, method)(str(tmp_path / "missing" / ("out" + suffix))) is False
    assert len(win.errors) == 1 and win.errors[0][0] == error
    assert "missing" in win.errors[0][1]  # the reason names the path
    win.errors.clear()
    assert getattr(win, method)(str(tmp_path / ("out" + suffix))) is True
    assert (tmp_path / ("out" + suffix)).stat().st_size > 0
    assert win.statusBar().currentMessage() == f"Saved {word} to out{suffix}"
    # an image with no file behind it (set by a script): the suggestion is "segmentation"
    win.doc.image_path = None
    asked.clear()
    getattr(win, action).trigger()
    assert asked == [(win, title, "segmentation" + suffix, filt)]


@pytest.mark.slow
def test_exported_history_csv_holds_the_run_column_by_column(win, qtbot, monkeypatch, tmp_path):
    """Every column of the energy history CSV holds the run's recorded value of that name, for
    every iteration, the energies are those the plot drew and the reference energy is the one
    its reference line shows (a run under an area bound, where it is not ADMM's energy)."""
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    bound_label_2(win)
    plotted = {}
    win.solver.records.connect(lambda batch: plotted.update({r.iteration: r for r in batch}))
    o = run(win, qtbot)
    path = tmp_path / "history.csv"
    export(win, monkeypatch, win.act_csv, path)
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    hist = o.history
    assert len(rows) == len(hist) >= 2
    # the columns must be told apart for the check to mean anything
    assert any(r.objective != r.objective_rounded for r in hist)
    assert any(r.residual_box != r.residual_sphere for r in hist)
    assert len({r.rho for r in hist}) > 1
    assert o.reference_energy != pytest.approx(o.energy, rel=1e-6)
    assert win.plot.ref_line.isVisible()
    columns = {"iteration": "iteration", "energy_continuous": "objective",
               "energy_rounded": "objective_rounded", "residual_box": "residual_box",
               "residual_sphere": "residual_sphere", "rho": "rho"}
    for row, rec in zip(rows, hist):
        for column, attr in columns.items():
            assert float(row[column]) == pytest.approx(float(getattr(rec, attr)), rel=1e-12,
                                                       abs=1e-12), (column, rec.iteration)
        assert float(row["reference_energy"]) == pytest.approx(o.reference_energy, rel=1e-12)
        assert float(row["reference_energy"]) == pytest.approx(win.plot.ref_line.value(),
                                                               rel=1e-12)
        drawn = plotted[rec.iteration]
        assert float(row["energy_continuous"]) == pytest.approx(drawn.energy_continuous,
                                                                rel=1e-9, abs=1e-9)
        assert float(row["energy_rounded"]) == pytest.approx(drawn.energy_rounded, rel=1e-9,
                                                             abs=1e-9)


# ------------------------------------------------------------------------------- inputs
@pytest.mark.slow
def test_warm_start_action_hands_the_last_solution_to_the_solver(win, qtbot, monkeypatch):
    """With Segment → Warm start checked, a re-run with the same annotations and a changed
    parameter starts ADMM from the last run's answer (its labels, one-hot), and its first
    iterate differs from a cold start's; unchecked, it does not. (A re-run after the
    annotations changed starts cold: tests/segapp/ui/test_ui_status.py.)"""
    calls = spy_pipeline(monkeypatch)
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    assert win.act_warm.isChecked()
    first = run(win, qtbot)
    assert calls["admm"][0].get("x0") is None  # nothing to start from yet
    win.params_panel.lam.setValue(7.5)  # a parameter, not the annotations
    n = len(calls["admm"])
    warm = run(win, qtbot)
    # (the run's first ADMM solve, its first re-estimation round, starts from the answer; the
    # later solves from the round before)
    x0 = calls["admm"][n].get("x0")
    assert x0 is not None
    np.testing.assert_array_equal(np.asarray(x0).reshape(-1, 2).argmax(1) + 1,
                                  first.labels.ravel())
    assert set(np.unique(x0)) == {0, 1}
    assert "warm start" in win.results_panel.fields["status"].text()
    win.act_warm.trigger()  # the menu item, now unchecked
    assert not win.act_warm.isChecked()
    n = len(calls["admm"])
    cold = run(win, qtbot)
    assert calls["admm"][n].get("x0") is None
    assert "warm start" not in win.results_panel.fields["status"].text()
    # where ADMM starts shows in its first iterate
    assert warm.history[0].objective != pytest.approx(cold.history[0].objective, rel=1e-6)


@pytest.mark.slow
def test_hard_constraints_painted_in_the_app_fix_the_labels(win, qtbot, monkeypatch):
    """Pixels painted with the hard tool reach the solver and carry their label in the result,
    where without them the solution has the other label."""
    calls = spy_pipeline(monkeypatch)
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    win.act_warm.setChecked(False)
    free = run(win, qtbot).labels.copy()
    # (without hard pixels the model's fixed pixels are the strokes)
    assert np.array_equal(np.asarray(calls["build"][-1].get("hard")), strokes)
    win.tools.tool_actions["hard"].trigger()
    win.tools.size_slider.setValue(1)
    assert win.canvas.tool == "hard"
    win.tools.label_actions[0].trigger()  # label 1 (background) inside the disc
    drag(win, [(16, 25), (20, 25), (24, 25)])
    win.tools.label_actions[1].trigger()  # label 2 (the disc's) in the background
    drag(win, [(3, 34), (7, 34), (11, 34)])
    hard = win.doc.hard.copy()
    painted = hard > 0
    assert (hard[25, 16:25] == 1).all() and (hard[34, 3:12] == 2).all()
    assert set(np.unique(hard)) == {0, 1, 2}
    assert (free[painted] != hard[painted]).all()  # premise: the hard labels change something
    o = run(win, qtbot)
    got = calls["build"][-1].get("hard")
    # (the model's fixed pixels: the hard ones, and the strokes where no hard pixel is)
    assert got is not None and np.array_equal(np.asarray(got), np.where(painted, hard, strokes))
    assert (o.labels[painted] == hard[painted]).all()
    assert not np.array_equal(o.labels, free)


@pytest.mark.slow
def test_rectangle_drawn_in_the_app_reaches_the_solver(win, qtbot, monkeypatch):
    """A GrabCut rectangle dragged round the left of two alike discs, with no strokes at all:
    the run uses it, everything outside is background (label 2) and the disc inside is
    foreground (label 1), while the same disc outside the rectangle is background."""
    calls = spy_pipeline(monkeypatch)
    img, left = two_discs()
    h, w = left.shape
    open_image(win, qtbot, img)
    win.tools.tool_actions["rect"].trigger()
    assert win.canvas.tool == "rect"
    drag(win, [(3, 8), (15, 20), (w // 2 - 2, h - 8)])
    rect = win.doc.rect
    assert rect is not None
    x, y, rw, rh = rect
    inside = np.zeros((h, w), bool)
    inside[y:y + rh, x:x + rw] = True
    assert left.sum() > 100 and inside[left].all() and not inside.all()
    o = run(win, qtbot)
    got = calls["build"][-1].get("rect")
    assert got is not None and tuple(int(v) for v in got) == tuple(rect)
    assert (o.labels[~inside] == 2).all()
    assert (o.labels[left] == 1).mean() > 0.9
    assert (o.labels[inside & ~left] == 2).mean() > 0.9
    # and what the user sees is that labelling
    win.results_panel.strokes.setChecked(False)
    assert max_diff(item_pixels(win.canvas.result)[:, :, :3],
                    labels_rgb(o.labels, palette(2))) == 0


# ------------------------------------------------------------------------------- live frames
@pytest.mark.slow
@pytest.mark.parametrize("view", ["photo", "solution"])
def test_live_frames_give_the_areas_and_keep_to_the_view(win, qtbot, view):
    """While ADMM runs, each live frame updates the constraints panel's current areas (each
    label's share of the frame's most likely labels) and is drawn over the photo, except in
    the photo view."""
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    set_view(win, view)
    frames: list[tuple] = []
    win.solver.frame.connect(lambda _it, probs: frames.append(
        (probs.copy(), [r.now.text() for r in win.constraints_panel.rows],
         item_pixels(win.canvas.result).size)))
    run(win, qtbot)
    assert frames  # premise: the run showed live frames
    for probs, texts, drawn in frames:
        counts = np.bincount(np.argmax(probs, axis=2).ravel(), minlength=probs.shape[2])
        assert texts == [f"{100.0 * c / counts.sum():.1f} %" for c in counts]
        assert (drawn == 0) == (view == "photo")


# ------------------------------------------------------------- the wait for the reference
@pytest.mark.slow
def test_admms_answer_shows_while_the_run_waits_for_the_reference(win, qtbot, monkeypatch):
    """The reference solves beside ADMM; when ADMM is done first, its labels are on the canvas
    and its energy in the status bar while the run waits (still running, Cancel on), and the
    outcome comes with the reference."""
    from segapp.core import isolated
    from tests.segapp.ui.test_ui import load
    monkeypatch.setattr(isolated, "CHILD_TARGET", "tests.segapp.core.test_isolated_reference:late")
    load(win, qtbot)
    win.act_warm.setChecked(False)
    meanwhile: dict = {}

    def on_solved(labels, energy):  # (connected after the window's own slot: sees its work)
        meanwhile.update(running=win.running, cancel=win.act_cancel.isEnabled(),
                         message=win.statusBar().currentMessage(), labels=labels.copy(),
                         energy=energy, shown=item_pixels(win.canvas.result)[..., :3])

    win.solver.solved.connect(on_solved)
    out = run(win, qtbot)
    assert meanwhile["running"] and meanwhile["cancel"]
    assert meanwhile["message"] == f"ADMM's answer: E = {out.energy:.6g}"
    np.testing.assert_array_equal(meanwhile["labels"], out.labels)
    np.testing.assert_array_equal(meanwhile["shown"], labels_rgb(out.labels, palette(2)))
    assert out.reference_energy is not None and "reference cancelled" not in \
        win.results_panel.fields["status"].text()


@pytest.mark.slow
def test_cancel_while_waiting_for_the_reference_keeps_admms_answer(win, qtbot, monkeypatch):
    """Cancel during the wait skips only the reference: the outcome is ADMM's finished answer,
    said as such."""
    from segapp.core import isolated
    from tests.segapp.ui.test_ui import load
    monkeypatch.setattr(isolated, "CHILD_TARGET", "tests.segapp.core.test_isolated_reference:hang")
    load(win, qtbot)
    win.act_warm.setChecked(False)
    win.solver.solved.connect(lambda *_: win.cancel_run())
    out = run(win, qtbot)
    assert out.status != "cancelled" and out.reference_energy is None
    status = win.results_panel.fields["status"].text()
    assert status.endswith("; reference cancelled") and not status.startswith("cancelled")
    assert win.solver.reference_process.pid is None  # the busy child was ended
