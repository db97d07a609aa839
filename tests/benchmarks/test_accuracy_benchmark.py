"""The ground-truth benchmark (benchmarks/accuracy.py, benchmarks/accuracy_data.py): its metrics
on shapes with known answers, the composites' ground truth, the fixed split, the robot user's
clicks, and a tiny run of the script end to end."""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return sys.modules[name]


data = _load("accuracy_data")
acc = _load("accuracy")


def square(shape=(64, 64), y0=10, x0=10, side=20):
    m = np.zeros(shape, bool)
    m[y0:y0 + side, x0:x0 + side] = True
    return m


# -- metrics --------------------------------------------------------------------------------------

def test_iou_on_known_shapes():
    truth = np.where(square(), 1, 2)
    assert acc.iou(truth, truth, 2) == 1.0
    shifted = np.where(square(x0=20), 1, 2)  # 20x20 squares overlapping by 20x10
    assert acc.iou(shifted, truth, 2) == pytest.approx(200 / 600)
    assert acc.iou(np.full_like(truth, 2), truth, 2) == 0.0
    # K = 3: the mean over labels; a swapped pair of labels scores 0 on both
    three = np.full((10, 10), 3)
    three[:, :3], three[:, 3:5] = 1, 2
    swapped = three.copy()
    swapped[three == 1], swapped[three == 2] = 2, 1
    assert acc.iou(three, three, 3) == 1.0
    assert acc.iou(swapped, three, 3) == pytest.approx(1 / 3)


def test_boundary_is_the_inner_edge_without_the_image_border():
    b = acc.boundary(square(side=20))
    assert b.sum() == 4 * 20 - 4
    assert not b[12:28, 12:28].any()  # (the inside)
    full = acc.boundary(np.ones((8, 8), bool))
    assert not full.any()  # the image border is no boundary
    half = np.zeros((16, 16), bool)
    half[8:] = True
    assert np.array_equal(np.nonzero(acc.boundary(half))[0], np.full(16, 8))


def test_boundary_f_on_known_answers():
    def halves(row):
        m = np.zeros((40, 40), bool)
        m[row:] = True
        return m

    truth = halves(20)
    assert acc.boundary_pr(truth, truth) == (1.0, 1.0, 1.0)
    assert acc.boundary_pr(halves(22), truth)[0] == 1.0  # 2 px off: within the tolerance
    assert acc.boundary_pr(halves(23), truth)[0] == 0.0  # 3 px off: outside it
    assert acc.boundary_pr(halves(23), truth, tol=3)[0] == 1.0
    # a 40 x 40 square found, plus a far 5 x 5 speck: recall 1, precision 156 / (156 + 16)
    gt = square((100, 100), 10, 10, 40)
    pred = gt | square((100, 100), 80, 80, 5)
    f, p, r = acc.boundary_pr(pred, gt)
    assert (p, r) == (pytest.approx(156 / 172), 1.0)
    assert f == pytest.approx(2 * p / (1 + p))
    # nothing found: 0; nothing there and nothing found: 1
    assert acc.boundary_pr(np.zeros_like(gt), gt)[0] == 0.0
    assert acc.boundary_pr(np.zeros_like(gt), np.zeros_like(gt))[0] == 1.0
    assert acc.boundary_f(np.where(pred, 1, 2), np.where(gt, 1, 2), 2) == pytest.approx(f)


# -- the composites -------------------------------------------------------------------------------

def test_soft_alpha_has_its_half_level_exactly_on_the_mask():
    yy, xx = np.mgrid[:60, :60]
    mask = (yy - 30) ** 2 + (xx - 28) ** 2 <= 18 ** 2  # a disk with a notch and a speck
    mask[28:33, 40:50] = False
    mask[5, 55] = True
    for edge in (1.0, 1.5, 2.0):
        alpha = data.soft_alpha(mask, edge)
        assert np.array_equal(alpha >= 0.5, mask)
        soft = (alpha > 0) & (alpha < 1)
        assert soft.any() and not soft[25:35, 22:33].any()  # soft only near the edge
        near = acc._distance_to(acc.boundary(mask) | acc.boundary(~mask))
        assert near[soft].max() <= edge + 1e-6


