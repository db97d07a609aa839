"""Tests of the pixel helpers, the replay frame store and the worker's throttling."""
import numpy as np

from segapp.ui.frames import FrameStore
from segapp.ui.render import (HARD_ALPHA, SOFT_ALPHA, disagreement_rgba, labels_rgb,
                              layers_rgba, palette, probabilities_rgb, to_qimage)


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
    assert fs.nbytes() <= 10 * 16 * 12 * 2


class _State:
    def __init__(self, it, n):
        self.iteration, self.max_iter = it, n
        self.energy_continuous = self.energy_rounded = -float(it)
        self.residual_box = self.residual_sphere = 1.0 / it
        self.rho = 1.0
        self.calls = 0

    def probabilities(self):
        return np.zeros((4, 4, 2), np.float32)


def test_worker_callback_throttles_and_cancels(qtbot):
    from segapp.worker import SolveJob, SolveWorker
    w = SolveWorker(SolveJob(np.zeros((4, 4)), np.zeros((4, 4)), None))
    frames, batches = [], []
    w.frame.connect(lambda i, p: frames.append(i))
    w.records.connect(lambda b: batches.append(b))
    n = 500
    for it in range(1, n + 1):
        assert w._callback(_State(it, n)) is False
    assert sum(len(b) for b in batches) == n
    assert 1 <= len(frames) < 50 and frames[-1] == n
    w.cancel()
    assert w._callback(_State(1, n)) is True
