"""`segapp segment` / `segapp bench` as the README documents them: outputs, report, errors, no
partial output."""

import json
import os
import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from segapp.cli import main
from segapp.core.io import load_image, save_labels
from segapp.core.pipeline import SegmentParams, run_segmentation
from solver.mrf import DEFAULT_LAMBDA, build_problem, segment
from tests.solver._mrf_helpers import shapes_image

ROOT = Path(__file__).resolve().parents[3]

# headless commands must not open the app (a stub records it if they do)
pytestmark = pytest.mark.usefixtures("app_launches")


@pytest.fixture
def case(tmp_path):
    image, truth, strokes = shapes_image(seed=0, k=2, size=40, noise=0.1)
    img8 = (np.clip(image, 0, 1) * 255).round().astype(np.uint8)
    cv2.imwrite(str(tmp_path / "img.png"), img8)
    save_labels(tmp_path / "strokes.png", strokes)
    return tmp_path, img8, strokes, truth


def _run(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.slow
def test_segment_writes_labels_overlay_and_report(case, capsys):
    d, img, strokes, truth = case
    code, out, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png", "--k", 2,
                           "--out", d / "labels.png", "--overlay", d / "over.png",
                           "--report", d / "r.json"], capsys)
    assert code == 0, err
    labels = cv2.imread(str(d / "labels.png"), cv2.IMREAD_UNCHANGED)
    assert labels.shape == img.shape and labels.dtype == np.uint8
    assert set(np.unique(labels)) <= {1, 2}
    assert np.mean(labels == truth) > 0.95
    over = cv2.imread(str(d / "over.png"))
    assert over.shape == (*img.shape, 3)
    report = json.loads((d / "r.json").read_text())
    for key in ("energy", "solver", "backend", "iterations", "time_s", "n_pixels", "k"):
        assert key in report
    assert report["n_pixels"] == img.size and report["k"] == 2 and report["solver"] == "admm"
    assert report["reference_energy"] <= report["energy"] + 1e-6
    assert report["lam"] == DEFAULT_LAMBDA and report["beta"] > 0  # the defaults, as used
    assert "admm (cpu): energy" in out


@pytest.mark.slow
def test_cli_labels_equal_library_labels(case, capsys):
    d, img, strokes, _ = case
    code, _, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png",
                         "--out", d / "labels.png"], capsys)
    assert code == 0, err
    lib = run_segmentation(load_image(d / "img.png"), strokes, SegmentParams(k=2), reference=False)
    np.testing.assert_array_equal(cv2.imread(str(d / "labels.png"), cv2.IMREAD_UNCHANGED), lib.labels)


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["mincut", "expansion", "lp"])
def test_other_solvers(case, capsys, solver):
    d, *_ = case
    code, _, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png", "--solver",
                         solver, "--out", d / "l.png", "--report", d / "r.json"], capsys)
    assert code == 0, err
    assert json.loads((d / "r.json").read_text())["solver"] == solver


def test_hard_constraints_and_rectangle(case, capsys):
    d, img, strokes, _ = case
    code, _, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png", "--out",
                         d / "free.png"], capsys)
    assert code == 0, err
    free = cv2.imread(str(d / "free.png"), cv2.IMREAD_UNCHANGED)
    other = 3 - int(free[0, 0])  # the corner's label without constraints, swapped
    assert np.all(free[:3, :3] != other)  # the premise: the constraint has work to do
    hard = np.zeros_like(strokes)
    hard[:3, :3] = other
    save_labels(d / "hard.png", hard)
    code, _, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png", "--hard",
                         d / "hard.png", "--out", d / "l.png"], capsys)
    assert code == 0, err
    labels = cv2.imread(str(d / "l.png"), cv2.IMREAD_UNCHANGED)
    assert np.all(labels[:3, :3] == other)
    code, _, err = _run(["segment", d / "img.png", "--rect", "8,8,24,24", "--out", d / "r.png"],
                        capsys)
    assert code == 0, err
    labels = cv2.imread(str(d / "r.png"), cv2.IMREAD_UNCHANGED)
    assert np.all(labels[:8] == 2) and np.all(labels[:, :8] == 2)  # outside is background


@pytest.mark.parametrize("option, name, value", [("--rho0", "rho0", 0.05),
                                                  ("--rho-growth", "rho_growth", 1.2)])
