"""Level-set fusion: exact per-region energy changes, hard pixels, and what it repairs."""

import numpy as np
import pytest
from scipy import ndimage

from solver.mrf import MRFADMM, build_problem, problem_from_unary, solve_mrf
from solver.mrf.build.stencil import potts_of
from solver.mrf.options import SNAPSHOT_ITERATIONS, FusionOptions, PolishOptions, TVOptions
from solver.mrf.polish.fusion import (
    THRESHOLDS,
    Snapshot,
    fuse,
    fuse_boxes,
    fuse_closings,
    fuse_level_sets,
)
from solver.mrf.polish.icm import icm
from solver.mrf.polish.pipeline import polish_labels
from solver.mrf.polish.regions import component_flips
from tests.solver._mrf_helpers import random_problem, shapes_image

#: The polish without the K = 2 TV proposals, which also find what these tests build for the
#: other moves (a region no local move recovers, a cut-off corner).
NO_TV = PolishOptions(tv=TVOptions(iterations=0))


def _expected_fusion(p, a, c):
    """Reference: try each 8-connected region of a != c alone, with the energy function."""
    diff = (a != c) & (p.hard.ravel() == 0)
    comp, nc = ndimage.label(diff.reshape(p.shape), structure=np.ones((3, 3), bool))
    comp = comp.ravel()
    base = p.energy(a)
    out = a.copy()
    for r in range(1, nc + 1):
        trial = a.copy()
        trial[comp == r] = c[comp == r]
        if p.energy(trial) < base - 1e-9 * max(1.0, abs(base)):
            out[comp == r] = c[comp == r]
    return out


@pytest.mark.parametrize("k,seed", [(2, 0), (2, 1), (2, 4), (3, 2), (3, 5), (4, 3)])
def test_fuse_takes_exactly_the_regions_that_lower_the_energy(k, seed):
    p = random_problem((30, 33), k=k, seed=seed, hard_fraction=0.1)
    rng = np.random.default_rng(seed)
    a = rng.integers(1, k + 1, p.n)
    # a candidate that differs on blobs, so that regions have inner and outer edges
    # (one label per blob, so that edges inside a region change as much as those on its border)
    blobs, nb = ndimage.label(ndimage.binary_dilation(rng.random(p.shape) < 0.03, iterations=2))
    blob_label = rng.integers(1, k + 1, nb + 1)
    c = np.where(blobs.ravel() > 0, blob_label[blobs.ravel()], a)
    out, moved = fuse(p, a, c)
    expected = _expected_fusion(p, a, c)
    np.testing.assert_array_equal(out, expected)
    assert moved > 0
    assert p.energy(out) <= p.energy(a)
    hard = p.hard.ravel()
    assert np.all(out[hard > 0] == a[hard > 0])


def test_fuse_with_an_identical_candidate_changes_nothing():
    p = random_problem((6, 7), k=3, seed=1)
    a = np.random.default_rng(0).integers(1, 4, p.n)
    out, moved = fuse(p, a, a.copy())
    assert moved == 0
    np.testing.assert_array_equal(out, a)


def _square_problem():
    """A bright square on a dark background, noisy; strokes in both."""
    rng = np.random.default_rng(5)
    img = np.full((40, 40), 0.2)
    img[10:30, 12:32] = 0.8
    img = np.clip(img + rng.normal(0, 0.25, img.shape), 0, 1)
    strokes = np.zeros((40, 40), np.int32)
    strokes[20, 16:28] = 1
    strokes[3, 3:37] = 2
    # λ = 10: the λ this input was built and measured at (the default until 2026-12-02)
    return build_problem(img, strokes, 2, lam=10.0), img


