"""What a finished run leaves in memory (issue "The app as people use it", item 8).

After about ten 512 x 512 runs the idle app held 1.8 GB (0.41 GB fresh). What Python holds
after a run is the last outcome, the replay's frames and the probe's samples (about 22 MB at
512 x 512, the same after every run); the rest was the C heap: a run's arrays, freed, stayed in
the process (and in the reference's child) as free pages of glibc's arenas, one arena a thread,
more on a machine with more cores. The window now hands them back when a run ends, and the
child after each answer. ``benchmarks/app_memory.py`` measures the whole app over ten runs.

The heap is made to hold freed pages on purpose here (:func:`fragment_heap`: large blocks from
the heap, each followed by a small block that stays, then the large ones freed), as a solve's
arrays leave it.
"""
from __future__ import annotations

import ctypes
import gc
import os
import weakref

import numpy as np
import pytest

from segapp.core import isolated
from segapp.core.isolated import IsolatedReference

pytestmark = pytest.mark.slow  # (every test here: see docs/testing.md, the fast lane)

HERE = __name__  # the module the reference's child imports the targets from
PAGE = os.sysconf("SC_PAGE_SIZE")
#: Bytes :func:`fragment_heap` leaves freed in the heap.
FRAGMENT = 160 * 2**20

_kept: list[int] = []  # the small blocks that stay (a solve's results, say)


def resident() -> int:
    """This process's resident size, in bytes (``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def _libc():
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    return libc


def fragment_heap(nbytes: int = FRAGMENT) -> int:
    """Leave about ``nbytes`` freed but held in the C heap; this process's resident size then.

    A large block freed raises glibc's threshold for serving blocks by ``mmap``, so the next
    ones come from the heap; each is followed by a small block that stays, so that freed they
    are holes the heap cannot shrink over, held until ``malloc_trim``."""
    libc, block = _libc(), 1 << 20
    libc.free(libc.malloc(4 * block))  # (mmapped, then freed: the threshold rises above 1 MB)
    blocks = []
    for _ in range(nbytes // block):
        p = libc.malloc(block)
        ctypes.memset(p, 1, block)  # (touched: resident)
        blocks.append(p)
        _kept.append(libc.malloc(64 << 10))  # (too large for the free lists: from the top)
    for p in blocks:
        libc.free(p)
    return resident()


# ------------------------------------------------------------- targets the child may run
def fragment(problem, method):  # noqa: ARG001 - a solve that leaves freed buffers behind
    return fragment_heap()


def resident_size(problem, method):  # noqa: ARG001
    return resident()


def tiny_problem():
    from solver.mrf.build.problem import problem_from_unary
    rng = np.random.default_rng(0)
    return problem_from_unary(rng.random((4, 4)), rng.random((16, 2)))


def test_the_reference_child_hands_back_a_solves_buffers(monkeypatch):
    ref = IsolatedReference()
    try:
        problem = tiny_problem()
        monkeypatch.setattr(isolated, "CHILD_TARGET", f"{HERE}:fragment")
        held = ref.solve(problem, "mincut")  # the child's size with the freed buffers held
        monkeypatch.setattr(isolated, "CHILD_TARGET", f"{HERE}:resident_size")
        after = ref.solve(problem, "mincut")  # its size idle after that answer
    finally:
        ref.close()
    assert held - after > 0.75 * FRAGMENT, (held / 1e6, after / 1e6)


def test_a_finished_run_hands_the_freed_heap_back(win, qtbot, monkeypatch):
    """The solve's thread leaves its arrays freed in its arena as the run ends (made so here,
    after the real solve, in the same thread): the window hands them back when it shows the
    outcome."""
    from segapp.core import pipeline
    from tests.segapp.conftest import disc_image, run_to_end  # (not in the child: no Qt there)
    img, strokes = disc_image()
    win.doc.set_image(img, "synthetic.png")
    win.doc.set_layers(strokes=strokes)
    run_to_end(win, qtbot)  # (the first run's imports and kernels: not what is measured)
    real = pipeline.run_segmentation
    held: list[int] = []

    def solve_then_free(*args, **kwargs):
        out = real(*args, **kwargs)
        held.append(fragment_heap())  # (in the solve's thread, as its arrays are freed)
        return out

    monkeypatch.setattr(pipeline, "run_segmentation", solve_then_free)
    run_to_end(win, qtbot)
    after = resident()
    assert held, "the run went through the pipeline"
    assert held[0] - after > 0.75 * FRAGMENT, (held[0] / 1e6, after / 1e6)


def alive(type_) -> list:
    gc.collect()
    # (weak proxies first: isinstance() on one whose referent died raises ReferenceError, and
    # numba leaves such proxies behind when a compiled function is freed)
    return [o for o in gc.get_objects()
            if type(o) not in weakref.ProxyTypes and isinstance(o, type_)]


def test_a_finished_run_keeps_only_what_the_window_shows(win, qtbot):
    """Two runs: nothing of the solver (its ADMM, states, worker) and nothing of the first
    run's outcome stays; the last outcome keeps no continuous iterate, the replay no more
    frames than its budget, the probe no more samples than its own."""
    from segapp.core.pipeline import SegmentationResult
    from solver.mrf import MRFIterationState
    from solver.mrf.solve.reduction import MRFADMM
    from segapp.ui.worker import SolveWorker
    from tests.segapp.conftest import disc_image, run_to_end
    img, strokes = disc_image(64, 64)
    win.doc.set_image(img, "synthetic.png")
    win.doc.set_layers(strokes=strokes)
    win.show_teaching_dock()
    win.teaching.probe(32, 32)
    first = run_to_end(win, qtbot)
    win.params_panel.lam.setValue(3.0)  # (a second run, cold or warm, on the same photo)
    second = run_to_end(win, qtbot)
    qtbot.wait(300)  # (the worker's last queued signals, and its record timer)
    assert second is not first
    earlier = weakref.ref(first)
    del first
    outcomes = alive(SegmentationResult)
    assert earlier() is None, "the first run's outcome is kept"
    assert len(outcomes) == 1 and outcomes[0] is second, f"{len(outcomes)} outcomes alive"
    for type_ in (MRFADMM, MRFIterationState, SolveWorker):
        assert alive(type_) == [], type_.__name__
    assert second.x_final is None
    frames = win.frames
    assert 2 <= len(frames) <= frames.capacity and frames.nbytes() <= frames.max_bytes
    assert len(win.teaching.store) <= win.teaching.store.capacity
    assert win._live_probs is None and win._solved_labels is None


@pytest.mark.parametrize("k", [2])
def test_the_replay_keeps_its_budget_of_frames_over_a_long_run(win, qtbot, monkeypatch, k):
    """A run with more frames than the replay's budget keeps the budget: the first, the last
    and frames spread between."""
    from tests.segapp.conftest import pace_iterations, run_to_end, slow_job
    pace_iterations(monkeypatch, 0.01)  # (200 iterations, 2 s: about 20 frames at 10 a second)
    img, strokes = slow_job(40, 40)
    win.doc.set_image(img, "synthetic.png")
    win.doc.set_layers(strokes=strokes)
    win.frames.capacity = 8
    win.params_panel.admm["tol"].setValue(1e-7)
    win.params_panel.admm["max_iter"].setValue(200)
    win.params_panel.reference.setChecked(False)
    outcome = run_to_end(win, qtbot)
    assert win.frames_received > 8  # (the premise: more frames than the budget)
    assert len(win.frames) <= 8
    its = win.frames.iterations
    assert its == sorted(its) and its[-1] == outcome.iterations
