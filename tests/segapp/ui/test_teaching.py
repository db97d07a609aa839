"""The teaching view's model and the Geometry window: the recorded walk is the solver's own,
stepping forward and back shows it, and the 2-D drawing puts z2 on the circle and z1 in the box."""

import math

import numpy as np
import pytest
from PyQt6.QtCore import QPointF, QRectF, Qt

from segapp.model.teaching import (
    PRESETS,
    box_minimum,
    enumerate_optimum,
    make_problem,
    plane_box_polygon,
    preset,
    record,
)
from solver import solve_bqp
from solver.admm.projections import project_box, project_lp_sphere


def solver_walk(problem, **params):
    """x, z1, z2 of every iteration as solve_bqp's callback gives them, and the result."""
    walk = []
    res = solve_bqp(problem.A, problem.b, eq=problem.eq, x0=np.full(problem.n, 0.5),
                    polish=False, callback=lambda s: walk.append(
                        (np.array(s.x), np.array(s.z1), np.array(s.z2))), **params)
    return walk, res


@pytest.mark.parametrize("idx", range(len(PRESETS)))
def test_the_recorded_walk_is_the_solvers_own(idx):
    prob = PRESETS[idx]
    trace = record(prob)
    walk, res = solver_walk(prob)
    assert len(trace) == len(walk) + 1 == res.iterations + 1
    assert trace.iterates[0].iteration == 0 and np.all(trace.iterates[0].x == 0.5)
    for it, (x, z1, z2), rec in zip(trace.iterates[1:], walk, res.history):
        assert it.iteration == rec.iteration
        np.testing.assert_allclose(it.x, x, rtol=0, atol=1e-12)
        np.testing.assert_allclose(it.z1, z1, rtol=0, atol=1e-12)
        np.testing.assert_allclose(it.z2, z2, rtol=0, atol=1e-12)
        assert it.rho == rec.rho and it.residual_box == rec.residual_box
        assert it.residual_sphere == rec.residual_sphere
        assert it.objective_rounded == rec.objective_rounded
    np.testing.assert_array_equal(trace.result.x, res.x)


@pytest.mark.parametrize("idx", range(len(PRESETS)))
def test_replayed_duals_reproduce_every_projection(idx):
    """z1 = Π_box(x + y1/ρ) and z2 = Π_sphere(x + y2/ρ) with the previous step's duals."""
    trace = record(PRESETS[idx])
    r = trace.radius
    for prev, it in zip(trace.iterates, trace.iterates[1:]):
        np.testing.assert_allclose(it.z1, project_box(it.x + prev.y1 / it.rho), atol=1e-9)
        np.testing.assert_allclose(it.z2, project_lp_sphere(it.x + prev.y2 / it.rho), atol=1e-9)
        assert abs(np.linalg.norm(it.z2 - 0.5) - r) < 1e-9
        assert np.all((it.z1 >= 0) & (it.z1 <= 1))


def test_presets_say_what_they_promise():
    binary = record(preset("Relaxation already binary"))
    assert np.all(np.isin(binary.relaxation[1], (0.0, 1.0)))
    wrong = record(preset("Rounding the relaxation is wrong"))
    rel = wrong.relaxation[1]
    assert np.all((rel > 0.1) & (rel < 0.9))  # inside the box
    assert not np.array_equal(np.rint(rel), wrong.optimum[1])  # and rounds to the wrong corner
    assert np.array_equal(np.rint(wrong.iterates[-1].x), wrong.optimum[1])  # ADMM does not
    indefinite = record(preset("Indefinite A"))
    assert np.linalg.eigvalsh(indefinite.problem.A).min() < 0 and indefinite.shift > 0
    onehot = record(preset("One-hot (x₁ + x₂ + x₃ = 1)"))
    assert onehot.result.x.sum() == 1 and onehot.relaxation is None
    for p in PRESETS:
        t = record(p)
        assert t.result.objective == pytest.approx(t.optimum[0], abs=1e-9), p.title