def test_level_set_fusion_recovers_a_region_no_local_move_can():
    p, _ = _square_problem()
    best = solve_mrf(p, "mincut")
    # the optimum with the square erased: ICM and region moves keep it erased
    start = np.full(p.n, 2)
    stuck = polish_labels(p, start, options=NO_TV)
    assert p.energy(stuck) > best.energy + 1.0
    # a blurred indicator of the square, as an early ADMM iterate would look
    square = (best.labels == 1).astype(float)
    x1 = ndimage.uniform_filter(square, 5).ravel()
    weights = np.stack([x1, 1.0 - x1], axis=1)
    fused, moved = fuse_level_sets(p, stuck, [weights])
    assert moved >= 1
    assert fuse_level_sets(p, stuck, [weights], max_pixels=10)[1] == 0  # too large: skipped
    assert p.energy(fused) < p.energy(stuck) - 1.0
    polished = polish_labels(p, start, [weights], options=NO_TV)
    assert p.energy(polished) <= p.energy(fused) + 1e-9
    assert p.energy(polished) <= best.energy + 1e-3 * abs(best.energy)


def test_admm_keeps_its_early_iterates_for_fusion():
    p, _ = _square_problem()
    solver = MRFADMM(p)
    res = solver.run(polish=False)
    kept = solver.snapshot_weights()
    assert len(kept) == sum(1 for i in SNAPSHOT_ITERATIONS if i <= res.iterations)
    first = kept[0].dense()
    assert first.shape == (p.n, 2)
    assert np.all((first >= 0) & (first <= 1))
    np.testing.assert_allclose(first.sum(axis=1), 1.0, atol=1e-6)


def test_a_sparse_snapshot_densifies_to_its_rows_and_its_fixed_labels():
    rng = np.random.default_rng(3)
    n, k = 40, 3
    pixels = np.sort(rng.choice(n, 25, replace=False))
    fixed = np.zeros(n, np.int8)
    rest = np.setdiff1d(np.arange(n), pixels)
    fixed[rest] = rng.integers(1, k + 1, rest.size)
    fixed[rest[:3]] = 0  # neither free nor fixed (outside the snapshot): all zero
    weights = rng.random((pixels.size, k)).astype(np.float32)
    out = Snapshot(pixels, weights, fixed).dense()
    want = np.zeros((n, k), np.float32)
    want[pixels] = weights
    for i in np.flatnonzero(fixed):
        want[i, fixed[i] - 1] = 1.0
    assert out.dtype == np.float32 and out.tolist() == want.tolist()


def test_fusion_lowers_admm_energy_on_noisy_shapes():
    """Noise 0.25: ICM and region moves alone end 0.6-3% above min-cut on some seeds."""
    for seed in (1, 2, 7):
        image, _, strokes = shapes_image(seed=seed, k=2, size=48, noise=0.25)
        p = build_problem(image, strokes, 2)
        ref = solve_mrf(p, "mincut").energy
        solver = MRFADMM(p)
        raw = solver.run(polish=False).labels
        plain = p.energy(polish_labels(p, raw))
        fused = p.energy(polish_labels(p, raw, solver.snapshot_weights()))
        assert fused <= plain + 1e-9
        assert fused <= ref + 1e-3 * abs(ref)



def _bitten_square():
    """A square whose data says fg, with a 3x4 bite out of its top edge where two isolated pixels
    say fg strongly and the rest say bg weakly; the labels have the bite."""
    unary = np.zeros((40, 40, 2))
    unary[..., 0] = 1.0                                  # outside: background
    unary[10:30, 10:30] = (0.0, 1.0)                     # the square: foreground
    unary[10:13, 18:22] = (0.3, 0.0)                     # the bite: weakly background ...
    unary[10, 18:22:2] = (0.0, 2.0)                      # ... but for two strong pixels
    p = problem_from_unary(np.zeros((40, 40)), unary, lam=0.3)
    labels = np.full((40, 40), 2)
    labels[10:30, 10:30] = 1
    labels[10:13, 18:22] = 2
    return p, labels


def test_closing_fusion_fills_a_bite_no_local_move_can():
    p, bitten = _bitten_square()
    bite = np.zeros((40, 40), bool)
    bite[10:13, 18:22] = True
    whole = bitten.copy()
    whole[bite] = 1
    assert p.energy(whole) < p.energy(bitten) - 1.0
    stuck = component_flips(p, icm(p, bitten))
    # ICM and region moves may nibble at the bite's rim, but most of it stays
    assert (stuck[bite] == 2).sum() >= 8
    assert p.energy(stuck) > p.energy(whole) + 1.0
    filled, moved = fuse_closings(p, stuck)
    assert moved >= 1
    assert np.all(filled.reshape(40, 40)[bite] == 1)
    assert p.energy(filled) < p.energy(stuck) - 1.0
    assert np.all(polish_labels(p, bitten)[bite] == 1)


