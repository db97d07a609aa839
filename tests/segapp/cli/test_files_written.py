"""Every file segapp writes, read back and checked against what it should hold, computed here
independently of the helpers that wrote it:

- ``segapp segment --out``: the run's labels 1..K, one 8-bit channel, the photo's size (PNG and
  TIFF), equal to the library's labels for the same input;
- ``segapp segment --overlay``: each pixel round((1-α) photo + α colour), RGB as a viewer shows
  it (read with Pillow), the label colours written out below, for grey, 8- and 16-bit colour
  (white 65535 stays white), RGBA (alpha dropped) and float photos, border pixels included;
- ``segapp segment --report``: every field, against the run's inputs and an independent
  recomputation (the energy of the written labels, β estimated from the photo, the areas and
  touching pairs counted in the written labels, the yardstick solved separately);
- ``segapp bench --json``: every record, against each method solved separately on the same
  problem;
- session files: the JSON fields and the embedded layers decoded with Pillow;
- the app's exports (File → Export labels / overlay / energy history) after a real run.
"""
from __future__ import annotations

import base64
import csv
import io as bytes_io
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from PyQt6.QtWidgets import QFileDialog

from segapp.cli import main
from segapp.cli.bench import TABLE1_LAMBDA, sample
from segapp.core.io import ASSETS_DIR, save_labels
from segapp.core.pipeline import SegmentParams, run_segmentation
from segapp.core.session import FORMAT, VERSION, load_session, save_session
from segapp.model.document import Document, SolverSettings
from solver.mrf import (DEFAULT_LAMBDA, AreaBound, Constraints, build_problem, segment,
                        solve_mrf)
from tests.segapp.conftest import run_to_end
from tests.segapp.core.test_roundtrips import PALETTE_RGB, png_bytes, rgb8, write_photo
from tests.solver._mrf_helpers import shapes_image

#: The command line's overlay blends the label colours at one half.
CLI_ALPHA = 0.5

#: Every field of a report; a run under constraints adds CONSTRAINT_KEYS.
REPORT_KEYS = {"energy", "solver", "backend", "iterations", "time_s", "n_pixels", "k", "status",
               "converged", "width", "height", "lam", "beta", "colour_model", "seed",
               "reference_method", "reference_energy", "gap", "energy_admm", "build_time_s",
               "image", "rounds", "polish_s", "stages"}
CONSTRAINT_KEYS = {"constraints", "feasible", "variant", "reference_variant", "bound"}


# ------------------------------------------------------------------------------- helpers
def run_cli(args, capsys) -> tuple[int, str]:
    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


def read_labels(path: Path) -> np.ndarray:
    """A label file as another program reads it: one 8-bit channel (Pillow's mode L)."""
    with Image.open(path) as im:
        assert im.mode == "L", f"{path.name} is {im.mode}, not one 8-bit channel"
        return np.asarray(im).astype(np.int64)


def read_rgb(path: Path) -> np.ndarray:
    """A colour file as a viewer shows it (Pillow gives RGB)."""
    with Image.open(path) as im:
        assert im.mode == "RGB", f"{path.name} is {im.mode}"
        return np.asarray(im).astype(np.int64)


def palette_colours(labels: np.ndarray) -> np.ndarray:
    return PALETTE_RGB[np.asarray(labels) - 1]


def blended(photo: np.ndarray, labels: np.ndarray, alpha: float) -> np.ndarray:
    """round((1 - α) photo + α colour) for every pixel (all labelled 1..K here)."""
    p = rgb8(photo).astype(np.float64)
    return np.rint((1.0 - alpha) * p + alpha * palette_colours(labels)).astype(np.int64)


def as_float(photo: np.ndarray) -> np.ndarray:
    """Colours in [0, 1] as the solver reads a photo: 8 bits / 255, 16 bits / 65535, floats as
    they are; alpha dropped; grey as one channel."""
    a = np.asarray(photo)
    a = a[:, :, None] if a.ndim == 2 else a[:, :, :3]
    scale = {np.dtype(np.uint8): 255.0, np.dtype(np.uint16): 65535.0}.get(a.dtype, 1.0)
    return a.astype(np.float64) / scale


def estimated_beta(photo: np.ndarray) -> float:
    """β = 1 / (2 mean ||c_i - c_j||²) over the 8-neighbour pairs (each pair once)."""
    c = as_float(photo)
    h, w = c.shape[:2]
    squares = []
    for dy, dx in ((0, 1), (1, 0), (1, 1), (1, -1)):
        a = c[:h - dy, max(0, -dx):w - max(0, dx)]
        b = c[dy:, max(0, dx):w + min(0, dx)]
        squares.append(((a - b) ** 2).sum(axis=2).ravel())
    return 1.0 / (2.0 * np.concatenate(squares).mean())


