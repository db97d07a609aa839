"""Qt tests of the side panels and the plot (offscreen): parameter fields that show the
library's defaults and take any valid value, the plot's legends clear of the data, and the
replay's memory (shown, and capped)."""
from __future__ import annotations

import re

import numpy as np
import pytest
from PyQt6.QtCore import QStandardPaths, Qt
from PyQt6.QtWidgets import QGraphicsTextItem, QLabel

from segapp.model import SolverSettings
from segapp.ui.frames import FrameStore
from segapp.ui.main_window import MainWindow
from segapp.ui.panels import ParamsPanel
from solver.admm.params import ADMMParams
from solver.mrf import DEFAULT_LAMBDA
from tests.segapp.ui.test_ui import load, synthetic

QStandardPaths.setTestModeEnabled(True)

ADMM_KEYS = ("rho0", "rho_growth", "gamma", "max_iter", "tol")


@pytest.fixture
def panel(qtbot):
    p = ParamsPanel()
    qtbot.addWidget(p)
    p.show()
    qtbot.waitExposed(p)
    return p


def fields(p):
    return {"lam": p.lam, "beta": p.beta, **{k: p.admm[k] for k in ADMM_KEYS}}


def shown(w) -> str:
    """What a field shows: its text, or its placeholder when empty (a spin box: its text)."""
    text = w.text()
    return text or (w.placeholderText() if hasattr(w, "placeholderText") else "")


