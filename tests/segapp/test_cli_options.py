"""`segapp segment` options reach the solve: --no-polish, --colour-model, --max-iter, --seed.

Each option is checked by what a user relies on (the label PNG and the --report JSON) against a
direct library call with that option (``build_problem`` + ``solve_mrf``, below the pipeline, so a
drop anywhere between the command line and the solver shows), and against the output without the
option, which must differ on the input chosen (each test asserts that premise first).
"""

import json

import cv2
import numpy as np
import pytest

from segapp.core.io import load_image, save_labels
from segapp.core.pipeline import SegmentParams, run_segmentation
from solver.mrf import DEFAULT_LAMBDA, build_problem, problem_from_unary, solve_mrf
from solver.mrf.build.colour import HistogramModel, unary_costs
from solver.mrf.build.graph import image_to_float
from tests.segapp.test_cli import _run
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


# ---------------------------------------------------------------------------------- --no-polish

def test_no_polish_writes_admm_own_labels(tmp_path, capsys):
    # noisy enough that ADMM's rounded answer leaves work for the polish
    d, image, strokes = _write(tmp_path, size=48, noise=0.2)
    problem = _problem(image, strokes)
    polished = solve_mrf(problem, "admm", polish=True)
    raw = solve_mrf(problem, "admm", polish=False)
    assert not np.array_equal(polished.labels, raw.labels)  # the premise: the polish matters
    assert polished.energy < raw.energy - 1e-6 * abs(raw.energy)
    assert raw.energy == pytest.approx(polished.energy_admm, rel=1e-9)

    labels_raw, rep_raw = _segment(d, capsys, "raw", "--no-polish")
    labels_pol, rep_pol = _segment(d, capsys, "pol")
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


# --------------------------------------------------------------------------------- --max-iter

@pytest.mark.parametrize("k, max_iter", [(2, 7), (2, 20), (3, 12)])
def test_max_iter_caps_the_iterations(tmp_path, capsys, k, max_iter):
    d, image, strokes = _write(tmp_path, k=k, size=40, noise=0.1)
    problem = _problem(image, strokes, k)
    free = solve_mrf(problem, "admm", polish=False)
    assert free.iterations > max_iter  # the premise: the cap binds
    capped = solve_mrf(problem, "admm", polish=False, max_iter=max_iter)
    assert capped.iterations <= max_iter and capped.status == "max_iter"

    labels, rep = _segment(d, capsys, "capped", "--max-iter", max_iter, "--no-polish", k=k)
    assert rep["iterations"] <= max_iter
    assert rep["iterations"] == capped.iterations
    assert rep["status"] == "max_iter" and rep["converged"] is False
    np.testing.assert_array_equal(labels, capped.labels)
    assert rep["energy"] == pytest.approx(capped.energy, rel=1e-9)
    _, rep_free = _segment(d, capsys, "free", "--no-polish", k=k)
    assert rep_free["iterations"] == free.iterations > rep["iterations"]


# ----------------------------------------------------------------------------- --colour-model

def _histogram_problem(image, strokes, k):
    """The MRF with histogram unaries, assembled here from the colour model itself."""
    colours = image_to_float(image)
    flat = colours.reshape(-1, colours.shape[2])
    models = [HistogramModel().fit(flat[strokes.ravel() == label]) for label in range(1, k + 1)]
    return problem_from_unary(colours, unary_costs(colours, models), lam=DEFAULT_LAMBDA)