@pytest.mark.slow
def test_composites_ground_truth_is_their_alpha_and_overlap_is_measured():
    for case in data.cases("tuning", quick=True):
        comp = data.render(data.recipe_for(case), 12_000)
        assert comp.image.dtype == np.uint8 and comp.image.shape == (*comp.truth.shape, 3)
        assert set(np.unique(comp.truth)) == set(range(1, case.k + 1))
        # the last pasted layer owns its alpha >= 0.5; the objects' union is alpha >= 0.5
        assert np.array_equal(comp.alphas[-1] >= 0.5, comp.truth == case.k - 1 if case.k == 3
                              else comp.truth == 1)
        union = np.any([a >= 0.5 for a in comp.alphas], axis=0)
        assert np.array_equal(union, comp.truth < case.k)
        assert 0.0 <= comp.overlap <= 1.0
    # Bhattacharyya: same pixels 1, disjoint colours 0
    a = np.tile(np.array([[10, 10, 10]], np.uint8), (50, 1))
    assert data.bhattacharyya(a, a) == pytest.approx(1.0)
    assert data.bhattacharyya(a, 255 - a) == 0.0


def test_case_list_covers_kinds_sizes_tiers_and_k():
    todo = data.cases()
    assert len(todo) == 48
    assert {c.k for c in todo} == {2, 3}
    assert {c.pixels for c in todo} == {100_000, 300_000, 1_000_000, 3_000_000}
    assert sum(c.pixels <= 1_000_000 for c in todo) >= 0.9 * len(todo)
    assert {c.target for c in todo} == set(data.TIERS)
    assert len(data.cases(max_pixels=1e6)) == 46
    assert all(c.pixels == data.QUICK_PIXELS for c in data.cases(quick=True))


@pytest.mark.slow
def test_split_is_fixed_by_source_name_and_balanced():
    split = data.split_of()
    held = {n for n, s in split.items() if s == "held-out"}
    # the held-out half must not move: tuning results would leak into it
    assert held >= {"astronaut", "chelsea", "immunohistochemistry", "retina", "brick", "grass",
                    "gravel", "logo"}
    assert "horse" not in held and "coffee" not in held
    for group in (data.COLOUR_PHOTOS, data.GREY_PHOTOS, data.SHAPES, data.COINS):
        assert sum(split[n] == "held-out" for n in group) == len(group) // 2
    tuning, heldout = data.cases("tuning"), data.cases("held-out")
    assert [(c.kind, c.k, c.pixels, c.target) for c in tuning] == \
        [(c.kind, c.k, c.pixels, c.target) for c in heldout]
    # a composite draws only on its own half's named sources
    for case in tuning[:4] + heldout[:4]:
        r = data.recipe_for(case)
        names = [r.background] + [n for layer in r.layers
                                  for n in (layer.source, layer.texture) if n]
        assert all(split.get(n, case.split) == case.split for n in names if n != "blob")


def test_inputs_are_shaped_like_use_and_deterministic():
    case = data.cases("held-out", quick=True)[1]
    comp = data.render(data.recipe_for(case), 30_000)
    inputs = data.make_inputs(case, comp, seed=0)
    assert [i.kind for i in inputs] == list(data.INPUT_KINDS)
    rect = inputs[0].rect
    x, y, w, h = rect
    ys, xs = np.nonzero(comp.truth == 1)
    assert x <= xs.min() and y <= ys.min() and x + w > xs.max() and y + h > ys.max()
    bw, bh = xs.max() - xs.min() + 1, ys.max() - ys.min() + 1
    assert w <= 1.21 * bw + 2 and h <= 1.21 * bh + 2  # a 3-10 % margin a side
    for inp in inputs[1:]:
        assert inp.strokes is not None
        for lab in (1, 2):  # strokes lie inside their label's truth
            assert np.all(comp.truth[inp.strokes == lab] == lab)
    assert set(np.unique(inputs[2].strokes)) == {0, 1, 2}
    again = data.make_inputs(case, comp, seed=0)
    assert np.array_equal(again[2].strokes, inputs[2].strokes) and again[0].rect == rect
    assert not np.array_equal(data.make_inputs(case, comp, seed=1)[2].strokes, inputs[2].strokes)


