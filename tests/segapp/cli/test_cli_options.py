"""`segapp segment` options reach the solve: --no-polish, --colour-model, --max-iter, --seed.

Each option is checked by what a user relies on (the label PNG and the --report JSON) against
the library's front door with that option (:func:`solver.mrf.segment`: the same model, its
re-estimation rounds included, below the app's pipeline, so a drop anywhere between the command
line and the solver shows), and against the output without the option, which must differ on the
input chosen (each test asserts that premise first, through the library). Where the expected
values are computed from the MRF directly (``build_problem``), the run uses
:data:`solver.mrf.ONE_SHOT_MODEL`, the model fitted once.
"""

import json

import cv2
import numpy as np
import pytest

from segapp.core.io import load_image, save_labels
from segapp.core.pipeline import SegmentParams, run_segmentation
from solver.mrf import (DEFAULT_LAMBDA, ONE_SHOT_MODEL, build_problem, problem_from_unary,
                        segment, solve_mrf)
from solver.mrf.build.colour import HistogramModel, unary_costs
from solver.mrf.build.graph import image_to_float
from tests.segapp.cli.test_cli import _run
from tests.solver._mrf_helpers import shapes_image

# headless commands must not open the app (a stub records it if they do)
pytestmark = pytest.mark.usefixtures("app_launches")


def _write(tmp_path, *, k=2, size=40, noise=0.1, seed=0):
    """A synthetic photo and its strokes as files; returns (dir, image as loaded, strokes)."""
    image, _, strokes = shapes_image(seed=seed, k=k, size=size, noise=noise)
    img8 = (np.clip(image, 0, 1) * 255).round().astype(np.uint8)
    cv2.imwrite(str(tmp_path / "img.png"), img8)
    save_labels(tmp_path / "strokes.png", strokes)
    return tmp_path, load_image(tmp_path / "img.png"), strokes


def _segment(d, capsys, name, *extra, k=2):
    """``segapp segment`` on the case in ``d``; returns (labels written, report)."""
    out, rep = d / f"{name}.png", d / f"{name}.json"
    code, _, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png", "--k", k,
                         "--out", out, "--report", rep, "--quiet", *extra], capsys)
    assert code == 0, err
    return cv2.imread(str(out), cv2.IMREAD_UNCHANGED), json.loads(rep.read_text())


def _problem(image, strokes, k=2, **kw):
    return build_problem(image, strokes, k, lam=DEFAULT_LAMBDA, **kw)


def _library(image, strokes, k=2, **kw):
    """:func:`solver.mrf.segment` with the command line's defaults; returns (result, problem)."""
    return segment(image, strokes, k, lam=DEFAULT_LAMBDA, **kw)


#: The model fitted once (--one-shot-model, :data:`solver.mrf.ONE_SHOT_MODEL`): the tiny noisy
#: cases below keep their ambiguity there (strokes as seeds and re-estimation settle them), so
#: an option's effect shows. The library's equivalent is ``SOFT``.
SOFT_ARGS = ("--one-shot-model",)
SOFT = dict(model=ONE_SHOT_MODEL)


# ---------------------------------------------------------------------------------- --no-polish

def test_no_polish_writes_admm_own_labels(tmp_path, capsys):
    # noisy enough that ADMM's rounded answer leaves work for the polish
    d, image, strokes = _write(tmp_path, size=48, noise=0.2)
    polished, problem = _library(image, strokes, polish=True, **SOFT)
    raw, _ = _library(image, strokes, polish=False, **SOFT)
    assert not np.array_equal(polished.labels, raw.labels)  # the premise: the polish matters
    assert polished.energy < raw.energy - 1e-6 * abs(raw.energy)
    assert raw.energy == pytest.approx(polished.energy_admm, rel=1e-9)
    assert problem.energy(raw.labels) == pytest.approx(raw.energy, rel=1e-9)

    labels_raw, rep_raw = _segment(d, capsys, "raw", "--no-polish", *SOFT_ARGS)
    labels_pol, rep_pol = _segment(d, capsys, "pol", *SOFT_ARGS)
    np.testing.assert_array_equal(labels_raw, raw.labels)
    np.testing.assert_array_equal(labels_pol, polished.labels)
    assert rep_raw["energy"] == pytest.approx(raw.energy, rel=1e-9)
    assert rep_raw["energy"] == pytest.approx(problem.energy(labels_raw), rel=1e-9)
    assert rep_pol["energy"] == pytest.approx(polished.energy, rel=1e-9)
    assert rep_pol["energy"] < rep_raw["energy"]
    # the same ADMM run either way: only the polish differs
    assert rep_raw["iterations"] == rep_pol["iterations"] == raw.iterations
    # the polished run's report keeps ADMM's own energy, before the polish
    assert rep_pol["energy_admm"] == pytest.approx(raw.energy, rel=1e-9)
    assert rep_raw["energy_admm"] == pytest.approx(rep_raw["energy"], rel=1e-9)
    # and says which polish stages took it there: what each took off adds up to the polish's
    assert rep_raw["stages"] == [] and rep_raw["polish_s"] == 0
    gains = {s["name"]: s["gain"] for s in rep_pol["stages"]}
    assert [s["name"] for s in rep_pol["stages"]] == [s.name for s in polished.stages]
    assert sum(gains.values()) == pytest.approx(rep_pol["energy_admm"] - rep_pol["energy"],
                                                rel=1e-9)
    assert 0 < rep_pol["polish_s"] <= rep_pol["time_s"]


