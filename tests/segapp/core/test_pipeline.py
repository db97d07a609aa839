"""segapp.core.pipeline's choice of backend, and its CPU fallback when the GPU is missing or fails."""

import logging

import numpy as np
import pytest

import solver.mrf.solve.segment as segment_module
import scipy.sparse as sp

import segapp.core.pipeline as pipeline
import solver.backend as backend_module
from segapp.core.pipeline import SegmentParams, resolve_backend, run_segmentation
from solver.backend import Backend, GPUUnavailableError
from solver.admm.params import ADMMParams
from solver.mrf import AreaBound, Constraints
from solver.mrf.options import SolveOptions
from tests.solver._mrf_helpers import shapes_image


def test_auto_backend_of_a_small_image_is_the_cpu_even_with_a_gpu(monkeypatch):
    monkeypatch.setattr(backend_module, "_load_gpu", lambda: Backend("gpu", np, sp))
    warnings: list[str] = []
    assert resolve_backend("auto", warnings.append, n=10_000, k=2) == "cpu"
    assert resolve_backend("auto", warnings.append, n=2_000_000, k=2) == "gpu"
    assert warnings == []


class CUDARuntimeError(RuntimeError):
    """Stands in for cupy.cuda.runtime.CUDARuntimeError where CuPy is not installed."""


@pytest.mark.parametrize("when", ["at the start", "during the solve"])
def test_a_gpu_that_is_missing_or_fails_gives_the_cpu_answer_and_says_so(monkeypatch, request,
                                                                          caplog, when):
    image, _, strokes = shapes_image(seed=1, k=2, size=40)
    # options that change the answer must survive the fall back to the CPU (one solve: no
    # colour-model rounds, whose solves the fall back reaches as well)
    opts = dict(options=SolveOptions().with_polish(False), admm={"max_iter": 6}, rounds=0)
    want = run_segmentation(image, strokes, SegmentParams(backend="cpu", **opts),
                            reference=False)
    if when == "at the start":
        request.getfixturevalue("no_cupy")
    else:  # the device is there when the backend is chosen, and its driver fails in the solve
        monkeypatch.setattr(backend_module, "_load_gpu", lambda: Backend("gpu", np, sp))
        monkeypatch.setattr(pipeline, "gpu_errors",
                            lambda: (GPUUnavailableError, CUDARuntimeError))
        real = pipeline.solve_mrf

        def solve(problem, method, backend="cpu", **kw):
            if backend == "gpu":
                raise CUDARuntimeError("cudaErrorLaunchFailure: unspecified launch failure")
            return real(problem, method, backend=backend, **kw)
        monkeypatch.setattr(pipeline, "solve_mrf", solve)
    told = []
    with caplog.at_level(logging.INFO, logger="segapp"):
        got = run_segmentation(image, strokes, SegmentParams(backend="gpu", **opts),
                               reference=False, notice=told.append)
    assert got.backend == "cpu"
    assert got.iterations == want.iterations <= 6 and got.energy == want.energy
    np.testing.assert_array_equal(got.labels, want.labels)
    assert len(told) == 1 and told == got.warnings and "running on the CPU instead" in told[0]
    # logged for the record (INFO: the caller shows it, from warnings or notice, once)
    assert [r.getMessage() for r in caplog.records if r.name == "segapp.core.pipeline"
            and r.levelno == logging.INFO and "GPU" in r.getMessage()] == told
    if when == "during the solve":  # the driver's own words, first line only
        assert told[0] == ("the GPU solve failed (cudaErrorLaunchFailure: unspecified launch "
                           "failure); running on the CPU instead")


@pytest.mark.slow
def test_a_gpu_failure_without_a_message_is_named_by_its_type(monkeypatch):
    monkeypatch.setattr(backend_module, "_load_gpu", lambda: Backend("gpu", np, sp))
    monkeypatch.setattr(pipeline, "gpu_errors", lambda: (GPUUnavailableError, CUDARuntimeError))
    real = pipeline.solve_mrf

    def solve(problem, method, backend="cpu", **kw):
        if backend == "gpu":
            raise CUDARuntimeError()
        return real(problem, method, backend=backend, **kw)
    monkeypatch.setattr(pipeline, "solve_mrf", solve)
    image, _, strokes = shapes_image(seed=1, k=2, size=20)
    got = run_segmentation(image, strokes, SegmentParams(backend="gpu"), reference=False)
    assert got.warnings == ["the GPU solve failed (CUDARuntimeError); running on the CPU instead"]


