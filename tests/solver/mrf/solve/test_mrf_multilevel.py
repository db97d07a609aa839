"""Coarse-to-fine ADMM: exact coarsening, the band of free pixels, region moves, the driver."""

from dataclasses import replace

import numpy as np
import pytest

from solver.mrf import build_problem, problem_from_unary, solve_mrf
from solver.mrf.build.stencil import csr_arrays, graph_arrays
from solver.mrf.options import TVOptions
from solver.mrf.polish.icm import icm
from solver.mrf.polish.regions import component_flips
from solver.mrf.solve.pyramid import coarsen, fix_outside, pyramid, undecided_band
from tests.solver._mrf_helpers import perturbed_fixed_point, random_problem, shapes_image


@pytest.mark.parametrize(("shape", "k"), [((9, 11), 2), ((8, 8), 3), ((7, 10), 4)])
def test_coarse_energy_equals_fine_energy_of_block_constant_labelling(shape, k):
    p = random_problem(shape, k=k, seed=k)
    coarse, block = coarsen(p)
    assert coarse.shape == (-(-shape[0] // 2), -(-shape[1] // 2))
    rng = np.random.default_rng(1)
    for _ in range(5):
        c = rng.integers(1, k + 1, coarse.n)
        assert coarse.energy(c) == pytest.approx(p.energy(c[block]))
        x = rng.random((coarse.n, k))  # the relaxed energy is exact as well
        assert coarse.continuous_energy(x) == pytest.approx(p.continuous_energy(x[block]))
    L = coarse.laplacian
    assert abs(L - L.T).max() < 1e-12
    assert np.abs(np.asarray(L.sum(axis=1))).max() < 1e-9


def test_coarse_block_is_hard_only_when_its_hard_pixels_agree():
    p = random_problem((4, 4), k=3, seed=0)
    hard = np.zeros((4, 4), np.int32)
    hard[0, 0] = 2                  # block (0, 0): one hard label -> fixed to 2
    hard[0, 2], hard[1, 3] = 1, 3   # block (0, 1): two labels -> free
    hard[2, 0] = hard[3, 1] = 3     # block (1, 0): agreeing -> fixed to 3
    from dataclasses import replace
    coarse, _ = coarsen(replace(p, hard=hard.ravel()))
    assert coarse.hard.tolist() == [2, 0, 3, 0]


def test_pyramid_stops_at_the_requested_size():
    p = random_problem((40, 33), k=2, seed=3)
    levels, blocks = pyramid(p, 100)
    assert [lv.n for lv in levels] == [1320, 340, 90]
    assert len(blocks) == 2 and blocks[0].shape == (1320,)


def test_band_covers_boundaries_and_fix_outside_only_changes_hard():
    image, _, strokes = shapes_image(seed=0, k=2, size=32, noise=0.02)
    p = build_problem(image, strokes, 2)
    lab = np.ones(p.shape, np.int32)
    lab[8:20, 8:20] = 2
    band = undecided_band(p, lab, radius=1)
    assert band[8, 8:20].all() and band[7, 8:20].all() and band[19, 8:20].all()
    assert not band[13, 13]                      # deep inside a region the data agrees with
    sub = fix_outside(p, lab, band)
    assert sub.energy(lab) == p.energy(lab)
    assert np.array_equal(sub.hard.reshape(p.shape)[~band], lab[~band])
    assert (sub.hard.reshape(p.shape)[band] == 0).all()


def _island_problem():
    """A 6x6 island of label 2 that ICM cannot erode but whose removal lowers the energy."""
    img = np.full((12, 12), 0.5)
    isl = np.zeros((12, 12), bool)
    isl[3:9, 3:9] = True
    un = np.zeros((144, 2))
    un[isl.ravel(), 0] = 3.0   # the island's pixels prefer label 2 ...
    un[~isl.ravel(), 1] = 2.0  # ... and the sea prefers label 1
    return problem_from_unary(img, un, lam=1.0), np.where(isl, 2, 1)


def test_component_flips_remove_an_island_that_icm_keeps():
    p, lab = _island_problem()
    assert np.array_equal(icm(p, lab), lab)          # single-pixel moves are stuck
    out = component_flips(p, lab)
    assert p.energy(out) < p.energy(lab) - 1.0
    assert (out == 1).all()



def test_region_moves_shift_a_boundary_cluster_that_prefers_the_other_label():
    # a 4x2 cluster on the 1|2 boundary prefers label 2: each pixel alone would pay more in
    # smoothness than it gains, and its whole region (the left half) must stay label 1
    img = np.full((12, 12), 0.5)
    lab = np.ones((12, 12), int)
    lab[:, 6:] = 2
    cluster = np.zeros((12, 12), bool)
    cluster[4:8, 4:6] = True
    un = np.zeros((144, 2))
    un[(lab == 1).ravel(), 1] = 5.0
    un[(lab == 2).ravel(), 0] = 5.0
    un[cluster.ravel()] = (3.0, 0.0)
    p = problem_from_unary(img, un, lam=1.0)
    assert np.array_equal(icm(p, lab), lab)
    want = np.where(cluster, 2, lab)
    out = component_flips(p, lab)
    np.testing.assert_array_equal(out, want)
    assert p.energy(out) < p.energy(lab) - 10.0

def test_component_flips_never_raise_energy_and_keep_hard_pixels():
    for seed in range(6):
        p = random_problem((10, 12), k=3, seed=seed, hard_fraction=0.1)
        lab = np.random.default_rng(seed).integers(1, 4, p.shape)
        hard = p.hard.reshape(p.shape)
        lab[hard > 0] = hard[hard > 0]
        out = component_flips(p, lab)
        assert p.energy(out) <= p.energy(lab) + 1e-9
        p.check_hard(out)


@pytest.mark.parametrize("k", [2, 3])
def test_settle_regions_since_a_settled_labelling_gives_the_full_result(k):
    from solver.mrf.polish.regions import settle_regions
    for seed in range(4):
        p = random_problem((30, 34), k=k, seed=seed)
        settled, ok = settle_regions(p, icm(p, np.argmin(p.unary, axis=1) + 1))
        assert ok
        rng = np.random.default_rng(seed)
        changed = settled.copy()
        r, c = rng.integers(0, 26, 2)
        changed[r:r + 4, c:c + 5] = rng.integers(1, k + 1)      # a block relabelled ...
        changed.ravel()[rng.integers(0, p.n, 12)] = 1            # ... and scattered pixels
        start = icm(p, changed)
        full, _ = settle_regions(p, start, icm_optimal=True)
        near, _ = settle_regions(p, start, icm_optimal=True, since=settled)
        np.testing.assert_array_equal(near, full)


def test_region_moves_leave_out_regions_above_the_cap():
    from solver.mrf import PolishOptions
    p, lab = _island_problem()
    island = int((lab == 2).sum())
    below = PolishOptions(region_cap=0.0, region_cap_min=island - 1)
    at = PolishOptions(region_cap=0.0, region_cap_min=island)
    assert np.array_equal(component_flips(p, lab, options=below), lab)  # too big: not considered
    assert (component_flips(p, lab, options=at) == 1).all()             # at the cap: moved


@pytest.mark.parametrize("through", ["grid", "csr"])
def test_capped_components_follow_the_seeds_and_leave_the_scratch_as_found(through):
    from solver.mrf.polish import region_kernels
    p = random_problem((20, 20), k=2, seed=0)
    mask = np.zeros((20, 20), bool)
    mask[2:4, 2:4] = True       # 4 pixels
    mask[10:18, 10:18] = True   # 64 pixels
    mask[0, 19] = True          # 1 pixel, never seeded
    mask[1, 0] = True           # 1 pixel beside the last, a row apart: not its neighbour
    mask = mask.ravel()
    indptr, indices, data, gw, geom = graph_arrays(p)
    if through == "csr":
        indptr, indices, data = csr_arrays(p)
        gw = np.empty(0)
    region, order, starts, big = scratch = region_kernels.region_scratch(p.n)
    # (pixel 0 is off the mask: passed over, though its neighbour 20 is on it)
    seeds = np.array([0, 2 * 20 + 2, 3 * 20 + 3, 12 * 20 + 12, 17 * 20 + 17, 20], np.int64)
    lab = np.zeros(p.n, np.int32)  # the mask: label 0 where preferred
    potts = (indptr, indices, data, gw, geom, p.unary, 2.0 * p.lam)
    nc, nbig = region_kernels._capped_components(potts, lab, 0, mask, seeds, 10, region, order,
                                                 starts, big)
    assert nc == 2  # the small square and the lone pixel; the big one's searches stopped
    assert 10 < nbig < 64
    square = np.zeros((20, 20), bool)
    square[10:18, 10:18] = True
    assert square.ravel()[big[:nbig]].all()
    assert sorted(order[:starts[1]]) == [42, 43, 62, 63]
    assert order[starts[1]:starts[2]].tolist() == [20]
    region[order[:starts[nc]]] = -1
    region[big[:nbig]] = -1
    # no seeds: every pixel of the mask seeds, in index order
    nc, nbig = region_kernels._capped_components(potts, lab, 0, mask, np.empty(0, np.int64), 10,
                                                 region, order, starts, big)
    assert nc == 3 and square.ravel()[big[:nbig]].all()  # (every seed of it met the -2s)
    assert [order[starts[r]:starts[r + 1]].tolist() for r in (0, 1)] == [[19], [20]]
    region[order[:starts[nc]]] = -1
    region[big[:nbig]] = -1
    region.fill(-1)
    region_kernels.move_regions(potts, lab, 0, mask, p.hard.ravel(), seeds, 10, scratch)
    assert (region == -1).all()


def test_island_region_is_pinned_by_a_hard_pixel():
    from dataclasses import replace
    p, lab = _island_problem()
    hard = np.zeros(p.n, np.int32)
    hard[5 * 12 + 5] = 2
    out = component_flips(replace(p, hard=hard), lab)
    assert np.array_equal(out, lab)


def _big_problem(k=2, hard=False):
    image, truth, strokes = shapes_image(seed=1, k=k, size=190, noise=0.12)
    h = None
    if hard:
        h = np.zeros_like(strokes)
        h[100:104, 100:104] = 1
        h[40:43, 40:43] = 2
        h[60, 60], h[60, 61] = 1, 2  # one 2x2 block, two hard labels: free when coarse
    return build_problem(image, strokes, k, hard=h), truth


def test_coarse_to_fine_is_the_default_for_big_images_and_matches_mincut_closely():
    p, truth = _big_problem()
    ref = solve_mrf(p, "mincut")
    seen = []
    res = solve_mrf(p, "admm", seed=0,
                    callback=lambda s: seen.append((s.phase, s.iteration, s.level,
                                                    s.probabilities().shape)) and False)
    frames = [f[1:] for f in seen if f[0] == "admm"]
    assert res.history[-1].iteration == res.iterations == len(frames)
    # (each polish is asked with the iteration it follows, its phase naming the stage)
    polish = [(i, f) for i, f in enumerate(seen) if f[0] != "admm"]
    assert polish and all(f[0].startswith("polish:") for _, f in polish)
    assert all(f[1] == seen[i - 1][1] for i, f in polish)
    assert [f[0] for f in frames] == list(range(1, len(frames) + 1))
    assert {f[2] for f in frames} == {(*p.shape, 2)}
    assert frames[0][1] > 0 and frames[-1][1] == 0
    assert res.energy == pytest.approx(p.energy(res.labels))
    assert res.energy <= ref.energy + 0.005 * abs(ref.energy)
    assert (res.labels == truth).mean() >= (ref.labels == truth).mean() - 0.01
    flat = solve_mrf(p, "admm", seed=0, coarse_to_fine=False)
    assert flat.iterations != res.iterations


@pytest.mark.slow
def test_coarse_to_fine_honours_hard_constraints_and_stops_on_request():
    p, _ = _big_problem(k=3, hard=True)
    res = solve_mrf(p, "admm", coarse_to_fine=True)
    p.check_hard(res.labels)
    stopped = solve_mrf(p, "admm", coarse_to_fine=True, callback=lambda s: s.iteration >= 5)
    assert stopped.iterations == 5 and stopped.labels.shape == p.shape
    assert stopped.energy == pytest.approx(p.energy(stopped.labels))
    p.check_hard(stopped.labels)


@pytest.mark.parametrize("k", [2, 3])
def test_coarse_to_fine_from_a_warm_start_solves_a_band_of_the_finest_level(k):
    """A warm start skips the coarser levels: its rounding is settled, a band round the
    boundaries is solved, and the answer is never worse than the rounding (hard pixels kept)."""
    p = random_problem((24, 24), k=k, seed=1)
    hard = np.zeros(p.shape, np.int32)
    hard[0, :4] = k
    p = replace(p, hard=hard)
    rng = np.random.default_rng(0)
    x0 = rng.random((p.n, k))
    x0[hard.ravel() > 0] = 0.0  # a start that disagrees with the hard pixels
    rounding = np.where(hard.ravel() > 0, hard.ravel(), x0.argmax(1) + 1).reshape(p.shape)
    seen = []
    res = solve_mrf(p, "admm", coarse_to_fine=True, x0=x0,
                    callback=lambda s: seen.append((s.level, s.solver.free.size)))
    assert {level for level, _ in seen} == {0}
    assert 0 < max(free for _, free in seen) < p.n
    assert res.energy <= p.energy(rounding) + 1e-9 * abs(p.energy(rounding))
    assert np.all(res.labels[0, :4] == k)
    with pytest.raises(ValueError, match="x0 must have"):
        solve_mrf(p, "admm", coarse_to_fine=True, x0=x0[:-1])


def test_pixels_the_coarse_polish_relabelled_stay_free_at_the_next_level(monkeypatch):
    """A block the coarsest polish moves to the label its data prefers is neither near a boundary
    of the upsampled labels (inside) nor disputed by the data, so only the revisit frees it."""
    from solver.mrf import CoarseToFineOptions, SolveOptions
    from solver.mrf.polish import pipeline
    from solver.mrf.solve import coarse_to_fine as multilevel

    unary = np.zeros((200, 200, 2))
    unary[..., 0] = 1.0                       # label 2 is cheaper everywhere ...
    unary[60:140, 60:140] = (0.0, 0.2)        # ... except in a square that prefers label 1
    p = problem_from_unary(np.zeros((200, 200)), unary, lam=50.0)
    real_polish, real_solver = pipeline.polish_labels, multilevel.MRFADMM
    flipped, free_masks = {}, []

    def polish(level, labels, snapshots=(), max_rounds=None, **kwargs):
        out = np.array(real_polish(level, labels, snapshots, max_rounds, **kwargs)).reshape(
            level.shape)
        if not flipped:  # the coarsest level: a block inside the square goes to label 1
            s = level.shape[0] / 200
            lo, hi = int(70 * s), int(130 * s)
            out[lo:hi, lo:hi] = 1
            flipped["box"] = (2 * lo, 2 * hi)
        return out

    class Spy(real_solver):
        def __init__(self, problem, *args, **kwargs):
            if kwargs.get("early_fixing", True):  # a level's solver, not an early-fixed piece
                free_masks.append(np.asarray(problem.hard).reshape(problem.shape) == 0)
            super().__init__(problem, *args, **kwargs)

    monkeypatch.setattr(pipeline, "polish_labels", polish)
    monkeypatch.setattr(multilevel, "MRFADMM", Spy)

    def next_level_free_in_block(radius):
        flipped.clear()
        free_masks.clear()
        options = SolveOptions(coarse_to_fine=CoarseToFineOptions(revisit_radius=radius))
        solve_mrf(p, "admm", seed=0, options=options)
        lo, hi = flipped["box"]
        return free_masks[1][lo:hi, lo:hi]    # the first band level, twice as fine

    assert next_level_free_in_block(CoarseToFineOptions().revisit_radius).all()
    assert not next_level_free_in_block(None)[6:-6, 6:-6].any()  # beyond the usual band


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_polish_since_a_fixed_point_gives_the_full_result(k):
    from solver.mrf.polish.pipeline import polish_labels

    p = random_problem((40, 37), k=k, seed=30 + k, hard_fraction=0.1)
    base, moved = perturbed_fixed_point(p, k, 40)
    full = polish_labels(p, moved)
    assert not np.array_equal(full.ravel(), moved)  # the polish moves pixels
    np.testing.assert_array_equal(polish_labels(p, moved, since=base), full)


def test_band_levels_polish_from_their_warm_start(monkeypatch):
    """The level polish is told the warm start (an ICM fixed point that ADMM's labels equal
    outside the band), so its first ICM looks only at the band."""
    from solver.mrf.polish import pipeline

    real_polish = pipeline.polish_labels
    calls = []

    def polish(level, labels, snapshots=(), max_rounds=None, **kwargs):
        calls.append((level, np.array(labels).ravel(), kwargs.get("since")))
        return real_polish(level, labels, snapshots, max_rounds, **kwargs)

    monkeypatch.setattr(pipeline, "polish_labels", polish)
    p, _ = _big_problem()
    solve_mrf(p, "admm", seed=0)
    assert len(calls) >= 2 and calls[0][2] is None  # the coarsest level has no warm start
    for level, labels, since in calls[1:]:
        assert since is not None
        since = np.asarray(since).ravel()
        np.testing.assert_array_equal(icm(level, since, max_sweeps=1000).ravel(), since)
        assert (labels != since).mean() < 0.2  # ADMM moved only band pixels


@pytest.mark.slow
def test_the_final_polish_runs_with_no_coarser_level_left(monkeypatch):
    """A photo's memory peak is the last level's polish: by then the coarser levels, their
    block maps and the warm start have been dropped (by reference counting, not the collector)."""
    import gc
    import weakref

    from solver.mrf import CoarseToFineOptions, SolveOptions
    from solver.mrf.polish import pipeline
    from solver.mrf.solve import coarse_to_fine as multilevel

    real_pyramid, real_polish = multilevel.pyramid, pipeline.polish_labels
    coarse_refs, alive_at_final = [], []

    def pyramid(problem, coarsest):
        levels, blocks = real_pyramid(problem, coarsest)
        roots = [b if b.base is None else b.base for b in blocks]  # (a block map is a ravel)
        coarse_refs.extend(weakref.ref(x) for x in levels[1:] + roots)
        return levels, blocks

    def polish(level, labels, snapshots=(), max_rounds=None, **kwargs):
        if kwargs.get("split", True):
            alive_at_final.append(sum(r() is not None for r in coarse_refs))
        return real_polish(level, labels, snapshots, max_rounds, **kwargs)

    monkeypatch.setattr(multilevel, "pyramid", pyramid)
    monkeypatch.setattr(pipeline, "polish_labels", polish)
    options = SolveOptions(coarse_to_fine=CoarseToFineOptions(coarsest=500))
    p, _ = _big_problem()
    gc.collect()
    gc.disable()
    try:
        solve_mrf(p, "admm", seed=0, coarse_to_fine=True, options=options)
    finally:
        gc.enable()
    assert len(coarse_refs) >= 4  # two or more coarser levels, each with its block map
    assert alive_at_final == [0]


@pytest.mark.slow
@pytest.mark.parametrize(("k", "coarse_to_fine"), [(2, True), (3, True), (3, False)])
def test_a_subsampled_frame_is_the_full_frame_subsampled(k, coarse_to_fine):
    """``probabilities(max_side)`` (a live view's frame) is the full frame's ``[::s, ::s]`` at
    every iteration: coarse levels (through the pixel map), early-fixed pieces, fixed pixels."""
    p, _ = _big_problem(k=k, hard=True)
    checked = []

    def check(state):
        full = state.probabilities()
        for side in (7, 40, max(p.shape), 10_000):
            step = -(-max(p.shape) // side) if side < max(p.shape) else 1
            np.testing.assert_array_equal(state.probabilities(max_side=side),
                                          full[::step, ::step])
        checked.append(state.level)

    solve_mrf(p, "admm", seed=0, coarse_to_fine=coarse_to_fine, callback=check)
    assert len(checked) > 20
    assert (max(checked) > 0) == coarse_to_fine


def test_warm_start_fusion_takes_every_region_where_the_warm_start_is_better():
    """Fused with the global optimum, a settled labelling reaches the optimum's energy: the
    regions where they differ never touch, so each region's energy change is exact and
    independent, and none of them can be positive (the optimum would be improvable)."""
    from solver.mrf import PolishOptions
    from solver.mrf.polish.pipeline import polish_labels
    from solver.mrf.solve.coarse_to_fine import _fuse_warm_start

    image, _, strokes = shapes_image(seed=3, k=2, size=40, noise=0.3)
    p = build_problem(image, strokes, 2, lam=4.0)
    opt = solve_mrf(p, "mincut").labels
    rng = np.random.default_rng(0)
    # (without the TV proposals, which reach the optimum here on their own)
    settled = polish_labels(p, rng.integers(1, 3, size=p.shape),
                            options=PolishOptions(tv=TVOptions(iterations=0)))
    assert p.energy(settled) > p.energy(opt) + 1.0  # a labelling the fusion can improve
    fused = _fuse_warm_start(p, settled, opt, PolishOptions())
    assert p.energy(fused) == pytest.approx(p.energy(opt), abs=1e-9)
    # nothing to take from a worse warm start: the labels come back as they were
    np.testing.assert_array_equal(_fuse_warm_start(p, opt, settled, PolishOptions()), opt)


def test_band_levels_fuse_with_their_warm_start(monkeypatch):
    """Each band level's polished labels are fused with that level's warm start, the labelling
    its polish was told to start from; the coarsest level has none."""
    from solver.mrf import CoarseToFineOptions, SolveOptions
    from solver.mrf.polish import pipeline
    from solver.mrf.solve import coarse_to_fine as multilevel

    real_polish, real_fuse = pipeline.polish_labels, multilevel._fuse_warm_start
    starts, fused = [], []

    def polish(level, labels, snapshots=(), max_rounds=None, **kwargs):
        starts.append(kwargs.get("since"))
        return real_polish(level, labels, snapshots, max_rounds, **kwargs)

    def fuse(level, labels, up, options):
        out = real_fuse(level, labels, up, options)
        assert level.energy(out) <= level.energy(labels) + 1e-9
        fused.append(up)
        return out

    monkeypatch.setattr(pipeline, "polish_labels", polish)
    monkeypatch.setattr(multilevel, "_fuse_warm_start", fuse)
    p, _ = _big_problem()
    solve_mrf(p, "admm", seed=0)
    assert len(starts) >= 2 and starts[0] is None
    assert len(fused) == len(starts) - 1
    assert all(f is s for f, s in zip(fused, starts[1:]))
    fused.clear()
    starts.clear()
    solve_mrf(p, "admm", seed=0,
              options=SolveOptions(coarse_to_fine=CoarseToFineOptions(warm_fusion=False)))
    assert len(starts) >= 2 and not fused


def test_a_stop_at_a_coarse_level_maps_its_labels_to_the_image_with_or_without_the_maps(
        monkeypatch):
    """The full-image maps are made up front only for a callback's view; a stop at a coarse
    level without them makes its own map from the blocks, with the same result."""
    from solver.mrf.solve import coarse_to_fine as multilevel
    p, _ = _big_problem(k=2)

    def stop(state):
        return state.iteration >= 5  # (within the coarsest level)

    want = solve_mrf(p, "admm", coarse_to_fine=True, callback=stop)
    made = []
    real = multilevel._pixel_maps

    def no_maps_up_front(blocks):
        made.append(len(blocks))
        return [None] * (len(blocks) + 1) if len(made) == 1 else real(blocks)

    monkeypatch.setattr(multilevel, "_pixel_maps", no_maps_up_front)
    got = solve_mrf(p, "admm", coarse_to_fine=True, callback=stop)
    assert len(made) == 2  # (the up-front call, then the stop's own map)
    np.testing.assert_array_equal(got.labels, want.labels)
    assert got.energy == want.energy and got.iterations == want.iterations == 5
    assert set(np.unique(want.labels)) == {1, 2}


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_a_stop_during_the_final_polish_ends_it_with_the_labels_polished_so_far(k, monkeypatch):
    """A callback that says True once the final polish runs (a cancel pressed there) ends the
    solve with status "cancelled" and labels no worse than ADMM's own; one that never says
    True changes nothing. (Where the polish polls it:
    tests/solver/mrf/polish/test_tv_proposals.py.)"""
    from solver.mrf.polish import tv

    p, _ = _big_problem(k=k)
    whole = solve_mrf(p, "admm", seed=0, callback=lambda state: False)
    plain = solve_mrf(p, "admm", seed=0)
    assert whole.status == plain.status and np.array_equal(whole.labels, plain.labels)
    final = {"on": False}
    for name in ("fuse_tv_into", "fuse_tv_expansions_into"):
        real = getattr(tv, name)

        def wrapped(problem, *args, _real=real, **kwargs):
            final["on"] = problem.n == p.n  # (the final level's polish)
            return _real(problem, *args, **kwargs)

        monkeypatch.setattr(f"solver.mrf.polish.pipeline.{name}", wrapped)
    asked = []

    def stop(state):
        if state.phase != "admm":
            asked.append(final["on"])
        return final["on"]

    res = solve_mrf(p, "admm", seed=0, callback=stop)
    assert res.status == "cancelled" and res.labels.shape == p.shape
    assert res.energy == pytest.approx(p.energy(res.labels))
    assert res.energy <= res.energy_admm + 1e-9 * abs(res.energy_admm)
    assert asked[-1] and not asked[0]  # polled at coarser levels too, true only at the end
