"""The teaching additions on a photo: the histogram follows the replay slider, the probe follows
a clicked pixel's x, z1 and z2, the guided demo's steps, and the Geometry screenshot."""

import numpy as np
import pytest
from PyQt6.QtCore import QPointF, Qt
from PyQt6.QtGui import QImage
from PyQt6.QtTest import QTest

from segapp.core.probe import ProbeStore, sample_values
from segapp.model.teaching import mass_histogram
from segapp.ui.histogram import frame_values
from tests.segapp.conftest import disc_image, pace_iterations, run_to_end
from tests.segapp.ui.test_ui_results import disc_image as faint_disc


def open_image(win, qtbot, image, strokes):
    win.doc.set_image(image, "synthetic.png")
    win.doc.set_layers(strokes=strokes)
    win.canvas.fit_to_window()
    qtbot.wait(10)


def click_pixel(win, x: int, y: int) -> None:
    vp = win.canvas.viewport()
    QTest.mouseClick(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     win.canvas.mapFromScene(QPointF(x + 0.5, y + 0.5)))


def test_sampled_values_are_the_solvers_iterate_and_its_box_copy():
    from solver.mrf import build_problem, solve_mrf
    img, strokes = disc_image(48, 48)
    problem = build_problem(img, strokes, 2)
    got = []

    def cb(state):
        v = sample_values(state, max_side=24)
        probs = state.probabilities()
        got.append((v, probs))

    solve_mrf(problem, "admm", callback=cb)
    assert len(got) > 5
    for v, probs in got:
        step = v["step"]
        assert step == 2 and v["x"].shape == (24, 24, 1)
        # the frame's weights are x clipped to the box; the probe keeps x itself
        np.testing.assert_allclose(np.clip(v["x"][..., 0], 0, 1), probs[::2, ::2, 0], atol=1e-6)
        assert np.all((v["z1"] >= -1e-12) & (v["z1"] <= 1 + 1e-12))
    # early on x leaves the box somewhere; at the end x, z1 and z2 agree
    assert any(np.any((v["x"] < -1e-3) | (v["x"] > 1 + 1e-3)) for v, _ in got[:10])
    last = got[-1][0]
    assert np.max(np.abs(last["x"] - last["z1"])) < 0.05
    assert np.max(np.abs(last["x"] - last["z2"])) < 0.05


def test_probe_store_keeps_the_first_and_the_newest_when_thinning():
    store = ProbeStore(capacity=4)
    for it in range(1, 11):
        store.add(it, {"step": 1, **{n: np.full((2, 2, 1), it / 10) for n in ("x", "z1", "z2")}})
    assert len(store) <= 4 and store.iterations[0] == 1 and store.iterations[-1] == 10
    s = store.series(1, 1)
    np.testing.assert_allclose(s["x"], np.array(store.iterations) / 10, atol=1e-3)