# -- the simulated user ---------------------------------------------------------------------------

def test_robot_user_clicks_the_centre_of_the_largest_error_region():
    truth = np.zeros((60, 80), bool)
    truth[10:50, 10:40] = True
    pred = truth.copy()
    pred[20:29, 20:29] = False          # a 9 x 9 hole: false negatives, centre (24, 24)
    pred[30:45, 55:70] = True           # a 15 x 15 false positive: the largest, centre (62, 37)
    assert acc.next_click(pred, truth) == (62, 37, 2)
    pred[30:45, 55:70] = False
    assert acc.next_click(pred, truth) == (24, 24, 1)
    # a region on the image border: the border is its edge, so the click moves inwards
    pred = truth.copy()
    pred[0:10, 60:80] = True
    x, y, label = acc.next_click(pred, truth)
    assert label == 2 and 4 <= y <= 5 and 64 <= x <= 75
    assert acc.next_click(truth, truth) is None
    assert acc.click_radius((1000, 1000)) == 4 and acc.click_radius((2000, 1500)) == 7


def test_noc_counts_strokes_to_the_first_pass():
    assert acc.noc([0.7, 0.8, 0.86, 0.84, 0.91], 0.85) == 2
    assert acc.noc([0.7, 0.8, 0.86, 0.84, 0.91], 0.90) == 4
    assert acc.noc([0.95], 0.90) == 0
    assert acc.noc([0.5, 0.6], 0.90, cap=20) == 20


def test_simulate_stops_at_the_target_and_follows_the_clicks():
    truth = np.full((40, 40), 2)
    truth[5:35, 5:35] = 1

    class Fake:  # a method that labels each clicked disk and nothing else
        def start(self):
            self.labels = np.full(truth.shape, 2)
            self.labels[5:35, 5:20] = 1  # half found
            return self.labels.copy()

        def correct(self, where, label):
            self.labels[where] = label
            return self.labels.copy()

    res = acc.simulate(Fake(), truth, max_strokes=20)
    assert res["ious"][0] == pytest.approx(0.5)
    assert all(truth[y, x] == 1 and lab == 1 for x, y, lab in res["clicks"])
    assert len(res["times"]) == len(res["ious"]) == len(res["clicks"]) + 1
    assert res["ious"][-1] >= 0.9 or len(res["clicks"]) == 20
    first = next((i for i, v in enumerate(res["ious"]) if v >= 0.9), 20)
    assert res["noc90"] == first
    again = acc.simulate(Fake(), truth, max_strokes=20)
    assert again["clicks"] == res["clicks"] and again["ious"] == res["ious"]


def test_a_session_that_depends_on_its_input_alone_stops_when_a_stroke_adds_nothing():
    truth = np.full((40, 40), 2)
    truth[5:35, 5:35] = 1

    class Stuck:  # soft strokes that change nothing: the same click comes back
        def __init__(self):
            self.strokes = np.zeros(truth.shape, np.uint8)
            self.runs = 0

        def start(self):
            self.runs += 1
            out = np.full(truth.shape, 2)
            out[5:35, 5:20] = 1
            return out

        def unchanged_by(self, where, label):
            return bool(np.all(self.strokes[where] == label))

        def correct(self, where, label):
            self.strokes[where] = label
            return self.start()

    session = Stuck()
    res = acc.simulate(session, truth, max_strokes=20)
    assert res["stalled"] == 1 and len(res["clicks"]) == 1 and session.runs == 2
    assert res["noc85"] == res["noc90"] == 20