def test_box_fusion_restores_a_corner_that_a_closing_cannot():
    """A corner cut off a square is a convex cut: the closing leaves it, the box fills it."""
    rr, cc = np.mgrid[0:40, 0:40]
    corner = (rr >= 10) & (cc >= 10) & ((rr - 10) + (cc - 10) < 6)
    unary = np.zeros((40, 40, 2))
    unary[..., 0] = 1.0                                  # outside: background
    unary[10:30, 10:30] = (0.0, 1.0)                     # the square: foreground
    unary[corner] = (0.3, 0.0)                           # the corner: weakly background ...
    unary[corner & (rr % 2 == 0) & (cc % 2 == 0)] = (0.0, 2.0)  # ... but for isolated pixels
    p = problem_from_unary(np.zeros((40, 40)), unary, lam=0.3)
    cut = np.full((40, 40), 2)
    cut[10:30, 10:30] = 1
    cut[corner] = 2
    whole = cut.copy()
    whole[corner] = 1
    assert p.energy(whole) < p.energy(cut) - 1.0
    stuck = component_flips(p, icm(p, cut))
    assert (stuck[corner] == 2).sum() >= corner.sum() - 3
    closed, _ = fuse_closings(p, stuck)
    assert (closed.reshape(40, 40)[corner] == 2).sum() >= corner.sum() - 3
    boxed, moved = fuse_boxes(p, stuck)
    assert moved >= 1 and np.all(boxed.reshape(40, 40)[corner] == 1)
    assert p.energy(boxed) < p.energy(stuck) - 1.0
    assert np.all(polish_labels(p, cut, options=NO_TV)[corner] == 1)


def _block_with_a_tail():
    """All label 1; a 6x6 block whose data prefer label 2 (worth taking whole, not pixel by
    pixel) with a one-pixel tail whose data prefer label 1; one level set covers both."""
    img = np.full((20, 20), 0.5)
    block = np.zeros((20, 20), bool)
    block[4:10, 4:10] = True
    tail = np.zeros((20, 20), bool)
    tail[6, 10:20] = True
    un = np.zeros((400, 2))
    un[:, 1] = 5.0
    un[block.ravel(), 1] = -6.0
    p = problem_from_unary(img, un, lam=1.0)
    x2 = np.where(block | tail, 0.9, 0.1).ravel()
    return p, np.ones(400, np.int64), np.stack([1.0 - x2, x2], axis=1), block, tail


