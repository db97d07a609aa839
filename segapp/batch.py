"""Many photos at once: ``segapp batch``, on a local Dask cluster or an existing one.

Each photo is one Dask task (:func:`segment_one`) that reads it, segments it with
:func:`segapp.core.pipeline.run_segmentation` and writes its files as ``segapp segment`` does
(:func:`segapp.core.outputs.render_outputs`, every file written atomically), and returns one row
of the summary. A task never raises for a bad photo: its row says ``failed`` and why, in one
sentence, and the other photos go on. A worker that dies (killed, out of memory) has its photo
tried once more on another worker; a second death is a failed row.

The annotation of every photo is one of: a rectangle in pixels or as fractions of the photo, a
row of an annotations CSV (a rectangle and/or stroke and hard-constraint images), or the colour
models fitted on a saved session's photo and strokes (:func:`session_models`), as a trained
classifier is applied to new data.

Nothing here imports Qt; :func:`run` is the library's entry point and the command line's.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import io
import json
import logging
import math
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from segapp.core.io import load_image, load_label_image, write_files_atomic
from segapp.core.memory import available_bytes, estimate_bytes
from segapp.core.outputs import OutputPaths, render_outputs
from segapp.core.pipeline import SegmentParams, run_segmentation

log = logging.getLogger(__name__)

__all__ = ["Annotation", "BatchOutputs", "Summary", "collect_images", "read_annotations",
           "session_models", "plan_workers", "segment_one", "run", "SUMMARY_FIELDS"]

#: The photo formats a folder's files are taken from (case-insensitive).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".jpe", ".bmp", ".tif", ".tiff", ".webp")

#: The columns of ``summary.csv``, then ``area_1`` .. ``area_K`` (each label's share of the
#: photo); ``summary.json`` holds the same rows.
SUMMARY_FIELDS = ("image", "status", "error", "energy", "time_s", "width", "height", "labels")

#: A row's ``status``: segmented now; skipped by ``--resume`` (its files were complete);
#: failed (``error`` says why); not run because the batch was interrupted.
STATUSES = ("done", "skipped", "failed", "cancelled")

#: How much of the available memory the workers may plan to use together.
MEMORY_SHARE = 0.8


@dataclass(frozen=True)
class Annotation:
    """How one photo is annotated.

    Attributes
    ----------
    rect : tuple of 4 int, optional
        A GrabCut-style rectangle ``(x, y, w, h)`` in pixels.
    rect_fraction : tuple of 4 float, optional
        The same as fractions of the photo's width and height (each photo gets its own).
    strokes, hard : pathlib.Path, optional
        A stroke image and a hard-constraint image (single channel, 0 = none, k = label k).
    """

    rect: tuple[int, int, int, int] | None = None
    rect_fraction: tuple[float, float, float, float] | None = None
    strokes: Path | None = None
    hard: Path | None = None

    def rect_for(self, width: int, height: int) -> tuple[int, int, int, int] | None:
        """The rectangle in a ``width`` × ``height`` photo's pixels, or None."""
        if self.rect_fraction is None:
            return self.rect
        fx, fy, fw, fh = self.rect_fraction
        x, y = round(fx * width), round(fy * height)
        return (x, y, max(1, min(round(fw * width), width - x)),
                max(1, min(round(fh * height), height - y)))


@dataclass(frozen=True)
class BatchOutputs:
    """The files each photo gets, in the output folder, named after the photo's stem.

    Attributes
    ----------
    overlay, cutout, report : bool
        Write ``<stem>_overlay.png``, ``<stem>_cutout.png`` and ``<stem>_report.json`` besides
        ``<stem>_labels.png``.
    labels_palette : bool
        The labels as a colour-coded palette PNG.
    cutout_labels : tuple of int
        The labels the cut-out keeps.
    feather : float
        The cut-out's soft edge, in pixels.
    """

    overlay: bool = False
    cutout: bool = False
    report: bool = False
    labels_palette: bool = False
    cutout_labels: tuple[int, ...] = (1,)
    feather: float = 0.0

    def paths(self, folder: Path, stem: str) -> OutputPaths:
        """Where the files of the photo named ``stem`` go in ``folder``."""
        def named(suffix: str, wanted: bool = True) -> Path | None:
            return folder / f"{stem}_{suffix}" if wanted else None
        return OutputPaths(named("labels.png"), named("overlay.png", self.overlay),
                           named("cutout.png", self.cutout), named("report.json", self.report),
                           labels_palette=self.labels_palette,
                           cutout_labels=self.cutout_labels, feather=self.feather)