def test_admm_penalty_options_reach_the_solver(case, capsys, option, name, value):
    """--rho0 and --rho-growth change ADMM's run exactly as the library option does (the
    library's front door, :func:`solver.mrf.segment`: the same model, rounds included)."""
    d, _, strokes, _ = case
    image = load_image(d / "img.png")
    lib, _ = segment(image, strokes, 2, lam=DEFAULT_LAMBDA, polish=False, **{name: value})
    default, _ = segment(image, strokes, 2, lam=DEFAULT_LAMBDA, polish=False)
    assert lib.iterations != default.iterations  # the premise: the option matters here
    code, _, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png", option,
                         value, "--no-polish", "--out", d / "l.png", "--report", d / "r.json"],
                        capsys)
    assert code == 0, err
    report = json.loads((d / "r.json").read_text())
    assert report["iterations"] == lib.iterations
    assert report["energy"] == pytest.approx(lib.energy, rel=1e-9)
    np.testing.assert_array_equal(cv2.imread(str(d / "l.png"), cv2.IMREAD_UNCHANGED), lib.labels)


def test_report_and_summary_describe_the_run(tmp_path, capsys):
    """A colour, non-square photo with λ and β given: the report states the image, its size and
    the parameters used, the labels are the library's for those parameters, and the summary's
    gap is the report's."""
    image, _, strokes = shapes_image(seed=1, k=2, size=40, noise=0.1)
    rgb = np.dstack([image, image[::-1], 1 - image])[:, :30]
    strokes = strokes[:, :30]
    cv2.imwrite(str(tmp_path / "img.png"), (np.clip(rgb, 0, 1) * 255).round().astype(np.uint8))
    save_labels(tmp_path / "strokes.png", strokes)
    d = tmp_path
    code, out, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png", "--lam", 4,
                           "--beta", 30, "--out", d / "l.png", "--report", d / "r.json"], capsys)
    assert code == 0, err
    r = json.loads((d / "r.json").read_text())
    assert (r["width"], r["height"], r["n_pixels"]) == (30, 40, 1200)
    assert r["lam"] == 4 and r["beta"] == 30 and r["image"] == str(d / "img.png")
    lib, problem = segment(load_image(d / "img.png"), strokes, 2, lam=4, beta=30)
    np.testing.assert_array_equal(cv2.imread(str(d / "l.png"), cv2.IMREAD_UNCHANGED), lib.labels)
    assert r["energy"] == pytest.approx(lib.energy, rel=1e-9)
    assert build_problem(load_image(d / "img.png"), strokes, 2, lam=4, beta=30).energy(
        lib.labels) != pytest.approx(  # the premise: β matters here
        build_problem(load_image(d / "img.png"), strokes, 2, lam=4).energy(lib.labels), rel=1e-3)
    summary = out.splitlines()[0]
    assert f"{100 * r['gap']:+.3f}% vs mincut" in summary and "1200 pixels, K = 2" in summary
    assert f"energy {r['energy']:.6g}" in summary
    # without --report no yardstick is solved (it would only cost time): no gap in the summary
    code, out, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png", "--out",
                           d / "l2.png"], capsys)
    assert code == 0, err
    assert re.match(r"admm \(cpu\): energy [-\d.e+]+, \d+ iterations, ", out), out
    # a run stopped early has a gap worth printing; it is the report's, in percent (no
    # re-estimation rounds: their answer would warm-start the one iteration close to the end)
    code, out, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png", "--out",
                           d / "l3.png", "--report", d / "r3.json", "--max-iter", 1,
                           "--no-polish", "--rounds", 0], capsys)
    assert code == 0, err
    gap = json.loads((d / "r3.json").read_text())["gap"]
    assert gap > 0.01 and f", {100 * gap:+.3f}% vs mincut, " in out


@pytest.mark.slow
def test_help_and_console_entry(case, capsys):
    """`segapp --help` names the program; the console entry reads sys.argv, and -v logs the
    solver's progress where the default stays quiet."""
    import subprocess
    import sys
    code, out, _ = _run(["--help"], capsys)
    assert code == 0 and out.startswith("usage: segapp")
    assert "'segapp PHOTO' opens the app with PHOTO" in out  # (the usage line cannot say it)
    d, *_ = case
    cmd = [sys.executable, "-m", "segapp", "segment", str(d / "img.png"), "--strokes",
           str(d / "strokes.png"), "--out", str(d / "l.png"), "--quiet", "--max-iter", "5"]
    quiet = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    verbose = subprocess.run([*cmd[:3], "-v", *cmd[3:]], capture_output=True, text=True,
                             timeout=300)
    assert quiet.returncode == 0 and verbose.returncode == 0, verbose.stderr
    assert "INFO" not in quiet.stderr
    assert re.search(r"^INFO solver\.[\w.]+: \S", verbose.stderr, re.M), verbose.stderr