def test_box_minimum_and_enumeration_are_exact():
    rng = np.random.default_rng(3)
    for _ in range(20):
        M = rng.normal(size=(2, 2))
        prob = make_problem(M @ M.T + 0.1 * np.eye(2), rng.normal(size=2) * 2)
        value, x = box_minimum(prob)
        g = np.linspace(0, 1, 201)
        grid = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
        assert value <= prob.objective(grid).min() + 1e-12
        assert value == pytest.approx(prob.objective(x))
        best, _ = enumerate_optimum(prob)
        corners = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], float)
        assert best == pytest.approx(prob.objective(corners).min())


def test_plane_cuts_the_cube_in_the_simplex():
    poly = plane_box_polygon(np.ones(3), 1.0)
    assert len(poly) == 3
    assert sorted(map(tuple, poly)) == [(0, 0, 1), (0, 1, 0), (1, 0, 0)]
    assert len(plane_box_polygon(np.ones(3), 1.5)) == 6  # a hexagon through the middle
    assert len(plane_box_polygon(np.ones(3), 4.0)) == 0


def test_bad_problems_are_refused_in_one_sentence():
    with pytest.raises(ValueError, match="2 or 3 variables"):
        make_problem(np.eye(4), np.zeros(4))
    with pytest.raises(ValueError, match="A must be 2×2"):
        make_problem(np.eye(3), np.zeros(2))
    with pytest.raises(ValueError, match="finite"):
        make_problem([[np.nan, 0], [0, 1]], [0, 0])


# ------------------------------------------------------------------------------- the window
@pytest.fixture
def view(qtbot):
    from segapp.ui.geometry_view import GeometryView
    v = GeometryView()
    qtbot.addWidget(v)
    v.resize(1366, 768)
    v.show()
    qtbot.waitExposed(v)
    return v


@pytest.mark.parametrize("idx", [1, 3])
def test_stepping_forward_and_back_shows_the_solvers_iterates(view, qtbot, idx):
    view.set_preset(idx)
    walk, res = solver_walk(PRESETS[idx])
    assert view.index == 0 and view.slider.maximum() == len(walk)
    seen = []
    view.index_changed.connect(seen.append)
    for k in range(1, 16):
        qtbot.mouseClick(view.buttons["forward"], Qt.MouseButton.LeftButton)
        assert view.index == k and view.slider.value() == k and view.scene.index == k
        np.testing.assert_allclose(view.current().x, walk[k - 1][0], rtol=0, atol=1e-9)
        np.testing.assert_allclose(view.current().z1, walk[k - 1][1], rtol=0, atol=1e-9)
        np.testing.assert_allclose(view.current().z2, walk[k - 1][2], rtol=0, atol=1e-9)
        assert view.current().rho == res.history[k - 1].rho
    for k in range(14, 4, -1):
        qtbot.mouseClick(view.buttons["back"], Qt.MouseButton.LeftButton)
        assert view.index == k
        np.testing.assert_allclose(view.current().x, walk[k - 1][0], rtol=0, atol=1e-9)
        np.testing.assert_allclose(view.current().z2, walk[k - 1][2], rtol=0, atol=1e-9)
    assert seen == list(range(1, 16)) + list(range(14, 4, -1))
    qtbot.keyClick(view, Qt.Key.Key_Left)
    assert view.index == 4
    view.first()
    qtbot.mouseClick(view.buttons["back"], Qt.MouseButton.LeftButton)
    assert view.index == 0  # nothing before the start
    view.last()
    assert view.index == len(walk)
    np.testing.assert_allclose(view.current().x, walk[-1][0], rtol=0, atol=1e-9)
    assert f"iteration {len(walk)}</b> of {len(walk)}" in view.numbers.text()


