"""Qt tests of the Constraints tab (offscreen): it follows K, feeds the run, shows areas and
whether each constraint holds, refuses bad bounds in a dialog keeping the strokes, and is saved
in sessions."""
from __future__ import annotations

import numpy as np
import pytest

from PyQt6.QtWidgets import QMessageBox  # noqa: E402

from segapp.ui.main_window import MainWindow  # noqa: E402
from tests.segapp.ui.test_ui import load  # noqa: E402


def _bound(win, label, lo, hi, unit="%"):
    row = win.constraints_panel.rows[label - 1]
    row.unit.setCurrentIndex(0 if unit == "%" else 1)
    row.lo.setValue(lo)
    row.hi.setValue(hi)
    row.on.setChecked(True)


def test_the_panel_follows_k_and_writes_the_settings(win, qtbot):
    load(win, qtbot)
    panel = win.constraints_panel
    assert len(panel.rows) == 2 and not panel.apart_box.isEnabled()
    _bound(win, 2, 25.0, 30.0)
    assert win.doc.settings.area == ["2:0.25-0.3"]
    _bound(win, 1, 100, 900, unit="px")
    assert win.doc.settings.area == ["1:100px-900px", "2:0.25-0.3"]
    win.doc.set_k(3)
    assert len(panel.rows) == 3 and panel.apart_box.isEnabled() and len(panel.apart) == 3
    assert win.doc.settings.area == ["1:100px-900px", "2:0.25-0.3"]  # kept across K
    panel.nest.click()
    assert win.doc.settings.apart == ["1,3"]
    panel.rows[0].on.setChecked(False)
    win.doc.set_k(2)
    assert win.doc.settings.area == ["2:0.25-0.3"] and win.doc.settings.apart == []


@pytest.mark.slow
def test_a_run_with_an_area_bound_meets_it_and_says_so(win, qtbot):
    load(win, qtbot)  # the disc covers 19.6% of the image
    win.act_warm.setChecked(False)
    _bound(win, 2, 25.0, 30.0)
    with qtbot.waitSignal(win.solver.finished, timeout=120000):
        assert win.start_run()
    o = win.outcome
    area = float((o.labels == 2).mean())
    assert 0.25 <= area <= 0.30 and o.feasible
    text = win.results_panel.fields["constraints"].text()
    assert "area of 2" in text and "holds" in text
    assert win.results_panel.fields["constraints"].isVisible()
    assert win.constraints_panel.rows[1].now.text() == f"{100 * area:.1f} %"
    assert win.results_panel.fields["reference"].text().endswith("(parametric min-cut)")
    assert win.plot._rleg.has(win.plot.c_con)  # the residual is plotted, and in the legend
    assert len(win.plot.c_con.getData()[0]) == win.plot.n_points()
    assert o.reference_bound is not None and o.reference_bound <= o.reference_energy
    assert win.plot.bound_line.isVisible() == (o.reference_bound < o.reference_energy - 1e-6)


def test_bad_bounds_are_refused_in_a_dialog_and_the_strokes_kept(win, qtbot, monkeypatch):
    calls = []
    monkeypatch.setattr(QMessageBox, "critical", lambda *a, **k: calls.append(a))
    _, s = load(win, qtbot)
    _bound(win, 2, 30.0, 10.0)  # lower above upper: refused before the run starts
    assert not win.start_run() and not win.running
    assert "lower bound is above" in calls[-1][2]
    _bound(win, 2, 0, 3, unit="px")  # the strokes alone cover more than 3 pixels
    assert not win.start_run() and not win.running
    assert "more than its upper bound" in calls[-1][2]
    win.doc.set_k(3)
    win.constraints_panel.nest.click()
    win.constraints_panel.rows[1].on.setChecked(False)
    s3 = s.copy()
    s3[20, 14] = 3  # a label-3 stroke pixel beside a label-1 one
    s3[20, 13] = 1
    win.doc.set_layers(strokes=s3)
    assert not win.start_run() and not win.running
    assert "Labels 1 and 3 are apart" in calls[-1][2]
    s = s3
    assert np.array_equal(win.doc.strokes, s) and win.act_run.isEnabled()
    assert all("\n" not in c[2] for c in calls)


