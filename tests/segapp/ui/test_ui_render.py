"""Tests of the pixel helpers, the replay frame store and the worker's throttling."""
import numpy as np

from segapp.core.colouring import (
    HARD_ALPHA,
    SOFT_ALPHA,
    disagreement_rgba,
    labels_rgb,
    layers_rgba,
    palette,
    probabilities_rgb,
)
from segapp.ui.frames import FrameStore
from segapp.ui.render import to_qimage


def test_layers_rgba_soft_and_hard_are_distinct():
    pal = palette(3)
    s = np.zeros((10, 10), np.uint8)
    h = np.zeros((10, 10), np.uint8)
    s[1, 1] = 2
    h[4:8, 4:8] = 3
    out = layers_rgba(s, h, pal)
    assert tuple(out[1, 1]) == tuple(pal[1]) + (SOFT_ALPHA,)
    assert out[0, 0, 3] == 0
    assert tuple(out[4, 4]) == (255, 255, 255, 255)  # outline
    inner = out[5:7, 5:7].reshape(-1, 4)
    assert (inner[:, 3] == HARD_ALPHA).all()
    assert len({tuple(p) for p in inner}) == 2  # hatched: two shades


def test_probabilities_and_labels_rgb():
    pal = palette(2)
    p = np.zeros((2, 2, 2), np.float32)
    p[0, 0] = (1, 0)
    p[0, 1] = (0, 1)
    p[1, :] = (0.5, 0.5)
    rgb = probabilities_rgb(p, pal)
    assert tuple(rgb[0, 0]) == tuple(pal[0]) and tuple(rgb[0, 1]) == tuple(pal[1])
    assert abs(int(rgb[1, 0, 0]) - int(rgb[1, 0, 2])) < 20  # undecided is near-grey
    pal3 = palette(3)
    q = np.zeros((1, 1, 3), np.float32)
    q[0, 0, 2] = 1
    assert tuple(probabilities_rgb(q, pal3)[0, 0]) == tuple(pal3[2])
    lab = np.array([[1, 3]])
    assert tuple(labels_rgb(lab, pal3)[0, 1]) == tuple(pal3[2])
    rgba, n = disagreement_rgba(np.array([[1, 2]]), np.array([[1, 1]]))
    assert n == 1 and rgba[0, 0, 3] == 0 and tuple(rgba[0, 1]) == (255, 0, 255, 255)


def test_to_qimage_shapes():
    for shape in ((5, 7), (5, 7, 3), (5, 7, 4)):
        q = to_qimage(np.zeros(shape, np.uint8))
        assert (q.width(), q.height()) == (7, 5)


def test_frame_store_bounded():
    fs = FrameStore(capacity=10, max_side=16)
    for it in range(1, 101):
        fs.add(it, np.full((64, 48, 2), 0.25, np.float32))
    assert len(fs) <= 10
    assert fs.iterations[0] == 1 and fs.iterations[-1] == 100
    assert fs.iterations == sorted(fs.iterations)
    it, f = fs.get(len(fs) - 1)
    assert it == 100 and max(f.shape[:2]) <= 16 and abs(float(f.mean()) - 0.25) < 0.01
    assert fs.nbytes() == len(fs) * 16 * 12 * 2  # uint8, downsampled to 16 x 12


def test_frame_store_gives_back_what_it_kept():
    """A stored frame comes back as float32 weights within half a quantisation step, the
    extremes exactly; a frame for the same iteration replaces the last one."""
    rng = np.random.default_rng(0)
    w = rng.random((12, 10, 3)).astype(np.float32)
    w[0, 0] = (0.0, 1.0, 0.5)
    fs = FrameStore(capacity=4, max_side=64)
    fs.add(7, w)
    it, got = fs.get(0)
    assert it == 7 and got.dtype == np.float32 and got.shape == w.shape
    assert np.abs(got - w).max() <= 0.5 / 255 + 1e-7
    assert got[0, 0, 0] == 0.0 and got[0, 0, 1] == 1.0
    fs.add(7, 1 - w)
    assert len(fs) == 1 and np.abs(fs.get(0)[1] - (1 - w)).max() <= 0.5 / 255 + 1e-7


class _State:
    def __init__(self, it, n):
        self.iteration, self.max_iter = it, n
        self.energy_continuous = self.energy_rounded = -float(it)
        self.residual_box = self.residual_sphere = 1.0 / it
        self.rho = 1.0
        self.calls = 0

    def probabilities(self, max_side=None):
        self.calls += 1
        self.max_side = max_side
        return np.zeros((4, 4, 2), np.float32)


