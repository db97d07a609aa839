"""Compile the CPU kernels ahead of the first real solve.

numba compiles each kernel on its first call (several seconds the very first time, a fraction of
a second when its on-disk cache is warm). :func:`warm_up` pays that once, on a tiny problem, so
a benchmark does not time it and the application can do it in the background at start.
"""

from __future__ import annotations

import logging
import time

import numpy as np

log = logging.getLogger(__name__)


def warm_up(max_labels: int = 3, gpu: bool = False) -> float:
    """Solve tiny problems with K = 2 .. ``max_labels`` so every CPU kernel is compiled: for
    each K, the exact solver's path first (the model and the energy), then ADMM's.

    Parameters
    ----------
    max_labels : int
        Largest K to prepare (K = 2 and K > 2 use different kernels).
    gpu : bool
        Also solve them on the GPU, which compiles the CUDA kernels of ADMM
        (:mod:`solver.admm.steps.cuda`) and of the polish's TV relaxation
        (:mod:`solver.mrf.polish.tv_device`, in the coarse-to-fine solve's final polish) and
        starts CuPy's libraries (about a second in a fresh process). Needs a usable GPU.

    Returns
    -------
    float
        Seconds it took.
    """
    from solver.mrf.build.problem import build_problem  # noqa: PLC0415
    from solver.mrf.build.stencil import graph_arrays  # noqa: PLC0415
    from solver.mrf.polish.icm_kernels import around_changes  # noqa: PLC0415
    from solver.mrf.solve.dispatch import solve_mrf  # noqa: PLC0415
    from solver.mrf.solve.pyramid import coarsen, undecided_band  # noqa: PLC0415 - (solved whole)
    from solver.mrf.solve.segment import segment  # noqa: PLC0415

    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    for k in range(2, max(2, max_labels) + 1):
        img = rng.random((12, 12))
        strokes = np.zeros((12, 12), np.int32)
        for c in range(k):
            strokes[c, :] = c + 1
        # first what the exact solver's answer to a drawing needs (the model with its rounds,
        # the energy): the app answers with it while the rest compiles
        # (segapp.ui.worker.SolveJob.provisional)
        exact = "mincut" if k == 2 else "expansion"
        segment(img, strokes, k, method=exact)
        if k == 2:  # a colour photo and a rectangle
            segment(rng.random((24, 24, 3)), None, 2, rect=(4, 4, 16, 16), method=exact)
        problem = build_problem(img, strokes, k)
        res = solve_mrf(problem, "admm", seed=0)
        if gpu:
            solve_mrf(problem, "admm", backend="gpu", seed=0)
            # the band levels of coarse to fine take CuPy routines a whole solve does not, which
            # the first band solve would otherwise compile; 128 x 128 pixels make a pyramid of
            # two levels (CoarseToFineOptions.coarsest)
            big_strokes = np.kron(strokes, np.ones((11, 11), np.int32))[:128, :128]
            big = build_problem(rng.random((128, 128)), big_strokes, k)
            solve_mrf(big, "admm", backend="gpu", seed=0, coarse_to_fine=True)
        # a photo's graph coarsens on the grid path, a coarse level's on the general one; a
        # coarse level's matrix (its edges in cell order), grid view and energy (through its
        # edge list) are made when it is solved (a photo's matrix never is)
        coarse = coarsen(problem)[0]
        coarsen(coarse)
        graph_arrays(coarse)
        # the polish's pixels around a change (a correction's ICM, the region moves' later
        # rounds), which the tiny problems' polish need not reach
        g = graph_arrays(problem)
        lab = np.zeros(problem.n, np.int32)
        around_changes(g.indptr, g.indices, g.gw, g.geom, lab, lab, problem.movable)
        coarse.energy(np.ones(coarse.n, np.int64))
        undecided_band(problem, res.labels)
    elapsed = time.perf_counter() - t0
    log.info("%s kernels ready in %.2f s", "CPU and GPU" if gpu else "CPU", elapsed)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    """``python -m solver.mrf.solve.warmup [MODULE:FUNCTION]``: run a warm-up in this process
    for a parent that waits on it (the application compiles in such a child: numba's compile
    holds the interpreter lock for seconds at a time, which in the window's own process
    starved the first run and the window).

    Prints ``compiling`` at the first real compile (none when numba's cache is warm), then
    ``ready SECONDS``; a failure exits 1 with its message on stderr. The warm-up is
    ``FUNCTION()`` of ``MODULE`` (default :func:`warm_up`). The process ends as soon as its
    standard input closes (the parent ended or gave up on it).

    Returns
    -------
    int
        The exit status.
    """
    import importlib  # noqa: PLC0415
    import os  # noqa: PLC0415
    import sys  # noqa: PLC0415
    import threading  # noqa: PLC0415

    from solver.backend.compile_notice import first_compile_notice  # noqa: PLC0415

    def orphaned() -> None:
        sys.stdin.read()  # (returns when the parent closes the pipe or dies)
        os._exit(0)

    threading.Thread(target=orphaned, name="warm-up-parent", daemon=True).start()
    args = sys.argv[1:] if argv is None else argv
    module, _, name = (args[0] if args else "solver.mrf:warm_up").partition(":")
    try:
        fn = getattr(importlib.import_module(module), name)
        with first_compile_notice(lambda: print("compiling", flush=True)):
            seconds = float(fn())
    except Exception as exc:  # noqa: BLE001 - reported to the parent in one line
        print(f"{type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr, flush=True)
        return 1
    print(f"ready {seconds}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