def test_other_failures_are_not_taken_for_the_gpu(monkeypatch):
    monkeypatch.setattr(backend_module, "_load_gpu", lambda: Backend("gpu", np, sp))

    def broken(*a, **kw):
        raise RuntimeError("something else broke")
    monkeypatch.setattr(pipeline, "solve_mrf", broken)
    image, _, strokes = shapes_image(seed=1, k=2, size=20)
    with pytest.raises(RuntimeError, match="something else"):
        run_segmentation(image, strokes, SegmentParams(backend="gpu"), reference=False)


@pytest.mark.parametrize("change, message", [
    (dict(solver="graphcut"), "unknown solver 'graphcut': expected one of {METHODS}"),
    (dict(backend="tpu"), "unknown backend 'tpu': expected one of {BACKENDS}"),
    (dict(colour_model="knn"), "unknown colour model 'knn': expected one of {COLOUR_MODELS}"),
    (dict(solver="mincut", k=3), "min-cut needs K = 2 (got K = 3); use --solver expansion"),
])
def test_bad_choices_are_refused_by_name_before_any_work(monkeypatch, change, message):
    from solver.names import BACKENDS, COLOUR_MODELS, METHODS
    lists = {"METHODS": ", ".join(METHODS), "BACKENDS": ", ".join(BACKENDS),
             "COLOUR_MODELS": ", ".join(COLOUR_MODELS)}
    built = []
    monkeypatch.setattr(segment_module, "build_problem", lambda *a, **kw: built.append(a))
    image, _, strokes = shapes_image(seed=1, k=3, size=16)
    with pytest.raises(ValueError) as err:
        run_segmentation(image, strokes, SegmentParams(**{"k": 2, **change}))
    assert str(err.value) == message.format(**lists)
    assert built == []


@pytest.mark.slow
def test_the_yardstick_is_solved_unless_declined():
    """By default the pipeline also solves min-cut (K = 2) or α-expansion (K > 2) on the same
    problem, and the gap is ADMM's energy against it; reference=False skips it."""
    from solver.mrf import solve_mrf
    for k, method in ((2, "mincut"), (3, "expansion")):
        image, _, strokes = shapes_image(seed=2, k=k, size=32, noise=0.15)
        out = run_segmentation(image, strokes, SegmentParams(k=k))
        ref = solve_mrf(out.problem, method)
        assert out.reference_method == method
        assert out.reference_energy == pytest.approx(ref.energy, rel=1e-12)
        np.testing.assert_array_equal(out.reference_labels, ref.labels)
        assert out.gap == pytest.approx((out.energy - ref.energy) / abs(ref.energy), rel=1e-12)
        bare = run_segmentation(image, strokes, SegmentParams(k=k), reference=False)
        assert bare.reference_energy is None and bare.reference_labels is None and bare.gap is None
        np.testing.assert_array_equal(bare.labels, out.labels)
    # a yardstick run is its own reference
    same = run_segmentation(image, strokes, SegmentParams(k=3, solver="expansion"))
    assert same.reference_energy == same.energy and same.gap == 0


def test_the_energy_before_the_polish_is_that_of_admms_own_labels():
    """An ADMM run carries the energy of ADMM's own labels before the final polish (the
    solver's ``energy_admm``, never below the polished answer); another solver's run none."""
    from solver.mrf import solve_mrf
    image, _, strokes = shapes_image(seed=3, k=2, size=40, noise=0.3)
    out = run_segmentation(image, strokes, SegmentParams(k=2, seed=0), reference=False)
    raw = solve_mrf(out.problem, "admm", seed=0, polish=False)
    assert out.energy_admm == pytest.approx(raw.energy, rel=1e-12)
    assert out.energy_admm >= out.energy
    other = run_segmentation(image, strokes, SegmentParams(k=2, solver="mincut"),
                             reference=False)
    assert other.energy_admm is None


def test_auto_backend_is_chosen_for_the_problem_at_hand(monkeypatch):
    """backend="auto" weighs the problem's size: a small photo stays on the CPU even where a GPU
    is there."""
    monkeypatch.setattr(backend_module, "_load_gpu", lambda: Backend("gpu", np, sp))
    image, _, strokes = shapes_image(seed=1, k=3, size=24)
    got = run_segmentation(image, strokes, SegmentParams(k=3, backend="auto"), reference=False)
    assert got.backend == "cpu" and got.warnings == []