def test_descent_fusion_takes_the_part_of_a_level_set_that_pays():
    from solver.mrf.polish.descents import fuse_descents
    p, start, weights, block, tail = _block_with_a_tail()
    assert np.array_equal(icm(p, start).ravel(), start)
    whole = np.where((block | tail).ravel(), 2, 1)
    assert p.energy(whole) > p.energy(start)            # the level set whole costs more ...
    assert p.energy(np.where(block.ravel(), 2, 1)) < p.energy(start) - 50.0  # ... the block pays
    plain, moved = fuse_level_sets(p, start, [weights])
    assert moved == 0 and np.array_equal(plain, start)
    out, moved = fuse_descents(p, start, [weights])
    assert moved == 1
    assert p.energy(out) < p.energy(start) - 50.0
    assert (out.reshape(20, 20)[tail] == 1).all()
    assert (out.reshape(20, 20)[block] == 2).mean() > 0.8
    assert np.array_equal(icm(p, out).ravel(), out)      # still an ICM fixed point
    proposal = int((block | tail).sum())
    assert fuse_descents(p, start, [weights], max_pixels=proposal - 1)[1] == 0  # skipped
    assert fuse_descents(p, start, [weights], max_pixels=proposal)[1] == 1


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3, 4])
def test_descent_fusion_never_raises_energy_keeps_hard_pixels_and_its_scratch(k):
    from solver.mrf.polish import descent_kernels
    from solver.mrf.polish.descents import fuse_descents
    from solver.mrf.polish.fusion import Snapshot
    for seed in range(3):
        p = random_problem((16, 18), k=k, seed=seed, hard_fraction=0.1)
        rng = np.random.default_rng(seed)
        lab = icm(p, np.where(p.hard > 0, p.hard, rng.integers(1, k + 1, p.n)).reshape(p.shape))
        snaps = [rng.dirichlet(np.ones(k), p.n) for _ in range(3)]
        out, _ = fuse_descents(p, lab, snaps)
        assert p.energy(out) <= p.energy(lab) + 1e-9
        hard = p.hard.ravel()
        assert np.array_equal(out[hard > 0], hard[hard > 0])
        assert np.array_equal(icm(p, out).ravel(), out)
        # the kernel leaves its work arrays as it found them
        scratch = descent_kernels.descent_scratch(p.n, k)
        snap = Snapshot.from_dense(snaps[0])
        lab0 = lab.ravel().astype(np.int64) - 1
        scratch[1][:] = lab0  # the copy of the labels, equal to them on entry
        descent_kernels.fuse_descents(potts_of(p), lab0, hard == 0, snap.pixels, snap.weights, snap.fixed,
                                      np.zeros(0, np.int64), np.array([0.2, 0.5]), p.n, scratch)
        _, work, member, region, _, _, _, listed, row, _, inq, touched, _, _ = scratch
        assert not member.any() and not listed.any() and not inq.any() and not touched.any()
        assert (region == -1).all() and (row == -1).all()
        np.testing.assert_array_equal(work, lab0)  # and its copy equal to the labels again


@pytest.mark.parametrize("k", [2, 3])
def test_final_polish_descends_on_the_label_counts_threshold_grid_and_size_cap(monkeypatch, k):
    from solver.mrf.polish import pipeline
    seen = []
    real = pipeline.fuse_descents_into

    def spy(problem, lab, snapshots, thresholds, max_pixels=None, **kw):
        seen.append((tuple(thresholds), max_pixels))
        return real(problem, lab, snapshots, thresholds, max_pixels, **kw)
    monkeypatch.setattr(pipeline, "fuse_descents_into", spy)
    p = random_problem((16, 18), k=k, seed=1)
    snaps = [np.random.default_rng(2).dirichlet(np.ones(k), p.n)]
    options = PolishOptions(fusion=FusionOptions(descent_thresholds=(0.3, 0.7), descent_thresholds_multi=(0.4,),
                            descent_max_pixels=77), tv=TVOptions(only_binary=False))  # (K = 2: descend)
    pipeline.polish_labels(p, np.ones(p.shape, np.int32), snaps, split=True, options=options)
    pipeline.polish_labels(p, np.ones(p.shape, np.int32), snaps, split=False, options=options)
    expected = (0.3, 0.7) if k == 2 else (0.4,)
    # the final polish only, with the grid for its K and the descents' own size cap
    assert seen == [(expected, 77)]



@pytest.mark.parametrize("k,seed", [(2, 3), (3, 4), (4, 5)])
def test_polish_steps_share_work_arrays_and_leave_them_as_found(monkeypatch, k, seed):
    from solver.mrf.polish import fusion

    made = []
    real_get = fusion.Workspace._get

    def recording_get(self, name, make):
        out = real_get(self, name, make)
        made.append(self)
        return out
    monkeypatch.setattr(fusion.Workspace, "_get", recording_get)
    p = random_problem((20, 23), k=k, seed=seed)
    rng = np.random.default_rng(seed)
    snaps = [rng.dirichlet(np.ones(k) * a, p.n) for a in (0.3, 1.0, 3.0)]
    start = rng.integers(1, k + 1, size=p.shape).astype(np.int32)
    shared = polish_labels(p, start, snaps)
    workspaces = set(map(id, made))
    assert len(workspaces) == 1 and len(made) > 3  # one set, asked for by several steps
    ws = made[0]
    _, _, member, region, _, _, _, listed, row = ws.fusion()
    assert not member.any() and np.all(region == -1) and not listed.any() and np.all(row == -1)
    inq, touched = ws.descent()[10], ws.descent()[11]
    assert not inq.any() and not touched.any()
    assert np.all(ws.region()[0] == -1)
    np.testing.assert_array_equal(ws.preferred(), np.argmin(p.unary, axis=1))
    # every step with fresh arrays of its own gives the same labels
    monkeypatch.setattr(fusion.Workspace, "_get", lambda self, name, make: make())
    np.testing.assert_array_equal(polish_labels(p, start, snaps), shared)


