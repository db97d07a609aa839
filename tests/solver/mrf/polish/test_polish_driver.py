"""What the polish driver (solver.mrf.polish.pipeline.polish_labels) hands its steps: the caller's
options reach every region pass and the constrained polish, and a split move is followed by ICM
and a region pass. (The steps' own results are tested with each step.)"""

import numpy as np
import pytest

from solver.mrf import Constraints, build_problem, solve_mrf
from solver.mrf.build.constraints import AreaBound
from solver.mrf.build.problem import with_constraints
from solver.mrf.options import ConstrainedOptions, FusionOptions, PolishOptions, TVOptions
from solver.mrf.polish import pipeline
from tests.solver._mrf_helpers import shapes_image

CUSTOM = PolishOptions(region_cap=1 / 64, region_cap_min=512,
                       fusion=FusionOptions(final_rounds=2, thresholds=(0.3, 0.7)))


def _case(k=3, seed=2):
    image, _, strokes = shapes_image(seed=seed, k=k, size=48, noise=0.25)
    p = build_problem(image, strokes, k)
    res = solve_mrf(p, "admm", polish=False, max_iter=25, seed=seed)
    return p, res.labels, [np.asarray(res.x_continuous).reshape(p.n, k)]


def _spy(monkeypatch, name, log):
    real = getattr(pipeline, name)

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        log.append((name, kwargs.get("options"), out))
        return out

    monkeypatch.setattr(pipeline, name, spy)


def test_every_region_pass_gets_the_callers_options(monkeypatch):
    p, labels, weights = _case()
    log = []
    _spy(monkeypatch, "settle_regions_into", log)
    out = pipeline.polish_labels(p, labels, weights, options=CUSTOM)
    assert len(log) >= 2
    assert all(opts is CUSTOM for _, opts, _ in log)
    assert p.energy(out) <= p.energy(labels)


def test_a_constrained_problem_gets_the_callers_options_and_tv_in_the_final_polish(monkeypatch):
    p, labels, weights = _case()
    q = with_constraints(p, Constraints(area=(AreaBound(1, 0.05, 0.6),)))
    seen = []
    real = pipeline.constrained_polish
    monkeypatch.setattr(pipeline, "constrained_polish",
                        lambda *a, **kw: seen.append((a, kw)) or real(*a, **kw))
    pipeline.polish_labels(q, labels, weights, options=CUSTOM)
    pipeline.polish_labels(q, labels, weights, options=CUSTOM, split=False)
    assert len(seen) == 2
    for (args, kwargs), final in zip(seen, (True, False)):
        assert (kwargs.get("options") if "options" in kwargs else args[3]) is CUSTOM
        # the TV proposals and expansion moves in the final polish only, as unconstrained
        assert kwargs.get("tv") is final


def _fake_step(name, log, returns):
    """A polish step that changes a block of the labels (as a real one may) and reports it."""
    def step(problem, lab, *args, **kwargs):
        log.append((name, None, returns))
        block = lab.reshape(problem.shape)[20:26, 20:26]
        block[...] = (block[3, 3] + 1) % problem.k
        return returns
    return step


@pytest.mark.parametrize("step, returns", [
    ("split_moves_into", 1), ("fuse_descents_into", True),
    ("fuse_edge_snapped_into", True), ("fuse_level_sets_into", 3),
    ("fuse_tv_expansions_into", 2)])
def test_each_step_that_changes_the_labels_is_followed_by_a_region_pass(monkeypatch, step,
                                                                        returns):
    """After a split move, a descent fusion, TV-relaxed expansion moves, an edge-snapped
    fusion or a level-set fusion changes the labels, a region pass with the caller's options looks at the result before the
    next step (their regions can leave islands that only a region move removes)."""
    p, labels, weights = _case()
    log = []
    quiet = {"split_moves_into": 0, "fuse_descents_into": False,
             "fuse_edge_snapped_into": False, "fuse_level_sets_into": 0,
             "fuse_tv_expansions_into": 0}
    for name, none in quiet.items():  # every other step finds nothing
        monkeypatch.setattr(pipeline, name, _fake_step(name, log, returns) if name == step
                            else (lambda *a, _n=name, _v=none, **kw: log.append((_n, None, _v))
                                  or _v))
    _spy(monkeypatch, "settle_regions_into", log)
    pipeline.polish_labels(p, labels, weights, options=CUSTOM)
    names = [name for name, _, _ in log]
    at = names.index(step)
    assert names[at + 1] == "settle_regions_into", names
    assert all(opts is CUSTOM for name, opts, _ in log if name == "settle_regions_into")