@pytest.mark.slow
def test_warm_start_callback_and_times(caplog):
    """A warm start of the right size reaches ADMM (its first iterate shows it), one of another
    size is ignored with a note in the log; the callback sees every iteration with the
    yardstick's energy; the build and yardstick times are measured, and zero when skipped.
    (One solve, no colour-model rounds: tests/segapp/core/test_reestimation.py has those.)"""
    from solver.mrf import solve_mrf
    image, _, strokes = shapes_image(seed=2, k=2, size=32, noise=0.15)
    cold = run_segmentation(image, strokes, SegmentParams(k=2, rounds=0))
    x0 = np.eye(2)[cold.labels.ravel() % 2]  # the other label everywhere: a start far away
    warm = run_segmentation(image, strokes, SegmentParams(k=2, rounds=0), x0=x0, reference=False)
    lib = solve_mrf(cold.problem, "admm", x0=x0)
    np.testing.assert_array_equal(cold.x_final, solve_mrf(cold.problem, "admm").x_continuous)
    assert [r.objective for r in warm.history] == pytest.approx(
        [r.objective for r in lib.history], rel=1e-12)
    assert warm.history[0].objective != pytest.approx(cold.history[0].objective, rel=1e-6)
    with caplog.at_level(logging.INFO, logger="segapp"):
        odd = run_segmentation(image, strokes, SegmentParams(k=2, rounds=0), x0=np.zeros(6),
                               reference=False)
    assert [r.objective for r in odd.history] == [r.objective for r in cold.history]
    assert f"warm start ignored: it has 6 entries, the problem needs {2 * 32 * 32}" in [
        r.getMessage() for r in caplog.records]
    seen = []
    out = run_segmentation(image, strokes, SegmentParams(k=2, rounds=0),
                           callback=lambda s: seen.append((s.iteration, s.reference_energy)))
    assert [i for i, _ in seen] == list(range(1, out.iterations + 1))
    assert {e for _, e in seen} == {out.reference_energy}
    assert 0 < out.build_time_s < 60 and 0 < out.reference_time_s < 60
    assert out.reference_detail == cold.reference_detail
    assert warm.reference_time_s == 0.0 and warm.reference_detail == ""


@pytest.mark.slow
def test_area_bounds_on_a_colour_photo_count_pixels_not_channels():
    from solver.mrf import AreaBound, Constraints
    image, _, strokes = shapes_image(seed=0, k=2, size=40, noise=0.1)
    rgb = np.dstack([image, image, image])
    out = run_segmentation(rgb, strokes, SegmentParams(
        k=2, constraints=Constraints(area=(AreaBound(2, 0.12, 0.14),))), reference=False)
    area = int((out.labels == 2).sum())
    assert 0.12 * 1600 <= area <= 0.14 * 1600
    assert (out.constraints[0].lo, out.constraints[0].hi) == (192, 224)


@pytest.mark.slow
def test_a_cancel_reaches_the_polish_through_the_one_callback(monkeypatch):
    """The run's ``cancelled`` flag is the one way to stop: the solver's callback answers it in
    every phase, the polish's stages included (which poll it between their TV rounds), so a
    cancel pressed there ends the run as cancelled."""
    answers = {}
    real = pipeline.solve_mrf

    def solve(problem, method="admm", **kw):
        inner = kw["callback"]

        def spy(state):
            answer = inner(state)
            answers.setdefault(state.phase.split(":")[0], []).append(answer)
            return answer

        kw["callback"] = spy
        return real(problem, method, **kw)

    monkeypatch.setattr(pipeline, "solve_mrf", solve)
    image, _, strokes = shapes_image(seed=2, k=2, size=200, noise=0.15)  # (coarse to fine)
    flag = {"on": False}
    out = run_segmentation(image, strokes, SegmentParams(k=2), reference=False,
                           cancelled=lambda: flag["on"])
    assert out.status != "cancelled"
    assert answers["polish"] and not any(answers["polish"]) and not any(answers["admm"])
    flag["on"] = True
    answers.clear()
    out = run_segmentation(image, strokes, SegmentParams(k=2), reference=False,
                           cancelled=lambda: flag["on"])
    assert out.status == "cancelled" and out.labels.shape == (200, 200)


def test_segment_params_hold_admm_parameters_checked_as_they_are_made():
    """A mapping (a session's ``settings.admm``) becomes ADMMParams at once; a bad field is one
    line naming it, before any photo is read."""
    params = SegmentParams(admm={"max_iter": 50, "rho0": 0.2})
    assert params.admm == ADMMParams(max_iter=50, rho0=0.2)
    assert SegmentParams().admm == ADMMParams() and SegmentParams().options == SolveOptions()
    with pytest.raises(ValueError, match="^ADMM parameter gamma must be in \\(0, 2\\)"):
        SegmentParams(admm={"gamma": 3.0})
    with pytest.raises(ValueError, match="unknown ADMM parameter.*: rho"):
        SegmentParams(admm={"rho": 1.0})
    with pytest.raises(ValueError, match="options must be solver.mrf.SolveOptions"):
        SegmentParams(options={"polish": False})