def _sparse_snapshots(p, rng, count):
    """``count`` sparse snapshots sharing one ``fixed`` array: a random third of the pixels
    fixed to random labels (so many of them disagree with any labelling), random weights on
    the rest."""
    k = p.k
    fixed = rng.integers(1, k + 1, p.n).astype(np.int32)
    fixed[rng.random(p.n) < 2 / 3] = 0
    pixels = np.flatnonzero(fixed == 0).astype(np.int64)
    return [Snapshot(pixels, rng.dirichlet(np.ones(k), pixels.size).astype(np.float32), fixed)
            for _ in range(count)]


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_fusions_find_the_fixed_disagreement_once_and_again_after_a_take(k):
    """The fusions' cached lists of disagreeing fixed pixels give the same labels as a fresh
    scan of the image for every snapshot (the kernels' former behaviour)."""
    from solver.mrf.polish import descent_kernels, region_kernels
    from solver.mrf.polish import icm_kernels as kernels
    from solver.mrf.polish.descents import fuse_descents

    def fresh(kernel, p, lab, snaps, ts, scratch):
        lab0 = kernels.zero_based(lab)
        if len(scratch) > 9:
            scratch[1][:] = lab0
        free = p.hard.ravel() == 0
        taken = 0
        for snap in snaps:
            extra = region_kernels.fixed_disagreement(lab0, free, snap.fixed)
            taken += kernel(potts_of(p), lab0, free, snap.pixels, snap.weights, snap.fixed, extra, ts, p.n, scratch)
        return lab0 + 1, taken

    taken_any = 0
    for seed in range(4):
        p = random_problem((15, 17), k=k, seed=seed, hard_fraction=0.05)
        rng = np.random.default_rng(seed)
        lab = icm(p, np.where(p.hard > 0, p.hard, rng.integers(1, k + 1, p.n)).reshape(p.shape))
        snaps = _sparse_snapshots(p, rng, 3)
        free = p.hard.ravel() == 0
        want = np.flatnonzero(free & (snaps[0].fixed > 0)
                              & (snaps[0].fixed - 1 != lab.ravel() - 1))
        got = region_kernels.fixed_disagreement(lab.ravel().astype(np.int64) - 1, free,
                                                snaps[0].fixed)
        np.testing.assert_array_equal(got, want)
        assert want.size > 0
        for ours, kernel, scratch in (
                (lambda: fuse_level_sets(p, lab, snaps, THRESHOLDS), region_kernels.fuse_level_sets,
                 region_kernels.fusion_scratch(p.n)),
                (lambda: fuse_descents(p, lab, snaps, THRESHOLDS), descent_kernels.fuse_descents,
                 descent_kernels.descent_scratch(p.n, k))):
            out, moved = ours()
            ref, taken = fresh(kernel, p, lab, snaps, np.asarray(THRESHOLDS), scratch)
            np.testing.assert_array_equal(out, ref)
            assert moved == taken
            taken_any += moved
    assert taken_any > 0  # (regions were taken, so the lists were made again)


