"""`segapp segment` / `segapp bench` outputs: every output path and format is checked before
anything is loaded or solved, and either all outputs are written or none; errors are one line
naming the path the user gave (issue 34, items 2, 3 and 10)."""

import errno
import os
import shutil

import cv2
import numpy as np
import pytest

import segapp.cli.bench as bench_cmd
import segapp.core.io as io
import segapp.core.pipeline as pipeline
from segapp.cli import main
from segapp.core.io import save_labels, write_atomic
from tests.solver._mrf_helpers import shapes_image

# headless commands must not open the app (a stub records it if they do)
pytestmark = pytest.mark.usefixtures("app_launches")

OUTPUTS = ("l.png", "o.png", "r.json")


@pytest.fixture
def case(tmp_path):
    image, _, strokes = shapes_image(seed=0, k=2, size=40, noise=0.1)
    cv2.imwrite(str(tmp_path / "img.png"), (np.clip(image, 0, 1) * 255).round().astype(np.uint8))
    save_labels(tmp_path / "strokes.png", strokes)
    return tmp_path


@pytest.fixture
def calls(monkeypatch):
    """What the command loaded and solved: the image reader and the pipeline, recorded (and
    still run)."""
    seen = []
    load, solve = io.load_image, pipeline.run_segmentation
    monkeypatch.setattr(io, "load_image", lambda *a, **kw: seen.append("load") or load(*a, **kw))
    monkeypatch.setattr(pipeline, "run_segmentation",
                        lambda *a, **kw: seen.append("solve") or solve(*a, **kw))
    return seen


def _run(args, capfd):
    """``segapp ARGS`` in this process; stderr read at the file-descriptor level, where OpenCV
    writes its own log lines."""
    code = main([str(a) for a in args])
    got = capfd.readouterr()
    return code, got.out, got.err


def _segment(d, capfd, out="l.png", overlay="o.png", report="r.json"):
    return _run(["segment", d / "img.png", "--strokes", d / "strokes.png", "--quiet",
                 "--out", d / out, "--overlay", d / overlay, "--report", d / report], capfd)


def _one_line(err, *words):
    assert err.count("\n") == 1 and err.startswith("segapp: error: "), err
    for w in words:
        assert w in err, err
    assert ".tmp" not in err and "Traceback" not in err


def _nothing_written(d):
    assert not [p for p in OUTPUTS if (d / p).exists()]
    assert not [p.name for p in d.rglob("*") if p.name.endswith(".tmp")]


def _read_only(path, monkeypatch):
    """Make ``path`` a read-only folder. Root writes there anyway, so for root ``os.access``
    is made to answer for it as it would for any other user."""
    path.mkdir(exist_ok=True)
    path.chmod(0o555)
    if os.access(path, os.W_OK):
        access = os.access

        def as_a_user(p, mode, *a, **kw):
            if os.fspath(p) == os.fspath(path) and mode & os.W_OK:
                return False
            return access(p, mode, *a, **kw)

        monkeypatch.setattr(os, "access", as_a_user)
    return path


@pytest.mark.parametrize("option", ["out", "overlay", "report"])
@pytest.mark.parametrize("bad", ["missing folder", "a folder", "read-only folder"])
def test_a_bad_output_path_is_refused_before_anything_is_loaded(case, capfd, calls, monkeypatch,
                                                               option, bad):
    d = case
    name = {"out": "l.png", "overlay": "o.png", "report": "r.json"}[option]
    if bad == "missing folder":
        given = f"nodir/{name}"
    elif bad == "a folder":
        given = name
        (d / name).mkdir()
    else:
        given = f"{_read_only(d / 'ro', monkeypatch).name}/{name}"
    try:
        code, out, err = _segment(d, capfd, **{option: given})
    finally:
        if (d / "ro").exists():
            (d / "ro").chmod(0o755)
    assert code == 2 and out == ""
    _one_line(err, f"--{option}", str(d / given))
    if bad == "a folder":
        (d / name).rmdir()
    _nothing_written(d)
    assert calls == []