@pytest.mark.parametrize("k", [2, 3])
def test_colour_model_reaches_the_unaries(tmp_path, capsys, k):
    d, image, strokes = _write(tmp_path, k=k, size=40, noise=0.2)
    hist_problem = _histogram_problem(image, strokes, k)
    gmm_problem = _problem(image, strokes, k)
    lib_hist = solve_mrf(_problem(image, strokes, k, colour_model="histogram"), "admm")
    lib_gmm = solve_mrf(gmm_problem, "admm")
    assert not np.array_equal(lib_hist.labels, lib_gmm.labels)  # the premise: the model matters

    labels_hist, rep_hist = _segment(d, capsys, "hist", "--colour-model", "histogram", k=k)
    labels_gmm, rep_gmm = _segment(d, capsys, "gmm", "--colour-model", "gmm", k=k)
    labels_default, _ = _segment(d, capsys, "default", k=k)
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
    hist = run_segmentation(image, strokes, SegmentParams(k=2, colour_model="histogram",
                                                          solver="mincut"), reference=False)
    gmm = run_segmentation(image, strokes, SegmentParams(k=2, solver="mincut"), reference=False)
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
    base = solve_mrf(_problem(image, strokes, seed=0), "mincut").labels
    for seed in range(1, 9):
        other = solve_mrf(_problem(image, strokes, seed=seed), "mincut").labels
        if not np.array_equal(other, base):
            return d, image, strokes, seed, base, other
    pytest.fail("no seed in 1..8 changes the GMM fit's min-cut labelling")  # the premise


def test_seed_reaches_the_colour_model(tmp_path, capsys):
    d, image, strokes, seed, base, other = _ambiguous(tmp_path)
    # the pipeline: the seed reaches the GMM fit (min-cut: no randomness of its own)
    out = run_segmentation(image, strokes, SegmentParams(k=2, solver="mincut", seed=seed),
                           reference=False)
    np.testing.assert_array_equal(out.labels, other)
    np.testing.assert_array_equal(out.problem.unary, _problem(image, strokes, seed=seed).unary)
    none = run_segmentation(image, strokes, SegmentParams(k=2, solver="mincut"), reference=False)
    np.testing.assert_array_equal(none.labels, base)
    # the command line
    labels, rep = _segment(d, capsys, "seeded", "--solver", "mincut", "--seed", seed)
    np.testing.assert_array_equal(labels, other)
    assert rep["seed"] == seed
    assert rep["energy"] == pytest.approx(out.energy, rel=1e-9)
    labels_none, rep_none = _segment(d, capsys, "unseeded", "--solver", "mincut")
    np.testing.assert_array_equal(labels_none, base)
    assert rep_none["energy"] != pytest.approx(rep["energy"], rel=1e-9)


def test_seed_reaches_admm_and_repeats(tmp_path, capsys):
    d, image, strokes, seed, _, _ = _ambiguous(tmp_path)
    problem = _problem(image, strokes, seed=seed)
    lib = solve_mrf(problem, "admm", seed=seed)
    half = solve_mrf(problem, "admm")  # no seed: ADMM starts at 1/2
    objectives = [r.objective for r in lib.history]
    assert objectives != [r.objective for r in half.history]  # the premise: the start matters

    out = run_segmentation(image, strokes, SegmentParams(k=2, seed=seed), reference=False)
    assert [r.objective for r in out.history] == pytest.approx(objectives, rel=1e-12)
    np.testing.assert_array_equal(out.labels, lib.labels)

    labels, rep = _segment(d, capsys, "a", "--seed", seed)
    labels2, rep2 = _segment(d, capsys, "b", "--seed", seed)
    np.testing.assert_array_equal(labels, lib.labels)
    assert rep["energy"] == pytest.approx(lib.energy, rel=1e-9)
    assert rep["iterations"] == lib.iterations
    # same seed, same output: the label PNG byte for byte, the report up to its timings
    assert (d / "a.png").read_bytes() == (d / "b.png").read_bytes()
    timing = {"time_s", "build_time_s"}
    assert {k: v for k, v in rep.items() if k not in timing} == \
        {k: v for k, v in rep2.items() if k not in timing}
    # another seed gives another labelling here (the GMM fit moves)
    labels_none, _ = _segment(d, capsys, "none")
    assert not np.array_equal(labels_none, labels)
