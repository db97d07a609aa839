"""Local re-solves around straight label runs on pyramid cell lines (solver.mrf.polish.local)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from solver.mrf import MRFProblem, SolveOptions, problem_from_unary
from solver.mrf.build.stencil import grid_view
from solver.mrf.options import LocalOptions, PolishOptions, TVOptions
from solver.mrf.polish import local
from solver.mrf.polish.local import cell_line_runs, fuse_local_expansions_into, run_regions
from solver.mrf.polish.tv import (expansion_terms, grid_steps, grid_terms, kernel_grid,
                                  may_move)
from tests.solver._mrf_helpers import random_problem

THRESHOLDS = (0.1, 0.3, 0.5, 0.7, 0.9)


def test_runs_are_label_changes_along_cell_lines_longer_than_the_length():
    lab = np.zeros((24, 40), np.int32)
    lab[:8] = 1  # rows 7 | 8: a line of 2-pixel cells, 40 long
    runs = cell_line_runs(lab, 2, 16)
    assert runs[7].all() and runs[8].all() and runs.sum() == 80
    assert not cell_line_runs(lab, 2, 40).any()  # (not longer than 40)
    assert cell_line_runs(lab, 4, 16).sum() == 80  # (8 is a line of 4-pixel cells too)
    off_line = np.zeros((24, 40), np.int32)
    off_line[:7] = 1  # rows 6 | 7: between two lines
    assert not cell_line_runs(off_line, 2, 16).any()
    columns = np.zeros((24, 40), np.int32)
    columns[:, :20] = 2  # columns 19 | 20, 24 long
    runs = cell_line_runs(columns, 2, 16)
    assert runs[:, 19].all() and runs[:, 20].all() and runs.sum() == 48
    short = np.zeros((24, 40), np.int32)
    short[:8, :10] = 1  # a row run of 10 and a column run of 8: neither counts
    assert not cell_line_runs(short, 2, 16).any()


def test_regions_are_the_runs_grown_by_the_margin_in_framed_boxes():
    runs = np.zeros((100, 120), bool)
    runs[10, 5:30] = True
    runs[80, 90:118] = True
    regions = run_regions(runs, 8)
    assert sorted(box for box, _ in regions) == [(1, 20, 0, 39), (71, 90, 81, 120)]
    for (y0, y1, x0, x1), mask in regions:
        assert mask.shape == (y1 - y0, x1 - x0)
    (box, mask), = [r for r in regions if r[0][0] == 1]
    grown = np.zeros(runs.shape, bool)
    grown[2:19, 0:38] = True  # rows 10 +- 8, columns 5 - 8 (clipped) to 29 + 8
    assert np.array_equal(mask, grown[1:20, 0:39])
    assert not mask[0].any() and not mask[-1].any() and not mask[:, -1].any()  # (the frame)
    runs[24, 5:30] = True  # within reach of the first run: one region
    assert len(run_regions(runs, 8)) == 2
    runs[24, 5:30], runs[29, 5:30] = False, True  # 19 rows apart: two regions
    assert len(run_regions(runs, 8)) == 3
    assert run_regions(np.zeros((5, 5), bool), 8) == []


def test_regions_share_no_pixel_and_no_edge_and_cover_the_runs():
    rng = np.random.default_rng(4)
    runs = rng.random((90, 90)) < 0.003
    owner = np.zeros(runs.shape, np.int32)
    for i, ((y0, y1, x0, x1), mask) in enumerate(run_regions(runs, 5), start=1):
        assert not owner[y0:y1, x0:x1][mask].any()
        owner[y0:y1, x0:x1][mask] = i
    assert owner[runs].all()
    padded = np.pad(owner, 1)
    for dy, dx in ((0, 1), (1, -1), (1, 0), (1, 1)):  # (every edge of the grid once)
        a = padded[1:-1, 1:-1]
        b = padded[1 + dy:padded.shape[0] - 1 + dy, 1 + dx:padded.shape[1] - 1 + dx]
        assert not np.any((a > 0) & (b > 0) & (a != b))


@pytest.mark.parametrize("box", [(4, 21, 3, 30), (4, 21, 0, 30), (0, 17, 0, 37),
                                 (12, 30, 9, 37)])
def test_a_window_relaxation_is_the_image_relaxation_with_the_outside_kept(box):
    """The cropped terms give the steps the image's own relaxation takes when every pixel
    outside the region is fixed (a box's sides on the image's edges have no frame)."""
    problem = random_problem((30, 37), k=4, seed=2)
    rng = np.random.default_rng(1)
    lab = (rng.integers(0, problem.k, (6, 8)).repeat(5, 0).repeat(5, 1)[:30, :37]).ravel()
    cost, offsets, tau, gamma = grid_terms(problem, 1.0)
    y0, y1, x0, x1 = box
    inside = np.zeros(problem.shape, bool)
    inside[y0 + (y0 > 0):y1 - (y1 < 30), x0 + (x0 > 0):x1 - (x1 < 37)] = True
    inside[y0 + 5, x0 + 3:x0 + 9] = False  # (a hole: the region need not fill its box)
    win = local._Window(box, inside[y0:y1, x0:x1], problem, kernel_grid(problem, 1.0),
                        np.ones(problem.n, bool))
    alpha, steps, sigma = 2, 150, np.float32(0.5 / gamma)

    u, move_cost = expansion_terms(problem, lab, alpha, cost, offsets)
    free = inside.ravel() & (lab != alpha) & may_move(u, move_cost, offsets)
    y_full = (lab == alpha).astype(np.float32)
    grid_steps(None, (move_cost, offsets, u, free, tau), y_full, sigma, steps, 0.0)

    sub = lab[win.pixels]
    u_w, cost_w = expansion_terms(win, sub, alpha, win.cost, win.offsets)
    free_w = win.movable & (sub != alpha) & may_move(u_w, cost_w, win.offsets)
    assert np.array_equal(free_w, free[win.pixels])
    y_win = (sub == alpha).astype(np.float32)
    grid_steps(None, (cost_w, win.offsets, u_w, free_w, win.tau), y_win, sigma, steps, 0.0)
    assert np.abs(y_win - y_full[win.pixels]).max() < 1e-5
    assert np.allclose(win.tau, tau[win.pixels])  # (the image's steps, its edge counts)
    assert np.abs(y_full - (lab == alpha)).max() > 0.1  # (the steps moved something)


def _planted(true_column: int, diff: float = 1.0) -> tuple[MRFProblem, np.ndarray]:
    """A flat K = 3 image whose data prefers label 1 left of ``true_column`` and label 2 right
    of it; the labelling has the boundary one column off, at the cell line 15 | 16."""
    h, w = 40, 48
    unary = np.zeros((h, w, 3))
    cols = np.arange(w)[None, :]
    unary[..., 0] = np.where(cols < true_column, 0.0, diff)
    unary[..., 1] = np.where(cols < true_column, diff, 0.0)
    unary[..., 2] = 1.0
    image = np.full((h, w, 3), 0.5)
    problem = problem_from_unary(image, unary.reshape(-1, 3), lam=0.5)
    lab = np.where(np.arange(w)[None, :] < 16, 0, 1).repeat(h, 0).ravel()
    return problem, lab


@pytest.mark.slow
def test_a_run_one_pixel_off_the_data_moves_to_it():
    problem, lab = _planted(17)
    best = np.where(np.arange(48)[None, :] < 17, 0, 1).repeat(40, 0).ravel()
    assert problem.energy(best + 1) < problem.energy(lab + 1) - 1.0
    moved = fuse_local_expansions_into(problem, lab, 2, 400, 1.0, THRESHOLDS)
    assert moved >= 1
    assert problem.energy(lab + 1) == pytest.approx(problem.energy(best + 1))
    assert not cell_line_runs(lab.reshape(problem.shape), 2, 16).any()


def test_a_real_boundary_on_a_line_is_kept_and_a_stop_does_nothing():
    problem, lab = _planted(16)  # the data's own boundary lies on the line
    before = lab.copy()
    assert fuse_local_expansions_into(problem, lab, 2, 400, 1.0, THRESHOLDS) == 0
    assert np.array_equal(lab, before)
    problem, lab = _planted(17)
    before = lab.copy()
    assert fuse_local_expansions_into(problem, lab, 2, 400, 1.0, THRESHOLDS,
                                      stop=lambda: True) == 0
    assert np.array_equal(lab, before)


@pytest.mark.parametrize("seed", range(4))
def test_the_moves_never_raise_the_energy_of_a_blocky_labelling(seed):
    problem = random_problem((48, 52), k=4, seed=seed, hard_fraction=0.05)
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, problem.k, (3, 3)).repeat(18, 0).repeat(18, 1)[:48, :52].ravel()
    hard = problem.hard.ravel()
    lab[hard > 0] = hard[hard > 0] - 1
    before = problem.energy(lab + 1)
    moved = fuse_local_expansions_into(problem, lab, 2, 300, 1.0, THRESHOLDS)
    assert moved > 0
    assert problem.energy(lab + 1) < before
    assert np.all(lab[hard > 0] == hard[hard > 0] - 1)


@pytest.mark.slow
def test_the_finest_level_of_a_pyramid_asks_for_them_and_a_whole_solve_does_not(monkeypatch):
    from solver.mrf import solve_mrf  # noqa: PLC0415
    from solver.mrf.solve import coarse_to_fine  # noqa: PLC0415

    seen = []
    real = coarse_to_fine.pipeline.polish_labels

    def spy(*args, **kwargs):
        seen.append((args[0].n, kwargs.get("split"), kwargs.get("cells")))
        return real(*args, **kwargs)

    monkeypatch.setattr(coarse_to_fine.pipeline, "polish_labels", spy)
    problem = random_problem((120, 120), k=3, seed=5)
    pyramid = replace(SolveOptions().coarse_to_fine, coarsest=2000, whole_max=5000)
    solve_mrf(problem, "admm", seed=0, options=replace(SolveOptions(), coarse_to_fine=pyramid))
    assert len(seen) >= 2 and seen[-1] == (problem.n, True, 2)
    assert all(cells is None for n, split, cells in seen[:-1])
    seen.clear()
    solve_mrf(problem, "admm", seed=0)  # (14400 pixels: solved whole, not polished here)
    assert all(cells is None for n, split, cells in seen)


def test_a_round_that_takes_regions_is_followed_by_one_around_the_new_runs(monkeypatch):
    """Runs the moves left outside the zones already re-solved get a round of their own, with
    twice the margin; runs inside those zones do not."""
    problem = random_problem((64, 120), k=3, seed=6)
    lab = np.zeros(problem.shape, np.int64)
    lab[:8, :40] = 1  # a run on the line 7 | 8 (and a short one down column 39 | 40)
    calls = []

    def fake(problem, lab, regions, *args):
        calls.append([(box, mask.copy()) for box, mask in regions])
        if len(calls) == 1:
            grid = lab.reshape(problem.shape)
            grid[12, :30] = 2  # a new run inside the first zone (line 11 | 12)
            grid[48:, 60:100] = 2  # and one far outside it (line 47 | 48)
            return 1
        return 0

    monkeypatch.setattr(local, "_resolve", fake)
    flat = lab.ravel()
    assert fuse_local_expansions_into(problem, flat, 2, 100, 1.0, THRESHOLDS, margin=4,
                                      rounds=3) == 1
    assert len(calls) == 2
    (box, mask), = calls[1]
    expect = np.zeros(problem.shape, bool)
    expect[47 - 8:49 + 8, 60 - 8:100 + 8] = True  # rows 47-48, columns 60-99, grown by 8
    y0, y1, x0, x1 = box
    assert np.array_equal(mask, expect[y0:y1, x0:x1]) and mask.sum() == expect.sum()
    calls.clear()
    assert fuse_local_expansions_into(problem, lab.ravel().copy(), 2, 100, 1.0, THRESHOLDS,
                                      margin=4, rounds=1) == 1
    assert len(calls) == 1


@pytest.mark.parametrize("box", [(0, 30, 0, 37), (3, 17, 5, 22), (10, 30, 0, 12)])
def test_box_costs_are_the_image_costs_without_the_edges_that_leave_the_box(box):
    from solver.mrf.build.stencil import box_forward_costs, forward_costs  # noqa: PLC0415

    problem = random_problem((30, 37), k=2, seed=8)
    gw, geom = grid_view(problem)
    full, deg = forward_costs(gw, geom, 2.0 * problem.lam)
    y0, y1, x0, x1 = box
    cost, box_deg = box_forward_costs(gw, geom, 2.0 * problem.lam, y0, y1, x0, x1)
    want = full.reshape(4, 30, 37)[:, y0:y1, x0:x1].copy()
    want[0, :, -1] = want[1, :, 0] = want[1, -1, :] = 0.0  # east; south-west
    want[2, -1, :] = want[3, :, -1] = want[3, -1, :] = 0.0  # south; south-east
    assert np.array_equal(cost, want.reshape(4, -1))
    assert np.array_equal(box_deg, deg.reshape(30, 37)[y0:y1, x0:x1].ravel())


@pytest.mark.parametrize("k, tv_cap, binary, runs", [
    (3, None, False, True),   # K > 2: always
    (2, None, True, False),   # K = 2 where the TV proposals run: never
    (2, 100, True, True),     # K = 2 above the proposals' cap, with local.binary
    (2, 100, False, False),
])
def test_the_final_polish_runs_them_after_a_pyramid_where_they_are_asked_for(
        monkeypatch, k, tv_cap, binary, runs):
    from solver.mrf.polish import pipeline  # noqa: PLC0415

    calls = []
    monkeypatch.setattr(pipeline, "fuse_local_expansions_into",
                        lambda *a, **kw: calls.append(a[2]) or 0)
    problem = random_problem((24, 26), k=k, seed=9)
    options = PolishOptions(tv=TVOptions(max_pixels=tv_cap, iterations=50, expansion_iterations=50),
                            local=LocalOptions(binary=binary))
    labels = np.argmin(problem.unary, axis=1) + 1
    pipeline.polish_labels(problem, labels, options=options, cells=2)
    assert calls == ([2, 2] if runs else [])  # (after the TV moves, and after the fusion)
    calls.clear()
    pipeline.polish_labels(problem, labels, options=options)  # (solved whole: no cells)
    pipeline.polish_labels(problem, labels, options=options, cells=2, split=False)
    assert calls == []


def test_an_image_without_a_grid_view_is_left_as_it_is():
    problem = random_problem((40, 2), k=3, seed=10)  # (too narrow for the grid kernels)
    lab = np.zeros(problem.n, np.int64)
    lab.reshape(40, 2)[:18] = 1  # a 2-pixel run on the line 17 | 18
    assert cell_line_runs(lab.reshape(40, 2), 2, 1).any()
    before = lab.copy()
    assert fuse_local_expansions_into(problem, lab, 2, 100, 1.0, THRESHOLDS, length=1) == 0
    assert np.array_equal(lab, before)


def test_zones_already_re_solved_are_passed_over_and_the_new_ones_recorded():
    problem, lab = _planted(17)
    before = lab.copy()
    covered = np.zeros(problem.shape, bool)
    covered[:, 8:24] = True  # (the run's zone, re-solved before)
    assert fuse_local_expansions_into(problem, lab, 2, 400, 1.0, THRESHOLDS,
                                      covered=covered) == 0
    assert np.array_equal(lab, before)
    covered[:] = False
    assert fuse_local_expansions_into(problem, lab, 2, 400, 1.0, THRESHOLDS,
                                      covered=covered) >= 1
    zone = np.zeros(problem.shape, bool)  # the run's zone, now marked
    for (y0, y1, x0, x1), mask in run_regions(cell_line_runs(before.reshape(problem.shape), 2,
                                                             16), 16):
        zone[y0:y1, x0:x1] |= mask
    assert np.array_equal(covered, zone) and zone[:, 15:17].all() and not zone.all()


@pytest.mark.parametrize("again", [True, False])
def test_after_the_last_fusion_the_polish_re_solves_only_the_runs_it_made(monkeypatch, again):
    """The final level-set fusion can complete a straight run that was too short when the
    re-solves ran: a second pass after it takes the runs outside the zones done."""
    from solver.mrf.polish import pipeline  # noqa: PLC0415

    calls = []

    def local_spy(problem, lab, cells, *a, covered=None, **kw):
        calls.append(("local", id(covered), covered.copy()))
        covered[:4] = True  # (a zone of this pass)
        return 0

    def fusion_spy(*a, **kw):
        calls.append(("fusion", None, None))
        return 0

    monkeypatch.setattr(pipeline, "fuse_local_expansions_into", local_spy)
    monkeypatch.setattr(pipeline, "fuse_level_sets_into", fusion_spy)
    problem = random_problem((24, 26), k=3, seed=9)
    options = PolishOptions(tv=TVOptions(expansion_iterations=50))  # (default: again)
    if not again:
        options = replace(options, local=LocalOptions(again=False))
    labels = np.argmin(problem.unary, axis=1) + 1
    weights = np.full((problem.n, 3), 1.0 / 3)
    pipeline.polish_labels(problem, labels, [weights], options=options, cells=2)
    kinds = [c[0] for c in calls]
    assert kinds == (["local", "fusion", "local"] if again else ["local", "fusion"])
    if again:  # one record of the zones for both passes: the second sees the first's
        assert calls[0][1] == calls[2][1]
        assert not calls[0][2].any() and calls[2][2][:4].all()