@dataclass
class Summary:
    """What a batch did: one row a photo, in the order the photos were given.

    Attributes
    ----------
    rows : list of dict
        Per photo: ``image``, ``status`` (:data:`STATUSES`), ``error`` (one sentence, or ""),
        ``energy``, ``time_s``, ``width``, ``height``, ``labels`` (the label file) and
        ``areas`` (each label's share of the photo, label 1 first).
    k : int
        The number of labels.
    workers : int
        The workers that segmented the photos.
    time_s : float
        Wall-clock seconds of the whole batch.
    interrupted : bool
        Whether the batch was stopped (Ctrl-C) before every photo was done.
    """

    rows: list[dict[str, Any]]
    k: int
    workers: int = 0
    time_s: float = 0.0
    interrupted: bool = False

    def count(self, status: str) -> int:
        """How many rows have ``status``."""
        return sum(r["status"] == status for r in self.rows)

    @property
    def exit_status(self) -> int:
        """0 when every photo is done or skipped, 1 when any failed, 130 when interrupted."""
        if self.interrupted:
            return 130
        return 1 if self.count("failed") else 0

    def as_dict(self) -> dict[str, Any]:
        """``summary.json``'s contents."""
        return {"format": "segapp-batch-summary", "version": 1, "k": self.k,
                "images": len(self.rows), **{s: self.count(s) for s in STATUSES},
                "workers": self.workers, "time_s": round(self.time_s, 3),
                "interrupted": self.interrupted, "rows": self.rows}

    def csv_text(self) -> str:
        """``summary.csv``'s contents: :data:`SUMMARY_FIELDS`, then ``area_1`` .. ``area_K``."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow([*SUMMARY_FIELDS, *(f"area_{i}" for i in range(1, self.k + 1))])
        for r in self.rows:
            areas = list(r.get("areas") or [])
            writer.writerow([_cell(r.get(f)) for f in SUMMARY_FIELDS]
                            + [_cell(a) for a in areas + [None] * (self.k - len(areas))])
        return buf.getvalue()

    def write(self, folder: Path) -> None:
        """Write ``summary.csv`` and ``summary.json`` in ``folder``, both or neither."""
        write_files_atomic([
            (folder / "summary.csv", self.csv_text().encode()),
            (folder / "summary.json", (json.dumps(self.as_dict(), indent=2) + "\n").encode())])


def _cell(v: Any) -> str:
    if v is None:
        return ""
    return f"{v:.8g}" if isinstance(v, float) else str(v)


# -- the photos ------------------------------------------------------------------------------

def collect_images(specs: Iterable[str | os.PathLike]) -> list[Path]:
    """The photos named by files, folders (their photo files, :data:`IMAGE_SUFFIXES`, sorted)
    and glob patterns, in the order given, each once.

    Parameters
    ----------
    specs : iterable of str or path
        What the user named.

    Returns
    -------
    list of pathlib.Path

    Raises
    ------
    ValueError
        One sentence for a path that does not exist, a pattern or folder with no photo, or two
        photos of the same name (their outputs would collide).
    """
    found: list[Path] = []
    for spec in specs:
        text = os.fspath(spec)
        path = Path(text)
        if path.is_dir():
            hits = sorted(p for p in path.iterdir()
                          if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
            if not hits:
                raise ValueError(f"folder '{text}' holds no photo "
                                 f"({', '.join(IMAGE_SUFFIXES)})")
        elif path.exists():
            hits = [path]
        elif glob.has_magic(text):
            hits = sorted(Path(p) for p in glob.glob(text, recursive=True)
                          if Path(p).is_file() and Path(p).suffix.lower() in IMAGE_SUFFIXES)
            if not hits:
                raise ValueError(f"pattern '{text}' matches no photo")
        else:
            raise ValueError(f"cannot read '{text}': no such file or folder")
        found += hits
    unique = list(dict.fromkeys(p.resolve() for p in found))
    stems: dict[str, Path] = {}
    for p in unique:
        other = stems.setdefault(p.stem, p)
        if other != p:
            raise ValueError(f"'{other}' and '{p}' would both write {p.stem}_labels.png; "
                             "rename one or run them as two batches")
    return unique


def _ints(text: str, n: int, what: str) -> tuple[int, ...]:
    parts = [t.strip() for t in text.replace(";", ",").split(",")]
    try:
        values = tuple(int(t) for t in parts)
    except ValueError:
        raise ValueError(f"{what}: expected {n} integers X,Y,W,H, got {text!r}") from None
    if len(values) != n:
        raise ValueError(f"{what}: expected {n} integers X,Y,W,H, got {text!r}")
    return values


def read_annotations(path: str | os.PathLike) -> dict[Path, Annotation]:
    """The per-photo annotations of a CSV file.

    The columns are ``image`` and any of ``rect`` (``X,Y,W,H`` in pixels, quoted), ``strokes``
    and ``hard`` (label images); paths are relative to the CSV's folder, and an empty cell
    means none.

    Parameters
    ----------
    path : str or path
        The CSV file.

    Returns
    -------
    dict
        Each photo's resolved path to its :class:`Annotation`, in the file's order.

    Raises
    ------
    ValueError
        One sentence naming the line of a row that cannot be used.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read annotations '{path}': {exc}") from exc
    reader = csv.DictReader(io.StringIO(text))
    columns = set(reader.fieldnames or ())
    if "image" not in columns:
        raise ValueError(f"annotations '{path}': the first line must name the columns, "
                         "'image' and any of 'rect', 'strokes', 'hard'")
    unknown = columns - {"image", "rect", "strokes", "hard"}
    if unknown:
        raise ValueError(f"annotations '{path}': unknown column '{sorted(unknown)[0]}' "
                         "(the columns are image, rect, strokes, hard)")
    base = path.parent
    out: dict[Path, Annotation] = {}
    for line, row in enumerate(reader, start=2):
        where = f"annotations '{path}' line {line}"
        image = (row.get("image") or "").strip()
        if not image:
            raise ValueError(f"{where}: no image")
        cells = {key: (row.get(key) or "").strip() for key in ("rect", "strokes", "hard")}
        if not any(cells.values()):
            raise ValueError(f"{where}: '{image}' has no rect, strokes or hard")
        rect = _ints(cells["rect"], 4, f"{where} rect") if cells["rect"] else None
        files = {key: (base / cells[key]).resolve() if cells[key] else None
                 for key in ("strokes", "hard")}
        key = (base / image).resolve()
        if key in out:
            raise ValueError(f"{where}: '{image}' has a row already")
        out[key] = Annotation(rect=rect, **files)  # type: ignore[arg-type]
    if not out:
        raise ValueError(f"annotations '{path}' has no rows")
    return out


