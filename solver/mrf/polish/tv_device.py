"""The TV relaxation's grid steps on a GPU, as two CUDA kernels per step.

:func:`solver.mrf.polish.tv_kernels.tv_iterate_grid` runs on the host: at n = 5e5 its 100 to
200 steps were 1.1 s of a 1.7 s K = 2 solve, and the four expansion moves 1.5 s of a 3.7 s
K = 4 one, on an H100 machine whose GPU ran ADMM itself in under 0.6 s (2026-11-27, on one
core, before its dense steps used the CPU's threads; docs/performance.md, GPU). A step is a stencil over the image, so here each is two launches
over every pixel: ``tv_dual`` (each forward edge's dual from the extrapolated values,
clipped to the edge's weight) and ``tv_primal`` (each pixel's gradient from its eight duals,
the projected step and the extrapolation). The stopping test is the CPU's (every 25 steps, the
largest move since the last test), one copy back per 25 steps.

The arithmetic is the CPU kernel's, operation for operation in float32 and compiled without
fused multiply-adds, so the iterates are the same numbers; the CPU's sparse steps (only the
pixels that can move) give what dense steps give, so they are not needed here. Only the real
GPU backend takes this path (:func:`applies`); :mod:`solver.backend` stays the only module that
imports CuPy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

#: Threads per block.
BLOCK = 256

#: Steps between two stopping tests (the CPU kernel's block).
CHECK_EVERY = 25

_SOURCE = r"""
extern "C" {

// Pixel i's forward edge q (to i + o_q) carries the dual p[q n + i], clipped to +-cost[q n + i];
// cost 0 where there is no edge. float32 throughout, as tv_kernels._dense_step.
__global__ void tv_dual(const float* __restrict__ cost, const float* __restrict__ bar,
                        float* __restrict__ p, const float sigma, const long long n,
                        const long long o0, const long long o1, const long long o2,
                        const long long o3) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const long long o[4] = {o0, o1, o2, o3};
    const float b = bar[i];
    for (int q = 0; q < 4; ++q) {
        if (i < n - o[q]) {
            const long long e = q * n + i;
            const float c = cost[e];
            const float v = p[e] + sigma * (b - bar[i + o[q]]);
            p[e] = fminf(fmaxf(v, -c), c);
        }
    }
}