def potts_energy(problem, labels: np.ndarray, lam: float) -> float:
    """E = Σ_i d_i(l_i) + λ Σ_{edges, l_i ≠ l_j} 2 w_ij from the problem's unaries and edge
    weights (the one-hot form λ xᵀ(I ⊗ L)x + dᵀx counts each cut edge once per label)."""
    lab = np.asarray(labels).reshape(-1).astype(np.int64) - 1
    data = problem.unary[np.arange(lab.size), lab].sum()
    g = problem.graph
    cut = lab[np.asarray(g.i)] != lab[np.asarray(g.j)]
    return float(data + lam * 2.0 * np.asarray(g.weights)[cut].sum())


def touching_pairs(labels: np.ndarray, a: int, b: int) -> int:
    """Unordered 8-neighbour pairs with one pixel labelled a and the other b."""
    h, w = labels.shape
    n = 0
    for dy, dx in ((0, 1), (1, 0), (1, 1), (1, -1)):
        p = labels[:h - dy, max(0, -dx):w - max(0, dx)]
        q = labels[dy:, max(0, dx):w + min(0, dx)]
        n += int(np.sum(((p == a) & (q == b)) | ((p == b) & (q == a))))
    return n


def colour_photo(seed: int = 1, k: int = 2, noise: float = 0.1
                 ) -> tuple[np.ndarray, np.ndarray]:
    """A 40 x 30 (H x W) colour photo in [0, 1] whose channels differ (R the shapes, G a
    quarter to three quarters of them, B inverted), and strokes for each label."""
    image, _, strokes = shapes_image(seed=seed, k=k, size=40, noise=noise)
    rgb = np.dstack([image, 0.25 + 0.5 * image, 1 - image])[:, :30]
    return np.clip(rgb, 0, 1), strokes[:, :30].astype(np.uint8)