def session_models(path: str | os.PathLike,
                   solver: str | None = None) -> tuple[SegmentParams, tuple]:
    """The parameters and the colour models of a saved session, fitted on its own photo and
    strokes as the app fits them.

    Parameters
    ----------
    path : str or path
        A session file (:func:`segapp.core.session.save_session`).
    solver : str, optional
        The solver to use instead of the session's.

    Returns
    -------
    params : SegmentParams
        The session's K, settings and constraints.
    models : tuple
        K colour models, label 1 first.

    Raises
    ------
    ValueError
        One sentence for a session that cannot be read, has no photo, or whose photo, strokes
        or rectangle do not train a model for every label.
    """
    from segapp.core.session import check_session_image, load_session  # noqa: PLC0415

    data = load_session(path)
    if not data.image_path:
        raise ValueError(f"session '{path}' names no photo to fit the colour models on")
    photo = Path(data.image_path)
    if not photo.is_absolute():
        photo = Path(path).parent / photo
    image = load_image(photo)
    check_session_image(data, image)
    params = SegmentParams.from_settings(data.k, data.settings, solver=solver)
    trained = run_segmentation(image, data.strokes, params, rect=data.rect, hard=data.hard,
                               reference=False)
    return params, tuple(trained.problem.models)


# -- one photo (on a worker) -----------------------------------------------------------------

