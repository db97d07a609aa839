"""The real-inputs benchmark (benchmarks/real_inputs.py): its split, its drawn inputs and a tiny
run of the script."""

import importlib.util
import json
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

spec = importlib.util.spec_from_file_location(
    "real_inputs", Path(__file__).resolve().parents[2] / "benchmarks" / "real_inputs.py")
real_inputs = importlib.util.module_from_spec(spec)
sys.modules.setdefault("real_inputs", real_inputs)  # (its dataclasses look their module up)
spec.loader.exec_module(real_inputs)


def test_split_is_by_image_fixed_and_balanced():
    split = real_inputs.split_of()
    assert set(split) == {s.name for s in real_inputs.IMAGES}
    held = {n for n, s in split.items() if s == "heldout"}
    # the held-out half must not move: tuning results would leak into it
    assert held == {"coffee", "washer", "chelsea", "immunohistochemistry", "coins",
                    "hubble_deep_field"}
    for source in ("assets", "skimage"):
        names = [s.name for s in real_inputs.IMAGES if s.source == source]
        assert sum(split[n] == "heldout" for n in names) == len(names) // 2
    for case in real_inputs.cases():
        assert case.split == split[case.image]


def test_case_list_spans_kinds_sizes_and_labels():
    todo = real_inputs.cases()
    assert {c.kind for c in todo} == set(real_inputs.KINDS)
    assert {c.k for c in todo} == {2, 3, 4, 5}
    assert {c.pixels for c in todo} == {10_000, 30_000, 100_000, 300_000, 1_000_000}
    assert max(c.pixels for c in real_inputs.cases(3e6)) == 3_000_000
    assert all(c.split == "tuning" for c in real_inputs.cases(split="tuning"))


def test_inputs_are_deterministic_and_shaped_like_use():
    case = real_inputs.Case("coffee", "short", 4, 30_000, "heldout")
    img, strokes, rect = real_inputs.make_input(case, 0)
    again = real_inputs.make_input(case, 0)[1]
    assert rect is None and np.array_equal(strokes, again)
    assert abs(img.shape[0] * img.shape[1] - 30_000) < 300
    assert set(np.unique(strokes)) == {0, 1, 2, 3, 4}
    n, _, stats, _ = cv2.connectedComponentsWithStats((strokes > 0).astype(np.uint8))
    assert 4 <= n - 1 <= 12  # 2-3 short strokes a label (some may touch)
    assert max(np.hypot(w, h) for _, _, w, h, _ in stats[1:]) < 60  # short: 10-40 px + width
    case = real_inputs.Case("astronaut", "rect+strokes", 2, 10_000, "tuning")
    img, strokes, rect = real_inputs.make_input(case, 0)
    x, y, w, h = rect
    assert 0 <= x and 0 <= y and x + w <= img.shape[1] and y + h <= img.shape[0]
    assert w * h < img.shape[0] * img.shape[1]
    assert set(np.unique(strokes)) == {0, 1, 2}


