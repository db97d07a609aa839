"""The repair of last resort for apart pairs (solver.mrf.polish.swap and the region repair in
solver.mrf.polish.constrained): a junction of four labels with two pairs apart, which no
single-pixel move can undo, is undone; the priced αβ-swap is the exact best swap."""

import itertools

import numpy as np
import pytest

from solver.mrf import Constraints, problem_from_unary, solve_mrf, with_constraints
from solver.mrf.build.graph import edge_ends
from solver.mrf.build.stencil import potts_of
from solver.mrf.polish import constrained_kernels as ck
from solver.mrf.polish.constrained import Labelling, _region_repair, level_state, repair
from solver.mrf.polish.swap import apart_penalty, conflicts, swap_move, swap_repair
from tests.solver._mrf_helpers import random_problem

#: two pairs apart on four labels: the cycle 1 - 2 - 3 - 4 - 1 of labels that may touch
CYCLE = Constraints(apart=((1, 3), (2, 4)))


def _quadrants(size=16, lam=0.3, hard=None):
    """Four labels in the four quadrants (1 top left, 2 top right, 3 bottom right, 4 bottom
    left: in turn round the centre), each quadrant's data preferring its label, two pairs
    apart; and those quadrant labels (1-based)."""
    h = w = size
    rows, cols = np.mgrid[:h, :w]
    quad = np.where(rows < h // 2, np.where(cols < w // 2, 1, 2), np.where(cols < w // 2, 4, 3))
    unary = np.ones((h * w, 4))
    unary[np.arange(h * w), quad.ravel() - 1] = 0.0
    image = np.full((h, w, 3), 0.5)
    p = problem_from_unary(image, unary, lam=lam, hard=hard)
    return with_constraints(p, CYCLE), quad


def _feasible_apart(problem, labels_1based):
    gi, gj = edge_ends(problem.graph)
    lab = np.asarray(labels_1based).ravel() - 1
    return not problem.constraints.apart[lab[gi], lab[gj]].any()


def test_single_pixel_moves_cannot_undo_a_four_label_junction():
    """The reason for the fallback: the cheapest single-pixel repair leaves the junction."""
    p, quad = _quadrants()
    lab = quad.ravel().astype(np.int32) - 1
    args = Labelling(potts_of(p), lab, p.hard.ravel() == 0, level_state(p, lab))
    assert ck.repair_apart(*args, 50) > 0
    assert conflicts(p, lab) > 0


def test_repair_undoes_a_four_label_junction():
    p, quad = _quadrants()
    fixed = repair(p, quad)
    assert _feasible_apart(p, fixed)
    assert p.feasible(fixed)
    # regions give way (no path of two labels from the centre to the edge is sought), but
    # not every one: two quadrants at least keep their labels
    assert np.mean(fixed == quad) >= 0.5


@pytest.mark.parametrize("corners", [(1, 2, 4), (1, 2, 3, 4)])
def test_repair_keeps_hard_pixels_while_undoing_the_junction(corners):
    """Hard pixels in three or all four quadrants: they stay, the junction goes."""
    hard = np.zeros((16, 16), np.int32)
    at = {1: (2, 2), 2: (2, 13), 3: (13, 13), 4: (13, 2)}
    for label in corners:
        hard[at[label]] = label
    p, quad = _quadrants(hard=hard)
    fixed = repair(p, quad)
    assert p.feasible(fixed)
    assert (fixed[hard > 0] == hard[hard > 0]).all()


def test_constrained_solve_of_a_four_label_junction_is_feasible():
    p, quad = _quadrants(size=24)
    res = solve_mrf(p, "admm")
    assert res.feasible
    assert p.feasible(res.labels)


def _args(p, lab):
    return Labelling(potts_of(p), lab, np.asarray(p.hard).ravel() == 0, level_state(p, lab))


def test_region_repair_moves_a_whole_region_and_keeps_the_counts():
    """Swaps aside: the region repair alone ends the junction by one region giving way."""
    p, quad = _quadrants()
    lab = quad.ravel().astype(np.int32) - 1
    args = _args(p, lab)
    assert _region_repair(p, args) >= 1
    assert conflicts(p, lab) == 0
    np.testing.assert_allclose(args.areas.counts, np.bincount(lab, minlength=4))
    assert np.mean(lab == quad.ravel() - 1) > 0.7  # about one quadrant gave way, not more


def test_region_repair_leaves_a_ring_round_the_hard_pixels_of_a_region_that_gives_way():
    """Every quadrant holds a hard pixel, away from the centre: a region gives way but its
    hard pixel stays, inside a ring of a label that may touch both."""
    hard = np.zeros((16, 16), np.int32)
    hard[2, 2], hard[2, 13], hard[13, 13], hard[13, 2] = 1, 2, 3, 4
    p, quad = _quadrants(hard=hard)
    lab = quad.ravel().astype(np.int32) - 1
    assert _region_repair(p, _args(p, lab)) >= 1
    assert conflicts(p, lab) == 0
    out = lab.reshape(16, 16) + 1
    assert (out[hard > 0] == hard[hard > 0]).all()


def test_swap_repair_ends_without_conflicts_and_says_what_is_left():
    p, quad = _quadrants()
    lab = quad.ravel().astype(np.int32) - 1
    assert conflicts(p, lab) > 0
    assert swap_repair(p, lab) == conflicts(p, lab)
    feasible = repair(p, quad).ravel().astype(np.int32) - 1
    assert swap_repair(p, feasible) == 0  # nothing to do: unchanged
    np.testing.assert_array_equal(feasible, repair(p, quad).ravel() - 1)


@pytest.mark.parametrize("seed", range(6))
def test_swap_move_is_the_best_swap_of_the_priced_energy(seed):
    """Against every labelling the swap may reach (the pixels of a or b, each taking either),
    on a tiny random problem with two pairs apart and hard pixels."""
    p = random_problem((3, 3), k=4, seed=seed, hard_fraction=0.2)
    rng = np.random.default_rng(seed)
    hard = np.asarray(p.hard).ravel()
    labels = np.where(hard > 0, hard - 1, rng.integers(0, 4, p.n)).astype(np.int64)
    pen = np.zeros((4, 4))
    pen[0, 2] = pen[2, 0] = pen[1, 3] = pen[3, 1] = 7.5
    gi, gj = edge_ends(p.graph)

    def priced(lab):
        e = p.unary[np.arange(p.n), lab].sum()
        e += 2.0 * p.lam * (p.graph.weights * (lab[gi] != lab[gj])).sum()
        return e + pen[lab[gi], lab[gj]].sum()

    a, b = 0, 2
    out = swap_move(p, p.unary, labels, a, b, pen)
    part = np.flatnonzero((labels == a) | (labels == b))
    free = [i for i in part if hard[i] == 0]
    best = np.inf
    for pick in itertools.product((a, b), repeat=len(free)):
        cand = labels.copy()
        cand[free] = pick
        best = min(best, priced(cand))
    assert priced(out) == pytest.approx(best, rel=1e-9, abs=1e-9)
    keep = ~np.isin(np.arange(p.n), part)
    np.testing.assert_array_equal(out[keep], labels[keep])
    assert (out[hard > 0] == hard[hard > 0] - 1).all()


def test_apart_penalty_prices_only_apart_pairs_and_outweighs_any_pixel():
    p, _ = _quadrants()
    pen = apart_penalty(p)
    assert pen[0, 2] == pen[2, 0] == pen[1, 3] > 0
    assert pen[0, 1] == pen[1, 2] == pen[0, 0] == 0
    spread = np.max(p.unary.max(axis=1) - p.unary.min(axis=1))
    assert pen[0, 2] > spread + 8 * 2 * p.lam * p.graph.weights.max()
