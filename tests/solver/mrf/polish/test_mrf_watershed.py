"""Edge-snapped proposals: flooding the zone around the boundaries, and their fusion."""

import numpy as np
import pytest

from solver.mrf import problem_from_unary, solve_mrf
from solver.mrf.options import TVOptions
from solver.mrf.polish.icm import icm
from solver.mrf.polish.watershed import (
    boundary_zone,
    edge_snapped,
    fuse_edge_snapped,
    fuse_edge_snapped_into,
)
from tests.solver._mrf_helpers import random_problem


def _step_problem(data_pull: float = 0.0, hard: np.ndarray | None = None):
    """A 20 x 24 image, dark left of column 12 and bright from it on, with labels whose
    boundary stands 3 columns short of that edge (label 1 on columns 0-8). The data is
    neutral except that columns 9-11 lean towards label 2 by ``data_pull`` per pixel."""
    image = np.zeros((20, 24), np.uint8)
    image[:, 12:] = 200
    unary = np.zeros((20, 24, 2))
    unary[:, 9:12, 0] = data_pull
    p = problem_from_unary(image, unary, lam=1.0, hard=hard)
    labels = np.full((20, 24), 2, np.int32)
    labels[:, :9] = 1
    return p, labels


def test_the_zone_is_the_pixels_near_a_boundary():
    lab = np.zeros((6, 10), np.int64)
    lab[:, 5:] = 1
    zone = boundary_zone(lab.ravel(), lab.shape, 2)
    cols = np.unique(zone % 10)
    np.testing.assert_array_equal(cols, [2, 3, 4, 5, 6, 7])  # columns 4 and 5 touch, grown by 2
    assert zone.size == 6 * 6 and np.all(np.diff(zone) > 0)
    assert boundary_zone(np.zeros(12, np.int64), (3, 4), 3).size == 0  # one label: no zone


def test_the_flood_moves_a_boundary_onto_the_image_edge():
    p, labels = _step_problem()
    pixels, flooded = edge_snapped(p, labels.ravel() - 1, 4)
    # the zone (columns 4-13) is flooded from both sides; the dark side's similar pixels join
    # label 1 first, so the boundary lands between columns 11 and 12, where the image steps
    assert set(np.unique(pixels % 24)) == {9, 10, 11} and pixels.size == 3 * 20
    assert np.all(flooded == 0)


def test_a_flood_that_reaches_nothing_keeps_the_labels():
    p, labels = _step_problem()
    # the zone covers the whole image (radius 30): no labelled pixel outside to flood from
    pixels, _ = edge_snapped(p, labels.ravel() - 1, 30)
    assert pixels.size == 0


def test_fusion_takes_the_snapped_boundary_only_when_it_pays():
    p, labels = _step_problem()
    out, moved = fuse_edge_snapped(p, labels, radii=(4,))
    assert moved == 1 and p.energy(out) < p.energy(labels)
    assert np.all(out.reshape(20, 24)[:, :12] == 1) and np.all(out.reshape(20, 24)[:, 12:] == 2)
    # the data of the three columns against label 1 outweighs the cheaper boundary: kept
    p2, labels2 = _step_problem(data_pull=5.0)
    out2, moved2 = fuse_edge_snapped(p2, labels2, radii=(4,))
    assert moved2 == 0 and np.array_equal(out2.reshape(20, 24), labels2)


def test_hard_pixels_never_move():
    hard = np.zeros((20, 24), np.int32)
    hard[5, 10] = 2
    p, labels = _step_problem(hard=hard)
    out, _ = fuse_edge_snapped(p, labels, radii=(4,))
    assert out.reshape(20, 24)[5, 10] == 2
    assert p.energy(out) <= p.energy(labels)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_never_raises_the_energy_and_keeps_an_icm_fixed_point(k):
    for seed in range(6):
        p = random_problem((17, 19), k=k, seed=seed, hard_fraction=0.05)
        start = icm(p, solve_mrf(p, "admm", seed=seed, polish=False).labels)
        out, _ = fuse_edge_snapped(p, start, radii=(1, 2, 4))
        assert p.energy(out) <= p.energy(start) + 1e-9 * abs(p.energy(start))
        np.testing.assert_array_equal(icm(p, out).ravel(), out)
        hard = np.asarray(p.hard).ravel()
        assert np.all(out[hard > 0] == hard[hard > 0])


def test_only_the_final_polish_snaps_boundaries_and_the_switch_turns_it_off(monkeypatch):
    from solver.mrf import PolishOptions
    from solver.mrf.polish import pipeline

    calls = []

    def spy(problem, lab, workspace=None):
        calls.append(workspace is not None)  # (with the polish's shared work arrays)
        return fuse_edge_snapped_into(problem, lab, workspace=workspace)
    monkeypatch.setattr(pipeline, "fuse_edge_snapped_into", spy)
    p, labels = _step_problem()
    snapping = PolishOptions(tv=TVOptions(only_binary=False))  # (K = 2: else the TV proposals stand in)
    pipeline.polish_labels(p, labels, split=False, options=snapping)
    assert calls == []
    out = pipeline.polish_labels(p, labels, split=True, options=snapping)
    assert calls == [True] and p.energy(out) <= p.energy(labels)
    pipeline.polish_labels(p, labels, split=True,
                           options=PolishOptions(edge_snap=False, tv=TVOptions(only_binary=False)))
    assert calls == [True]