@pytest.mark.slow
def test_script_runs_a_tiny_setting(tmp_path):
    assert real_inputs.main(["--quick", "--max-pixels", "1e4", "--split", "tuning",
                             "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "real_inputs.json").read_text())
    assert "cells" in data["settings"]["split"]["tuning"]
    recs = data["records"]
    assert {r["kind"] for r in recs} == set(real_inputs.KINDS)
    for r in recs:
        assert r["split"] == "tuning" and r["n"] <= 10_100
        assert r["gap"] == (r["energy_admm"] - r["energy_ref"]) / abs(r["energy_ref"])
        assert r["time_ratio"] > 0
        # the polish stage by stage: its gains add up to what it took off ADMM's labels
        assert r["stages"] and sum(st["gain"] for st in r["stages"]) == pytest.approx(
            r["energy_unpolished"] - r["energy_admm"], rel=1e-9, abs=1e-6)
    # K > 2 beside gco-v3, the peer a user could pick, on the same problem right after ADMM
    multi = [r for r in recs if r["k"] > 2]
    assert multi and all(r["gco_ratio"] > 0 and r["gap_gco"] == pytest.approx(
        (r["energy_admm"] - r["energy_gco"]) / abs(r["energy_gco"])) for r in multi)
    assert not any("energy_gco" in r for r in recs if r["k"] == 2)
    md = (tmp_path / "real_inputs.md").read_text()
    assert "median time over gco" in md
    assert "| tuning | all | 2 |" in md and "## Cases" in md
    assert "## The polish's stages" in md and "| tuning | 2 | icm |" in md


def test_the_stage_table_counts_the_cases_a_stage_took_something_in():
    recs = [{"split": "tuning", "k": 2, "energy_admm": -90.0, "energy_unpolished": -80.0,
             "stages": [{"name": "icm", "gain": 4.0, "time_s": 0.1},
                        {"name": "tv", "gain": 6.0, "time_s": 0.3}]},
            {"split": "tuning", "k": 2, "energy_admm": -50.0, "energy_unpolished": -50.0,
             "stages": [{"name": "icm", "gain": 0.0, "time_s": 0.1},
                        {"name": "tv", "gain": 0.0, "time_s": 0.5}]}]
    md = real_inputs.stages_table(recs)
    assert "| tuning | 2 | icm | 2 | 1 | 40.0% | 20.0% |" in md
    assert "| tuning | 2 | tv | 2 | 1 | 60.0% | 80.0% |" in md


def test_block_edges_are_straight_runs_on_cell_lines_the_yardstick_lacks():
    ref = np.ones((64, 64), np.int32)
    admm = ref.copy()
    admm[20:40, 8:40] = 2  # a block whose top edge runs on row 20 (a multiple of 4), 32 px
    assert real_inputs.block_edges(admm, ref, solved_whole=False) >= 2  # top and bottom rows
    assert real_inputs.block_edges(admm, ref, solved_whole=True) == 0
    assert real_inputs.block_edges(admm, admm, solved_whole=False) == 0  # the yardstick too
    short = ref.copy()
    short[20:40, 8:20] = 2  # 12 px along the rows, but 20 px down columns 8 and 20
    assert real_inputs.block_edges(short, ref, solved_whole=False) == 2
    odd = ref.copy()
    odd[21:39, 9:41] = 2  # off the cell lines: row 21 and 39, columns 9 and 41
    assert real_inputs.block_edges(odd, ref, solved_whole=False) == 0


def test_edge_losses_count_the_block_edges_whose_region_the_yardstick_labels_better():
    """A block ADMM labels 2 along cell lines: a loss where the data prefer the yardstick's 1
    there, none where they prefer ADMM's 2 (the yardstick is not the optimum for K > 2), none
    off the cell lines or for an image solved whole."""
    from solver.mrf import problem_from_unary

    ref = np.ones((64, 64), np.int32)
    admm = ref.copy()
    admm[20:40, 8:40] = 2
    image = np.full((64, 64, 3), 128, np.uint8)
    for inside, want in ((+1.0, 1), (-1.0, 0)):  # the block's unary for label 2 over label 1
        unary = np.zeros((64 * 64, 3))
        unary[:, 1] = np.where(admm.ravel() == 2, inside, 1.0)
        unary[:, 2] = 5.0
        problem = problem_from_unary(image, unary, lam=0.1)
        assert real_inputs.edge_losses(problem, admm, ref, solved_whole=False) == want
        assert real_inputs.edge_losses(problem, admm, ref, solved_whole=True) == 0
    odd = ref.copy()
    odd[21:39, 9:41] = 2
    unary = np.zeros((64 * 64, 3))
    unary[:, 1] = 1.0
    unary[:, 2] = 5.0
    problem = problem_from_unary(image, unary, lam=0.1)
    assert real_inputs.edge_losses(problem, odd, ref, solved_whole=False) == 0
