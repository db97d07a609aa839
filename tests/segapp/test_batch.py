"""segapp.batch on a real Dask cluster (two worker processes on the loopback interface): the
files each photo gets, the summary, a worker killed mid-batch, a resumed batch, colour models
from a session, and the planning of workers against memory."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from segapp import batch
from segapp.core.io import load_label_image
from segapp.core.pipeline import run_segmentation

RECT = batch.Annotation(rect_fraction=(0.15, 0.15, 0.7, 0.7))


def make_photo(path: Path, size: int = 60, seed: int = 0, shift: int = 0) -> np.ndarray:
    """A bright square object (inside RECT) on a dark noisy background; returns the object's
    mask (label 1 inside, 2 outside)."""
    rng = np.random.default_rng(seed)
    inside = np.zeros((size, size), bool)
    a, b = size // 4 + shift, 3 * size // 4 + shift
    inside[a:b, size // 4:3 * size // 4] = True
    grey = np.where(inside, 190, 60) + rng.normal(0, 12, (size, size))
    img = np.clip(np.dstack([grey, grey * 0.9, grey * 0.7]), 0, 255).astype(np.uint8)
    cv2.imwrite(str(path), img[..., ::-1])
    return np.where(inside, 1, 2)


def iou(labels: np.ndarray, truth: np.ndarray, label: int = 1) -> float:
    a, b = labels == label, truth == label
    return float((a & b).sum() / max((a | b).sum(), 1))


@pytest.fixture(scope="module")
def client():
    """A local cluster as segapp batch makes it (two single-threaded worker processes, a dead
    worker's photo tried once more) and a client of it, shared by this module's tests."""
    from distributed import Client

    with batch.local_cluster(2) as cluster:
        c = Client(cluster)
        c.wait_for_workers(2, timeout=120)
        yield c
        c.close()


def photos(folder: Path, n: int, size: int = 60) -> dict[Path, np.ndarray]:
    folder.mkdir(parents=True, exist_ok=True)
    return {(folder / f"p{i}.png").resolve(): make_photo(folder / f"p{i}.png", size, seed=i,
                                                         shift=(i % 3) - 1)
            for i in range(n)}


@pytest.mark.slow
def test_every_photo_gets_its_files_and_a_summary_row(tmp_path, client):
    truth = photos(tmp_path / "in", 3)
    out = tmp_path / "out"
    seen = []
    summary = batch.run(list(truth), out, annotation=RECT, scheduler=client,
                        outputs=batch.BatchOutputs(overlay=True, cutout=True, report=True),
                        progress=lambda *a: seen.append(a[:2]))
    assert summary.exit_status == 0 and summary.count("done") == 3
    assert sorted(seen) == [(1, 3), (2, 3), (3, 3)]
    for row, (path, want) in zip(summary.rows, truth.items()):
        assert row["image"] == str(path) and row["status"] == "done" and row["error"] == ""
        labels = load_label_image(out / f"{path.stem}_labels.png")
        assert iou(labels, want) > 0.9
        assert row["areas"] == pytest.approx([np.mean(labels == 1), np.mean(labels == 2)],
                                             abs=1e-6)
        assert (row["width"], row["height"]) == (60, 60)
        report = json.loads((out / f"{path.stem}_report.json").read_text())
        assert report["energy"] == pytest.approx(row["energy"])
        assert report["gap"] is not None and abs(report["gap"]) < 1e-3
        rgba = cv2.imread(str(out / f"{path.stem}_cutout.png"), cv2.IMREAD_UNCHANGED)
        assert rgba.shape == (60, 60, 4)
        assert np.array_equal(rgba[..., 3] > 0, labels == 1)
        assert cv2.imread(str(out / f"{path.stem}_overlay.png")).shape == (60, 60, 3)
    data = json.loads((out / "summary.json").read_text())
    assert (data["images"], data["done"], data["failed"], data["k"]) == (3, 3, 0, 2)
    assert data["rows"] == summary.rows
    lines = (out / "summary.csv").read_text().splitlines()
    assert lines[0] == "image,status,error,energy,time_s,width,height,labels,area_1,area_2"
    assert [line.split(",")[:2] for line in lines[1:]] == [[str(p), "done"] for p in truth]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary file left


@pytest.mark.slow
def test_bad_photos_are_failed_rows_with_one_sentence_and_the_others_go_on(tmp_path, client):
    from tests.segapp.cli.test_bad_inputs import corrupt_png, huge_png

    good = photos(tmp_path / "in", 2)
    corrupt_png(tmp_path / "in" / "corrupt.png")
    (tmp_path / "in" / "empty.png").write_bytes(b"")
    huge_png(tmp_path / "in" / "huge.png")
    images = batch.collect_images([tmp_path / "in"])
    assert [p.name for p in images] == ["corrupt.png", "empty.png", "huge.png", "p0.png",
                                        "p1.png"]
    summary = batch.run(images, tmp_path / "out", annotation=RECT, scheduler=client)
    rows = {Path(r["image"]).name: r for r in summary.rows}
    assert summary.exit_status == 1
    assert [rows[n]["status"] for n in ("p0.png", "p1.png")] == ["done", "done"]
    for name, says in (("corrupt.png", "corrupt"), ("empty.png", "empty"),
                       ("huge.png", "it claims more than the 1073741824")):
        row = rows[name]
        assert row["status"] == "failed" and name in row["error"] and says in row["error"], row
        assert "\n" not in row["error"] and "Traceback" not in row["error"]
        assert not (tmp_path / "out" / f"{Path(name).stem}_labels.png").exists()
    for p in good:
        assert (tmp_path / "out" / f"{p.stem}_labels.png").is_file()


def _kill_when_processing(scheduler, prefix: str, times: int,
                          deadline_s: float = 240) -> list[int]:
    """Kill (SIGKILL) the worker process running the task whose key starts with ``prefix``,
    each time it is seen running there, ``times`` times; returns the pids killed. It reads the
    in-process scheduler's own state, so it needs no client of its own."""
    killed: list[int] = []
    end = time.monotonic() + deadline_s
    while len(killed) < times and time.monotonic() < end:
        for key, ts in list(scheduler.tasks.items()):
            ws = ts.processing_on if str(key).startswith(prefix) else None
            if ws is not None and ws.pid and ws.pid not in killed:
                try:
                    os.kill(ws.pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                killed.append(ws.pid)
        time.sleep(0.02)
    return killed


@pytest.mark.slow
@pytest.mark.parametrize("kills, status", [(1, "done"), (2, "failed")])
def test_a_worker_killed_mid_batch_has_its_photo_tried_once_more(tmp_path, client, kills,
                                                                 status):
    truth = photos(tmp_path / "in", 6, size=260)
    target = 3
    killed: list[int] = []
    watcher = threading.Thread(target=lambda: killed.extend(_kill_when_processing(
        client.cluster.scheduler, f"segapp-{target}-", kills)), daemon=True)
    watcher.start()
    summary = batch.run(list(truth), tmp_path / "out", annotation=RECT, scheduler=client)
    watcher.join(timeout=60)
    assert len(killed) == kills
    rows = summary.rows
    assert rows[target]["status"] == status, rows[target]
    if status == "failed":
        assert rows[target]["error"] == ("the worker segmenting it died twice (killed, or out "
                                         "of memory)")
        assert not (tmp_path / "out" / f"p{target}_labels.png").exists()
        assert summary.exit_status == 1
    else:
        assert summary.exit_status == 0
    for i, (path, want) in enumerate(truth.items()):
        if rows[i]["status"] == "done":
            assert iou(load_label_image(tmp_path / "out" / f"{path.stem}_labels.png"),
                       want) > 0.9
    assert [r["status"] for i, r in enumerate(rows) if i != target] == ["done"] * 5
    client.wait_for_workers(2, timeout=120)  # (the nanny restarts the killed worker)


@pytest.mark.slow
def test_a_resumed_batch_skips_complete_photos_and_keeps_their_rows(tmp_path, client):
    truth = photos(tmp_path / "in", 3)
    out = tmp_path / "out"
    first = batch.run(list(truth), out, annotation=RECT, scheduler=client)
    (out / "p1_labels.png").unlink()
    kept = {n: (out / n).stat().st_mtime_ns for n in ("p0_labels.png", "p2_labels.png")}
    with pytest.raises(ValueError, match="^'.*p0_labels.png' is there already .*--resume"):
        batch.run(list(truth), out, annotation=RECT, scheduler=client)
    again = batch.run(list(truth), out, annotation=RECT, scheduler=client, resume=True)
    assert [r["status"] for r in again.rows] == ["skipped", "done", "skipped"]
    for i in (0, 2):
        assert again.rows[i]["energy"] == first.rows[i]["energy"]
    assert again.rows[1]["energy"] == pytest.approx(first.rows[1]["energy"])
    assert {n: (out / n).stat().st_mtime_ns for n in kept} == kept
    assert again.exit_status == 0
    assert json.loads((out / "summary.json").read_text())["skipped"] == 2
    redone = batch.run(list(truth), out, annotation=RECT, scheduler=client, overwrite=True)
    assert [r["status"] for r in redone.rows] == ["done"] * 3


@pytest.mark.slow
def test_a_local_batch_leaves_this_processs_environment_as_it_was(tmp_path):
    """Dask's nanny writes its workers' settings (OMP_NUM_THREADS=1, glibc's trim threshold)
    into the parent's environment; left there, every process started afterwards (the app's
    reference child) would run single-threaded, its freed memory trimmed differently."""
    before = dict(os.environ)
    truth = photos(tmp_path / "in", 1)
    summary = batch.run(list(truth), tmp_path / "out", annotation=RECT, workers=1)
    assert [r["status"] for r in summary.rows] == ["done"]
    assert summary.workers == 1
    assert dict(os.environ) == before


@pytest.mark.slow
def test_two_batches_on_one_client_each_segment_their_own_photos(tmp_path, client):
    first = photos(tmp_path / "a", 2)
    second = photos(tmp_path / "b", 2, size=50)  # the same names, other photos
    for truth, folder in ((first, "out_a"), (second, "out_b")):
        summary = batch.run(list(truth), tmp_path / folder, annotation=RECT, scheduler=client)
        assert [r["image"] for r in summary.rows] == [str(p) for p in truth]
        assert summary.count("done") == 2
        for path in truth:
            assert load_label_image(tmp_path / folder / f"{path.stem}_labels.png").shape == \
                truth[path].shape


@pytest.mark.slow
def test_a_sessions_colour_models_give_the_labels_the_library_gives(tmp_path, client):
    from segapp.core.io import load_image
    from segapp.core.session import save_session
    from segapp.model.document import Document, SolverSettings

    truth = photos(tmp_path / "in", 3)
    trained_on = next(iter(truth))
    doc = Document(k=2)
    doc.set_image(load_image(trained_on), str(trained_on))
    strokes = np.zeros((60, 60), np.uint8)
    strokes[2:4, 2:58] = 2
    strokes[28:31, 22:38] = 1
    doc.set_layers(strokes, None, undoable=False)
    doc.settings = SolverSettings(lam=6.0, seed=0)
    save_session(tmp_path / "s.json", doc)
    params, models = batch.session_models(tmp_path / "s.json")
    assert (params.k, params.lam, len(models)) == (2, 6.0, 2)
    others = list(truth)[1:]
    summary = batch.run(others, tmp_path / "out", params, models=models, scheduler=client)
    assert summary.exit_status == 0
    for path in others:
        want = run_segmentation(load_image(path), None, params, models=models,
                                reference=False).labels
        got = load_label_image(tmp_path / "out" / f"{path.stem}_labels.png")
        assert np.array_equal(got, want)
        assert iou(got, truth[path]) > 0.9


@pytest.mark.slow
def test_annotations_give_each_photo_its_own_rectangle_or_strokes(tmp_path, client):
    truth = photos(tmp_path / "in", 3)
    names = [p.name for p in truth]
    strokes = np.zeros((60, 60), np.uint8)
    strokes[1, :] = 2
    strokes[30, 20:40] = 1
    cv2.imwrite(str(tmp_path / "in" / "s.png"), strokes)
    (tmp_path / "in" / "a.csv").write_text(
        "image,rect,strokes,hard\n"
        f"{names[0]},\"9,9,42,42\",,\n"
        f"{names[2]},,s.png,\n")
    ann = batch.read_annotations(tmp_path / "in" / "a.csv")
    assert list(ann) == [tmp_path.resolve() / "in" / n for n in (names[0], names[2])]
    summary = batch.run(list(truth), tmp_path / "out", annotations=ann, scheduler=client)
    rows = summary.rows
    assert [r["status"] for r in rows] == ["done", "failed", "done"]
    assert rows[1]["error"] == f"no row for '{names[1]}' in the annotations"
    for i in (0, 2):
        path = list(truth)[i]
        assert iou(load_label_image(tmp_path / "out" / f"{path.stem}_labels.png"),
                   truth[path]) > 0.9


@pytest.mark.parametrize("text, message", [
    ("img,rect\n", "the first line must name the columns"),
    ("image,colour\na.png,x\n", "unknown column 'colour'"),
    ("image,rect\na.png,\"1,2,3\"\n", "line 2 rect: expected 4 integers X,Y,W,H"),
    ("image,rect\na.png,\n", "line 2: 'a.png' has no rect, strokes or hard"),
    ("image,rect\na.png,\"1,2,3,4\"\na.png,\"1,2,3,4\"\n", "line 3: 'a.png' has a row already"),
    ("image,rect\n", "has no rows"),
])
def test_a_bad_annotations_file_is_one_sentence_naming_its_line(tmp_path, text, message):
    (tmp_path / "a.csv").write_text(text)
    with pytest.raises(ValueError) as err:
        batch.read_annotations(tmp_path / "a.csv")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_workers_are_planned_against_cores_photos_and_memory(tmp_path):
    from segapp.core.memory import estimate_bytes
    from tests.segapp.cli.test_bad_inputs import huge_png

    small = [tmp_path / f"s{i}.png" for i in range(4)]
    for p in small:
        cv2.imwrite(str(p), np.zeros((100, 200), np.uint8))
    need = estimate_bytes(100 * 200, 2, False)
    assert batch.plan_workers(small, 2, cores=8, available=1e12) == 4  # one a photo
    assert batch.plan_workers(small, 2, cores=2, available=1e12) == 2  # one a core
    assert batch.plan_workers(small, 2, 1, cores=8, available=1e12) == 1  # --workers
    assert batch.plan_workers(small, 2, cores=8, available=2.6 * need / 0.8) == 2  # memory
    assert batch.plan_workers(small, 2, cores=8, available=need / 2) == 1  # never fewer
    huge_png(tmp_path / "huge.png")  # (fits nowhere: it fails alone, not the plan)
    assert batch.plan_workers(small + [tmp_path / "huge.png"], 2, cores=8,
                              available=2.6 * need / 0.8) == 2
    assert batch.plan_workers(small, 2, cores=8, available=None) == 4


def test_photos_are_collected_from_files_folders_and_patterns_once_each(tmp_path):
    for name in ("b.png", "a.JPG", "notes.txt", "sub/c.tif"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    got = batch.collect_images([tmp_path, str(tmp_path / "*.png"), tmp_path / "sub" / "c.tif"])
    assert [p.name for p in got] == ["a.JPG", "b.png", "c.tif"]
    with pytest.raises(ValueError, match="^cannot read '.*nope.png': no such file or folder$"):
        batch.collect_images([tmp_path / "nope.png"])
    with pytest.raises(ValueError, match=r"^pattern '.*\*.bmp' matches no photo$"):
        batch.collect_images([str(tmp_path / "*.bmp")])
    with pytest.raises(ValueError, match="^folder '.*empty' holds no photo"):
        (tmp_path / "empty").mkdir()
        batch.collect_images([tmp_path / "empty"])
    (tmp_path / "sub" / "b.jpg").write_bytes(b"x")
    with pytest.raises(ValueError, match="would both write b_labels.png"):
        batch.collect_images([tmp_path, tmp_path / "sub"])


def test_an_output_folder_that_would_replace_an_input_is_refused(tmp_path):
    truth = photos(tmp_path / "in", 1)
    strokes = tmp_path / "in" / "p0_labels.png"  # an input named as an output would be
    cv2.imwrite(str(strokes), np.ones((60, 60), np.uint8))
    ann = {p: batch.Annotation(strokes=strokes) for p in truth}
    with pytest.raises(ValueError, match="^cannot write '.*p0_labels.png': it is the input"):
        batch.run(list(truth), tmp_path / "in", annotations=ann, overwrite=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="it is a file, not a folder"):
        batch.run(list(truth), tmp_path / "file", annotation=RECT)


def test_the_progress_line_says_count_rate_and_time_left():
    row = {"image": "/x/cat.png", "status": "failed", "error": "cannot read image"}
    assert batch.format_progress(3, 10, row, 6.0) == (
        "[3/10] 0.50 photos/s, ETA 14s  cat.png: failed: cannot read image")
    assert batch.format_progress(1, 200, {"image": "a.png", "status": "done"}, 2.0) == (
        "[1/200] 0.50 photos/s, ETA 6m38s  a.png: done")