@pytest.mark.parametrize("k, steps, room, runs", [
    (2, 1, 0, True),     # a single step is a TV move; an image exactly at the cap gets one
    (3, 1, 0, True),
    (2, 5, -1, False),   # an image one pixel over the cap gets none
    (3, 5, -1, False),
    (2, 0, 0, False),    # zero steps turn them off
    (3, 0, None, False),
    (3, 5, None, True),  # no cap: every size
])
def test_tv_moves_run_with_the_callers_steps_up_to_the_size_cap(monkeypatch, k, steps, room,
                                                                runs):
    """The final polish runs the TV relaxation (K = 2) or the TV-relaxed expansion moves (K > 2)
    with the caller's number of steps, on images up to ``tv_max_pixels`` (None: any size), and
    not at all with zero steps or in a coarse level's polish (``split=False``)."""
    p, labels, weights = _case(k=k)
    name = "fuse_tv_into" if k == 2 else "fuse_tv_expansions_into"
    other = "fuse_tv_expansions_into" if k == 2 else "fuse_tv_into"
    calls = []
    real = getattr(pipeline, name)
    monkeypatch.setattr(pipeline, name,
                        lambda problem, lab, n_steps, *a, **kw: calls.append(n_steps)
                        or real(problem, lab, n_steps, *a, **kw))
    monkeypatch.setattr(pipeline, other, lambda *a, **kw: pytest.fail(f"{other} for K = {k}"))
    field = "iterations" if k == 2 else "expansion_iterations"
    opts = PolishOptions(tv=TVOptions(**{field: steps,
                                         "max_pixels": None if room is None else p.n + room}))
    pipeline.polish_labels(p, labels, weights, options=opts)
    assert calls == ([steps] if runs else [])
    calls.clear()
    pipeline.polish_labels(p, labels, weights, options=opts, split=False)
    assert calls == []


def test_the_plain_fusion_gets_the_callers_thresholds_and_proposal_cap(monkeypatch):
    """The level-set fusion rounds use ``options.fusion.thresholds`` and
    ``options.fusion.max_pixels`` (the size cap of a proposal), not the fusion's defaults."""
    p, labels, weights = _case()
    seen = []
    real = pipeline.fuse_level_sets_into

    def spy(problem, lab, snapshots, thresholds, *args, **kwargs):
        seen.append((tuple(thresholds), kwargs.get("max_pixels", "default")))
        return real(problem, lab, snapshots, thresholds, *args, **kwargs)

    monkeypatch.setattr(pipeline, "fuse_level_sets_into", spy)
    opts = PolishOptions(fusion=FusionOptions(thresholds=(0.3, 0.7), max_pixels=123, final_rounds=2))
    pipeline.polish_labels(p, labels, weights, options=opts)
    assert seen and all(s == ((0.3, 0.7), 123) for s in seen)


@pytest.mark.parametrize("k, only, steps, room, skipped", [
    (2, True, 5, 0, True),     # K = 2 with the TV proposals: they take these steps' regions
    (2, False, 5, 0, False),   # asked for all the same
    (2, True, 0, 0, False),    # no TV steps: the steps run
    (2, True, 5, -1, False),   # an image over the TV cap: the steps run
    (3, True, 5, 0, False),    # K > 2 (TV-relaxed expansions): the steps run
])
def test_descents_and_edge_snapping_give_way_to_the_tv_proposals_for_two_labels(
        monkeypatch, k, only, steps, room, skipped):
    """``tv.only_binary``: a K = 2 final polish that runs the TV proposals skips descent
    fusion and the edge-snapped proposals; without the proposals, or for K > 2, both run."""
    p, labels, weights = _case(k=k)
    calls = []
    for name in ("fuse_descents_into", "fuse_edge_snapped_into"):
        monkeypatch.setattr(pipeline, name,
                            lambda *a, _n=name, **kw: calls.append(_n) or False)
    field = "iterations" if k == 2 else "expansion_iterations"
    opts = PolishOptions(tv=TVOptions(**{field: steps, "max_pixels": p.n + room,
                                         "only_binary": only}))
    out = pipeline.polish_labels(p, labels, weights, options=opts)
    assert calls == ([] if skipped else ["fuse_descents_into", "fuse_edge_snapped_into"])
    assert p.energy(out) <= p.energy(labels)


def test_the_tv_rounds_get_the_callers_first_and_later_lengths(monkeypatch):
    """``tv.fuse_every`` and ``tv.fuse_next`` reach the K = 2 TV proposals."""
    p, labels, weights = _case(k=2)
    seen = []
    monkeypatch.setattr(pipeline, "fuse_tv_into",
                        lambda *a, **kw: seen.append((kw["every"], kw["next_every"])) or 0)
    pipeline.polish_labels(p, labels, weights,
                           options=PolishOptions(tv=TVOptions(fuse_every=75, fuse_next=25)))
    assert seen == [(75, 25)]


def test_the_binary_tv_steps_grow_with_the_images_side(monkeypatch):
    """Above ``tv.grow_above`` pixels the K = 2 proposals get ``sqrt(n / tv.grow_above)`` times
    the steps, in whole rounds; below it, and for K > 2, the caller's number."""
    assert pipeline.binary_tv_steps(10**6) == 800 == pipeline.binary_tv_steps(10**5)
    assert pipeline.binary_tv_steps(3 * 10**6) == 1400  # 1385.6 steps, rounded up to a round
    assert pipeline.binary_tv_steps(4 * 10**6) == 1600
    assert pipeline.binary_tv_steps(4 * 10**6, PolishOptions(tv=TVOptions(grow_above=None))) == 800
    assert pipeline.binary_tv_steps(4 * 10**6, PolishOptions(tv=TVOptions(iterations=0))) == 0
    p, labels, weights = _case(k=2)
    calls = []
    real = pipeline.fuse_tv_into
    monkeypatch.setattr(pipeline, "fuse_tv_into",
                        lambda problem, lab, n_steps, *a, **kw: calls.append(n_steps)
                        or real(problem, lab, n_steps, *a, **kw))
    opts = PolishOptions(tv=TVOptions(iterations=50, fuse_every=25, grow_above=p.n // 4),
                         constrained=ConstrainedOptions(tv_max_pixels=p.n - 1))  # (not the proposals' cap)
    pipeline.polish_labels(p, labels, weights, options=opts)
    assert calls == [100]