def test_checked_refuses_a_bad_constraint_before_anything_is_fitted(monkeypatch):
    """``checked`` is the one check of a run's settings (the app calls it before its thread
    starts): a bound on a label K does not have is refused, and run_segmentation refuses it
    the same way without fitting a colour model."""
    params = SegmentParams(k=2, constraints=Constraints(area=(AreaBound(3, 0.1, 0.5),)))
    with pytest.raises(ValueError) as direct:
        params.checked((20, 30))
    fitted = []
    monkeypatch.setattr(pipeline, "prepare", lambda *a, **k: fitted.append(1))
    image, _, strokes = shapes_image(k=2)
    with pytest.raises(ValueError) as run:
        run_segmentation(image, strokes, params, reference=False)
    assert str(run.value) == str(direct.value) and "label must be 1..2" in str(direct.value)
    assert not fitted
    fits = SegmentParams(k=2, constraints=Constraints(area=(AreaBound(1, 0.1, 0.5),)))
    level = fits.checked((20, 30))
    assert level is not None and SegmentParams(k=2).checked((20, 30)) is None


def test_a_run_without_polish_reports_admm_own_answer():
    image, _, strokes = shapes_image(k=2)
    params = SegmentParams(options=SolveOptions().with_polish(False), admm={"max_iter": 30},
                           rounds=0)
    out = run_segmentation(image, strokes, params, reference=False)
    assert out.stages == () and out.energy == pytest.approx(out.energy_admm)


def test_models_fitted_on_one_photo_segment_another_without_seeds_or_rounds():
    """A batch's --model: the colour models of a run on one photo, applied as they are to a
    photo of the same kind that has no strokes at all."""
    image, truth, strokes = shapes_image(seed=1, k=2, size=40)
    params = SegmentParams(k=2, rounds=2)
    trained = run_segmentation(image, strokes, params, reference=False)
    other = np.ascontiguousarray(image[::-1])  # the same scene, upside down
    out = run_segmentation(other, None, params, models=trained.problem.models,
                           reference=False)
    assert out.rounds == 0
    assert out.problem.models == trained.problem.models
    assert np.mean(out.labels == trained.labels[::-1]) > 0.97
    assert np.mean(out.labels == truth[::-1]) > 0.95


def test_models_of_the_wrong_count_are_refused_in_one_line():
    image, _, strokes = shapes_image(seed=1, k=2, size=40)
    trained = run_segmentation(image, strokes, SegmentParams(k=2, rounds=0), reference=False)
    with pytest.raises(ValueError, match="^models: expected 3 colour models"):
        run_segmentation(image, None, SegmentParams(k=3), models=trained.problem.models,
                         reference=False)


def test_without_models_a_label_with_no_seeds_is_still_refused():
    image, _, strokes = shapes_image(seed=1, k=2, size=40)
    with pytest.raises(ValueError, match="label 2"):
        run_segmentation(image, np.where(strokes == 2, 0, strokes), SegmentParams(k=2),
                         reference=False)


def test_params_from_a_sessions_settings_keep_every_setting():
    from segapp.model.document import SolverSettings

    settings = SolverSettings(lam=3.5, beta=0.02, colour_model="histogram", solver="expansion",
                              backend="auto", seed=4, admm={"max_iter": 40},
                              area=["1:0.2-0.3"], apart=["1,3"])
    p = SegmentParams.from_settings(3, settings)
    assert (p.k, p.lam, p.beta, p.colour_model, p.solver, p.backend, p.seed) == (
        3, 3.5, 0.02, "histogram", "expansion", "auto", 4)
    assert p.admm.max_iter == 40
    assert [(a.label, a.lo, a.hi) for a in p.constraints.area] == [(1, 0.2, 0.3)]
    assert p.constraints.apart == ((1, 3),)
    assert SegmentParams.from_settings(3, settings, solver="admm").solver == "admm"
    assert SegmentParams.from_settings(2, SolverSettings()).constraints is None
    with pytest.raises(ValueError, match="^area bound .1:abc.: expected LO-HI"):
        SegmentParams.from_settings(2, SolverSettings(area=["1:abc"]))