def test_two_outputs_with_one_path_are_refused(case, capfd, calls):
    code, _, err = _segment(case, capfd, report="l.png")
    assert code == 2
    _one_line(err, "--out and --report", str(case / "l.png"))
    _nothing_written(case)
    assert calls == []


@pytest.mark.parametrize("option, given, words", [
    ("out", "l.jpg", ["lossless", ".png"]),
    ("out", "l.xyz", ["lossless", ".png"]),
    ("out", "labels", ["lossless"]),
    ("overlay", "o.xyz", ["unknown image format '.xyz'", ".png"]),
    ("overlay", "overlay", ["no extension"]),
])
def test_an_unwritable_or_lossy_format_is_refused_before_anything_is_loaded(case, capfd, calls,
                                                                           option, given,
                                                                           words):
    code, _, err = _segment(case, capfd, **{option: given})
    assert code == 2
    _one_line(err, f"--{option}", str(case / given), *words)
    _nothing_written(case)
    assert not (case / given).exists()
    assert calls == []


def test_labels_as_tiff_and_overlay_as_jpeg(case, capfd):
    code, _, err = _segment(case, capfd, report="r.json")
    assert code == 0, err
    png = cv2.imread(str(case / "l.png"), cv2.IMREAD_UNCHANGED)
    code, _, err = _segment(case, capfd, out="l.tif", overlay="o.jpg", report="r2.json")
    assert code == 0, err
    np.testing.assert_array_equal(cv2.imread(str(case / "l.tif"), cv2.IMREAD_UNCHANGED), png)
    assert cv2.imread(str(case / "o.jpg")).shape == (*png.shape, 3)


def test_a_write_failing_half_way_leaves_every_output_as_it_was(case, capfd, monkeypatch):
    """The second output's write fails (disk full): the first, which existed, keeps its old
    contents, no new output appears, no temporary is left, and the error names the path."""
    d = case
    (d / "l.png").write_bytes(b"old labels")
    fsync = os.fsync
    count = []

    def full_on_second(fd):
        count.append(fd)
        if len(count) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return fsync(fd)

    monkeypatch.setattr(os, "fsync", full_on_second)
    code, _, err = _segment(d, capfd)
    assert code == 2
    _one_line(err, str(d / "o.png"), "No space left")
    assert (d / "l.png").read_bytes() == b"old labels"
    assert not (d / "o.png").exists() and not (d / "r.json").exists()
    assert not [p.name for p in d.iterdir() if p.name.endswith(".tmp")]


def test_an_output_folder_gone_during_the_run_is_named_by_the_path_given(case, capfd,
                                                                       monkeypatch):
    """The folder passes the up-front check and disappears while the solver runs: the error
    names the output path given, not the temporary file beside it."""
    d = case
    (d / "sub").mkdir()
    solve = pipeline.run_segmentation

    def solve_and_remove(*a, **kw):
        shutil.rmtree(d / "sub")
        return solve(*a, **kw)

    monkeypatch.setattr(pipeline, "run_segmentation", solve_and_remove)
    code, _, err = _run(["segment", d / "img.png", "--strokes", d / "strokes.png", "--quiet",
                         "--out", d / "sub" / "l.png"], capfd)
    assert code == 2
    _one_line(err, f"'{d / 'sub' / 'l.png'}'")