@pytest.mark.slow
def test_histogram_follows_the_replay_slider(win, qtbot, monkeypatch):
    pace_iterations(monkeypatch, 0.01)  # (a frame every 0.1 s: several in the replay)
    img, strokes = faint_disc(grey=(130, 100), noise=30.0)
    open_image(win, qtbot, img, strokes)
    win.params_panel.lam.setValue(50.0)  # (undecided first iterates)
    win.show_teaching_dock()
    run_to_end(win, qtbot)
    hist, slider = win.teaching.histogram, win.results_panel.replay
    n = len(win.frames)
    assert n >= 3
    for idx in (0, n // 2, n - 1, 0):
        slider.setValue(idx)
        it, probs = win.frames.get(idx)
        assert hist.iteration == it
        counts, _ = mass_histogram(frame_values(probs), len(hist.counts))
        np.testing.assert_array_equal(hist.counts, counts)
        assert hist.counts.sum() == probs.shape[0] * probs.shape[1]
    slider.setValue(n - 1)  # the final labels: every value at 0 or 1, as the labels say
    low, mid, high = hist.fractions()
    labels = win.outcome.labels
    assert mid == 0
    assert high == pytest.approx(np.mean(labels == 1)) and low == pytest.approx(np.mean(labels == 2))
    slider.setValue(0)  # the first stored iteration: some mass still undecided
    assert hist.fractions()[1] > 0.02


@pytest.mark.slow
def test_probe_follows_a_clicked_pixel_without_drawing(win, qtbot, monkeypatch):
    pace_iterations(monkeypatch, 0.01)  # (probe samples up to 50 a second: several a run)
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    run_to_end(win, qtbot)
    panel = win.teaching
    assert len(panel.store) >= 5
    before = win.doc.strokes.copy()
    win.act_probe.setChecked(True)
    assert panel.clicks.active and panel.probe_button.isChecked()
    click_pixel(win, 15, 15)  # inside the disc (label 2), off its stroke (a seed)
    assert panel.pixel == (15, 15)
    np.testing.assert_array_equal(win.doc.strokes, before)  # the click drew nothing
    s = panel.chart.series
    assert s is not None and len(s["iteration"]) == len(panel.store)
    np.testing.assert_array_equal(s["iteration"], panel.store.iterations)
    step = panel.store.samples[-1]["step"]
    for k, sample in enumerate(panel.store.samples):
        for name in ("x", "z1", "z2"):
            assert s[name][k] == float(sample[name][15 // step, 15 // step, 0])
    assert np.all((s["z1"] >= 0) & (s["z1"] <= 1))
    # the answer there is label 2 (x, label 1's weight, at 0): x, z1 and z2 come to 0
    assert win.outcome.labels[15, 15] == 2 and win.doc.strokes[15, 15] == 0
    assert s["iteration"][-1] >= win.outcome.iterations - 3  # sampled to the end
    assert abs(s["x"][0]) > 0.1  # the first iterate is far from it
    assert max(abs(s["x"][-1]), abs(s["z1"][-1]), abs(s["z2"][-1])) < 0.02
    # the chart marks the replay's iteration
    win.results_panel.replay.setValue(0)
    assert panel.chart.marker == win.frames.iterations[0]
    win.act_probe.setChecked(False)
    assert not panel.clicks.active


@pytest.mark.slow
def test_guided_demo_walks_from_the_geometry_to_the_cameraman(win, qtbot):
    demo = win.guided_demo
    demo.start()
    view = win.geometry_view
    assert view is not None and view.isVisible() and demo.card.isVisible()
    assert view.trace.problem.title.startswith("Rounding") and view.index == 0
    assert demo.steps[0].title in view.caption.text()
    demo.next()
    assert view.index == 1
    demo.next()
    assert view.playing
    demo.next()
    assert not view.playing and view.index == len(view.trace) - 1
    demo.back()
    demo.next()
    assert view.index == len(view.trace) - 1
    demo.next()
    assert view.trace.problem.n == 3 and view.trace.problem.C is not None
    demo.next()
    assert win.doc.image_path.endswith("cameraman.png") and win.doc.k == 2
    win.params_panel.admm["max_iter"].setValue(40)
    demo.next()
    assert win.running
    qtbot.waitUntil(lambda: not win.running, timeout=300000)
    demo.next()
    assert win.results_panel.replay.value() == 0
    assert win.teaching.histogram.iteration == win.frames.iterations[0]
    demo.next()
    assert win.teaching.clicks.active and win.teaching.pixel is not None
    assert win.teaching.chart.series is not None
    assert not demo.card.next.isEnabled()
    demo.stop()
    assert not demo.card.isVisible()


def test_geometry_screenshot_from_the_command_line(qapp, tmp_path):
    from segapp.cli import main
    out = tmp_path / "geometry.png"
    assert main(["--demo-screenshot", str(out), "--view", "geometry"]) == 0
    img = QImage(str(out))
    assert (img.width(), img.height()) == (1366, 768)
    # the walk was played to its end: the box, the circle and the iterates are drawn
    colours = {img.pixelColor(x, y).name() for x in range(0, 1366, 3) for y in range(0, 768, 3)}
    assert "#fac85a" in colours  # the sphere's colour


@pytest.mark.slow
def test_a_new_image_forgets_the_histogram_and_the_probe(win, qtbot, monkeypatch):
    """The last image's histogram and probed pixel went on showing over the next image (and
    the last run's histogram over a new run's set-up) as if they were its own."""
    pace_iterations(monkeypatch, 0.005)
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    win.show_teaching_dock()
    run_to_end(win, qtbot)
    panel = win.teaching
    panel.probe(20, 20)
    assert panel.histogram.counts is not None and panel.chart.series is not None
    # a new run: nothing of the last one until its own first iterate
    assert win.start_run()
    assert panel.histogram.counts is None and panel.histogram.iteration is None
    assert panel.chart.series is None and "waiting" in panel.chart.note
    qtbot.waitUntil(lambda: not win.running, timeout=60000)
    assert panel.histogram.counts is not None and panel.chart.series is not None
    # another image: no histogram, no pixel, no samples
    img2, strokes2 = disc_image(40, 30)
    open_image(win, qtbot, img2, strokes2)
    assert panel.histogram.counts is None and panel.histogram.iteration is None
    assert panel.pixel is None and panel.chart.series is None and not len(panel.store)
    assert "click a pixel" in panel.chart.note


def test_probing_shows_no_brush_and_says_it_is_on(win, qtbot):
    """While probing, a click picks a pixel: the brush's outline must not follow the mouse
    (it said a click would paint), the button must look pressed, and the canvas keeps
    reporting the pixel under the mouse; off again, the canvas's own crosshair is back."""
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    vp = win.canvas.viewport()
    at = win.canvas.mapFromScene(QPointF(10.5, 12.5))
    QTest.mouseMove(vp, at)
    assert win.canvas.cursor_item.isVisible()  # (painting: the brush's outline)
    panel = win.teaching
    panel.probe_button.click()
    assert panel.clicks.active and panel.probe_button.isChecked()
    assert panel.probe_button.text() != "Probe a pixel"
    assert not win.canvas.cursor_item.isVisible()
    seen = []
    win.canvas.cursor_moved.connect(lambda x, y: seen.append((x, y)))
    QTest.mouseMove(vp, win.canvas.mapFromScene(QPointF(20.5, 22.5)))
    assert not win.canvas.cursor_item.isVisible()
    assert seen and seen[-1] == (20, 22)
    panel.probe_button.click()
    assert not panel.clicks.active and panel.probe_button.text() == "Probe a pixel"
    assert vp.cursor().shape() == Qt.CursorShape.CrossCursor


def test_the_demo_card_is_tall_enough_for_each_steps_text(win, qtbot):
    """The card was sized once, from its hint: each step's two or three lines of text were
    squeezed into one and a half, overlapping and cut off."""
    demo = win.guided_demo
    demo.start()
    card = demo.card
    qtbot.waitExposed(card)
    for i in range(5):  # (the geometry steps; the photo's run the test above walks through)
        demo.go(i)
        qtbot.waitUntil(lambda: card.height() >= card.heightForWidth(card.width()), timeout=2000)
        qtbot.wait(20)
        label = card.text
        assert label.height() >= label.heightForWidth(label.width()), demo.steps[i].title
    demo.stop()


@pytest.mark.parametrize("screen, window, where", [
    ((0, 0, 1600, 1000), (0, 0, 1366, 768), "below"),
    ((0, 0, 1920, 800), (0, 0, 1366, 768), "right"),
    ((0, 0, 1366, 768), (0, 0, 1366, 740), "corner"),
    ((100, 50, 1280, 720), (150, 60, 1200, 700), "corner"),
])
def test_the_demo_card_goes_beside_the_window_it_accompanies(screen, window, where):
    """Without a placement a window manager centres the card over the Geometry window (the
    picture the lecture is about) and a bare X server puts it on the window's caption: it goes
    below the window, else to its right, else in the screen's corner, always whole on the
    screen."""
    from PyQt6.QtCore import QRect, QSize

    from segapp.ui.guided_demo import card_position
    scr, win_rect, size = QRect(*screen), QRect(*window), QSize(520, 150)
    pos = card_position(scr, win_rect, size)
    card = QRect(pos, size)
    assert scr.contains(card)
    if where == "corner":
        assert card.bottomRight() == scr.bottomRight()
    else:
        assert not card.intersects(win_rect)
        assert (card.top() > win_rect.bottom()) == (where == "below")


def test_starting_the_demo_places_its_card_beside_the_geometry_window(win, qtbot, monkeypatch):
    from PyQt6.QtCore import QPoint

    import segapp.ui.guided_demo as gd
    seen = []
    monkeypatch.setattr(gd, "card_position",
                        lambda screen, window, size: seen.append(window) or QPoint(3, 4))
    win.guided_demo.start()
    card = win.guided_demo.card
    qtbot.waitExposed(card)
    assert seen == [win.geometry_view.frameGeometry()] and card.pos() == QPoint(3, 4)
    win.guided_demo.stop()


@pytest.mark.slow
@pytest.mark.parametrize("end", ["converged", "settled", "cancelled", "max_iter"])
def test_the_probe_samples_the_runs_last_iteration(win, qtbot, monkeypatch, end):
    """Probe samples are throttled, and a converged (or cancelled) run never asked for a last
    one: on a fast run the chart's axis stopped hundreds of iterations short, and with the
    replay at the final iteration its marker fell past the axis and the header showed a stale
    sample. However the run ends, its last iteration is sampled."""
    from segapp.ui import worker
    # (throttled as on a fast machine's long run: after the first iterations, no sample falls
    # due on the schedule for the rest of the run)
    monkeypatch.setattr(worker, "PROBE_INTERVAL", 1e9)
    img, strokes = disc_image()
    open_image(win, qtbot, img, strokes)
    win.show_teaching_dock()
    panel = win.teaching
    panel.probe(20, 20)
    records = []
    win.solver.records.connect(lambda batch: records.extend(r.iteration for r in batch))
    if end != "converged":  # (a tight tolerance: the run goes on until early fixing ends it,
        # some 600 iterations, or it is stopped)
        win.params_panel.admm["tol"].setValue(1e-9)
        win.params_panel.admm["rho_growth"].setValue(1.001)
        win.params_panel.admm["max_iter"].setValue(30 if end == "max_iter" else 5000)
    if end == "cancelled":
        pace_iterations(monkeypatch, 0.01)
        assert win.start_run()
        qtbot.waitUntil(lambda: len(records) >= 25 or not win.running, timeout=300000)
        assert win.running, "the run ended before it could be cancelled"
        win.cancel_run()
        qtbot.waitUntil(lambda: not win.running, timeout=60000)
        outcome = win.outcome
    else:
        outcome = run_to_end(win, qtbot)
    assert outcome.status == end
    last = records[-1]
    assert last == outcome.iterations > worker.PROBE_FIRST + 5
    # the sample is the run's final iterate ...
    assert panel.store.iterations[-1] == last
    assert panel.store.iterations[:worker.PROBE_FIRST] == list(range(1, worker.PROBE_FIRST + 1))
    # ... and the chart, with the replay at the end, ends at the marker and reads it
    win.results_panel.replay.setValue(win.results_panel.replay.maximum())
    chart = panel.chart
    assert chart.marker == last
    assert chart.series["iteration"][-1] == last
    sample = panel.store.samples[-1]
    step = sample["step"]
    values = chart.values_at(chart.marker)
    for name in ("x", "z1", "z2"):
        assert values[name] == float(sample[name][20 // step, 20 // step, 0])
    if end == "converged":  # (there x, z1 and z2 have met at the answer, label 2: x = 0)
        assert win.outcome.labels[20, 20] == 2
        assert max(abs(values[n]) for n in ("x", "z1", "z2")) < 0.02