def test_worker_callback_throttles_and_cancels(qtbot):
    from segapp.ui.worker import SolveJob, SolveWorker
    w = SolveWorker(SolveJob(np.zeros((4, 4)), np.zeros((4, 4)), None))
    frames, batches = [], []
    w.frame.connect(lambda i, p: (frames.append(i), w.frame_shown()))
    w.records.connect(lambda b: batches.append(b))
    n = 500
    for it in range(1, n + 1):
        assert w._callback(_State(it, n)) is False
    assert sum(len(b) for b in batches) == n
    assert 1 <= len(frames) < 50 and frames[-1] == n
    w.cancel()
    assert w._callback(_State(1, n)) is True


def test_worker_sends_no_frame_until_the_last_is_shown(qtbot):
    """A window slower than the solver gets one frame at a time (and always the last one), each
    asked for at the live size: queued full-size frames of a 12 MP photo exhausted memory."""
    from segapp.ui import worker as worker_module
    from segapp.ui.worker import SolveJob, SolveWorker

    w = SolveWorker(SolveJob(np.zeros((4, 4)), np.zeros((4, 4)), None), frame_interval=0.0)
    frames = []
    w.frame.connect(lambda i, p: frames.append(i))  # received, never shown
    states = [_State(it, 50) for it in range(1, 51)]
    for st in states[:10]:
        w._callback(st)
    assert frames == [1]
    assert [st.calls for st in states[:3]] == [1, 0, 0]  # no frame made while one is pending
    assert states[0].max_side == worker_module.FRAME_MAX_SIDE
    w.frame_shown()
    for st in states[10:49]:
        w._callback(st)
    assert frames == [1, 11]
    w._callback(states[49])  # the last iteration's frame goes out regardless
    assert frames == [1, 11, 50]


def test_energy_plot_frames_the_rounded_curve_not_the_soft_phases(qtbot):
    """A K > 2 run's continuous energies lie orders of magnitude below the answer during each
    level's soft phase; the view stays on the rounded curve and the reference, widened by at
    most their own span for the continuous curve."""
    from types import SimpleNamespace

    from segapp.ui.plot import EnergyPlot

    plot = EnergyPlot()
    qtbot.addWidget(plot)
    rng = np.random.default_rng(0)
    records = []
    for it in range(1, 301):
        soft = it % 100 < 40  # three levels, each starting soft
        rounded = -300_000.0 - 40_000.0 * (it % 100) / 100 + rng.normal(0, 500)
        cont = -2.5e7 * rng.random() if soft else rounded - 2_000.0
        records.append(SimpleNamespace(iteration=it, energy_continuous=cont,
                                       energy_rounded=rounded, residual_box=0.1,
                                       residual_sphere=0.1))
    plot.set_history(records, reference=-348_449.0)
    lo, hi = plot.y_range()
    span = -300_000.0 - -348_449.0
    assert lo <= -348_449.0 and hi >= -300_500.0          # the answer and the curve are in view
    assert lo >= -348_449.0 - 1.2 * span                  # the soft phases do not flatten it
    assert hi - lo < 4 * span


def test_energy_plot_reference_label_stays_inside_the_plot(qtbot):
    """The reference line's name and value ("reference -1.09867e+06") are drawn whole inside
    the energy plot, in its legend above the view box (a label on the line itself was run
    under by the curves converging to it)."""
    from types import SimpleNamespace

    from segapp.ui.plot import EnergyPlot

    plot = EnergyPlot()
    qtbot.addWidget(plot)
    plot.resize(400, 420)
    plot.show()
    qtbot.waitExposed(plot)
    records = [SimpleNamespace(iteration=it, energy_continuous=-1.2e6 + 100.0 * it,
                               energy_rounded=-1.0e6 - 200.0 * it, residual_box=0.1,
                               residual_sphere=0.1) for it in range(1, 361)]
    plot.set_history(records, reference=-1.09867e6)
    qtbot.wait(50)
    legend = plot.legends()[0]
    assert "reference -1.09867e+06" in legend.names()
    assert "reference -1.09867e+06" in legend.text.toPlainText()
    view = plot.energy.getViewBox()
    box = view.mapRectToScene(view.boundingRect())
    text = legend.scene_rect()
    assert text.width() > 0
    assert 0 <= text.left() and text.right() <= plot.energy.width()
    assert text.bottom() <= box.top()