def _polish_one_based(problem, labels, snapshots, split):
    """The polish as a chain of public functions, each from 1-based labels to new 1-based ones
    (the reference for the in-place pipeline)."""
    from solver.mrf.polish.descents import fuse_descents
    from solver.mrf.polish.icm import pair_moves
    from solver.mrf.polish.regions import settle_regions, split_moves
    from solver.mrf.polish.tv import fuse_tv, fuse_tv_expansions
    from solver.mrf.polish.watershed import fuse_edge_snapped

    o = PolishOptions()
    lab = icm(problem, labels)
    if problem.k > 2 or o.pair_moves_binary:
        lab = pair_moves(problem, lab, icm_optimal=True)
    lab = icm(problem, fuse_closings(problem, lab)[0], since=lab)
    lab = icm(problem, fuse_boxes(problem, lab)[0], since=lab)
    lab, settled = settle_regions(problem, lab, icm_optimal=True)
    if o.split and split:
        resplit, moved = split_moves(problem, lab)
        if moved:
            lab, settled = settle_regions(problem, icm(problem, resplit, since=lab),
                                          icm_optimal=True, since=lab if settled else None)
    snaps = [Snapshot.from_dense(s) for s in snapshots]
    if o.descents and split and snaps:
        ts = o.fusion.descent_thresholds if problem.k == 2 else o.fusion.descent_thresholds_multi
        carved, moved = fuse_descents(problem, lab, snaps, ts, o.fusion.descent_max_pixels)
        if moved:
            lab, settled = settle_regions(problem, carved, icm_optimal=True,
                                          since=lab if settled else None)
    steps = o.tv.iterations if problem.k == 2 else o.tv.expansion_iterations
    if split and steps > 0 and problem.n <= o.tv.max_pixels:
        proposed, moved = (fuse_tv(problem, lab, steps, o.tv.step, o.tv.thresholds, o.tv.gap,
                                   o.tv.fuse_every) if problem.k == 2 else
                           fuse_tv_expansions(problem, lab, steps, o.tv.step, o.tv.thresholds,
                                              o.tv.expansion_gap))
        if moved:
            lab, settled = settle_regions(problem, icm(problem, proposed, since=lab),
                                          icm_optimal=True, since=lab if settled else None)
    if o.edge_snap and split:
        snapped, moved = fuse_edge_snapped(problem, lab)
        if moved:
            lab, settled = settle_regions(problem, snapped, icm_optimal=True,
                                          since=lab if settled else None)
    for _ in range((o.fusion.final_rounds if split else o.fusion.coarse_rounds) if snaps else 0):
        fused, moved = fuse_level_sets(problem, lab, snaps, max_pixels=o.fusion.max_pixels)
        if moved == 0:
            break
        lab, settled = settle_regions(problem, icm(problem, fused, since=lab),
                                      icm_optimal=True, since=lab if settled else None)
    return np.asarray(lab).reshape(problem.shape)


@pytest.mark.parametrize("k,split,answer", [(2, True, False), (2, False, False),
                                            (3, True, False), (4, True, False),
                                            (4, False, False), (3, False, True)])
def test_in_place_polish_equals_the_step_by_step_polish(k, split, answer):
    """The polish keeps 0-based labels in place from step to step; it must give exactly the
    labels of the same steps run as public 1-based functions, one after the other. Cameraman
    at 3000 pixels from ADMM's early answer with a tenth of its pixels scrambled, and a noise
    snapshot (closings, region moves, descents, edge snapping and splits at K = 4 take
    something), or also the yardstick's answer one-hot (the level sets' regions to take)."""
    from segapp.cli.bench import sample

    image, strokes = sample(3000, k)
    p = build_problem(image, strokes, k)
    rng = np.random.default_rng(k)
    start = solve_mrf(p, "admm", polish=False, max_iter=30).labels.copy()
    scramble = rng.random(p.shape) < 0.1
    start[scramble] = rng.integers(1, k + 1, scramble.sum())
    snaps = [rng.dirichlet(np.full(k, 0.3), p.n)]
    if answer:
        best = solve_mrf(p, "mincut" if k == 2 else "expansion").labels.ravel()
        snaps.append(np.eye(k)[best - 1])
    got = polish_labels(p, start, snaps, split=split)
    want = _polish_one_based(p, start, snaps, split)
    assert got.dtype == np.int32 and got.shape == p.shape
    np.testing.assert_array_equal(got, want)
    assert p.energy(got) < p.energy(start)
