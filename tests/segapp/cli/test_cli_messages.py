"""`segapp segment`'s one-line refusals, word for word, run in this process (the console-script
runs of tests/segapp/cli/test_bad_inputs.py check the same from outside), and the options that
pick the model. Each message names the option at fault, so a person can fix the command at
once."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import segapp.core.pipeline as pipeline
from segapp.cli import main


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    """A photo, its strokes and a hard layer in the working folder (paths as typed)."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    Image.fromarray((rng.random((30, 40, 3)) * 255).astype(np.uint8)).save("p.png")
    strokes = np.zeros((30, 40), np.uint8)
    strokes[2:4, 2:30] = 1
    strokes[14:16, 15:25] = 2
    Image.fromarray(strokes).save("s.png")
    Image.fromarray(strokes).save("h.png")
    return tmp_path


def _error(capsys, *args) -> str:
    try:
        code = main(["segment", "p.png", "--strokes", "s.png", *args])
    except SystemExit as exc:  # (argparse's own refusals)
        code = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    return err[-1]


@pytest.mark.parametrize("args, message", [
    (["--out", "o.jpg"], "cannot write --out 'o.jpg': labels need a lossless format, so name a "
                         ".png, .tif or .tiff file"),
    (["--out", "o.png", "--overlay", "v.txt"],
     "cannot write --overlay 'v.txt': unknown image format '.txt'; name a .png or .jpg file"),
    (["--out", "o.png", "--overlay", "o.png"], "--out and --overlay name the same file 'o.png'"),
    (["--out", "o.png", "--cutout", "o.png"], "--out and --cutout name the same file 'o.png'"),
    (["--out", "s.png"], "cannot write --out 's.png': it is the --strokes file 's.png', which "
                         "would be lost; name another file"),
    (["--hard", "h.png", "--out", "h.png"], "cannot write --out 'h.png': it is the --hard file "
                                            "'h.png', which would be lost; name another file"),
    (["--out", "p.png"], "cannot write --out 'p.png': it is the image file 'p.png', which would "
                         "be lost; name another file"),
    (["--out", "o.png", "--cutout-label", "1"],
     "--cutout-label needs --cutout OUT.png: it shapes a cut-out, and none was asked for"),
    (["--out", "o.png", "--cutout-label", "1", "--feather", "2"],
     "--cutout-label and --feather need --cutout OUT.png: they shape a cut-out, and none was "
     "asked for"),
    (["--out", "o.png", "--cutout", "c.png", "--cutout-label", "3"],
     "cannot keep --cutout-label 3: with K = 2 the labels are 1 and 2"),
    (["--k", "3", "--out", "o.png", "--cutout", "c.png", "--cutout-label", "4"],
     "cannot keep --cutout-label 4: with K = 3 the labels are 1 to 3"),
    (["--out", "o.png", "--cutout", "c.png", "--cutout-label", "x"],
     "argument --cutout-label: expected a label number or a comma list of them (1 or 1,3), "
     "got 'x' (see 'segapp segment --help')"),
    (["--out", "o.png", "--cutout", "c.png", "--feather", "-1"],
     "argument --feather: expected a width in pixels from 0 to 100, got '-1' (see 'segapp "
     "segment --help')"),
    (["--out", "o.png", "--cutout", "c.png", "--feather", "100.5"],
     "argument --feather: expected a width in pixels from 0 to 100, got '100.5' (see 'segapp "
     "segment --help')"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_a_refusal_names_the_option_at_fault(inputs, capsys, args, message):
    assert _error(capsys, *args) == f"segapp: error: {message}"
    assert not (inputs / "o.png").exists() and not (inputs / "c.png").exists()


@pytest.mark.parametrize("feather", ["0", "100"])
def test_the_feather_range_includes_its_ends(inputs, capsys, feather):
    """0 (a hard edge) and 100 pixels are both widths a person may ask for."""
    assert main(["segment", "p.png", "--strokes", "s.png", "--out", "o.png", "--cutout",
                 "c.png", "--feather", feather, "--max-iter", "50"]) == 0
    with Image.open("c.png") as im:
        assert im.mode == "RGBA" and im.size == (40, 30)


@pytest.mark.parametrize("flags, expect", [
    ([], "default"), (["--soft-strokes"], "soft"), (["--one-shot-model"], "one-shot")])
def test_the_model_options_reach_the_pipeline(inputs, monkeypatch, flags, expect):
    """--soft-strokes: the default model with strokes that only train the colour models;
    --one-shot-model: the colour models fitted once (solver.mrf.ONE_SHOT_MODEL)."""
    from dataclasses import replace

    from solver.mrf import DEFAULT_MODEL, ONE_SHOT_MODEL
    seen = []
    real = pipeline.run_segmentation

    def spy(image, strokes, params, **kw):
        seen.append(params.model)
        return real(image, strokes, params, **kw)

    monkeypatch.setattr(pipeline, "run_segmentation", spy)
    assert main(["segment", "p.png", "--strokes", "s.png", "--out", "o.png", "--max-iter", "50",
                 *flags]) == 0
    want = {"default": DEFAULT_MODEL, "soft": replace(DEFAULT_MODEL, fix_strokes=False),
            "one-shot": ONE_SHOT_MODEL}[expect]
    assert seen == [want]
    assert len({DEFAULT_MODEL, replace(DEFAULT_MODEL, fix_strokes=False), ONE_SHOT_MODEL}) == 3


def test_a_cut_out_without_feather_has_a_hard_edge(inputs):
    """No --feather: every pixel is wholly kept or wholly transparent."""
    assert main(["segment", "p.png", "--strokes", "s.png", "--out", "o.png", "--cutout", "c.png",
                 "--max-iter", "50"]) == 0
    with Image.open("c.png") as im:
        alpha = np.asarray(im)[:, :, 3]
    assert set(np.unique(alpha).tolist()) <= {0, 255} and alpha.max() == 255


def test_labels_that_break_a_constraint_are_refused_in_one_sentence(inputs, monkeypatch, capsys):
    """Where the answer breaks an area bound (which ADMM can leave when no labelling it finds
    meets it), the run says which and how, writes nothing and exits 1."""
    from dataclasses import replace

    from solver.mrf.build.constraints import ConstraintReport
    real = pipeline.run_segmentation

    def broken(image, strokes, params, **kw):
        out = real(image, strokes, params, **kw)
        return replace(out, constraints=[ConstraintReport("area", (1,), 100.0, 200.0, 240.0,
                                                          False)])

    monkeypatch.setattr(pipeline, "run_segmentation", broken)
    code = main(["segment", "p.png", "--strokes", "s.png", "--area", "1:0.05-0.95", "--out",
                 "o.png", "--max-iter", "50"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert err[-1] == ("segapp: error: the labels found break a constraint (area of label 1: "
                       "240 px in [100, 200] VIOLATED); nothing was written (--allow-infeasible "
                       "writes them)")
    assert not (inputs / "o.png").exists()