def test_what_opens_the_app(case, capsys, app_launches, monkeypatch):
    """`segapp` alone and `segapp PHOTO` open the app (the photo in it); options and the
    sub-commands do not; sys.argv is read when no argv is given."""
    d, *_ = case
    assert _run([], capsys)[0] == 0
    assert _run([d / "img.png"], capsys)[0] == 0
    assert _run(["-v"], capsys)[0] == 0
    assert app_launches == [([], None), ([], str(d / "img.png")), ([], None)]
    monkeypatch.setattr("sys.argv", ["segapp", str(d / "img.png")])
    assert main() == 0 and app_launches[-1] == ([], str(d / "img.png"))
    app_launches.clear()
    assert _run(["--help"], capsys)[0] == 0
    assert _run(["segment", "--help"], capsys)[0] == 0
    assert _run(["segment", d / "img.png", "--strokes", d / "strokes.png", "--out",
                 d / "l.png", "--quiet"], capsys)[0] == 0
    assert _run(["bench", "--sizes", "400", "--runs", "1", "--json", d / "b.json",
                 "--methods", "mincut"], capsys)[0] == 0
    assert app_launches == []


def test_missing_output_and_short_options(case, capsys):
    d, *_ = case
    code, _, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png"], capsys)
    assert code == 2 and "the following arguments are required: --out" in err
    code, out, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png", "-q",
                           "--out", d / "l.png"], capsys)
    assert code == 0 and out == "" and (d / "l.png").exists()


def test_demo_screenshot_errors_and_interrupts_from_the_command_line(case, capsys, monkeypatch):
    """--demo-screenshot hands its path on; a failure with no message is named by its type; an
    interrupt says so and exits 130, the shell's code for Ctrl-C."""
    import segapp.cli.segment as segment_cmd
    import segapp.ui.app as app
    d, *_ = case
    shots = []
    monkeypatch.setattr(app, "demo_screenshot", lambda path: shots.append(path) or 0)
    assert _run(["--demo-screenshot", d / "shot.png"], capsys)[0] == 0
    assert shots == [str(d / "shot.png")]
    for exc, code, message in ((ValueError(), 2, "segapp: error: ValueError\n"),
                               (KeyboardInterrupt(), 130, "segapp: error: interrupted\n")):
        def fail(args, exc=exc):
            raise exc
        monkeypatch.setattr(segment_cmd, "run", fail)
        got = _run(["segment", d / "img.png", "--out", d / "l.png"], capsys)
        assert got[0] == code and got[2] == message


def test_gpu_request_without_gpu_falls_back_and_says_so(case, capsys, no_cupy):
    d, *_ = case
    code, _, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png", "--backend",
                         "gpu", "--out", d / "l.png", "--report", d / "r.json"], capsys)
    assert code == 0
    assert "no usable GPU" in err and "CPU" in err
    assert json.loads((d / "r.json").read_text())["backend"] == "cpu"


@pytest.mark.parametrize("extra, message", [
    (["--k", "3"], "label 3 has no strokes"),
    (["--k", "1"], "K"),
    (["--k", "40"], "K"),
    (["--rect", "30,30,50,50"], "rectangle"),
    (["--rect", "1,2,3"], "X,Y,W,H (4 numbers)"),
    (["--rect", "a,b,c,d"], "X,Y,W,H integers, got 'a,b,c,d'"),
    (["--lam", "nan"], "finite"),
    (["--lam", "ten"], "expected a number, got 'ten'"),
    (["--beta", "steep"], "expected a number, got 'steep'"),
    (["--solver", "graphcut"], "invalid choice: 'graphcut'"),
    (["--backend", "tpu"], "invalid choice: 'tpu'"),
    (["--colour-model", "knn"], "invalid choice: 'knn'"),
    (["--beta", "inf"], "finite"),
    (["--lam", "-1"], "lam"),
    (["--rho0", "-1"], "rho0"),
])
def test_bad_input_exits_nonzero_with_one_line_and_writes_nothing(case, capsys, extra, message):
    d, *_ = case
    code, out, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png",
                           "--out", d / "out.png", "--overlay", d / "o.png",
                           "--report", d / "r.json", *extra], capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("segapp: error:")
    assert message.lower() in err.lower()
    assert not (d / "out.png").exists() and not (d / "o.png").exists()
    assert not (d / "r.json").exists()