@pytest.mark.parametrize("idx", [0, 1, 2])
def test_the_plane_drawing_puts_z2_on_the_circle_and_z1_in_the_box(view, qtbot, idx):
    view.set_preset(idx)
    r = math.sqrt(2) / 2
    n = len(view.trace)
    for k in sorted({1, 2, 3, 5, 8, n // 2, n - 1}):
        view.set_index(k)
        view.scene.repaint()
        drawn = view.scene.drawn
        it = view.current()
        centre, radius_px = drawn["circle"]
        assert view.scene.from_screen(centre) == pytest.approx([0.5, 0.5], abs=1e-12)
        # z2 where it is drawn: on the circle drawn, in the plane's units and in pixels
        z2 = view.scene.from_screen(drawn["z2"])
        assert abs(np.linalg.norm(z2 - 0.5) - r) < 1e-9
        d = drawn["z2"] - centre
        assert abs(math.hypot(d.x(), d.y()) - radius_px) < 1e-9 * radius_px
        np.testing.assert_allclose(z2, it.z2, atol=1e-9)
        # z1 in the box drawn
        z1 = view.scene.from_screen(drawn["z1"])
        assert np.all(z1 >= -1e-9) and np.all(z1 <= 1 + 1e-9)
        box = drawn["box"]
        q = drawn["z1"]
        assert box.left() - 1e-9 <= q.x() <= box.right() + 1e-9
        assert box.top() - 1e-9 <= q.y() <= box.bottom() + 1e-9
        assert box.width() == pytest.approx(radius_px * 2 / math.sqrt(2))  # side 1, radius √2/2
        np.testing.assert_allclose(view.scene.from_screen(drawn["x"]), it.x, atol=1e-9)


def test_the_3d_view_rotates_when_dragged(view, qtbot):
    view.set_preset(3)
    view.set_index(10)
    scene = view.scene
    corner = np.array([1.0, 0.0, 0.0])
    before = scene.to_screen(corner)
    yaw, pitch = scene.yaw, scene.pitch
    c = scene.rect().center()
    qtbot.mousePress(scene, Qt.MouseButton.LeftButton, pos=c)
    from PyQt6.QtTest import QTest
    QTest.mouseMove(scene, c + QPointF(60, 20).toPoint())
    qtbot.mouseRelease(scene, Qt.MouseButton.LeftButton, pos=c + QPointF(60, 20).toPoint())
    assert scene.yaw != yaw and scene.pitch != pitch
    assert scene.to_screen(corner) != before
    # an orthographic view: the centre stays put and every corner is √3/2 from it in space,
    # so none is drawn farther than the sphere's outline
    scene.repaint()
    centre = scene.to_screen(np.full(3, 0.5))
    assert scene.drawn["sphere"][0] == centre
    outline = scene.drawn["sphere"][1]
    for p in np.array(np.meshgrid([0, 1], [0, 1], [0, 1])).reshape(3, -1).T:
        d = scene.to_screen(p) - centre
        assert math.hypot(d.x(), d.y()) <= outline + 1e-9


def test_play_runs_to_the_end_and_stops(view, qtbot):
    view.set_preset(0)
    view.speed.setValue(60)
    view.play()
    assert view.playing
    qtbot.waitUntil(lambda: view.index == len(view.trace) - 1, timeout=10000)
    qtbot.waitUntil(lambda: not view.playing, timeout=2000)
    assert view.buttons["play"].text() == "▶ Play"


def test_an_edited_problem_is_solved_and_a_bad_one_refused(view):
    view.size_spin.setValue(2)
    for i, row in enumerate([[2.0, -1.0], [-1.0, 2.0]]):
        for j, v in enumerate(row):
            view.a_edit[i][j].setValue(v)
    view.b_edit[0].setValue(-3.0)
    view.b_edit[1].setValue(0.5)
    view.use_c.setChecked(False)
    assert view.solve_edited()
    assert view.presets.currentText().startswith("Custom")
    np.testing.assert_array_equal(view.trace.problem.A, [[2.0, -1.0], [-1.0, 2.0]])
    walk, _ = solver_walk(view.trace.problem)
    view.last()
    np.testing.assert_allclose(view.current().x, walk[-1][0], atol=1e-12)
    view.use_c.setChecked(True)
    view.c_edit[0].setValue(1.0)
    view.c_edit[1].setValue(1.0)
    view.d_edit.setValue(3.0)  # x1 + x2 = 3: no binary point
    assert not view.solve_edited()
    assert "infeasible" in view.error_label.text()


def test_the_window_opens_within_a_small_screen(qtbot):
    """On a 1366x768 laptop, with its panel, the whole window and its title bar must be on
    screen: the first size is the screen's room, as the main window's (it was 1366x768 on
    every screen)."""
    from segapp.ui.geometry_view import GeometryView
    from segapp.ui.screen_fit import FRAME_ALLOWANCE
    v = GeometryView()
    qtbot.addWidget(v)
    avail = v.screen().availableGeometry()
    low = v.minimumSizeHint()
    assert v.width() <= max(avail.width() - FRAME_ALLOWANCE[0], low.width())
    assert v.height() <= max(avail.height() - FRAME_ALLOWANCE[1], low.height())
    # and the window's minimum fits a 1366x768 laptop's 1366x708 with its title bar
    assert low.width() <= 1366 - FRAME_ALLOWANCE[0] and low.height() <= 708 - FRAME_ALLOWANCE[1]


# ------------------------------------------------------------------------- the 3-D drawing
def _colour_near(img, q: QPointF, colour, radius: int = 1, tol: int = 40) -> bool:
    """Whether a pixel within ``radius`` of ``q`` in ``img`` is ``colour`` (each channel
    within ``tol``)."""
    for dx in range(-radius, radius + 1):
        for dy in range(-radius, radius + 1):
            c = img.pixelColor(int(round(q.x())) + dx, int(round(q.y())) + dy)
            if all(abs(a - b) <= tol for a, b in zip(c.getRgb()[:3], colour.getRgb()[:3])):
                return True
    return False


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1366, 768), (900, 600)])
@pytest.mark.parametrize("idx", [3, 4])
def test_the_3d_drawing_keeps_the_walk_inside_and_clear_of_the_legend(view, qtbot, size, idx):
    """The 3-D scale was fixed by the cube alone: x's trail (which goes some 1.6 from the
    centre in "Three variables") ran out of the sphere, off the drawing and across the legend.
    Now, whatever the rotation, every iterate, the cube and the sphere are drawn inside the
    drawing area and clear of the legend."""
    view.resize(*size)
    qtbot.wait(10)
    view.set_preset(idx)
    scene = view.scene
    scene.repaint()
    area = QRectF(scene.rect()).adjusted(8, 8, -8, -8)
    legend = scene.legend_rect().adjusted(-8, -8, 8, 8)
    assert legend.width() > 100 and QRectF(scene.rect()).contains(scene.legend_rect())
    trace = view.trace
    pts = [v for it in trace.iterates for v in (it.x, it.z1, it.z2)]
    pts += list(np.array(np.meshgrid([0, 1], [0, 1], [0, 1])).reshape(3, -1).T)
    assert max(np.linalg.norm(np.asarray(q) - 0.5) for q in pts) > trace.radius + 0.1
    for yaw in np.linspace(-math.pi, math.pi, 13):
        for pitch in (-1.3, -0.6, 0.0, 0.4, 1.3):
            scene.yaw, scene.pitch = yaw, pitch
            for q in pts:
                at = scene.to_screen(q)
                assert area.contains(at), (yaw, pitch, q)
                assert not legend.contains(at), (yaw, pitch, q)
            # the sphere's outline (its silhouette from any side) too
            scene.repaint()
            centre, r = scene.drawn["sphere"]
            for t in np.linspace(0, 2 * math.pi, 72, endpoint=False):
                at = centre + QPointF(r * math.cos(t), r * math.sin(t))
                assert area.contains(at) and not legend.contains(at)