# -- end to end -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_quick_run_writes_valid_json_markdown_and_figure(tmp_path):
    assert acc.main(["--quick", "--split", "tuning", "--max-pixels", "12000",
                     "--user-strokes", "2", "--no-warm-up", "--figure-rows", "2",
                     "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "accuracy.json").read_text())
    assert doc["settings"]["split_run"] == "tuning"
    assert len(doc["settings"]["product"]["source_sha256"]) == 16
    assert {c["split"] for c in doc["cases"]} == {"tuning"}
    assert {c["k"] for c in doc["cases"]} == {2, 3}
    runs = doc["runs"]
    assert {r["method"] for r in runs} == set(acc.DEFAULT_METHODS)
    assert {r["input"] for r in runs} == set(data.INPUT_KINDS)
    assert all(0 <= r["iou"] <= 1 and 0 <= r["bf"] <= 1 and r["time_s"] > 0 for r in runs)
    assert not any(r["method"] == "grabcut" and r["k"] == 3 for r in runs)
    assert all(r["input"] == "strokes" for r in runs if r["method"] == "random_walker")
    assert {u["method"] for u in doc["user"]} == set(acc.DEFAULT_USERS)
    for u in doc["user"]:
        assert len(u["ious"]) == len(u["clicks"]) + 1 <= 3 and 0 <= u["noc90"] <= 2
    assert {s["split"] for s in doc["summary"]["runs"]} == {"tuning"}
    md = (tmp_path / "accuracy.md").read_text()
    assert "## Summary" in md and "| tuning | all | 2 |" in md and "NoC@90" in md
    png = (tmp_path / "accuracy.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_the_corrections_benchmark_times_both_ways_of_each_correction(tmp_path):
    """benchmarks/corrections.py end to end on one small composite: each correction is re-run
    cold and as a correction, and the summary is the sessions' own figures."""
    corr = _load("corrections")
    assert corr.main(["--split", "tuning", "--pixels", "1e5", "--strokes", "2",
                      "--max-cases", "1", "--out", str(tmp_path)]) == 0
    out = json.loads((tmp_path / "corrections.json").read_text())
    rows = [r for s in out["sessions"] for r in s["strokes"]]
    assert 1 <= len(rows) <= 2 and out["summary"]["corrections"] == len(rows)
    assert out["summary"]["cold_median_s"] == pytest.approx(
        float(np.median([r["cold_s"] for r in rows])))
    assert all(0 <= r["iou_correction"] <= 1 and r["correction_s"] > 0 for r in rows)
    # the gaps to each run's own min-cut: none below it (min-cut is exact), and K = 2 lands on it
    assert all(-1e-9 <= r[g] <= 1e-4 for r in rows for g in ("gap_cold", "gap_correction"))
    assert out["summary"]["gap_correction_worst"] == max(r["gap_correction"] for r in rows)
    md = (tmp_path / "corrections.md").read_text()
    assert "| correction (from the last answer) |" in md and "worst energy gap" in md


def test_a_model_option_of_the_benchmark_changes_the_model_segapp_and_min_cut_run(monkeypatch):
    """``--model-option NAME=VALUE``: a ModelOptions field in its own type, refused in one line
    for an unknown name, and the model that segapp's methods then build their params with."""
    import argparse

    acc = _load("accuracy")
    assert acc._model_option("rect_rounds=5") == ("rect_rounds", 5)
    assert acc._model_option("fix_strokes=0") == ("fix_strokes", False)
    assert acc._model_option("unlabelled=None") == ("unlabelled", None)
    assert acc._model_option("tol=0.01") == ("tol", 0.01)
    with pytest.raises(argparse.ArgumentTypeError, match="rect_rounds"):
        acc._model_option("rounds=5")
    monkeypatch.setattr(acc, "MODEL_CHANGES", {"rect_rounds": 1})
    assert acc._model().rect_rounds == 1 and acc._model().stroke_rounds == 3