def test_write_atomic_names_the_target_not_the_temporary(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        write_atomic(tmp_path / "nodir" / "x.png", b"data")
    assert str(tmp_path / "nodir" / "x.png") in str(info.value)
    assert ".tmp" not in str(info.value)


@pytest.mark.parametrize("via", ["cause", "context"])
def test_ctrl_c_inside_a_compiled_kernel_is_an_interrupt(case, capfd, monkeypatch, via):
    """numba turns a Ctrl-C inside a kernel into "SystemError: ... returned a result with an
    exception set", the KeyboardInterrupt in its cause or context: still one line, exit 130."""
    def interrupted(*a, **kw):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as ki:
            if via == "cause":
                raise SystemError("<function> returned a result with an exception set") from ki
            raise SystemError("<function> returned a result with an exception set")  # noqa: B904

    monkeypatch.setattr(pipeline, "run_segmentation", interrupted)
    code, _, err = _segment(case, capfd)
    assert code == 130 and err == "segapp: error: interrupted\n"
    _nothing_written(case)


def test_a_system_error_without_an_interrupt_is_not_hidden(case, capfd, monkeypatch):
    def broken(*a, **kw):
        raise SystemError("a real bug")

    monkeypatch.setattr(pipeline, "run_segmentation", broken)
    with pytest.raises(SystemError, match="a real bug"):
        _segment(case, capfd)


@pytest.mark.parametrize("bad", ["missing folder", "a folder"])
def test_bench_checks_its_json_path_before_the_grid(tmp_path, capfd, monkeypatch, bad):
    ran = []
    monkeypatch.setattr(bench_cmd, "run_grid", lambda *a, **kw: ran.append(a) or [])
    given = tmp_path / ("nodir/b.json" if bad == "missing folder" else "b.json")
    if bad == "a folder":
        given.mkdir()
    code, _, err = _run(["bench", "--sizes", "400", "--runs", "1", "--methods", "mincut",
                         "--json", given], capfd)
    assert ran == [] and code == 2
    _one_line(err, "--json", str(given))


def test_bench_writes_its_json_atomically_and_names_the_path_on_failure(tmp_path, capfd,
                                                                        monkeypatch):
    sub = tmp_path / "sub"
    sub.mkdir()
    monkeypatch.setattr(bench_cmd, "run_grid", lambda *a, **kw: shutil.rmtree(sub) or [])
    code, _, err = _run(["bench", "--sizes", "400", "--runs", "1", "--methods", "mincut",
                         "--json", sub / "b.json"], capfd)
    assert code == 2
    _one_line(err, str(sub / "b.json"))
    monkeypatch.setattr(bench_cmd, "run_grid", lambda *a, **kw: [{"n": 1}])
    assert _run(["bench", "--sizes", "400", "--runs", "1", "--methods", "mincut", "--json",
                 tmp_path / "b.json"], capfd)[0] == 0
    assert (tmp_path / "b.json").read_text() == '[\n {\n  "n": 1\n }\n]\n'
    assert [p.name for p in tmp_path.iterdir()] == ["b.json"]


@pytest.mark.parametrize("damage", ["truncated", "broken header"])
def test_a_damaged_png_gives_exactly_one_line(case, capfd, calls, damage):
    """OpenCV's own "[ WARN:0@...] PNG input buffer is incomplete" (or ERROR) line, written to
    the C-level stderr, does not join the one-line error."""
    data = (case / "img.png").read_bytes()
    bad = data[: len(data) // 2] if damage == "truncated" else data[:8] + b"x" * 100
    (case / "bad.png").write_bytes(bad)
    code, out, err = _run(["segment", case / "bad.png", "--out", case / "l.png"], capfd)
    assert code == 2 and out == ""
    _one_line(err, "not a supported image file or corrupt")
    assert "solve" not in calls


@pytest.mark.parametrize("what", ["image", "--strokes"])
def test_a_folder_given_as_an_input_is_called_a_folder(case, capfd, what):
    (case / "pics").mkdir()
    args = ["segment", case / "img.png", "--strokes", case / "strokes.png", "--out",
            case / "l.png"]
    args[args.index(case / ("img.png" if what == "image" else "strokes.png"))] = case / "pics"
    code, _, err = _run(args, capfd)
    assert code == 2
    _one_line(err, f"'{case / 'pics'}'", "is a folder")
    assert "no such file" not in err
    _nothing_written(case)