def test_the_default_3d_view_looks_from_slightly_above(view):
    """The first view was from slightly below: the top tilted away and the far edges drawn
    faint were the top's. Now the top face is the nearer and drawn higher, the faint corner is
    a bottom one, and neither 3-D preset's answer is seen end-on at the centre."""
    view.set_preset(4)
    scene = view.scene
    top, bottom = np.array([0.5, 0.5, 1.0]), np.array([0.5, 0.5, 0.0])
    assert scene.depth(top) < 0 < scene.depth(bottom)
    assert scene.to_screen(top).y() < scene.to_screen(bottom).y()
    # slightly: the tilt is between 10° and 35°
    up = scene.to_screen(np.array([0.5, 0.5, 1.5])) - scene.to_screen(top)
    assert up.y() < 0 and 10 < math.degrees(math.asin(-scene.depth(top) / 0.5)) < 35
    corners = np.array(np.meshgrid([0, 1], [0, 1], [0, 1])).reshape(3, -1).T
    assert corners[int(np.argmax([scene.depth(c) for c in corners]))][2] == 0
    for idx in (3, 4):
        view.set_preset(idx)
        view.scene.repaint()
        centre, r = view.scene.drawn["sphere"]
        d = view.scene.to_screen(view.trace.optimum[1]) - centre
        assert math.hypot(d.x(), d.y()) > 0.5 * r, PRESETS[idx].title


