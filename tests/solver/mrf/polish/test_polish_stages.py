"""The polish as named stages (solver.mrf.polish.stages): each stage's time and the energy it
took off, on the result, adding up to what the polish took off ADMM's own labels."""

from __future__ import annotations

import json

import numpy as np
import pytest

from solver.mrf import AreaBound, Constraints, build_problem, segment, solve_mrf
from solver.mrf.polish.pipeline import polish_labels
from solver.mrf.polish.stages import STAGES, StageClock, StageReport
from tests.solver._mrf_helpers import random_problem, shapes_image


def _checked(res) -> list[str]:
    """The result's stages are known, in the polish's order, never raise the energy and add
    up to what the polish took off; their names."""
    names = [s.name for s in res.stages]
    assert names and set(names) <= set(STAGES)
    order = list(STAGES)
    assert names == sorted(names, key=order.index)  # (the order the polish runs them)
    scale = max(1.0, abs(res.energy))
    assert all(s.gain >= -1e-9 * scale and s.time_s >= 0 and s.calls >= 1 for s in res.stages)
    assert sum(s.gain for s in res.stages) == pytest.approx(res.energy_admm - res.energy,
                                                            rel=1e-9, abs=1e-7 * scale)
    assert res.polish_s == pytest.approx(sum(s.time_s for s in res.stages))
    assert res.polish_s <= res.time_s
    return names


@pytest.mark.slow
@pytest.mark.parametrize("k, stage", [(2, "tv"), (3, "tv-expansion")])
def test_the_stages_add_up_to_what_the_polish_took_off(k, stage):
    image, _, strokes = shapes_image(seed=1, k=k, size=64, noise=0.25)
    problem = build_problem(image, strokes, k)
    res = solve_mrf(problem, "admm", seed=0)
    assert res.energy_admm > res.energy  # (the premise: the polish had work to do)
    names = _checked(res)
    assert names[0] == "icm" and stage in names
    assert any(s.gain > 0 for s in res.stages)


def test_a_rectangle_run_reports_its_final_polish():
    image, _, _ = shapes_image(seed=2, k=2, size=80, noise=0.2)
    res, _ = segment(image, None, 2, rect=(8, 8, 40, 36), seed=0)
    _checked(res)


def test_a_constrained_polish_is_its_own_stages():
    image, _, strokes = shapes_image(seed=3, k=2, size=48, noise=0.2)
    problem = build_problem(image, strokes, 2,
                            constraints=Constraints(area=(AreaBound(2, 0.05, 0.12),)))
    res = solve_mrf(problem, "admm", seed=0)
    names = _checked(res)
    assert names[0] == "constrained" and set(names) <= {"constrained", "area-relaxation"}


def test_no_polish_and_the_yardsticks_have_no_stages():
    image, _, strokes = shapes_image(seed=1, k=2, size=40)
    problem = build_problem(image, strokes, 2)
    assert solve_mrf(problem, "admm", seed=0, polish=False).stages == ()
    assert solve_mrf(problem, "mincut").stages == ()
    assert solve_mrf(problem, "mincut").polish_s == 0.0


def test_asking_for_the_report_changes_no_label():
    for seed, k in ((0, 2), (1, 3), (2, 4)):
        problem = random_problem((24, 30), k=k, seed=seed)
        start = np.random.default_rng(seed).integers(1, k + 1, problem.n).reshape(problem.shape)
        report: list = []
        plain = polish_labels(problem, start)
        timed = polish_labels(problem, start, report=report)
        np.testing.assert_array_equal(plain, timed)
        assert sum(r.gain for r in report) == pytest.approx(
            problem.energy(start) - problem.energy(timed), rel=1e-9, abs=1e-9)


def test_the_result_as_a_dict_is_json_with_its_stages():
    image, _, strokes = shapes_image(seed=1, k=2, size=40, noise=0.2)
    res = solve_mrf(build_problem(image, strokes, 2), "admm", seed=0)
    d = json.loads(json.dumps(res.as_dict()))
    assert d["energy"] == res.energy and d["energy_admm"] == res.energy_admm
    assert d["method"] == "admm" and d["status"] == res.status
    assert d["iterations"] == res.iterations and d["feasible"] is True
    assert [s["name"] for s in d["stages"]] == [s.name for s in res.stages]
    assert [s["gain"] for s in d["stages"]] == [s.gain for s in res.stages]