# --------------------------------------------------------------------------------- --max-iter

@pytest.mark.parametrize("k, max_iter", [(2, 7), (2, 20), (3, 12)])
def test_max_iter_caps_the_iterations(tmp_path, capsys, k, max_iter):
    """--max-iter caps each ADMM solve; without re-estimation rounds there is one (with them,
    the report's iterations are every solve's: tests/segapp/core/test_reestimation.py)."""
    d, image, strokes = _write(tmp_path, k=k, size=40, noise=0.1)
    free, _ = _library(image, strokes, k, polish=False, rounds=0)
    assert free.iterations > max_iter  # the premise: the cap binds
    capped, _ = _library(image, strokes, k, polish=False, rounds=0, max_iter=max_iter)
    assert capped.iterations <= max_iter and capped.status == "max_iter"

    labels, rep = _segment(d, capsys, "capped", "--max-iter", max_iter, "--no-polish",
                           "--rounds", 0, k=k)
    assert rep["iterations"] <= max_iter
    assert rep["iterations"] == capped.iterations
    assert rep["status"] == "max_iter" and rep["converged"] is False
    np.testing.assert_array_equal(labels, capped.labels)
    assert rep["energy"] == pytest.approx(capped.energy, rel=1e-9)
    _, rep_free = _segment(d, capsys, "free", "--no-polish", "--rounds", 0, k=k)
    assert rep_free["iterations"] == free.iterations > rep["iterations"]


# ----------------------------------------------------------------------------- --colour-model

def _histogram_problem(image, strokes, k):
    """The MRF with histogram unaries, assembled here from the colour model itself."""
    colours = image_to_float(image)
    flat = colours.reshape(-1, colours.shape[2])
    models = [HistogramModel().fit(flat[strokes.ravel() == label]) for label in range(1, k + 1)]
    return problem_from_unary(colours, unary_costs(colours, models), lam=DEFAULT_LAMBDA)


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_colour_model_reaches_the_unaries(tmp_path, capsys, k):
    d, image, strokes = _write(tmp_path, k=k, size=40, noise=0.2)
    lib_hist, hist_problem = _library(image, strokes, k, colour_model="histogram", **SOFT)
    lib_gmm, gmm_problem = _library(image, strokes, k, **SOFT)
    assert all(isinstance(m, HistogramModel) for m in hist_problem.models)
    assert not any(isinstance(m, HistogramModel) for m in gmm_problem.models)
    assert not np.array_equal(lib_hist.labels, lib_gmm.labels)  # the premise: the model matters

    labels_hist, rep_hist = _segment(d, capsys, "hist", "--colour-model", "histogram",
                                     *SOFT_ARGS, k=k)
    labels_gmm, rep_gmm = _segment(d, capsys, "gmm", "--colour-model", "gmm", *SOFT_ARGS, k=k)
    labels_default, _ = _segment(d, capsys, "default", *SOFT_ARGS, k=k)
    np.testing.assert_array_equal(labels_hist, lib_hist.labels)
    np.testing.assert_array_equal(labels_gmm, lib_gmm.labels)
    np.testing.assert_array_equal(labels_default, lib_gmm.labels)
    # the reported energy is that of the labels under histogram unaries, not GMM ones
    e_hist = hist_problem.energy(labels_hist)
    assert rep_hist["energy"] == pytest.approx(e_hist, rel=1e-9)
    assert gmm_problem.energy(labels_hist) != pytest.approx(e_hist, rel=1e-3)
    assert rep_gmm["energy"] == pytest.approx(gmm_problem.energy(labels_gmm), rel=1e-9)
    assert rep_hist["colour_model"] == "histogram" and rep_gmm["colour_model"] == "gmm"