@pytest.mark.parametrize("idx", [1, 3, 4])
def test_x_is_visible_at_the_start_point(view, idx):
    """At the start point x = z1 = ½, and z1 was drawn over x: x could not be seen. Now x is
    drawn on top, inside z1's ring, and both show."""
    from segapp.ui.geometry_scene import C_X, C_Z1, Z1_RING
    view.set_preset(idx)
    view.set_index(0)
    img = view.scene.grab().toImage()
    drawn = view.scene.drawn
    assert drawn["x"] == drawn["z1"]
    assert _colour_near(img, drawn["x"], C_X)
    ring = [drawn["z1"] + QPointF(Z1_RING * math.cos(t), Z1_RING * math.sin(t))
            for t in np.linspace(0, 2 * math.pi, 8, endpoint=False)]
    assert sum(_colour_near(img, q, C_Z1) for q in ring) >= 6
    # and in the legend, z1 is a ring too
    assert [sym for _, t, sym in view.scene.legend_items() if t.startswith("z₁")] == ["ring"]


def test_the_best_point_and_the_constraint_have_distinct_colours(view):
    """"best binary point" and "C x = d" were both drawn (and listed) in nearly the same green."""
    from segapp.ui.geometry_scene import BEST_RING
    view.set_preset(3)  # (one-hot: the plane's triangle, and the best corner on it)
    view.last()
    scene = view.scene
    items = {text: (colour, symbol) for colour, text, symbol in scene.legend_items()}
    best, plane = items["best binary point"], items["C x = d"]
    rgb = [np.array(c.getRgb()[:3], float) for c in (best[0], plane[0])]
    assert np.linalg.norm(rgb[0] - rgb[1]) > 100
    hue = abs(best[0].hslHue() - plane[0].hslHue())
    assert min(hue, 360 - hue) > 45
    assert (best[1], plane[1]) == ("best", "patch")  # a ring, and the plane's filled polygon
    # the ring drawn round the best point is the legend's colour
    img = scene.grab().toImage()
    c = scene.drawn["best"]
    ring = [c + QPointF(BEST_RING * math.cos(t), BEST_RING * math.sin(t))
            for t in np.linspace(0, 2 * math.pi, 12, endpoint=False)]
    assert sum(_colour_near(img, q, best[0]) for q in ring) >= 6