@dataclass(frozen=True)
class Task:
    """Everything one worker needs to segment one photo."""

    image: Path
    paths: OutputPaths
    annotation: Annotation
    params: SegmentParams
    models: tuple | None = None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    if isinstance(exc, MemoryError):
        return "out of memory; use a smaller copy of the photo"
    if not text:
        return type(exc).__name__
    return text[0] if isinstance(exc, (ValueError, OSError)) else f"{type(exc).__name__}: {text[0]}"


def _row(task: Task, status: str, error: str = "", **figures: Any) -> dict[str, Any]:
    return {"image": str(task.image), "status": status, "error": error,
            "energy": None, "time_s": None, "width": None, "height": None,
            "labels": None, "areas": None, **figures}


def segment_one(task: Task) -> dict[str, Any]:
    """Segment one photo and write its files; never raises for a bad photo.

    Parameters
    ----------
    task : Task
        The photo, where its files go, its annotation, the parameters and (``--model``) the
        colour models to apply.

    Returns
    -------
    dict
        The photo's summary row (:class:`Summary`): ``done`` with its energy, time, size and
        areas, or ``failed`` with the reason in one sentence (nothing of it written).
    """
    t0 = time.perf_counter()
    try:
        image = load_image(task.image)
        h, w = image.shape[:2]
        ann = task.annotation
        strokes = load_label_image(ann.strokes, (h, w), what="strokes") if ann.strokes else None
        hard = (load_label_image(ann.hard, (h, w), what="hard constraints") if ann.hard
                else None)
        out = run_segmentation(image, strokes, task.params, rect=ann.rect_for(w, h), hard=hard,
                               reference=task.paths.report is not None, models=task.models)
        if not out.feasible:
            broken = next(r for r in out.constraints if not r.satisfied)
            raise ValueError(f"the labels found break the {broken.kind} constraint on label"
                             f"{'s' if len(broken.labels) > 1 else ''} "
                             f"{','.join(map(str, broken.labels))}; nothing was written")
        report = {**out.as_dict(), "image": str(task.image)}
        write_files_atomic(render_outputs(image, out.labels, task.params.k, task.paths, report))
        counts = np.bincount(out.labels.ravel(), minlength=task.params.k + 1)[1:]
        return _row(task, "done", energy=float(out.energy),
                    time_s=round(time.perf_counter() - t0, 4), width=int(w), height=int(h),
                    labels=str(task.paths.labels),
                    areas=[round(float(c) / out.labels.size, 6) for c in counts])
    except Exception as exc:  # noqa: BLE001 - one bad photo is one row, never the batch (a
        # MemoryError included)
        log.info("batch: %s failed: %s", task.image, exc)
        return _row(task, "failed", _one_line(exc),
                    time_s=round(time.perf_counter() - t0, 4))


# -- the workers ----------------------------------------------------------------------------