// The projected primal step of pixel i and its extrapolation; pixels not free keep their value.
__global__ void tv_primal(const float* __restrict__ u, const float* __restrict__ p,
                          const float* __restrict__ tau, const bool* __restrict__ free_,
                          float* __restrict__ s, float* __restrict__ bar, const long long n,
                          const long long o0, const long long o1, const long long o2,
                          const long long o3) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const long long o[4] = {o0, o1, o2, o3};
    float g = u[i] + p[i] + p[n + i] + p[2 * n + i] + p[3 * n + i];
    for (int q = 0; q < 4; ++q) {
        if (i >= o[q]) g -= p[q * n + i - o[q]];
    }
    const float si = s[i];
    float t = fminf(fmaxf(si - tau[i] * g, 0.0f), 1.0f);
    if (!free_[i]) t = si;
    bar[i] = (float)(2.0 * (double)t - (double)si);
    s[i] = t;
}

}
"""

_MODULES: dict[int, Any] = {}


def _kernels(cp: Any) -> tuple[Any, Any]:
    """The two kernels, compiled once per device."""
    dev = cp.cuda.runtime.getDevice()
    if dev not in _MODULES:
        _MODULES[dev] = cp.RawModule(code=_SOURCE, options=("--std=c++14", "--fmad=false"))
    mod = _MODULES[dev]
    return mod.get_function("tv_dual"), mod.get_function("tv_primal")


def applies(backend: Any) -> bool:
    """Whether ``backend`` runs these kernels: the real GPU backend, not numpy arrays standing
    in for CuPy's.

    Parameters
    ----------
    backend : solver.backend.Backend or None
        None: the host.

    Returns
    -------
    bool
    """
    return (backend is not None and backend.is_gpu
            and getattr(backend.xp, "__name__", "") == "cupy")


def dual_value(xp: Any, u: Any, p: Any, free: Any, s: Any, offs: tuple) -> float:
    """:func:`solver.mrf.polish.tv_kernels.grid_dual_value` with array operations (summed in
    another order, in float64).

    Parameters
    ----------
    xp : module
        numpy or cupy.
    u, p, free, s : array
        The unary terms ``(n,)``, the edge duals ``(4, n)``, the free pixels and the values
        (of the fixed pixels).
    offs : tuple of int
        The four forward offsets (``offsets[4:]``).

    Returns
    -------
    float
    """
    n = u.size
    g = u + p[0] + p[1] + p[2] + p[3]
    for q, o in enumerate(offs):
        o = int(o)
        if o < n:
            g[o:] -= p[q, :n - o]
    return float(xp.where(free, xp.minimum(g, 0.0), g * s).sum(dtype=xp.float64))


def run_steps(xp: Any, step: Callable[[], None], s: Any, iterations: int, tol: float,
              gap: Callable[[], float] | None = None, gap_tol: float = -np.inf) -> int:
    """Call ``step`` (one step, in place on ``s``) at most ``iterations`` times, stopping once a
    block of :data:`CHECK_EVERY` steps moves no ``s_i`` by more than ``tol``, or once
    ``gap()`` (checked after the same blocks) is at most ``gap_tol``.

    Parameters
    ----------
    xp : module
        The array module of ``s`` (numpy or cupy).
    step : callable
        Runs one step.
    s : array
        The primal iterate ``step`` changes.
    iterations : int
        Most steps.
    tol : float
        The stopping test's largest move.
    gap : callable, optional
        The start's duality gap at the current duals.
    gap_tol : float
        The gap below which the steps stop.

    Returns
    -------
    int
        Steps run.
    """
    old = s.copy()
    done = 0
    while done < iterations:
        step()
        done += 1
        if done % CHECK_EVERY == 0:
            if float(xp.abs(s - old).max()) < tol:  # (the one copy back per block)
                break
            xp.copyto(old, s)
            if gap is not None and gap() <= gap_tol:
                break
    return done


def tv_iterate_grid(backend: Any, cost: np.ndarray, offsets: np.ndarray, u: np.ndarray,
                    free: np.ndarray, tau: np.ndarray, s: np.ndarray, sigma: np.float32,
                    iterations: int, tol: float, start_value: float = np.inf,
                    gap_tol: float = -np.inf, p: np.ndarray | None = None,
                    bar: np.ndarray | None = None) -> int:
    """:func:`solver.mrf.polish.tv_kernels.tv_iterate_grid` on the GPU: the same steps and
    stopping tests, ``s`` (host, float32) updated in place. The duality gap's dual objective
    is summed on the device in another order than the host's, so where the gap sits right at
    ``gap_tol`` the two can stop 25 steps apart.

    Parameters
    ----------
    backend : solver.backend.Backend
        The real GPU backend (:func:`applies`).
    cost, offsets, u, free, tau, s, sigma, iterations, tol, start_value, gap_tol, p, bar
        As the CPU kernel's (host arrays; ``cost`` ``(4, n)`` float32, ``offsets`` ``(8,)``;
        ``p`` and ``bar``, where given, copied to the device and back).

    Returns
    -------
    int
        Steps run.
    """
    cp = backend.xp
    n = int(s.size)
    if n == 0:
        return 0
    dual, primal = _kernels(cp)
    d_cost = cp.asarray(np.ascontiguousarray(cost, dtype=np.float32))
    d_u = cp.asarray(np.ascontiguousarray(u, dtype=np.float32))
    d_tau = cp.asarray(np.ascontiguousarray(tau, dtype=np.float32))
    d_free = cp.asarray(np.ascontiguousarray(free, dtype=np.bool_))
    d_s = cp.asarray(np.ascontiguousarray(s, dtype=np.float32))
    host_p, host_bar = p, bar
    bar = d_s.copy() if host_bar is None else cp.asarray(host_bar)
    p = cp.zeros((4, n), dtype=cp.float32) if host_p is None else cp.asarray(host_p)
    grid, block = ((n + BLOCK - 1) // BLOCK,), (BLOCK,)
    n64 = np.int64(n)
    offs = tuple(np.int64(offsets[4 + q]) for q in range(4))
    sig = np.float32(sigma)

    def step() -> None:
        dual(grid, block, (d_cost, bar, p, sig, n64, *offs))
        primal(grid, block, (d_u, p, d_tau, d_free, d_s, bar, n64, *offs))

    gap = None
    if np.isfinite(start_value):

        def gap() -> float:  # (fixed pixels keep their start values)
            return float(start_value) - dual_value(cp, d_u, p, d_free, d_s, offs)

    done = run_steps(cp, step, d_s, int(iterations), float(tol), gap, float(gap_tol))
    s[...] = cp.asnumpy(d_s)
    if host_p is not None:
        host_p[...] = cp.asnumpy(p)
        host_bar[...] = cp.asnumpy(bar)
    return done