def cell_photo(size: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A cell (background 1, cytoplasm 2, nucleus 3 inside it) as an 8-bit grey photo, with
    strokes in each part."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:size, :size]
    r = np.hypot(yy - size / 2, xx - size / 2)
    truth = np.where(r < size * 0.18, 3, np.where(r < size * 0.38, 2, 1))
    image = np.array([0.8, 0.45, 0.1])[truth - 1] + rng.normal(0, 0.12, truth.shape)
    strokes = np.zeros((size, size), np.uint8)
    strokes[1, 1:size - 1] = 1
    c = size // 2
    strokes[c, c - 2:c + 3] = 3
    strokes[c - int(size * 0.28), c - 3:c + 4] = 2
    return (np.clip(image, 0, 1) * 255).round().astype(np.uint8), strokes


def with_extremes(photo: np.ndarray, top) -> np.ndarray:
    """``photo`` with white (``top`` in every channel) in two corners and black in the others."""
    out = photo.copy()
    out[0, 0] = out[-1, -1] = top
    out[0, -1] = out[-1, 0] = 0
    return out


def photo_of_kind(kind: str) -> tuple[np.ndarray, str]:
    """A photo of each kind a user may give, and the file name it is written as."""
    rgb, _ = colour_photo()
    grey = rgb[:, :, 0]
    if kind == "grey8":
        return (grey * 255).round().astype(np.uint8), "grey8.png"
    if kind == "rgb8":
        return (rgb * 255).round().astype(np.uint8), "rgb8.png"
    if kind == "grey16":
        return with_extremes((grey * 65535).round().astype(np.uint16), 65535), "grey16.png"
    if kind == "rgb16":
        return with_extremes((rgb * 65535).round().astype(np.uint16), 65535), "rgb16.png"
    if kind == "rgb16tif":
        return with_extremes((rgb * 65535).round().astype(np.uint16), 65535), "rgb16.tif"
    if kind == "rgba8":
        alpha = np.random.default_rng(5).integers(0, 256, grey.shape)
        alpha[0, :] = 0  # (fully transparent pixels keep their colour too)
        rgba = np.dstack([(rgb * 255).round(), alpha]).astype(np.uint8)
        return rgba, "rgba8.png"
    if kind == "float":
        return with_extremes(rgb.astype(np.float32), 1.0), "float.tif"
    raise AssertionError(kind)


@pytest.fixture
def strokes_file(tmp_path) -> Path:
    _, strokes = colour_photo()
    save_labels(tmp_path / "strokes.png", strokes)
    return tmp_path / "strokes.png"


# ------------------------------------------------------------------------------- segment --out
@pytest.mark.usefixtures("app_launches")
@pytest.mark.parametrize("k, out", [(2, "labels.png"), (2, "labels.tif"), (3, "labels.tiff")])
def test_the_label_file_holds_the_runs_labels(tmp_path, capsys, k, out):
    """The label file another program opens is one 8-bit channel of the photo's size holding
    the run's labels 1..K, not a colour image, a resized one or labels from another run."""
    rgb, strokes = colour_photo(k=k)
    photo = (rgb * 255).round().astype(np.uint8)
    (tmp_path / "photo.png").write_bytes(png_bytes(photo))
    save_labels(tmp_path / "strokes.png", strokes)
    code, err = run_cli(["segment", tmp_path / "photo.png", "--strokes", tmp_path / "strokes.png",
                         "--k", k, "--quiet", "--out", tmp_path / out], capsys)
    assert code == 0, err
    labels = read_labels(tmp_path / out)
    assert labels.shape == (40, 30)
    assert set(np.unique(labels)) == set(range(1, k + 1))  # every label, nothing else
    lib = run_segmentation(photo, strokes, SegmentParams(k=k), reference=False)
    np.testing.assert_array_equal(labels, lib.labels)


# ------------------------------------------------------------------------------- segment --overlay
@pytest.mark.usefixtures("app_launches")
@pytest.mark.parametrize("kind", ["grey8", "rgb8", "grey16", "rgb16", "rgb16tif", "rgba8",
                                  "float"])
def test_the_overlay_is_the_photo_blended_with_the_label_colours(tmp_path, capsys,
                                                                 strokes_file, kind):
    """Every pixel of the overlay, border included, is the photo blended half and half with its
    label's colour, in the colours a viewer shows (not BGR), whatever the photo's kind: a
    16-bit white stays white, alpha does not tint it, a float photo is on its 0..1 scale."""
    photo, name = photo_of_kind(kind)
    write_photo(tmp_path / name, photo)
    code, err = run_cli(["segment", tmp_path / name, "--strokes", strokes_file, "--quiet",
                         "--out", tmp_path / "l.png", "--overlay", tmp_path / "o.png"], capsys)
    assert code == 0, err
    labels = read_labels(tmp_path / "l.png")
    _, strokes = colour_photo()
    lib = run_segmentation(photo, strokes, SegmentParams(k=2), reference=False)
    np.testing.assert_array_equal(labels, lib.labels)  # the photo reached the solver as given
    assert set(np.unique(labels)) == {1, 2}  # the premise: both label colours are checked
    if kind in ("grey16", "rgb16", "rgb16tif", "float"):
        top = 1.0 if kind == "float" else 65535
        white = np.all(photo.reshape(40, 30, -1) == top, axis=2)
        black = np.all(photo.reshape(40, 30, -1) == 0, axis=2)
        assert white.sum() >= 2 and black.sum() >= 2  # the premise: white and black pixels
    got = read_rgb(tmp_path / "o.png")
    assert got.shape == (40, 30, 3)
    want = blended(photo, labels, CLI_ALPHA)
    np.testing.assert_array_equal(got[[0, -1]], want[[0, -1]])  # the first and last rows
    np.testing.assert_array_equal(got[:, [0, -1]], want[:, [0, -1]])  # the side columns
    np.testing.assert_array_equal(got, want)
    if kind in ("grey16", "rgb16", "rgb16tif", "float"):
        c = palette_colours(labels)
        np.testing.assert_array_equal(got[white], np.rint((255 + c[white]) / 2))
        np.testing.assert_array_equal(got[black], np.rint(c[black] / 2))


# ------------------------------------------------------------------------------- segment --report
CASES = {
    # name: (photo, K, options, expected reference method, solver's variant, reference's variant)
    "defaults": ("colour", 2, [], "mincut", None, None),
    "given": ("colour", 2, ["--lam", "0", "--beta", "30", "--seed", "3", "--colour-model",
                            "histogram"], "mincut", None, None),
    "mincut": ("colour", 2, ["--solver", "mincut", "--lam", "4"], "mincut", None, None),
    "lp": ("colour", 2, ["--solver", "lp", "--seed", "0"], "mincut", None, None),
    "expansion": ("colour3", 3, ["--solver", "expansion"], "expansion", None, None),
    "admm3": ("colour3", 3, ["--max-iter", "3", "--no-polish", "--rho0", "0.05"], "expansion",
              None, None),
    "area": ("colour", 2, ["--area", "2:0.125-0.15"], "mincut", "admm", "parametric min-cut"),
    "area-mincut": ("colour", 2, ["--area", "2:0.125-0.15", "--solver", "mincut"], "mincut",
                    "parametric min-cut", "parametric min-cut"),
    "nesting": ("cell", 3, ["--apart", "1,3"], "mincut", "admm", "layered min-cut"),
    "broken": ("cell", 3, ["--apart", "1,3", "--max-iter", "1", "--no-polish",
                           "--allow-infeasible"], "mincut", "admm", "layered min-cut"),
}


def option(options: list[str], name: str, default=None):
    return options[options.index(name) + 1] if name in options else default


def report_inputs(tmp_path: Path, kind: str) -> tuple[np.ndarray, np.ndarray, Path]:
    if kind == "cell":
        photo, strokes = cell_photo()
    else:
        # (noisy enough that λ changes the answer)
        rgb, strokes = colour_photo(k=3 if kind == "colour3" else 2, noise=0.2)
        photo = (rgb * 255).round().astype(np.uint8)
    (tmp_path / "photo.png").write_bytes(png_bytes(photo))
    save_labels(tmp_path / "strokes.png", strokes)
    return photo, strokes, tmp_path / "strokes.png"


@pytest.mark.slow
@pytest.mark.usefixtures("app_launches")
@pytest.mark.parametrize("case", list(CASES))
def test_every_report_field_describes_the_run(tmp_path, capsys, case):
    """Each field of the report is what the run did: the energy of the labels written beside
    it, the λ and β it used (λ = 0 given is 0, not the default; β unset is the one estimated
    from the photo), its seed (null when unset), solver, status and iterations, the yardstick's
    energy and the gap to it, and under constraints each bound's pixels and the count in the
    written labels. (The model fitted once, --one-shot-model, so that the energies are computed
    here from the colour models alone; the default model's report:
    test_the_default_models_report_is_its_final_models.)"""
    kind, k, options, ref_method, variant, ref_variant = CASES[case]
    photo, strokes, strokes_path = report_inputs(tmp_path, kind)
    photo_path = tmp_path / "photo.png"
    code, err = run_cli(["segment", photo_path, "--strokes", strokes_path, "--k", k, *options,
                         "--one-shot-model", "--quiet", "--out", tmp_path / "l.png", "--report",
                         tmp_path / "r.json"], capsys)
    assert code == 0, err
    r = json.loads((tmp_path / "r.json").read_text())
    labels = read_labels(tmp_path / "l.png")
    h, w = photo.shape[:2]

    # what was asked for
    solver = option(options, "--solver", "admm")
    lam = float(option(options, "--lam", DEFAULT_LAMBDA))
    beta = option(options, "--beta")
    seed = option(options, "--seed")
    seed = None if seed is None else int(seed)
    colour_model = option(options, "--colour-model", "gmm")
    area = [AreaBound(int(t.split(":")[0]), *map(float, t.split(":")[1].split("-")), "fraction")
            for t in options[1:] if ":" in t]
    apart = [tuple(map(int, t.split(","))) for t in options if t.count(",") == 1]
    constraints = Constraints(area=tuple(area), apart=tuple(apart)) if area or apart else None
    admm = {}
    if option(options, "--max-iter"):
        admm["max_iter"] = int(option(options, "--max-iter"))
    if option(options, "--rho0"):
        admm["rho0"] = float(option(options, "--rho0"))
    polish = "--no-polish" not in options

    # the same run, solved separately from the library
    problem = build_problem(photo, strokes, k, lam=lam, beta=None if beta is None else float(beta),
                            colour_model=colour_model, seed=0 if seed is None else seed,
                            constraints=constraints)
    if solver == "admm":
        lib = solve_mrf(problem, "admm", seed=seed, polish=polish, **admm)
    else:
        lib = solve_mrf(problem, solver)
    ref = lib if solver == ref_method else solve_mrf(problem, ref_method)
    np.testing.assert_array_equal(labels, lib.labels)
    energy = potts_energy(problem, labels, lam)

    assert set(r) == REPORT_KEYS | (CONSTRAINT_KEYS if constraints else set())
    assert r["energy"] == pytest.approx(energy, rel=1e-9, abs=1e-9)
    assert r["solver"] == solver and r["backend"] == "cpu"
    assert r["iterations"] == lib.iterations
    if solver == "admm":
        assert r["iterations"] > 0
        assert r["iterations"] <= admm.get("max_iter", r["iterations"])
    assert r["status"] == lib.status
    assert r["converged"] is (r["status"] in ("converged", "settled"))
    assert isinstance(r["time_s"], float) and r["time_s"] > 0
    assert isinstance(r["build_time_s"], float) and r["build_time_s"] > 0
    assert (r["n_pixels"], r["k"], r["width"], r["height"]) == (h * w, k, w, h)
    assert type(r["lam"]) is float and r["lam"] == lam
    if beta is None:
        assert r["beta"] == pytest.approx(estimated_beta(photo), rel=1e-9)
    else:
        assert r["beta"] == float(beta)
    assert r["colour_model"] == colour_model and r["seed"] == seed
    assert r["image"] == str(photo_path) and r["rounds"] == 0
    assert r["reference_method"] == ref_method
    assert r["reference_energy"] == pytest.approx(ref.energy, rel=1e-9, abs=1e-9)
    assert r["reference_energy"] == pytest.approx(potts_energy(problem, ref.labels, lam),
                                                  rel=1e-9, abs=1e-9)
    if ref_method == "mincut" and not constraints:  # exact: no labelling is below it
        assert r["reference_energy"] <= energy + 1e-9 * abs(energy)
    assert r["gap"] == pytest.approx((r["energy"] - r["reference_energy"])
                                     / abs(r["reference_energy"]), rel=1e-9, abs=1e-12)
    if solver == "admm":
        assert r["energy_admm"] == pytest.approx(lib.energy_admm, rel=1e-9, abs=1e-9)
        if polish:  # the polish never raises the energy
            assert r["energy_admm"] >= r["energy"] - 1e-9 * abs(r["energy"])
        else:
            assert r["energy_admm"] == pytest.approx(r["energy"], rel=1e-12, abs=1e-12)
    else:
        assert r["energy_admm"] is None
    # the final polish stage by stage: the library's stages, their gains adding up
    assert [s["name"] for s in r["stages"]] == [s.name for s in getattr(lib, "stages", ())]
    if solver == "admm" and polish:
        assert r["stages"] and 0 < r["polish_s"] <= r["time_s"]
        assert sum(s["gain"] for s in r["stages"]) == pytest.approx(
            r["energy_admm"] - r["energy"], rel=1e-9, abs=1e-6)
    else:
        assert r["stages"] == [] and r["polish_s"] == 0
    if "--lam" in options and lam == 0:  # λ = 0: every pixel takes its cheapest label
        assert np.all(labels.ravel() == problem.unary.argmin(axis=1) + 1)
        smooth = build_problem(photo, strokes, k, lam=DEFAULT_LAMBDA, beta=float(beta),
                               colour_model=colour_model, seed=seed)
        assert not np.array_equal(solve_mrf(smooth, "mincut").labels, labels)  # λ mattered
    if not constraints:
        return
    want = []
    n = h * w
    for b in area:
        lo, hi = b.lo * n, b.hi * n
        assert lo == round(lo) and hi == round(hi)  # (bounds chosen on whole pixels)
        value = int(np.sum(labels == b.label))
        want.append({"kind": "area", "labels": [b.label], "lo": lo, "hi": hi,
                     "value": float(value), "satisfied": lo <= value <= hi})
    for a, b in apart:
        value = touching_pairs(labels, a, b)
        want.append({"kind": "apart", "labels": [a, b], "lo": 0.0, "hi": 0.0,
                     "value": float(value), "satisfied": value == 0})
    assert r["constraints"] == want
    assert r["feasible"] is all(c["satisfied"] for c in want)
    if case == "broken":
        assert r["feasible"] is False  # the premise: a broken constraint is reported
    else:
        assert r["feasible"] is True
    assert r["variant"] == variant and r["reference_variant"] == ref_variant
    assert r["variant"] == (lib.detail or lib.method)
    assert r["bound"] == pytest.approx(ref.bound, rel=1e-9, abs=1e-9)
    assert r["bound"] <= r["reference_energy"] + 1e-9 * abs(r["reference_energy"])
    if r["feasible"]:
        assert r["bound"] <= r["energy"] + 1e-9 * abs(r["energy"])


@pytest.mark.usefixtures("app_launches")
@pytest.mark.parametrize("rect", [False, True])
def test_the_default_models_report_is_its_final_models(tmp_path, capsys, rect):
    """With the default model (strokes as seeds, re-estimation rounds), the report counts the
    rounds and its energies are the final model's, as the library's front door
    (:func:`solver.mrf.segment`) gives them: the labels written are its labels, the stroke
    pixels keep their label, and the energy and yardstick are the final MRF's."""
    photo, strokes, strokes_path = report_inputs(tmp_path, "colour")
    if rect:  # (the photo's label 1 is its surround: swapped, label 1 is the object inside)
        strokes = np.where(strokes > 0, 3 - strokes, 0).astype(strokes.dtype)
        save_labels(strokes_path, strokes)
    rect_args, rect_kw = ([], {}) if not rect else (["--rect", "4,4,22,30"],
                                                     {"rect": (4, 4, 22, 30)})
    code, err = run_cli(["segment", tmp_path / "photo.png", "--strokes", strokes_path, *rect_args,
                         "--quiet", "--out", tmp_path / "l.png", "--report", tmp_path / "r.json"],
                        capsys)
    assert code == 0, err
    r = json.loads((tmp_path / "r.json").read_text())
    labels = read_labels(tmp_path / "l.png")
    lib, problem = segment(photo, strokes, 2, **rect_kw)
    np.testing.assert_array_equal(labels, lib.labels)
    assert r["rounds"] >= 1 and r["iterations"] == lib.iterations
    assert r["energy"] == pytest.approx(problem.energy(labels), rel=1e-9, abs=1e-9)
    ref = solve_mrf(problem, "mincut")
    assert r["reference_energy"] == pytest.approx(ref.energy, rel=1e-9, abs=1e-9)
    seeds = strokes > 0
    if rect:  # (outside the rectangle every pixel is label 2; strokes there only train)
        x, y, w, h = rect_kw["rect"]
        inside = np.zeros_like(seeds)
        inside[y:y + h, x:x + w] = True
        assert np.all(labels[~inside] == 2)
        seeds &= inside
    assert seeds.any() and np.all(labels[seeds] == strokes[seeds])


# ------------------------------------------------------------------------------- bench --json
@pytest.mark.usefixtures("app_launches")
@pytest.mark.parametrize("k, methods, runs, size", [
    (2, ["mincut", "expansion", "lp", "admm-cpu"], 2, 300),
    (3, ["expansion", "admm-cpu"], 1, 500),  # (at 300 pixels the sample loses label 2's strokes)
])
def test_bench_records_are_the_methods_own_results(tmp_path, capsys, k, methods, runs, size):
    """Each benchmark record is what that method gives on the benchmark's problem: its energy
    (the energy of its labels), its iterations, ADMM's energy before the polish, the size,
    K and run, in the order the methods took turns, and no other field."""
    path = tmp_path / "b.json"
    code, err = run_cli(["bench", "--sizes", size, "--runs", runs, "--k", k, "--methods",
                         ",".join(methods), "--json", path], capsys)
    assert code == 0, err
    records = json.loads(path.read_text())
    img, st = sample(size, k)
    with Image.open(ASSETS_DIR / "cameraman.png") as im:
        full_w, full_h = im.size
    h, w = img.shape[:2]
    assert abs(h * w - size) <= 0.1 * size  # about the pixels asked for, aspect kept
    assert abs(w / h - full_w / full_h) < 0.1
    problem = build_problem(img, st, k, lam=TABLE1_LAMBDA)  # (Table 1's λ)
    assert [(rec["run"], rec["method"]) for rec in records] == [
        (run, m) for run in range(runs) for m in methods]
    for rec in records:
        m, run = rec["method"], rec["run"]
        if m.startswith("admm"):
            lib = solve_mrf(problem, "admm", backend=m.split("-")[1], seed=run)
            assert set(rec) == {"method", "n", "k", "run", "energy", "time_s", "iterations",
                                "energy_unpolished"}
            assert rec["energy_unpolished"] == pytest.approx(lib.energy_admm, rel=1e-9)
            assert rec["energy_unpolished"] >= rec["energy"] - 1e-9 * abs(rec["energy"])
            assert rec["iterations"] > 0
        else:
            lib = solve_mrf(problem, m)
            assert set(rec) == {"method", "n", "k", "run", "energy", "time_s", "iterations"}
        assert rec["n"] == h * w and rec["k"] == k
        assert rec["energy"] == pytest.approx(lib.energy, rel=1e-9)
        assert rec["energy"] == pytest.approx(
            potts_energy(problem, lib.labels, TABLE1_LAMBDA), rel=1e-9)
        assert rec["iterations"] == lib.iterations
        assert isinstance(rec["time_s"], float) and rec["time_s"] > 0
    if k == 2:  # min-cut is exact: no method's energy is below it
        best = {rec["run"]: rec["energy"] for rec in records if rec["method"] == "mincut"}
        assert all(rec["energy"] >= best[rec["run"]] - 1e-9 * abs(rec["energy"])
                   for rec in records)


@pytest.mark.usefixtures("app_launches")
def test_bench_runs_at_a_small_size_for_three_labels(tmp_path, capsys):
    """`segapp bench --k 3` at a small size it accepts writes its records instead of failing
    with "label 2 has no strokes" (the sample's strokes kept for every label)."""
    code, err = run_cli(["bench", "--sizes", "300", "--runs", 1, "--k", 3, "--methods",
                         "admm-cpu", "--json", tmp_path / "b.json"], capsys)
    assert code == 0, err
    assert [r["k"] for r in json.loads((tmp_path / "b.json").read_text())] == [3]


# ------------------------------------------------------------------------------- sessions
def test_a_session_file_holds_the_document(tmp_path):
    """A saved session names the photo by its absolute path and by its path from the session's
    folder, and holds the size, K, rectangle, every setting and the strokes and hard pixels as
    grey PNGs of the document's own labels."""
    photos, sessions = tmp_path / "photos", tmp_path / "sessions"
    photos.mkdir()
    sessions.mkdir()
    rng = np.random.default_rng(2)
    photo = rng.integers(0, 256, (23, 31, 3), dtype=np.uint8)
    (photos / "p.png").write_bytes(png_bytes(photo))
    strokes = rng.integers(0, 4, (23, 31)).astype(np.uint8)
    hard = np.where(rng.random((23, 31)) < 0.2, rng.integers(1, 4, (23, 31)), 0).astype(np.uint8)
    settings = SolverSettings(lam=0.0, beta=12.5, colour_model="histogram", solver="expansion",
                              backend="cpu", seed=7, admm={"max_iter": 50, "rho0": 0.25},
                              area=["2:0.1-0.3", "1:20px-400px"], apart=["1,3"])
    doc = Document()
    doc.set_image(photo, os.path.relpath(photos / "p.png"))  # (opened by a relative path)
    doc.set_k(3)
    doc.set_layers(strokes=strokes, hard=hard)
    doc.set_rect((25, 10, 40, 40))  # dragged past the corner: clipped to (25, 10, 6, 13)
    doc.set_settings(settings)
    save_session(sessions / "s.json", doc, extra={"opacity": 0.4})
    data = json.loads((sessions / "s.json").read_text())
    assert set(data) == {"format", "version", "image_path", "image_relpath", "shape", "k",
                         "rect", "settings", "strokes_png", "hard_png", "extra"}
    assert data["format"] == FORMAT and data["version"] == VERSION
    assert Path(data["image_path"]).is_absolute()
    assert data["image_path"] == str((photos / "p.png").resolve())
    assert data["image_relpath"] == os.path.join("..", "photos", "p.png")
    assert data["shape"] == [23, 31] and data["k"] == 3
    assert data["rect"] == [25, 10, 6, 13]
    assert data["settings"] == {"lam": 0.0, "beta": 12.5, "colour_model": "histogram",
                                "solver": "expansion", "backend": "cpu", "seed": 7,
                                "admm": {"max_iter": 50, "rho0": 0.25},
                                "area": ["2:0.1-0.3", "1:20px-400px"], "apart": ["1,3"]}
    assert data["extra"] == {"opacity": 0.4}
    for key, want in (("strokes_png", strokes), ("hard_png", hard)):
        with Image.open(bytes_io.BytesIO(base64.b64decode(data[key]))) as im:
            assert im.format == "PNG" and im.mode == "L" and im.size == (31, 23)
            np.testing.assert_array_equal(np.asarray(im), want)
    # and it is a session segapp reads back
    back = load_session(sessions / "s.json")
    assert back.settings == settings and back.rect == (25, 10, 6, 13)


# ------------------------------------------------------------------------------- the app
def item_rgb(item) -> np.ndarray:
    """The RGB pixels of a canvas pixmap item (the photo as the canvas shows it)."""
    from PyQt6.QtGui import QImage
    img = item.pixmap().toImage().convertToFormat(QImage.Format.Format_RGBA8888)
    h, w = img.height(), img.width()
    ptr = img.constBits()
    ptr.setsize(img.sizeInBytes())
    rows = np.frombuffer(ptr, np.uint8).reshape(h, img.bytesPerLine())
    return rows[:, :w * 4].reshape(h, w, 4)[:, :, :3].astype(np.int64)


def export(win, monkeypatch, action, path: Path) -> None:
    """File → Export ..., its save dialog answered with ``path``."""
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(path), ""))
    assert action.isEnabled()
    action.trigger()
    assert not win.errors, win.errors


