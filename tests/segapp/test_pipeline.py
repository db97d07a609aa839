"""segapp.core.pipeline's choice of backend, and its CPU fallback when the GPU is missing or fails."""

import numpy as np
import pytest
import scipy.sparse as sp

import segapp.core.pipeline as pipeline
import solver.backend as backend_module
from segapp.core.pipeline import SegmentParams, resolve_backend, run_segmentation
from solver.backend import Backend, GPUUnavailableError
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
                                                                          when):
    image, _, strokes = shapes_image(seed=1, k=2, size=40)
    want = run_segmentation(image, strokes, SegmentParams(backend="cpu"), reference=False)
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
    got = run_segmentation(image, strokes, SegmentParams(backend="gpu"), reference=False,
                           notice=told.append)
    assert got.backend == "cpu"
    np.testing.assert_array_equal(got.labels, want.labels)
    assert len(told) == 1 and told == got.warnings and "running on the CPU instead" in told[0]


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
    monkeypatch.setattr(pipeline, "build_problem", lambda *a, **kw: built.append(a))
    image, _, strokes = shapes_image(seed=1, k=3, size=16)
    with pytest.raises(ValueError) as err:
        run_segmentation(image, strokes, SegmentParams(**{"k": 2, **change}))
    assert str(err.value) == message.format(**lists)
    assert built == []


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