def type_into(qtbot, w, text: str, enter: bool = True) -> None:
    """Select everything in ``w`` and type ``text`` over it (nothing: delete it), then press
    Enter."""
    w.setFocus()
    qtbot.keyClick(w, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    if text:
        qtbot.keyClicks(w, text)
    else:
        qtbot.keyClick(w, Qt.Key.Key_Delete)
    if enter:
        qtbot.keyClick(w, Qt.Key.Key_Return)


def test_fields_at_default_show_the_library_defaults(panel):
    lib = ADMMParams().resolved()  # (the fields chosen for the problem show their fallbacks)
    expected = {"lam": DEFAULT_LAMBDA, **{k: getattr(lib, k) for k in ADMM_KEYS}}
    for key, number in expected.items():
        w = fields(panel)[key]
        text = str(number) if isinstance(number, int) else format(number, ".10g")
        assert shown(w) == f"default ({text})", key
        assert w.value() is None
    assert "auto" in shown(panel.beta) and panel.beta.value() is None
    s = panel.settings()
    assert s.lam is None and s.beta is None and s.admm == {}


@pytest.mark.parametrize("key", ["lam", "beta"])
def test_typing_zero_where_legal_gives_zero(panel, qtbot, key):
    got = []
    panel.changed.connect(got.append)
    type_into(qtbot, fields(panel)[key], "0")
    v = getattr(panel.settings(), key)
    assert v is not None and v == 0.0
    assert got and getattr(got[-1], key) == 0.0
    assert shown(fields(panel)[key]) == "0"


@pytest.mark.parametrize("key, value", [("lam", 3.5), ("beta", 0.02), ("rho0", 2.0),
                                        ("max_iter", 77), ("tol", 1e-5)])
def test_clearing_a_field_means_default(panel, qtbot, key, value):
    w = fields(panel)[key]
    type_into(qtbot, w, str(value))
    s = panel.settings()
    assert (getattr(s, key) if key in ("lam", "beta") else s.admm[key]) == value
    type_into(qtbot, w, "")  # emptied: back to the default, not the old value
    s = panel.settings()
    assert (getattr(s, key) if key in ("lam", "beta") else s.admm.get(key)) is None
    assert shown(w).startswith(("default", "auto"))


@pytest.mark.parametrize("key, bad", [("lam", "-1"), ("lam", "abc"), ("beta", "-0.5"),
                                      ("rho0", "0"), ("rho_growth", "0.5"), ("gamma", "2"),
                                      ("max_iter", "0"), ("max_iter", "1.5"), ("tol", "-1")])
def test_invalid_text_is_shown_invalid_and_not_applied(panel, qtbot, key, bad):
    w = fields(panel)[key]
    good = 5 if key == "max_iter" else 0.25 if key != "rho_growth" else 1.05
    type_into(qtbot, w, str(good))
    got = []
    panel.changed.connect(got.append)
    type_into(qtbot, w, bad, enter=False)
    assert w.text() == bad                       # what was typed stays while editing…
    assert not w.is_valid() and "ff6b6b" in w.styleSheet()  # …in red
    assert "not applied" in w.toolTip()
    s = panel.settings()
    assert (getattr(s, key) if key in ("lam", "beta") else s.admm[key]) == good
    assert not got
    qtbot.keyClick(w, Qt.Key.Key_Return)           # leaving it puts the value in effect back
    assert w.value() == good and w.is_valid() and float(w.text()) == good


def test_up_down_step_from_the_default(panel, qtbot):
    w = panel.admm["max_iter"]
    w.setFocus()
    qtbot.keyClick(w, Qt.Key.Key_Up)
    assert panel.settings().admm["max_iter"] == ADMMParams().max_iter + 100
    g = panel.admm["gamma"]
    g.setValue(1.9)
    qtbot.keyClick(g, Qt.Key.Key_Up)  # 2.0 is not a valid γ: nothing happens
    assert panel.settings().admm["gamma"] == pytest.approx(1.9)


@pytest.mark.slow
def test_settings_with_none_round_trip(panel, win, qtbot, tmp_path):
    # None (default) and 0 stay apart, through the panel and through a session file
    s = SolverSettings(lam=None, beta=0.0, admm={"max_iter": 40})
    panel.set_settings(s)
    assert panel.settings() == s
    assert shown(panel.lam).startswith("default (") and shown(panel.beta) == "0"
    assert shown(panel.admm["rho0"]).startswith("default (")
    panel.set_settings(SolverSettings(lam=0.0))
    assert panel.settings().lam == 0.0 and panel.settings().beta is None
    import cv2
    img, _ = synthetic()
    path = tmp_path / "img.png"
    cv2.imwrite(str(path), img[:, :, ::-1])
    assert win.open_path(str(path))
    win.params_panel.set_settings(SolverSettings(lam=0.0, beta=None, admm={"gamma": 1.5}))
    win.doc.set_settings(win.current_settings())
    sess = tmp_path / "s.json"
    assert win.save_session(str(sess))
    w2 = MainWindow(confirm_discard=False)
    qtbot.addWidget(w2)
    assert w2.open_session(str(sess))
    got = w2.params_panel.settings()
    assert got.lam == 0.0 and got.beta is None and got.admm == {"gamma": 1.5}
    assert shown(w2.params_panel.beta).startswith("auto")
    assert shown(w2.params_panel.admm["max_iter"]) == f"default ({ADMMParams().max_iter})"


def _texts(plot_widget, *words):
    """Scene rectangles of the text items in ``plot_widget`` that show any of ``words``."""
    out = []
    for it in plot_widget.scene().items():
        if isinstance(it, QGraphicsTextItem) and it.isVisible():
            if any(w in it.toPlainText() for w in words):
                out.append(it.mapRectToScene(it.boundingRect()))
    return out


def _check_clear(plot_widget, curves, words):
    view = plot_widget.getViewBox()
    box = view.mapRectToScene(view.boundingRect())
    rects = _texts(plot_widget, *words)
    assert rects, words
    for r in rects:
        assert not r.intersects(box), (words, r, box)
        for c in curves:  # the visible part of each curve's data
            data = view.mapRectToScene(c.boundingRect()).intersected(box)
            assert not r.intersects(data)
        # and whole inside the plot
        assert plot_widget.sceneRect().contains(r) or plot_widget.rect().contains(r.toRect())


@pytest.mark.slow
def test_legends_and_reference_label_stay_clear_of_the_curves(win, qtbot):
    load(win, qtbot)
    with qtbot.waitSignal(win.solver.finished, timeout=60000):
        win.start_run()
    qtbot.wait(50)
    p = win.plot
    assert p.ref_line.isVisible() and p.n_points() > 0
    _check_clear(p.energy, [p.c_cont, p.c_round], ("rounded", "continuous x", "min-cut"))
    _check_clear(p.resid, [p.c_box, p.c_sph], ("box", "sphere"))


def _plot_of_a_run(qtbot, width, rounded_step, constraints):
    """A shown energy plot ``width`` pixels wide holding 360 made-up iterations (rounded energy
    falling by ``rounded_step`` each; a constraints residual if asked) and a reference line."""
    from types import SimpleNamespace

    from segapp.ui.plot import EnergyPlot
    plot = EnergyPlot()
    qtbot.addWidget(plot)
    plot.resize(width, 360)
    plot.show()
    qtbot.waitExposed(plot)
    records = [SimpleNamespace(iteration=it, energy_continuous=-1.2e6 + 100.0 * it,
                               energy_rounded=-1.0e6 - rounded_step * it, residual_box=0.1,
                               residual_sphere=0.1,
                               residual_constraints=0.01 / it if constraints else 0.0)
               for it in range(1, 361)]
    plot.set_history(records, reference=-1.09867e6)
    return plot


def test_legend_wraps_in_a_narrow_plot(qtbot):
    plot = _plot_of_a_run(qtbot, 260, 200.0, constraints=True)
    plot.set_reference(-1.09867e6, bound=-1.2e6, name="parametric min-cut")
    qtbot.wait(50)
    _check_clear(plot.energy, [plot.c_cont, plot.c_round], ("-1.09867e+06", "lower bound"))
    assert "parametric min-cut -1.09867e+06" in plot.legend_names()
    _check_clear(plot.resid, [plot.c_box, plot.c_sph, plot.c_con], ("constraints",))
    for rect in _texts(plot.energy, "lower bound"):
        assert rect.right() <= plot.energy.width() + 1


def test_legend_entries_are_never_broken_inside_and_the_answer_is_a_point(qtbot):
    """In a narrow plot the legend wraps only between entries (Qt broke "α-expansion" after
    its hyphen); the answer after the polish is a named point at the last iteration, inside
    the y range, and a new run clears it."""
    plot = _plot_of_a_run(qtbot, 300, 100.0, constraints=False)
    plot.set_reference(-1.09867e6, name="α-expansion")
    plot.set_final(360, -1.09867e6 - 2.0e4)  # below every curve and the line
    qtbot.wait(50)
    assert plot.final_point() == (360.0, -1.11867e6)
    assert "after polish -1.11867e+06" in plot.legend_names()
    lo, hi = plot.y_range()
    assert lo < -1.11867e6 < hi
    text = plot.legends()[0].text
    plain = text.toPlainText()
    layout = text.document().firstBlock().layout()
    starts = [layout.lineAt(i).textStart() for i in range(layout.lineCount())]
    assert len(starts) > 1  # it does wrap here
    for start in starts[1:]:  # every break falls on the plain space between entries
        assert plain[start - 1] == " ", plain[max(start - 12, 0):start + 12]
    plot.reset()
    assert plot.final_point() is None and not any(
        n.startswith("after polish") for n in plot.legend_names())


def _memory_label(panel):
    for lab in panel.findChildren(QLabel):
        m = re.search(r"(\d+) frames? kept, ([\d.]+) (kB|MB)", lab.text())
        if m and lab.isVisible():
            return int(m[1]), float(m[2]) * (1e3 if m[3] == "kB" else 1e6), m[3]
    return None


@pytest.mark.slow
def test_results_show_the_replay_memory(win, qtbot):
    load(win, qtbot)
    with qtbot.waitSignal(win.solver.finished, timeout=60000):
        win.start_run()
    store = win.frames
    assert len(store) >= 2 and store.nbytes() == sum(f.nbytes for f in store.frames) > 0
    got = _memory_label(win.results_panel)
    assert got is not None
    n, size, unit = got
    assert n == len(store)
    assert abs(size - store.nbytes()) <= (500 if unit == "kB" else 5e4)
    win.forget_run()  # a new image frees the replay, and the row says nothing
    assert _memory_label(win.results_panel) is None


def test_frame_store_stays_under_its_byte_cap(qtbot):
    rng = np.random.default_rng(0)
    frame = 32 * 32 * 3  # bytes of one stored frame
    store = FrameStore(capacity=1000, max_side=32, max_bytes=10 * frame + 100)
    for it in range(1, 301):
        store.add(it, rng.random((32, 32, 3)))
        assert store.nbytes() == sum(f.nbytes for f in store.frames) <= store.max_bytes
        assert store.iterations[0] == 1 and store.iterations[-1] == it
        assert len(store) >= min(it, 2)
    assert 5 <= len(store) <= 10
    assert all(a < b for a, b in zip(store.iterations, store.iterations[1:]))
    it, probs = store.get(len(store) - 1)  # replay still reads every frame
    assert it == 300 and probs.shape == (32, 32, 3) and probs.dtype == np.float32
    # a frame larger than half the cap is stored coarser: the first and the last still fit
    big = FrameStore(max_side=32, max_bytes=frame)
    for it in range(1, 6):
        big.add(it, rng.random((32, 32, 3)))
        assert big.nbytes() <= big.max_bytes and big.iterations[0] == 1
    assert big.iterations[-1] == 5 and len(big) >= 2
    assert big.frames[0].shape == (16, 16, 3)


def test_a_frame_sent_again_replaces_the_last_and_is_counted_once(qtbot):
    """The last iteration sent twice (the final frame after the last live one) replaces the
    stored frame: one frame for it, its pixels the newer, and the bytes counted once."""
    rng = np.random.default_rng(1)
    store = FrameStore(capacity=100, max_side=16)
    first, second, again = (rng.random((16, 16, 2)) for _ in range(3))
    store.add(1, first)
    store.add(4, second)
    store.add(4, again)
    assert store.iterations == [1, 4]
    assert store.nbytes() == sum(f.nbytes for f in store.frames) == 2 * 16 * 16 * 2
    np.testing.assert_allclose(store.get(1)[1], again, atol=0.5 / 255 + 1e-7)


def test_a_byte_cap_below_one_pixel_stores_one_pixel_frames(qtbot):
    """A cap smaller than any frame still stores (one-pixel frames), and ends."""
    store = FrameStore(max_side=8, max_bytes=2)
    store.add(1, np.random.default_rng(2).random((8, 8, 3)))
    assert store.frames[0].shape == (1, 1, 3)