@pytest.fixture
def finished(win, qtbot, tmp_path):
    """``win`` with a 16-bit colour photo opened from a file (white 65535 and black pixels in
    it), strokes for two labels, and a finished run."""
    rgb, strokes = colour_photo()
    photo = with_extremes((rgb * 65535).round().astype(np.uint16), 65535)
    (tmp_path / "photo16.png").write_bytes(png_bytes(photo))
    assert win.open_path(str(tmp_path / "photo16.png")), win.errors
    win.doc.set_layers(strokes=strokes)
    outcome = run_to_end(win, qtbot)
    assert set(np.unique(outcome.labels)) == {1, 2}  # the premise: both colours appear
    win.photo16 = photo
    return win


@pytest.mark.slow
def test_the_apps_label_export_holds_the_runs_labels(finished, monkeypatch, tmp_path):
    """File → Export labels writes, as PNG or TIFF, one 8-bit channel holding the labels whose
    energy the results panel shows, 1..K, at the photo's size."""
    win = finished
    o = win.outcome
    for name in ("labels.png", "labels.tif"):
        export(win, monkeypatch, win.act_labels, tmp_path / name)
        labels = read_labels(tmp_path / name)
        np.testing.assert_array_equal(labels, o.labels)
        assert labels.shape == win.photo16.shape[:2]
        energy = potts_energy(o.problem, labels, o.problem.lam)
        assert energy == pytest.approx(o.energy, rel=1e-9, abs=1e-9)
        shown = float(win.results_panel.fields["energy"].text())  # (six significant digits)
        assert shown == pytest.approx(energy, rel=1e-5)


