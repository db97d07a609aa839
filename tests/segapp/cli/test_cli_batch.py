"""``segapp batch`` through the real console script: bad arguments exit 2 in one line before any
photo is touched, a folder with bad photos exits 1 with every good photo written, Ctrl-C stops
cleanly with the finished photos kept, and --resume goes on from there."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from segapp.cli import main
from segapp.core.io import load_label_image
from tests.segapp.cli.test_bad_inputs import SEGAPP, corrupt_png, digest, huge_png, segapp
from tests.segapp.test_batch import iou, make_photo


@pytest.fixture
def folder(tmp_path):
    """Two photos in ``in/``; returns the folder of ``in/``."""
    (tmp_path / "in").mkdir()
    for i in range(2):
        make_photo(tmp_path / "in" / f"p{i}.png", seed=i)
    return tmp_path


@pytest.mark.parametrize("args, message", [
    (["in", "--out", "o"], "one of the arguments --rect --rect-fraction --annotations --model "
                           "is required"),
    (["in", "--out", "o", "--rect", "1,1,5,5", "--rect-fraction", "0,0,1,1"],
     "argument --rect-fraction: not allowed with argument --rect"),
    (["in", "--out", "o", "--rect-fraction", "0.5,0.5,0.6,0.2"],
     "expected a rectangle inside the photo"),
    (["in", "--out", "o", "--rect", "1,1,5,5", "--k", "3"],
     "--rect and --rect-fraction seed two labels (object and background), not K = 3"),
    (["nope", "--out", "o", "--rect", "1,1,5,5"], "cannot read 'nope': no such file or folder"),
    (["in/*.jpg", "--out", "o", "--rect", "1,1,5,5"], "pattern 'in/*.jpg' matches no photo"),
    (["--out", "o", "--rect", "1,1,5,5"], "no photos given"),
    (["in", "--out", "o", "--model", "s.json", "--lam", "3"],
     "--lam comes from the session with --model"),
    (["in", "--out", "o", "--model", "missing.json"], "cannot read session missing.json"),
    (["in", "--out", "o", "--rect", "1,1,5,5", "--feather", "2"],
     "--feather needs --cutout: it shapes a cut-out, and none was asked for"),
    (["in", "--out", "o", "--rect", "1,1,5,5", "--cutout", "--cutout-label", "3"],
     "cannot keep --cutout-label 3: with K = 2 the labels are 1 and 2"),
    (["in", "--out", "in/p0.png", "--rect", "1,1,5,5"], "it is a file, not a folder"),
    (["in", "--out", "o", "--rect", "1,1,5,5", "--resume", "--overwrite"],
     "argument --overwrite: not allowed with argument --resume"),
    (["in", "--out", "o", "--annotations", "in/none.csv"], "cannot read annotations"),
    (["in", "--out", "o", "--rect", "1,1,5,5", "--workers", "0"],
     "expected an integer of at least 1"),
])
def test_a_bad_argument_is_one_line_and_exit_2_before_any_photo_is_read(folder, capsys,
                                                                        monkeypatch, args,
                                                                        message):
    monkeypatch.chdir(folder)
    (folder / "s.json").write_text("{}")
    before = digest(folder / "in")
    assert main(["batch", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("segapp: error: "), err
    assert message in err[0], err[0]
    assert not (folder / "o").exists()
    assert digest(folder / "in") == before


def test_a_folder_that_holds_an_earlier_batch_is_not_overwritten_without_asking(folder,
                                                                               capsys):
    (folder / "o").mkdir()
    cv2.imwrite(str(folder / "o" / "p1_labels.png"), np.ones((60, 60), np.uint8))
    before = digest(folder / "o")
    assert main(["batch", str(folder / "in"), "--out", str(folder / "o"),
                 "--rect", "1,1,5,5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("is there already (an earlier batch?); --resume skips the photos that "
                        "are done, --overwrite replaces their files")
    assert digest(folder / "o") == before


def test_batch_help_needs_no_display(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "QT_QPA_PLATFORM",
                                                            "WAYLAND_DISPLAY")}
    p = subprocess.run([SEGAPP, "batch", "--help"], env=env, capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    for option in ("--rect-fraction", "--annotations", "--model", "--resume", "--scheduler"):
        assert option in p.stdout


@pytest.mark.slow
def test_a_folder_with_bad_photos_exits_1_and_writes_every_good_one(folder):
    corrupt_png(folder / "in" / "corrupt.png")
    (folder / "in" / "empty.jpg").write_bytes(b"")
    huge_png(folder / "in" / "huge.png")
    unreadable = folder / "in" / "locked.png"
    make_photo(unreadable)
    unreadable.chmod(0)
    root = os.geteuid() == 0  # (root reads a file whatever its mode)
    status, out, err = segapp("batch", "in", "--out", "out", "--rect-fraction",
                              "0.15,0.15,0.7,0.7", "--workers", "2", cwd=folder)
    unreadable.chmod(0o644)
    assert status == 1, err
    rows = {Path(r["image"]).name: r
            for r in json.loads((folder / "out" / "summary.json").read_text())["rows"]}
    bad = {"corrupt.png": "corrupt", "empty.jpg": "empty", "huge.png": "it claims more than"}
    if not root:
        bad["locked.png"] = "ermission denied"
    for name, says in bad.items():
        assert rows[name]["status"] == "failed" and says in rows[name]["error"], rows[name]
        assert f"segapp: failed: {name}: {rows[name]['error']}" in err
    for name in ["p0.png", "p1.png"] + (["locked.png"] if root else []):
        assert rows[name]["status"] == "done"
        labels = load_label_image(folder / "out" / f"{Path(name).stem}_labels.png")
        assert set(np.unique(labels)) <= {1, 2}
    assert out.startswith(f"{3 if root else 2} done, 0 skipped, {len(bad)} failed of 6 photos")
    progress = [line for line in err if line.startswith("[")]
    assert len(progress) == 6 and progress[-1].startswith("[6/6] ")
    assert not [p for p in (folder / "out").iterdir() if p.name.startswith(".")]


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_keeps_finished_photos_and_resume_goes_on(tmp_path):
    (tmp_path / "in").mkdir()
    truth = {f"p{i}": make_photo(tmp_path / "in" / f"p{i}.png", size=300, seed=i)
             for i in range(10)}
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    args = [SEGAPP, "batch", "in", "--out", "out", "--rect-fraction", "0.15,0.15,0.7,0.7",
            "--workers", "2"]
    p = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    # Ctrl-C once the batch has said a photo is done (its progress line, printed after the
    # row is kept): a file on disk alone may be a photo whose answer is still on its way
    err_lines: list[str] = []
    first_done = threading.Event()

    def read_stderr() -> None:
        for line in p.stderr:
            err_lines.append(line)
            if line.startswith("[") and line.rstrip().endswith(": done"):
                first_done.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    assert first_done.wait(240), "".join(err_lines)
    os.killpg(p.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    p.stdout.read()  # (drained, so the batch never blocks on a full pipe)
    p.wait(timeout=120)
    reader.join(timeout=30)
    err = "".join(err_lines)
    assert p.returncode == 130, err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("segapp: interrupted: ") and "--resume goes on" in lines[-1]
    assert "Traceback" not in err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["interrupted"] is True
    statuses = [r["status"] for r in summary["rows"]]
    assert set(statuses) <= {"done", "cancelled"} and "done" in statuses
    assert "cancelled" in statuses, "the batch ended before Ctrl-C could stop it"
    for row in summary["rows"]:
        stem = Path(row["image"]).stem
        written = tmp_path / "out" / f"{stem}_labels.png"
        assert written.exists() == (row["status"] == "done") or row["status"] == "cancelled"
        if row["status"] == "done":
            assert iou(load_label_image(written), truth[stem]) > 0.9
    assert not [q for q in (tmp_path / "out").iterdir() if q.name.startswith(".")]
    done_before = statuses.count("done")
    again = subprocess.run(args + ["--resume"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    rows = json.loads((tmp_path / "out" / "summary.json").read_text())["rows"]
    assert [r["status"] for r in rows].count("done") <= 10 - done_before
    assert all(r["status"] in ("done", "skipped") for r in rows)
    for stem, want in truth.items():
        assert iou(load_label_image(tmp_path / "out" / f"{stem}_labels.png"), want) > 0.9