def _pixels(path: Path) -> int | None:
    """The photo's pixel count from its header (Pillow reads no pixels), or None."""
    from PIL import Image  # noqa: PLC0415

    try:
        with Image.open(path) as im:
            return int(im.size[0]) * int(im.size[1])
    except Exception:  # noqa: BLE001 - an unreadable photo fails in its own task
        return None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def plan_workers(images: Sequence[Path], k: int, requested: int | None = None,
                 cores: int | None = None, available: float | None = None) -> int:
    """How many worker processes a local batch starts: one a core, no more than there are
    photos, and only as many as memory allows for the largest photo that fits at all (a photo
    that fits nowhere fails in its own task, with the memory sentence).

    Parameters
    ----------
    images : sequence of pathlib.Path
        The photos (their headers give their sizes).
    k : int
        The number of labels.
    requested : int, optional
        ``--workers``: at most this many.
    cores : int, optional
        Default: the cores this process may run on.
    available : float, optional
        Bytes; default :func:`segapp.core.memory.available_bytes` (the cgroup limit included).

    Returns
    -------
    int
        At least 1.
    """
    cores = cores or _cores()
    room = available_bytes() if available is None else available
    n = min(cores, max(1, len(images)))
    if requested is not None:
        n = min(n, requested)
    if room is None:
        return max(1, n)
    needs = [estimate_bytes(p, k, False) for p in map(_pixels, images) if p]
    fitting = [b for b in needs if b <= room]
    if needs and not fitting:  # every photo will fail with the memory sentence: one will do
        return 1
    if fitting:
        n = min(n, int(MEMORY_SHARE * room // max(fitting)))
    return max(1, n)


def dask_setup(worker: Any) -> None:
    """Run by each local worker process as it starts (Dask's preload of this module): Ctrl-C
    in the terminal reaches the whole process group, and the batch, not each worker, answers
    it (it cancels the photos not yet done and closes the cluster)."""
    import signal  # noqa: PLC0415
    import threading  # noqa: PLC0415

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def local_cluster(workers: int) -> Iterator[Any]:
    """A local Dask cluster of ``workers`` single-threaded processes on the loopback interface,
    each with an equal share of the cores for its compiled kernels; a worker that dies has its
    task tried once more (``allowed-failures`` 1). Closed on leaving the block.

    Dask's nanny sets its workers' environment (here the thread counts, and its own
    ``PYTHONHASHSEED``) in this process's ``os.environ`` before it spawns each one, and leaves
    it there; every process this one started later (the app's reference child, say) would
    inherit it. The environment is put back as it was when the cluster closes (a worker
    restarted mid-batch sets it again until then).
    """
    import dask  # noqa: PLC0415
    from distributed import LocalCluster  # noqa: PLC0415

    threads = str(max(1, _cores() // workers))
    saved = dict(os.environ)
    # worker-saturation 1: a worker holds only the photo it segments (its memory, and a
    # worker that dies takes no queued photo with it). The thread counts go in before the
    # spawn, as the libraries read them when they load; Dask's default MALLOC_TRIM_THRESHOLD_
    # does not (it fixes glibc's mmap threshold, so each of a solve's large arrays is mapped
    # and faulted afresh: a photo took 1.4-1.6x its time in one process, 2026-12-04)
    spawn_env = {"NUMBA_NUM_THREADS": threads,
                 "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads,
                 "OPENBLAS_NUM_THREADS": threads}
    try:
        with dask.config.set({"distributed.scheduler.allowed-failures": 1,
                              "distributed.scheduler.worker-saturation": 1.0,
                              "distributed.worker.daemon": False,
                              "distributed.nanny.pre-spawn-environ": spawn_env,
                              "distributed.admin.system-monitor.gil.enabled": False}):
            # (no dashboard; the scheduler's HTTP routes on a free loopback port, not 8787,
            # which a second cluster would find taken)
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", memory_limit=0,
                                   scheduler_kwargs={"dashboard": False,
                                                     "dashboard_address": "127.0.0.1:0"},
                                   silence_logs=logging.ERROR, preload=[__name__])
        try:
            yield cluster
        finally:
            cluster.close()
    finally:
        _restore_environ(saved)


def _restore_environ(saved: Mapping[str, str]) -> None:
    """Put ``os.environ`` back to ``saved`` (what was added removed, what was changed reset)."""
    for key in [k for k in os.environ if k not in saved]:
        del os.environ[key]
    for key, value in saved.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


# -- the batch -------------------------------------------------------------------------------

def _complete(paths: OutputPaths) -> bool:
    return all(p.is_file() for p in paths.files())


def _previous_rows(folder: Path) -> dict[str, dict[str, Any]]:
    """The rows of an earlier run's ``summary.json`` in ``folder``, by photo (none where there
    is no readable summary)."""
    try:
        data = json.loads((folder / "summary.json").read_text())
        return {str(r["image"]): r for r in data["rows"] if isinstance(r, dict) and "image" in r}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _check_folder(folder: Path, tasks: Sequence[Task], inputs: Iterable[Path | None]) -> None:
    """Refuse an output folder that is a file, cannot be made or written, or where a photo's
    file would replace one of the batch's inputs (a photo, strokes or hard constraints)."""
    from segapp.core.paths import file_identity  # noqa: PLC0415

    if folder.exists() and not folder.is_dir():
        raise ValueError(f"cannot write into --out '{folder}': it is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"cannot make the output folder '{folder}': "
                         f"{exc.strerror or exc}") from exc
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write into the output folder '{folder}': permission denied")
    given = {file_identity(p): p for p in [*(t.image for t in tasks), *inputs] if p is not None}
    for t in tasks:
        for f in [*t.paths.files(), folder / "summary.csv", folder / "summary.json"]:
            lost = given.get(file_identity(f))
            if lost is not None:
                raise ValueError(f"cannot write '{f}': it is the input '{lost}', which would "
                                 "be lost; write to another folder")


Progress = Callable[[int, int, dict[str, Any], float], None]


def run(images: Sequence[str | os.PathLike], out: str | os.PathLike,
        params: SegmentParams | None = None, *,
        annotation: Annotation | None = None,
        annotations: Mapping[Path, Annotation] | None = None,
        models: Sequence[Any] | None = None,
        outputs: BatchOutputs = BatchOutputs(),
        resume: bool = False, overwrite: bool = False,
        workers: int | None = None, scheduler: str | Any | None = None,
        progress: Progress | None = None) -> Summary:
    """Segment many photos with Dask and write each one's files and one summary.

    Parameters
    ----------
    images : sequence of str or path
        The photos (:func:`collect_images` expands folders and patterns).
    out : str or path
        The output folder (made if missing): ``<stem>_labels.png`` a photo (and the overlay,
        cut-out and report :class:`BatchOutputs` asks for), ``summary.csv``, ``summary.json``.
    params : SegmentParams, optional
        K, the solver, its parameters and the constraints (default ``SegmentParams()``).
    annotation : Annotation, optional
        One annotation for every photo (a rectangle, in pixels or fractions).
    annotations : mapping, optional
        Each photo's own annotation (:func:`read_annotations`); a photo without one fails.
    models : sequence, optional
        K colour models to apply to every photo (:func:`session_models`); the annotation may
        then be empty.
    outputs : BatchOutputs
        The files besides the labels.
    resume : bool
        Skip the photos whose files are all there (their earlier rows are kept).
    overwrite : bool
        Replace files of an earlier batch; without it or ``resume``, a folder that holds any
        of this batch's files is refused.
    workers : int, optional
        At most this many local worker processes (default: :func:`plan_workers`).
    scheduler : str or distributed.Client, optional
        The address of a running Dask scheduler (``tcp://host:8786``) or a client of one,
        instead of a local cluster; its workers need segapp installed.
    progress : callable, optional
        Called as ``progress(finished, total, row, elapsed_s)`` after each photo.

    Returns
    -------
    Summary
        Every photo's row, in the order given; ``interrupted`` where Ctrl-C stopped it (the
        finished photos' files are kept, the others are ``cancelled``).

    Raises
    ------
    ValueError
        One sentence, before any photo is segmented, for a bad argument or output folder.
    """
    t0 = time.perf_counter()
    params = params or SegmentParams()
    folder = Path(out)
    paths = [Path(p).resolve() for p in images]
    if not paths:
        raise ValueError("no photos to segment")
    if annotation is None and annotations is None and models is None:
        raise ValueError("no annotation: give a rectangle, annotations or colour models")
    if models is not None and len(models) != params.k:
        raise ValueError(f"models: expected {params.k} colour models (one a label), "
                         f"got {len(models)}")
    tasks = [Task(p, outputs.paths(folder, p.stem),
                  (annotation if annotations is None else annotations.get(p)) or Annotation(),
                  params, tuple(models) if models is not None else None) for p in paths]
    _check_folder(folder, tasks,
                  [p for a in (annotations or {}).values() for p in (a.strokes, a.hard)])
    if not (resume or overwrite):
        clash = next((f for t in tasks for f in t.paths.files() if f.exists()), None)
        if clash is not None:
            raise ValueError(f"'{clash}' is there already (an earlier batch?); --resume skips "
                             "the photos that are done, --overwrite replaces their files")
    before = _previous_rows(folder) if resume else {}
    rows: list[dict[str, Any] | None] = [None] * len(tasks)
    todo: list[int] = []
    for i, t in enumerate(tasks):
        if annotations is not None and t.image not in annotations:
            rows[i] = _row(t, "failed", f"no row for '{t.image.name}' in the annotations")
        elif resume and _complete(t.paths):
            rows[i] = {**(before.get(str(t.image)) or _row(t, "done")), "status": "skipped"}
        else:
            todo.append(i)
    summary = Summary(rows=[], k=params.k)
    try:
        if todo:
            _run_tasks(tasks, todo, rows, summary, workers, scheduler, progress, t0)
    except KeyboardInterrupt:
        summary.interrupted = True
    summary.rows = [r if r is not None else _row(t, "cancelled", "the batch was interrupted")
                    for r, t in zip(rows, tasks)]
    summary.time_s = time.perf_counter() - t0
    summary.write(folder)
    return summary


def _run_tasks(tasks: Sequence[Task], todo: Sequence[int], rows: list, summary: Summary,
               workers: int | None, scheduler: str | Any | None, progress: Progress | None,
               t0: float) -> None:
    """Submit ``todo``'s tasks and fill in ``rows`` as they finish (and ``summary.workers``)."""
    from distributed import Client, as_completed  # noqa: PLC0415
    from distributed.client import FutureCancelledError  # noqa: PLC0415

    try:
        from distributed.scheduler import KilledWorker  # noqa: PLC0415
    except ImportError:  # pragma: no cover - older distributed
        from distributed import KilledWorker  # noqa: PLC0415

    stack = contextlib.ExitStack()
    own_client = not (scheduler is not None and isinstance(scheduler, Client))
    # Dask's own notices (workers starting, a worker lost) stay out of the user's terminal:
    # the rows and the progress say what happened
    dask_log = logging.getLogger("distributed")
    level = dask_log.level
    dask_log.setLevel(max(logging.CRITICAL, logging.getLogger().getEffectiveLevel()))
    client = None
    try:
        if scheduler is None:
            n = plan_workers([tasks[i].image for i in todo], tasks[0].params.k, workers)
            client = Client(stack.enter_context(local_cluster(n)))
        elif isinstance(scheduler, Client):
            client = scheduler
        else:
            try:
                client = Client(scheduler, timeout=10)
            except (OSError, TimeoutError) as exc:
                raise ValueError(f"cannot reach the Dask scheduler '{scheduler}': "
                                 f"{exc}") from exc
        summary.workers = len(client.scheduler_info().get("workers", {}))
        finished = len(tasks) - len(todo)
        futures = {}
        # each batch its own keys: a scheduler hands back a key it still holds without running
        # it again, so a second batch on one client would otherwise get the first one's rows
        batch_id = uuid.uuid4().hex[:8]
        for i in todo:
            t = tasks[i]
            fut = client.submit(segment_one, t, key=f"segapp-{i}-{t.image.stem}-{batch_id}",
                                pure=False)
            futures[fut] = i
        try:
            # (this client's loop, not the process's default client's: another client made
            # later, e.g. a monitor's, would otherwise carry the completions and take them
            # with it when it closes)
            for fut in as_completed(futures, loop=client.loop):
                i = futures[fut]
                try:
                    rows[i] = fut.result()
                except KilledWorker:
                    rows[i] = _row(tasks[i], "failed", "the worker segmenting it died twice "
                                   "(killed, or out of memory)")
                except FutureCancelledError:
                    rows[i] = _row(tasks[i], "cancelled", "the batch was interrupted")
                except Exception as exc:  # noqa: BLE001 - e.g. a worker without segapp
                    rows[i] = _row(tasks[i], "failed", _one_line(exc))
                finished += 1
                if progress is not None:
                    progress(finished, len(tasks), rows[i], time.perf_counter() - t0)
        except KeyboardInterrupt:
            client.cancel(list(futures))
            raise
    finally:
        if own_client and client is not None:
            client.close()
        stack.close()
        dask_log.setLevel(level)


def format_progress(finished: int, total: int, row: Mapping[str, Any], elapsed: float) -> str:
    """One progress line: the count, the rate, the time left and the photo just finished."""
    rate = finished / elapsed if elapsed > 0 else 0.0
    left = (total - finished) / rate if rate > 0 else math.inf
    eta = ("--" if not math.isfinite(left) else
           f"{int(left // 60)}m{int(left % 60):02d}s" if left >= 60 else f"{left:.0f}s")
    what = Path(str(row.get("image", ""))).name
    state = row.get("status", "")
    if state == "failed":
        state = f"failed: {row.get('error', '')}"
    return f"[{finished}/{total}] {rate:.2f} photos/s, ETA {eta}  {what}: {state}"