def test_pipeline_builds_the_chosen_colour_model():
    image, _, strokes = shapes_image(seed=0, k=2, size=32, noise=0.2)
    one_shot = dict(k=2, solver="mincut", model=ONE_SHOT_MODEL)
    hist = run_segmentation(image, strokes, SegmentParams(colour_model="histogram", **one_shot),
                            reference=False)
    gmm = run_segmentation(image, strokes, SegmentParams(**one_shot), reference=False)
    expected = _histogram_problem(image, strokes, 2)
    np.testing.assert_allclose(hist.problem.unary, expected.unary, rtol=1e-12, atol=1e-12)
    assert not np.allclose(gmm.problem.unary, expected.unary, rtol=1e-3)
    assert hist.energy == pytest.approx(expected.energy(hist.labels), rel=1e-9)


# ------------------------------------------------------------------------------------- --seed

def _ambiguous(tmp_path):
    """Two grey levels so noisy that the strokes' colours overlap: the GMM fit, and so the exact
    min-cut labelling, depends on the fit's seed. Returns (dir, image, strokes, seed, labels of
    seed 0 (= no seed), labels of that seed), the seed being one whose labelling differs."""
    d, image, strokes = _write(tmp_path, size=40, noise=0.2)
    base = _library(image, strokes, method="mincut", seed=0, **SOFT)[0].labels
    for seed in range(1, 9):
        other = _library(image, strokes, method="mincut", seed=seed, **SOFT)[0].labels
        if not np.array_equal(other, base):
            return d, image, strokes, seed, base, other
    pytest.fail("no seed in 1..8 changes the GMM fit's min-cut labelling")  # the premise


def test_seed_reaches_the_colour_model(tmp_path, capsys):
    d, image, strokes, seed, base, other = _ambiguous(tmp_path)
    # the pipeline: the seed reaches the GMM fit (min-cut: no randomness of its own)
    out = run_segmentation(image, strokes, SegmentParams(k=2, solver="mincut", seed=seed,
                                                         **SOFT), reference=False)
    np.testing.assert_array_equal(out.labels, other)
    one_shot = run_segmentation(image, strokes, SegmentParams(k=2, solver="mincut", seed=seed,
                                                              model=ONE_SHOT_MODEL),
                                reference=False)
    np.testing.assert_array_equal(one_shot.problem.unary,
                                  _problem(image, strokes, seed=seed).unary)
    none = run_segmentation(image, strokes, SegmentParams(k=2, solver="mincut", **SOFT),
                            reference=False)
    np.testing.assert_array_equal(none.labels, base)
    # the command line
    labels, rep = _segment(d, capsys, "seeded", "--solver", "mincut", "--seed", seed, *SOFT_ARGS)
    np.testing.assert_array_equal(labels, other)
    assert rep["seed"] == seed
    assert rep["energy"] == pytest.approx(out.energy, rel=1e-9)
    labels_none, rep_none = _segment(d, capsys, "unseeded", "--solver", "mincut", *SOFT_ARGS)
    np.testing.assert_array_equal(labels_none, base)
    assert rep_none["energy"] != pytest.approx(rep["energy"], rel=1e-9)


def test_seed_reaches_admm_and_repeats(tmp_path, capsys):
    d, image, strokes, seed, _, _ = _ambiguous(tmp_path)
    lib, _ = _library(image, strokes, seed=seed, **SOFT)
    problem = _problem(image, strokes, seed=seed)  # (one model: only ADMM's start differs)
    seeded = solve_mrf(problem, "admm", seed=seed)
    half = solve_mrf(problem, "admm")  # no seed: ADMM starts at 1/2
    assert [r.objective for r in seeded.history] != [r.objective for r in half.history]
    objectives = [r.objective for r in lib.history]

    out = run_segmentation(image, strokes, SegmentParams(k=2, seed=seed, **SOFT),
                           reference=False)
    assert [r.objective for r in out.history] == pytest.approx(objectives, rel=1e-12)
    np.testing.assert_array_equal(out.labels, lib.labels)

    labels, rep = _segment(d, capsys, "a", "--seed", seed, *SOFT_ARGS)
    labels2, rep2 = _segment(d, capsys, "b", "--seed", seed, *SOFT_ARGS)
    np.testing.assert_array_equal(labels, lib.labels)
    assert rep["energy"] == pytest.approx(lib.energy, rel=1e-9)
    assert rep["iterations"] == lib.iterations
    # same seed, same output: the label PNG byte for byte, the report up to its timings
    assert (d / "a.png").read_bytes() == (d / "b.png").read_bytes()
    timing = {"time_s", "build_time_s", "polish_s", "stages"}
    assert {k: v for k, v in rep.items() if k not in timing} == \
        {k: v for k, v in rep2.items() if k not in timing}

    def untimed(report):
        return [{k: v for k, v in s.items() if k != "time_s"} for s in report["stages"]]

    assert untimed(rep) == untimed(rep2) and untimed(rep)  # (the same stages, the same gains)
    # another seed gives another labelling here (the GMM fit moves)
    labels_none, _ = _segment(d, capsys, "none", *SOFT_ARGS)
    assert not np.array_equal(labels_none, labels)