class _Counting:
    """A problem stand-in that counts its energy evaluations."""

    def __init__(self, problem):
        self.problem, self.calls = problem, 0

    def energy(self, labels):
        self.calls += 1
        return self.problem.energy(labels)


def test_a_stage_that_moves_nothing_costs_no_energy_pass():
    problem = random_problem((10, 12), k=2, seed=4)
    lab = np.zeros(problem.n, np.int32)
    counting = _Counting(problem)
    clock = StageClock(counting, lab, energy=problem.energy(lab + 1))
    with clock.stage("icm", before=lab.copy()):
        pass  # nothing moved: no evaluation
    with clock.stage("fill") as took:
        took  # (not called)
    assert counting.calls == 0
    e0 = problem.energy(lab + 1)
    with clock.stage("regions", before=lab.copy()):
        lab[:5] = 1  # moved, found by the comparison
    with clock.stage("regions") as took:
        lab[5:9] = 1
        took()
    assert counting.calls == 2
    (icm, fill, regions) = clock.reports()
    assert (icm.gain, fill.gain, icm.calls, regions.calls) == (0.0, 0.0, 1, 2)
    assert regions.gain == pytest.approx(e0 - problem.energy(lab + 1))
    assert StageReport("tv", 0.5, 2.0).as_dict() == {"name": "tv", "time_s": 0.5, "gain": 2.0,
                                                    "calls": 1}


def test_an_unknown_stage_is_refused():
    problem = random_problem((4, 4), k=2, seed=0)
    clock = StageClock(problem, np.zeros(problem.n, np.int32))
    with pytest.raises(ValueError, match="unknown polish stage 'magic'"):
        with clock.stage("magic"):
            pass


def _stages_seen(phases: list[str]) -> list[str]:
    """The polish stages a callback saw start: each run of one "polish:<stage>" phase once."""
    out, last = [], None
    for p in phases:
        if p.startswith("polish:") and p != last:
            out.append(p.removeprefix("polish:"))
        last = p
    return out


def test_the_callback_sees_each_stage_as_it_starts():
    """One live type: the callback's states carry a phase, "admm" for an iteration and
    "polish:<stage>" within the polish, holding the last iteration's numbers there."""
    image, _, strokes = shapes_image(seed=1, k=2, size=64, noise=0.25)
    problem = build_problem(image, strokes, 2)
    seen: list = []
    res = solve_mrf(problem, "admm", seed=0,
                    callback=lambda s: seen.append((s.phase, s.iteration)))
    phases = [p for p, _ in seen]
    assert _stages_seen(phases) == [s.name for s in res.stages]
    first = phases.index(next(p for p in phases if p != "admm"))
    assert set(phases[:first]) == {"admm"} and "admm" not in phases[first:]
    assert {it for p, it in seen[first:]} == {res.iterations}  # (the last iteration's)
    # coarse to fine: every level's polish names its stages, the final one's last
    seen.clear()
    image, _, strokes = shapes_image(seed=1, k=2, size=200, noise=0.25)  # (three levels)
    res = solve_mrf(build_problem(image, strokes, 2), "admm", seed=0, coarse_to_fine=True,
                    callback=lambda s: seen.append((s.phase, s.iteration)))
    named = _stages_seen([p for p, _ in seen])
    assert len(named) > len(res.stages) and set(named) <= set(STAGES)
    assert named[-len(res.stages):] == [s.name for s in res.stages]
    # the yardsticks have no iterations
    seen.clear()
    solve_mrf(problem, "mincut", callback=seen.append)
    assert seen == []


def test_a_true_within_the_polish_stops_it():
    """The callback's True is the one way to stop, in the polish too: the first stage that
    asks ends the solve as cancelled, with labels no worse than ADMM's own."""
    image, _, strokes = shapes_image(seed=1, k=2, size=64, noise=0.25)
    problem = build_problem(image, strokes, 2)
    full = solve_mrf(problem, "admm", seed=0)
    res = solve_mrf(problem, "admm", seed=0, callback=lambda s: s.phase != "admm")
    assert full.status != "cancelled" and res.status == "cancelled"
    assert res.iterations == full.iterations  # (ADMM itself ran to its end)
    assert len(res.stages) < len(full.stages)
    assert res.energy == pytest.approx(problem.energy(res.labels))
    assert res.energy <= res.energy_admm + 1e-9 * abs(res.energy_admm)
