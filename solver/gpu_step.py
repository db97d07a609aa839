"""One ℓ2-box ADMM iteration of an unconstrained sparse problem (the MRF's K = 2 form) on a GPU.

The generic loop runs an iteration as some fifty CuPy calls, a dozen of which copy a scalar back
to the host (each CG dot product), so on a lent H100 it took 7 s for the 5e5-pixel cameraman
against the CPU's 0.83 s: the GPU waited on Python. Here an iteration is 25 kernel launches and
one copy back:

* ``rhs``: the right-hand side ``rho (z1 + z2) - b - y1 - y2``, the CG's residual at the warm
  start (the last ``x``), the Jacobi preconditioner and the first search direction;
* ``cg_a``, ``cg_b``, ``cg_c`` per CG iteration, launched ``maxiter`` times without looking:
  the product and ``p'Ap``; the steps of ``x`` and ``r`` and their dot products; the next
  direction. The dot products go to a small array on the GPU, and every kernel reads from it
  whether the CG has already converged and then returns at once, so no launch waits on the host;
* ``post_a``, ``post_b``: ``x'Ax`` from the residual, the rounding at 1/2 and its energy, the box
  and sphere projections and the dual steps, with the sums the stopping test needs.

The iterates are those of :class:`solver.fused_step.PlainStep` up to the order of the sums (the
CPU step also reuses the last residual, which this one recomputes: one product more, no sync).
Only this module compiles CUDA code; :mod:`solver.backend` stays the only one importing CuPy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .result import StepResult

#: Threads per block of every kernel.
BLOCK = 256

_SOURCE = r"""
extern "C" {

__device__ __forceinline__ double warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// Adds v over the block to *out with one atomic; every thread of the block must call it.
__device__ void block_add(double v, double* out) {
    __shared__ double part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();  // part[] may still be read by the previous call
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < ((blockDim.x + 31) >> 5) ? part[lane] : 0.0;
        v = warp_sum(v);
        if (lane == 0 && v != 0.0) atomicAdd(out, v);
    }
}

__device__ __forceinline__ double row_dot(const int* ptr, const int* idx, const double* val,
                                          const double* v, int i) {
    double s = 0.0;
    for (int p = ptr[i]; p < ptr[i + 1]; ++p) s += val[p] * v[idx[p]];
    return s;
}

// S: [bb, then per CG iteration t = 0..maxiter: rr_t, rz_t, pap_t, then the post sums]
__device__ __forceinline__ double bnorm(const double* S) { return S[0] > 0.0 ? sqrt(S[0]) : 1.0; }

// whether CG iteration t (1-based) runs: the residual after t - 1 is above the tolerance (a slot
// of an iteration that did not run holds 0, so once converged every later kernel returns)
__device__ __forceinline__ bool running(const double* S, int t, double tol) {
    return sqrt(S[1 + 3 * (t - 1)]) / bnorm(S) > tol;
}

__global__ void rhs(int n, const int* ptr, const int* idx, const double* val,
                    const double* diag, double a_scale, double shift, double rho,
                    const double* x, const double* z1, const double* z2, const double* y1,
                    const double* y2, const double* c, double* B, double* X, double* R,
                    double* P, double* minv, double* S) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double bb = 0.0, rr = 0.0, rz = 0.0;
    if (i < n) {
        const double bi = rho * (z1[i] + z2[i]) - c[i] - y1[i] - y2[i];
        const double xi = x[i];
        const double ri = bi - (a_scale * row_dot(ptr, idx, val, x, i) + shift * xi);
        const double mi = 1.0 / (a_scale * diag[i] + shift);
        B[i] = bi; X[i] = xi; R[i] = ri; minv[i] = mi; P[i] = ri * mi;
        bb = bi * bi; rr = ri * ri; rz = ri * ri * mi;
    }
    block_add(bb, S);
    block_add(rr, S + 1);
    block_add(rz, S + 2);
}

__global__ void cg_a(int n, const int* ptr, const int* idx, const double* val, double a_scale,
                     double shift, const double* P, double* Q, double* S, int t, double tol) {
    if (!running(S, t, tol)) return;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double pq = 0.0;
    if (i < n) {
        const double q = a_scale * row_dot(ptr, idx, val, P, i) + shift * P[i];
        Q[i] = q;
        pq = P[i] * q;
    }
    block_add(pq, S + 3 + 3 * t);
}

