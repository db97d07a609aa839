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
    """Solve tiny problems with K = 2 .. ``max_labels`` so every CPU kernel is compiled.

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
    from solver.mrf.polish.icm_kernels import graph_arrays  # noqa: PLC0415
    from solver.mrf.solve.dispatch import solve_mrf  # noqa: PLC0415
    from solver.mrf.solve.pyramid import coarsen, undecided_band  # noqa: PLC0415 - (solved whole)

    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    for k in range(2, max(2, max_labels) + 1):
        img = rng.random((12, 12))
        strokes = np.zeros((12, 12), np.int32)
        for c in range(k):
            strokes[c, :] = c + 1
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
        coarse.energy(np.ones(coarse.n, np.int64))
        undecided_band(problem, res.labels)
    elapsed = time.perf_counter() - t0
    log.info("%s kernels ready in %.2f s", "CPU and GPU" if gpu else "CPU", elapsed)
    return elapsed