def test_apart_pairs_no_labelling_can_meet_are_refused_in_a_dialog(win, qtbot, monkeypatch):
    """Every pair of three labels apart leaves one label for the image: refused before the
    run, in one sentence, with the strokes and the pairs kept for the person to change."""
    calls = []
    monkeypatch.setattr(QMessageBox, "critical", lambda *a, **k: calls.append(a))
    _, s = load(win, qtbot)
    win.doc.set_k(3)
    s3 = s.copy()
    s3[2, 2:6] = 3
    win.doc.set_layers(strokes=s3)
    for pair in ((1, 2), (1, 3), (2, 3)):
        win.constraints_panel.apart[pair].setChecked(True)
    assert sorted(win.doc.settings.apart) == ["1,2", "1,3", "2,3"]
    assert not win.start_run() and not win.running
    assert "only one label could appear" in calls[-1][2] and "\n" not in calls[-1][2]
    assert np.array_equal(win.doc.strokes, s3) and len(win.doc.settings.apart) == 3


def test_constraints_are_saved_in_sessions(win, qtbot, tmp_path):
    load(win, qtbot)
    win.doc.set_k(3)
    _bound(win, 3, 5.0, 12.5)
    win.constraints_panel.nest.click()
    sess = tmp_path / "c.json"
    win.doc.image_path = None
    import cv2
    cv2.imwrite(str(tmp_path / "img.png"), win.doc.image[:, :, ::-1])
    win.doc.image_path = str(tmp_path / "img.png")
    assert win.save_session(str(sess))
    w2 = MainWindow(confirm_discard=False)
    qtbot.addWidget(w2)
    assert w2.open_session(str(sess))
    assert w2.doc.settings.area == ["3:0.05-0.125"] and w2.doc.settings.apart == ["1,3"]
    assert w2.constraints_panel.texts() == (["3:0.05-0.125"], ["1,3"])
    assert w2.constraints_panel.rows[2].on.isChecked()
    assert w2.constraints_panel.apart[(1, 3)].isChecked()


@pytest.mark.slow
def test_each_constraint_sample_opens_with_its_constraints(win, qtbot):
    from segapp.ui.fileops import list_constraint_samples

    samples = list_constraint_samples()
    assert {s["image"].stem for s in samples} == {"cells", "washer", "cameraman"}
    menu = [a.text() for a in win.samples_menu.actions()]
    assert "With constraints" in menu
    # every plain entry is a photo with strokes, not a stroke or hard-constraint layer
    assert not any("_hard" in t or "_strokes" in t for t in menu), menu
    for s in samples:
        assert win.open_sample(s["image"], s["strokes"], s["k"], hard=s["hard"],
                               area=s["area"], apart=s["apart"])
        assert win.doc.k == s["k"] and win.doc.strokes.any()
        assert win.doc.hard.any() == (s["hard"] is not None)
        assert win.constraints_panel.texts() == (s["area"], s["apart"])
        assert (win.doc.settings.area, win.doc.settings.apart) == (s["area"], s["apart"])
        assert win.side_tabs.currentWidget() is win.constraints_panel
        # the sample's constraints accept its strokes and hard constraints
        from segapp.ui.runctl import build_params
        params = build_params(win.doc.k, win.current_settings())
        params.constraints.validate(win.doc.k, win.doc.shape, seeds=win.doc.strokes,
                                    hard=win.doc.hard)
    plain = win.open_sample(samples[0]["image"], samples[0]["strokes"], 3)
    assert plain and win.constraints_panel.texts() == ([], [])  # a plain sample clears them