__global__ void cg_b(int n, const double* P, const double* Q, const double* minv, double* X,
                     double* R, double* S, int t, double tol) {
    if (!running(S, t, tol)) return;
    const double pap = S[3 + 3 * t];
    const double alpha = pap > 0.0 ? S[2 + 3 * (t - 1)] / pap : 0.0;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double rr = 0.0, rz = 0.0;
    if (i < n) {
        X[i] += alpha * P[i];
        const double r = R[i] - alpha * Q[i];
        R[i] = r;
        rr = r * r;
        rz = r * r * minv[i];
    }
    block_add(rr, S + 1 + 3 * t);
    block_add(rz, S + 2 + 3 * t);
}

__global__ void cg_c(int n, const double* R, const double* minv, double* P, const double* S,
                     int t, int maxiter, double tol) {
    if (t == maxiter || !(sqrt(S[1 + 3 * t]) / bnorm(S) > tol)) return;
    const double rz_old = S[2 + 3 * (t - 1)];
    const double beta = rz_old != 0.0 ? S[2 + 3 * t] / rz_old : 0.0;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) P[i] = R[i] * minv[i] + beta * P[i];
}

// post sums at S + off: quad (times a_scale), |x + y2/rho - 1/2|^2, |x|^2, b'x, b'xr, xr'A xr,
// then post_b's |x - z1|^2, |x - z2|^2
__global__ void post_a(int n, const int* ptr, const int* idx, const double* val, double shift,
                       double rho, const double* X, const double* B, const double* R,
                       const double* y2, const double* c, double* xr, double* S, int off) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double quad = 0.0, s = 0.0, xx = 0.0, bx = 0.0, bxr = 0.0, qr = 0.0;
    if (i < n) {
        const double xi = X[i];
        quad = xi * ((B[i] - R[i]) - shift * xi);
        const double v = xi + y2[i] / rho - 0.5;
        s = v * v;
        xx = xi * xi;
        bx = c[i] * xi;
        if (xi > 0.5) {
            xr[i] = 1.0;
            bxr = c[i];
            for (int p = ptr[i]; p < ptr[i + 1]; ++p) if (X[idx[p]] > 0.5) qr += val[p];
        } else {
            xr[i] = 0.0;
        }
    }
    block_add(quad, S + off);
    block_add(s, S + off + 1);
    block_add(xx, S + off + 2);
    block_add(bx, S + off + 3);
    block_add(bxr, S + off + 4);
    block_add(qr, S + off + 5);
}