@pytest.mark.slow
def test_the_apps_overlay_export_blends_at_the_slider_and_keeps_the_photo(finished, monkeypatch,
                                                                           tmp_path):
    """File → Export overlay writes the photo blended with the label colours at the opacity
    slider's value, every pixel, in RGB; a 16-bit photo's white stays white; at opacity 0 it is
    the photo, and the canvas shows the same photo."""
    win = finished
    photo, labels = win.photo16, win.outcome.labels
    white = np.all(photo == 65535, axis=2)
    assert white.sum() == 2  # the premise: white pixels
    for percent in (25, 75, 0):
        win.results_panel.opacity.setValue(percent)
        path = tmp_path / f"overlay{percent}.png"
        export(win, monkeypatch, win.act_overlay, path)
        got = read_rgb(path)
        np.testing.assert_array_equal(got, blended(photo, labels, percent / 100))
        colour = palette_colours(labels)[white]
        np.testing.assert_array_equal(
            got[white], np.rint((1 - percent / 100) * 255 + percent / 100 * colour))
    np.testing.assert_array_equal(got, rgb8(photo))
    np.testing.assert_array_equal(item_rgb(win.canvas.photo), rgb8(photo))


@pytest.mark.slow
def test_the_apps_energy_history_csv_holds_the_runs_records(finished, monkeypatch, tmp_path):
    """File → Export energy history writes a header and one row per recorded iteration, each
    column the run's value of that name exactly, with the reference's energy on every row."""
    win = finished
    o = win.outcome
    path = tmp_path / "history.csv"
    export(win, monkeypatch, win.act_csv, path)
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    assert header == ["iteration", "energy_continuous", "energy_rounded", "residual_box",
                      "residual_sphere", "rho", "reference_energy"]
    hist = o.history
    assert len(body) == len(hist) >= 2
    # the premise: the columns differ, so a column written under another's name is caught
    assert any(r.objective != r.objective_rounded for r in hist)
    assert any(r.residual_box != r.residual_sphere for r in hist)
    assert o.reference_energy is not None
    for row, rec in zip(body, hist):
        assert int(row[0]) == rec.iteration
        got = [float(v) for v in row[1:]]
        assert got == [float(rec.objective), float(rec.objective_rounded),
                       float(rec.residual_box), float(rec.residual_sphere), float(rec.rho),
                       float(o.reference_energy)]
    assert [int(row[0]) for row in body] == sorted({int(row[0]) for row in body})
    assert math.isclose(float(body[-1][6]), o.reference_energy)