def test_unreadable_and_mismatched_inputs(case, capsys, tmp_path):
    d, img, strokes, _ = case
    (d / "bad.png").write_bytes(b"not an image at all")
    code, _, err = _run(["segment", d / "bad.png", "--strokes", d / "strokes.png", "--out",
                         d / "o.png"], capsys)
    assert code == 2 and "not a supported image" in err
    save_labels(d / "small.png", np.ones((5, 5), np.uint8))
    code, _, err = _run(["segment", d / "img.png", "--strokes", d / "small.png", "--out",
                         d / "o.png"], capsys)
    assert code == 2 and f"strokes '{d / 'small.png'}' is 5×5 but the image is 40×40" in err
    code, _, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png", "--hard",
                         d / "small.png", "--out", d / "o.png"], capsys)
    assert code == 2 and f"hard constraints '{d / 'small.png'}' is 5×5" in err
    code, _, err = _run(["segment", d / "missing.png", "--out", d / "o.png"], capsys)
    assert code == 2 and "no such file" in err
    assert not (d / "o.png").exists()


def test_bench_writes_records(tmp_path, capsys):
    out = tmp_path / "b.json"
    code, _, err = _run(["bench", "--sizes", "400,900", "--runs", "2", "--json", out,
                         "--methods", "mincut,admm-cpu"], capsys)
    assert code == 0, err
    recs = json.loads(out.read_text())
    assert len(recs) == 2 * 2 * 2
    for r in recs:
        assert set(r) >= {"method", "n", "k", "run", "energy", "time_s", "iterations"}
    by = {(r["method"], r["n"], r["run"]): r for r in recs}
    for (m, n, run), r in by.items():
        if m == "admm-cpu":
            assert r["energy"] >= by[("mincut", n, run)]["energy"] - 1e-6 * abs(r["energy"])
    assert "[8/8]" in err
    # the methods take turns within each run, so each ADMM solve is timed next to its yardstick
    assert [(r["n"], r["run"], r["method"]) for r in recs[:4]] == [
        (recs[0]["n"], 0, "mincut"), (recs[0]["n"], 0, "admm-cpu"),
        (recs[0]["n"], 1, "mincut"), (recs[0]["n"], 1, "admm-cpu")]


def test_bench_rejects_bad_methods(tmp_path, capsys):
    code, _, err = _run(["bench", "--sizes", "400", "--json", tmp_path / "b.json", "--methods",
                         "magic"], capsys)
    assert code == 2 and "unknown method" in err


def test_segment_says_so_when_it_has_to_compile(case, capsys, monkeypatch):
    """The first run on a machine compiles for about a minute: the command says why it waits
    (and says nothing when the kernels come from the cache, or with --quiet)."""
    import numba

    import segapp.core.pipeline as pipeline

    d, *_ = case
    args = ["segment", d / "img.png", "--strokes", d / "strokes.png", "--out", d / "l.png"]
    code, _, err = _run(args, capsys)  # whatever this process still had to compile
    assert code == 0, err
    code, _, err = _run(args, capsys)
    assert code == 0 and "note" not in err

    original = pipeline.run_segmentation

    def compiling_run(*a, **kw):  # a kernel compiled on the way, as on a cold cache
        numba.njit(lambda x: x + 1)(1)
        return original(*a, **kw)

    monkeypatch.setattr(pipeline, "run_segmentation", compiling_run)
    code, _, err = _run(args, capsys)
    assert code == 0
    assert err.count("segapp: note: compiling the solver's kernels") == 1
    code, _, err = _run([*args, "--quiet"], capsys)
    assert code == 0 and err == ""


@pytest.mark.slow
def test_the_gpu_fallback_is_said_once(case, tmp_path):
    """In a real run of the command (its own logging set up), the fallback is one line, not a
    log record and a warning both."""
    import subprocess
    import sys
    d, *_ = case
    fake = tmp_path / "site"
    fake.mkdir()
    (fake / "cupy.py").write_text("raise ImportError('no CuPy in this test')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), str(ROOT)])}
    env.pop("QT_QPA_PLATFORM", None)
    proc = subprocess.run([sys.executable, "-m", "segapp", "segment", str(d / "img.png"),
                           "--strokes", str(d / "strokes.png"), "--backend", "gpu", "--out",
                           str(tmp_path / "l.png"), "-q"], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("no usable GPU") == 1, proc.stderr


@pytest.mark.parametrize("flag, message", [
    ("--seed=-1", "argument --seed: expected a non-negative integer, got -1"),
    ("--seed=1.5", "argument --seed: expected an integer, got '1.5'"),
    ("--max-iter=0", "argument --max-iter: expected an integer of at least 1, got 0"),
    ("--lam=1e300", "lambda must be at most 1e+06, got 1e+300"),
])
def test_numeric_options_are_checked_by_name(case, capsys, flag, message):
    d, *_ = case
    code, _, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png", flag,
                         "--out", d / "l.png"], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (d / "l.png").exists()