__global__ void post_b(int n, const double* X, double* y1, double* y2, double rho, double gamma,
                       double* x, double* z1, double* z2, double* S, int off) {
    const double s = S[off + 1];
    const bool has_norm = s > 0.0;
    const double scale = has_norm ? sqrt((double)n) / 2.0 / sqrt(s) : 0.0;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double d1 = 0.0, d2 = 0.0;
    if (i < n) {
        const double xi = X[i];
        const double a = fmin(fmax(xi + y1[i] / rho, 0.0), 1.0);
        const double b = has_norm ? 0.5 + (xi + y2[i] / rho - 0.5) * scale : 1.0;
        x[i] = xi; z1[i] = a; z2[i] = b;
        y1[i] += gamma * rho * (xi - a);
        y2[i] += gamma * rho * (xi - b);
        d1 = (xi - a) * (xi - a);
        d2 = (xi - b) * (xi - b);
    }
    block_add(d1, S + off + 6);
    block_add(d2, S + off + 7);
}

}
"""

_MODULES: dict[int, Any] = {}  # compiled once per device


def _kernels(cp: Any) -> Any:
    dev = cp.cuda.runtime.getDevice()
    if dev not in _MODULES:
        _MODULES[dev] = cp.RawModule(code=_SOURCE, options=("--std=c++14",))
    return _MODULES[dev]


def applies(system: Any, backend: Any) -> bool:
    """Whether ``system`` (a :class:`solver.qp.GenericSystem`) is a sparse matrix on a real
    CuPy backend that this step can take (32-bit indices)."""
    if not backend.is_gpu or getattr(backend.xp, "__name__", "") != "cupy":
        return False
    A = getattr(system, "_A", None)
    return (A is not None and backend.sparse.issparse(A) and A.format == "csr"
            and A.shape[0] < 2**31 - 1 and int(A.nnz) < 2**31 - 1)


class GPUPlainStep:
    """The fused iteration of an unconstrained sparse problem on a GPU (see the module docstring).

    Parameters
    ----------
    system : solver.qp.GenericSystem
        With ``A`` a CuPy CSR matrix (:func:`applies`).
    b : cupy.ndarray
        The linear term over the free variables.
    backend : solver.backend.Backend
        The real GPU backend.
    gamma, tol, maxiter : float, float, int
        ADMM's dual step, and the CG's tolerance and iteration cap.
    """

    def __init__(self, system: Any, b: Any, backend: Any, gamma: float, tol: float,
                 maxiter: int) -> None:
        cp = backend.xp
        A = system._A
        self.cp, self.n = cp, int(A.shape[0])
        self.ptr = A.indptr.astype(cp.int32, copy=False)
        self.idx = A.indices.astype(cp.int32, copy=False)
        self.val = A.data.astype(cp.float64, copy=False)
        self.diag = cp.ascontiguousarray(system._diag2 * 0.5)
        self.c = cp.ascontiguousarray(b, dtype=cp.float64)
        self.gamma, self.tol, self.maxiter = float(gamma), float(tol), int(maxiter)
        n = self.n
        self.B, self.X, self.R, self.P, self.Q, self.minv = (cp.empty(n) for _ in range(6))
        self.off = 1 + 3 * (self.maxiter + 1)
        self.S = cp.zeros(self.off + 8)
        mod = _kernels(cp)
        self._k = {name: mod.get_function(name)
                   for name in ("rhs", "cg_a", "cg_b", "cg_c", "post_a", "post_b")}
        self._grid = ((n + BLOCK - 1) // BLOCK,)

    def _launch(self, name: str, *args: Any) -> None:
        self._k[name](self._grid, (BLOCK,), args)

    def __call__(self, x: Any, z1: Any, z2: Any, y1: Any, y2: Any, y3: Any, rho: float,
                 rc: float) -> StepResult:
        """One iteration from ``(x, z1, z2)``; updates the duals ``y1, y2`` in place."""
        cp, n, S = self.cp, np.int32(self.n), self.S
        shift, rho_ = np.float64(2.0 * rho), np.float64(rho)
        two, tol = np.float64(2.0), np.float64(self.tol)
        csr = (self.ptr, self.idx, self.val)
        S.fill(0.0)
        self._launch("rhs", n, *csr, self.diag, two, shift, rho_, x, z1, z2, y1, y2, self.c,
                     self.B, self.X, self.R, self.P, self.minv, S)
        for t in range(1, self.maxiter + 1):
            t32 = np.int32(t)
            self._launch("cg_a", n, *csr, two, shift, self.P, self.Q, S, t32, tol)
            self._launch("cg_b", n, self.P, self.Q, self.minv, self.X, self.R, S, t32, tol)
            self._launch("cg_c", n, self.R, self.minv, self.P, S, t32,
                         np.int32(self.maxiter), tol)
        x_new, z1_new, z2_new, xr = (cp.empty(self.n) for _ in range(4))
        off = np.int32(self.off)
        self._launch("post_a", n, *csr, shift, rho_, self.X, self.B, self.R, y2, self.c, xr, S,
                     off)
        self._launch("post_b", n, self.X, y1, y2, rho_, np.float64(self.gamma), x_new, z1_new,
                     z2_new, S, off)
        h = S.get()  # the one wait of the iteration
        its, bnorm = 0, math.sqrt(h[0]) if h[0] > 0 else 1.0
        while its < self.maxiter and math.sqrt(h[1 + 3 * its]) / bnorm > self.tol:
            its += 1
        quad, _, xx, bx, bxr, qr, d1, d2 = h[self.off:self.off + 8]
        return StepResult(x_new, z1_new, z2_new, xr, float(quad) / 2.0, float(bx), float(bxr),
                          float(d1), float(d2), float(xx), 0.0, 0.0, 0.0, its, quad_r=float(qr))
