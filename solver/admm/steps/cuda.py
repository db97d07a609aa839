"""One ℓ2-box ADMM iteration of the segmentation solver's two forms on a GPU, as CUDA kernels.

The generic loop runs an iteration as some fifty CuPy calls, a dozen of which copy a scalar back to
the host (each CG dot product), so the GPU waits on Python (measured: docs/decisions.md, GPU). Here
an iteration is 26 kernel launches (K = 2; 14 for K > 2, whose CG cap is 3) and one copy back, for
the plain form (K = 2, :class:`GPUPlainStep`) and the one-hot one (K > 2, :class:`GPUOneHotStep`,
the label directions of :class:`solver.admm.systems.OneHotKronSystem` as the CG's columns, one row
of blocks each):

* ``plain_b`` or ``oh_split``: the right-hand side ``rho (z1 + z2) - b - y1 - y2`` (plus
  ``C1'(rc d - y3)`` for one-hot) and the warm start (the last ``x``), split into directions;
* ``resid``: the CG's residual at the warm start, the Jacobi preconditioner, the first direction;
* ``cg_a``, ``cg_b``, ``cg_c`` per CG iteration, launched ``maxiter`` times without looking:
  the product and ``p'Ap``; the steps of ``x`` and ``r`` and their dot products; the next
  direction. The dot products go to a small array on the GPU, and every kernel reads from it
  whether its column has already converged and then returns at once, so no launch waits on
  the host;
* ``post_a`` or ``oh_post_a``, then ``post_b``: ``x'Ax`` from the residual (and the merge of the
  directions), the rounding and its energy, the one-hot residual and its dual step, the box and
  sphere projections and the dual steps, with the sums the stopping test needs.

The iterates are those of :class:`solver.admm.steps.PlainStep` and
:class:`solver.admm.steps.OneHotStep` up to the order of the sums (the CPU steps also reuse the
last residual, which these recompute: one product more, no sync).
Only this module compiles CUDA code; :mod:`solver.backend` stays the only one importing CuPy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from solver.admm.records import StepResult

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

// The CG's columns are rows of (cols, n) arrays, one row of blocks (blockIdx.y) each. Column
// c's sums are at S + c * stride: bb, then per CG iteration t = 0..maxiter rr_t, rz_t, pap_t.
__device__ __forceinline__ double bnorm(const double* S) { return S[0] > 0.0 ? sqrt(S[0]) : 1.0; }

// whether CG iteration t (1-based) runs: the residual after t - 1 is above the tolerance (a slot
// of an iteration that did not run holds 0, so once converged every later kernel returns)
__device__ __forceinline__ bool running(const double* S, int t, double tol) {
    return sqrt(S[1 + 3 * (t - 1)]) / bnorm(S) > tol;
}

__global__ void plain_b(int n, double rho, const double* x, const double* z1, const double* z2,
                        const double* y1, const double* y2, const double* b, double* B,
                        double* X) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    B[i] = rho * (z1[i] + z2[i]) - b[i] - y1[i] - y2[i];
    X[i] = x[i];
}

// label directions of pixel-major v (groups of k): row 0 the group mean, row c >= 1 the entry
// of label c - 1 minus it; for the right-hand side and the warm start
__global__ void oh_split(int n, int k, double rho, double rc, const double* x, const double* z1,
                         const double* z2, const double* y1, const double* y2, const double* b,
                         const double* d, const double* y3, double* B, double* X) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double e = rc * d[i] - y3[i];
    double vm = 0.0, xm = 0.0;
    for (int c = 0; c < k; ++c) {
        const int t = i * k + c;
        vm += (rho * (z1[t] + z2[t]) - b[t] - y1[t] - y2[t]) + e;
        xm += x[t];
    }
    vm /= k;
    xm /= k;
    B[i] = vm;
    X[i] = xm;
    for (int c = 1; c < k; ++c) {
        const int t = i * k + c - 1;
        B[(size_t)c * n + i] = ((rho * (z1[t] + z2[t]) - b[t] - y1[t] - y2[t]) + e) - vm;
        X[(size_t)c * n + i] = x[t] - xm;
    }
}

__global__ void resid(int n, const int* ptr, const int* idx, const double* val,
                      const double* diag, double a_scale, double shift0, double shift1,
                      const double* B, const double* X, double* R, double* P, double* minv,
                      double* S, int stride) {
    const int col = blockIdx.y;
    const double shift = col == 0 ? shift0 : shift1;
    const size_t o = (size_t)col * n;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double bb = 0.0, rr = 0.0, rz = 0.0;
    if (i < n) {
        const double bi = B[o + i], xi = X[o + i];
        const double ri = bi - (a_scale * row_dot(ptr, idx, val, X + o, i) + shift * xi);
        const double mi = 1.0 / (a_scale * diag[i] + shift);
        R[o + i] = ri; minv[o + i] = mi; P[o + i] = ri * mi;
        bb = bi * bi; rr = ri * ri; rz = ri * ri * mi;
    }
    S += col * stride;
    block_add(bb, S);
    block_add(rr, S + 1);
    block_add(rz, S + 2);
}

__global__ void cg_a(int n, const int* ptr, const int* idx, const double* val, double a_scale,
                     double shift0, double shift1, const double* P, double* Q, double* S,
                     int stride, int t, double tol) {
    const int col = blockIdx.y;
    S += col * stride;
    if (!running(S, t, tol)) return;
    const double shift = col == 0 ? shift0 : shift1;
    const size_t o = (size_t)col * n;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double pq = 0.0;
    if (i < n) {
        const double q = a_scale * row_dot(ptr, idx, val, P + o, i) + shift * P[o + i];
        Q[o + i] = q;
        pq = P[o + i] * q;
    }
    block_add(pq, S + 3 + 3 * t);
}

__global__ void cg_b(int n, const double* P, const double* Q, const double* minv, double* X,
                     double* R, double* S, int stride, int t, double tol) {
    const int col = blockIdx.y;
    S += col * stride;
    if (!running(S, t, tol)) return;
    const double pap = S[3 + 3 * t];
    const double alpha = pap > 0.0 ? S[2 + 3 * (t - 1)] / pap : 0.0;
    const size_t o = (size_t)col * n;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double rr = 0.0, rz = 0.0;
    if (i < n) {
        X[o + i] += alpha * P[o + i];
        const double r = R[o + i] - alpha * Q[o + i];
        R[o + i] = r;
        rr = r * r;
        rz = r * r * minv[o + i];
    }
    block_add(rr, S + 1 + 3 * t);
    block_add(rz, S + 2 + 3 * t);
}

__global__ void cg_c(int n, const double* R, const double* minv, double* P, const double* S,
                     int stride, int t, int maxiter, double tol) {
    const int col = blockIdx.y;
    S += col * stride;
    if (t == maxiter || !(sqrt(S[1 + 3 * t]) / bnorm(S) > tol)) return;
    const double rz_old = S[2 + 3 * (t - 1)];
    const double beta = rz_old != 0.0 ? S[2 + 3 * t] / rz_old : 0.0;
    const size_t o = (size_t)col * n;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) P[o + i] = R[o + i] * minv[o + i] + beta * P[o + i];
}

// Post sums at S + off: 0 x'Ax times a_scale (plain) or x'(L (x) I)x (one-hot),
// 1 |x + y2/rho - 1/2|^2, 2 |x|^2, 3 b'x, 4 b'xr, 5 xr'A xr, then post_b's 6 |x - z1|^2,
// 7 |x - z2|^2, and one-hot's 8 |C1 x - d|^2, 9 |d|^2. This adds the first six.
__device__ void post_sums(double* S, double quad, double s, double xx, double bx, double bxr,
                          double qr) {
    block_add(quad, S);
    block_add(s, S + 1);
    block_add(xx, S + 2);
    block_add(bx, S + 3);
    block_add(bxr, S + 4);
    block_add(qr, S + 5);
}

__global__ void post_a(int n, const int* ptr, const int* idx, const double* val, double shift,
                       double rho, const double* X, const double* B, const double* R,
                       const double* y2, const double* b, double* xr, double* S, int off) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double quad = 0.0, s = 0.0, xx = 0.0, bx = 0.0, bxr = 0.0, qr = 0.0;
    if (i < n) {
        const double xi = X[i];
        quad = xi * ((B[i] - R[i]) - shift * xi);
        const double v = xi + y2[i] / rho - 0.5;
        s = v * v;
        xx = xi * xi;
        bx = b[i] * xi;
        if (xi > 0.5) {
            xr[i] = 1.0;
            bxr = b[i];
            for (int p = ptr[i]; p < ptr[i + 1]; ++p) if (X[idx[p]] > 0.5) qr += val[p];
        } else {
            xr[i] = 0.0;
        }
    }
    post_sums(S + off, quad, s, xx, bx, bxr, qr);
}

// pixel j's entries x_j from the directions (u + w_c, the last u - sum w_c), into v[0..k-1]
__device__ __forceinline__ void merged(const double* X, int n, int k, int j, double* v) {
    double rest = 0.0;
    for (int c = 1; c < k; ++c) {
        const double w = X[(size_t)c * n + j];
        v[c - 1] = X[j] + w;
        rest += w;
    }
    v[k - 1] = X[j] - rest;
}

__device__ __forceinline__ int first_max(const double* v, int k) {
    int best = 0;
    for (int c = 1; c < k; ++c) if (v[c] > v[best]) best = c;
    return best;
}

#define KMAX @KMAX@
__global__ void oh_post_a(int n, int k, const int* ptr, const int* idx, const double* val,
                          double shift0, double shift1, double rho, double rc_step,
                          const double* X, const double* B, const double* R, const double* y2,
                          const double* b, const double* d, double* y3, double* x, double* xr,
                          double* S, int off) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double quad = 0.0, s = 0.0, xx = 0.0, bx = 0.0, bxr = 0.0, qr = 0.0, r3sq = 0.0, dsq = 0.0;
    if (i < n) {
        double v[KMAX], nb[KMAX];
        double rest = 0.0, a_rest = 0.0;
        for (int c = 0; c < k; ++c) {
            const size_t t = (size_t)c * n + i;
            const double ax = 0.5 * (B[t] - R[t] - (c == 0 ? shift0 : shift1) * X[t]);
            quad += (c == 0 ? (double)k : 1.0) * X[t] * ax;
            if (c > 0) { rest += X[t]; a_rest += ax; }
        }
        quad += rest * a_rest;  // w_k = -rest, A w_k = -a_rest
        merged(X, n, k, i, v);
        const int best = first_max(v, k);
        double gsum = 0.0;
        for (int c = 0; c < k; ++c) {
            const int t = i * k + c;
            x[t] = v[c];
            const double u = v[c] + y2[t] / rho - 0.5;
            s += u * u;
            xx += v[c] * v[c];
            bx += b[t] * v[c];
            gsum += v[c];
            xr[t] = c == best ? 1.0 : 0.0;
        }
        bxr = b[i * k + best];
        for (int p = ptr[i]; p < ptr[i + 1]; ++p) {
            merged(X, n, k, idx[p], nb);
            if (first_max(nb, k) == best) qr += val[p];
        }
        const double r3 = gsum - d[i];
        y3[i] += rc_step * r3;
        r3sq = r3 * r3;
        dsq = d[i] * d[i];
    }
    post_sums(S + off, quad, s, xx, bx, bxr, qr);
    block_add(r3sq, S + off + 8);
    block_add(dsq, S + off + 9);
}

// box and sphere projections and the dual steps over all `size` entries of x (read from xin)
__global__ void post_b(int size, const double* xin, double* y1, double* y2, double rho,
                       double gamma, double* x, double* z1, double* z2, double* S, int off) {
    const double s = S[off + 1];
    const bool has_norm = s > 0.0;
    const double scale = has_norm ? sqrt((double)size) / 2.0 / sqrt(s) : 0.0;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double d1 = 0.0, d2 = 0.0;
    if (i < size) {
        const double xi = xin[i];
        const double a = fmin(fmax(xi + y1[i] / rho, 0.0), 1.0);
        const double c = has_norm ? 0.5 + (xi + y2[i] / rho - 0.5) * scale : 1.0;
        x[i] = xi; z1[i] = a; z2[i] = c;
        y1[i] += gamma * rho * (xi - a);
        y2[i] += gamma * rho * (xi - c);
        d1 = (xi - a) * (xi - a);
        d2 = (xi - c) * (xi - c);
    }
    block_add(d1, S + off + 6);
    block_add(d2, S + off + 7);
}

}
"""

#: Largest K the one-hot kernels take (their per-pixel arrays are on the stack).
KMAX = 16
_SOURCE = _SOURCE.replace("@KMAX@", str(KMAX))

_MODULES: dict[int, Any] = {}  # compiled once per device


def _kernels(cp: Any) -> Any:
    dev = cp.cuda.runtime.getDevice()
    if dev not in _MODULES:
        _MODULES[dev] = cp.RawModule(code=_SOURCE, options=("--std=c++14",))
    return _MODULES[dev]


def applies(matrix: Any, backend: Any) -> bool:
    """Whether a system on ``matrix`` can take these kernels: a CuPy CSR matrix (not numpy
    arrays standing in for CuPy's) with 32-bit indices.

    Parameters
    ----------
    matrix : array or sparse matrix
        The objective's ``A`` (:class:`solver.admm.systems.GenericSystem`) or ``L``
        (:class:`solver.admm.systems.OneHotKronSystem`) on ``backend``.
    backend : solver.backend.Backend
    """
    if not backend.is_gpu or getattr(backend.xp, "__name__", "") != "cupy":
        return False
    return (backend.sparse.issparse(matrix) and matrix.format == "csr"
            and matrix.shape[0] < 2**31 - 1 and int(matrix.nnz) < 2**31 - 1)


class _GPUStep:
    """Buffers, kernels and the CG both forms share.

    Parameters
    ----------
    matrix : cupyx.scipy.sparse.csr_matrix
        ``A`` (plain) or ``L`` (one-hot), pixels by pixels.
    diag2 : cupy.ndarray
        Twice its diagonal (as the systems keep it).
    b : cupy.ndarray
        The linear term over the free variables.
    cols : int
        CG columns: 1 (plain) or K (one-hot).
    gamma, tol, maxiter : float, float, int
        ADMM's dual step, and the CG's tolerance and iteration cap.
    """

    def __init__(self, cp: Any, matrix: Any, diag2: Any, b: Any, cols: int, gamma: float,
                 tol: float, maxiter: int) -> None:
        self.cp, self.n, self.cols = cp, int(matrix.shape[0]), int(cols)
        self.ptr = matrix.indptr.astype(cp.int32, copy=False)
        self.idx = matrix.indices.astype(cp.int32, copy=False)
        self.val = matrix.data.astype(cp.float64, copy=False)
        self.diag = cp.ascontiguousarray(diag2 * 0.5)
        self.b = cp.ascontiguousarray(b, dtype=cp.float64)
        self.gamma, self.tol, self.maxiter = float(gamma), float(tol), int(maxiter)
        size = self.n * self.cols
        self.B, self.X, self.R, self.P, self.Q, self.minv = (cp.empty(size) for _ in range(6))
        self.stride = 1 + 3 * (self.maxiter + 1)
        self.off = self.stride * self.cols
        self.S = cp.zeros(self.off + 10)
        mod = _kernels(cp)
        self._k = {name: mod.get_function(name) for name in (
            "plain_b", "oh_split", "resid", "cg_a", "cg_b", "cg_c", "post_a", "oh_post_a",
            "post_b")}
        blocks = max(1, (self.n + BLOCK - 1) // BLOCK)  # a grid of no blocks is a CUDA error
        self._grid1, self._grid2 = (blocks,), (blocks, self.cols)

    def _launch(self, name: str, grid: tuple, *args: Any) -> None:
        self._k[name](grid, (BLOCK,), args)

    def _csr(self) -> tuple:
        return np.int32(self.n), self.ptr, self.idx, self.val

    def _solve(self, shift0: float, shift1: float) -> None:
        """The CG from the directions ``X`` and right-hand sides ``B`` (after ``S`` was zeroed)."""
        two, tol, stride = np.float64(2.0), np.float64(self.tol), np.int32(self.stride)
        s0, s1 = np.float64(shift0), np.float64(shift1)
        self._launch("resid", self._grid2, *self._csr(), self.diag, two, s0, s1, self.B, self.X,
                     self.R, self.P, self.minv, self.S, stride)
        for t in range(1, self.maxiter + 1):
            t32 = np.int32(t)
            self._launch("cg_a", self._grid2, *self._csr(), two, s0, s1, self.P, self.Q, self.S,
                         stride, t32, tol)
            self._launch("cg_b", self._grid2, np.int32(self.n), self.P, self.Q, self.minv,
                         self.X, self.R, self.S, stride, t32, tol)
            self._launch("cg_c", self._grid2, np.int32(self.n), self.R, self.minv, self.P,
                         self.S, stride, t32, np.int32(self.maxiter), tol)

    def _post_b(self, xin: Any, y1: Any, y2: Any, rho: float, x: Any, z1: Any, z2: Any) -> None:
        size = int(x.size)
        grid = (max(1, (size + BLOCK - 1) // BLOCK),)
        self._launch("post_b", grid, np.int32(size), xin, y1, y2, np.float64(rho),
                     np.float64(self.gamma), x, z1, z2, self.S, np.int32(self.off))

    def _finish(self, x: Any, z1: Any, z2: Any, xr: Any, quad_scale: float,
                violation: float) -> StepResult:
        """The iteration's result from the one copy of the sums back to the host."""
        h = self.S.get()  # the one wait of the iteration
        its = 0
        for c in range(self.cols):
            col = h[c * self.stride:(c + 1) * self.stride]
            bnorm, done = math.sqrt(col[0]) if col[0] > 0 else 1.0, 0
            while done < self.maxiter and math.sqrt(col[1 + 3 * done]) / bnorm > self.tol:
                done += 1
            its = max(its, done)
        quad, _, xx, bx, bxr, qr, d1, d2, r3sq, dsq = (float(v) for v in h[self.off:])
        return StepResult(x, z1, z2, xr, quad * quad_scale, bx, bxr, d1, d2, xx, r3sq, dsq,
                          violation, its, quad_r=qr)


class GPUPlainStep(_GPUStep):
    """The fused iteration of an unconstrained problem on a sparse matrix (K = 2), on a GPU.

    Parameters
    ----------
    matrix, diag2, b, gamma, tol, maxiter
        As :class:`_GPUStep`'s, with ``matrix`` the objective's ``A``.
    backend : solver.backend.Backend
        The real GPU backend (:func:`applies`).
    """

    def __init__(self, matrix: Any, diag2: Any, b: Any, backend: Any, gamma: float, tol: float,
                 maxiter: int) -> None:
        super().__init__(backend.xp, matrix, diag2, b, 1, gamma, tol, maxiter)

    def __call__(self, x: Any, z1: Any, z2: Any, y1: Any, y2: Any, y3: Any, rho: float,
                 rc: float) -> StepResult:
        """One iteration from ``(x, z1, z2)``; updates the duals ``y1, y2`` in place."""
        cp, n = self.cp, np.int32(self.n)
        self.S.fill(0.0)
        self._launch("plain_b", self._grid1, n, np.float64(rho), x, z1, z2, y1, y2, self.b,
                     self.B, self.X)
        shift = 2.0 * rho
        self._solve(shift, shift)
        x_new, z1_new, z2_new, xr = (cp.empty(self.n) for _ in range(4))
        self._launch("post_a", self._grid1, *self._csr(), np.float64(shift), np.float64(rho),
                     self.X, self.B, self.R, y2, self.b, xr, self.S, np.int32(self.off))
        self._post_b(self.X, y1, y2, rho, x_new, z1_new, z2_new)
        return self._finish(x_new, z1_new, z2_new, xr, 0.5, 0.0)


class GPUOneHotStep(_GPUStep):
    """The fused iteration of the K > 2 form (one-hot rows kept by a penalty), on a GPU.

    Parameters
    ----------
    matrix, diag2, b, gamma, tol, maxiter
        As :class:`_GPUStep`'s, with ``matrix`` the graph Laplacian part ``L`` of
        ``A = L ⊗ I_k``.
    d : cupy.ndarray
        The one-hot rows' targets (``C1 x = d``; ones).
    k : int
        Labels, at most :data:`KMAX`.
    backend : solver.backend.Backend
        The real GPU backend (:func:`applies`).
    """

    def __init__(self, matrix: Any, diag2: Any, b: Any, d: Any, k: int, backend: Any,
                 gamma: float, tol: float, maxiter: int) -> None:
        if not 2 < k <= KMAX:
            raise ValueError(f"the GPU's one-hot step takes 3 to {KMAX} labels, got {k}")
        super().__init__(backend.xp, matrix, diag2, b, k, gamma, tol, maxiter)
        self.k = int(k)
        self.d = self.cp.ascontiguousarray(d, dtype=self.cp.float64)
        # every rounded row has one 1, so C1 xr - d = 1 - d whatever the rounding
        self.violation = float(self.cp.abs(1.0 - self.d).max()) if self.n else 0.0

    def __call__(self, x: Any, z1: Any, z2: Any, y1: Any, y2: Any, y3: Any, rho: float,
                 rc: float) -> StepResult:
        """One iteration from ``(x, z1, z2)``; updates the duals ``y1, y2, y3`` in place."""
        cp, n, k = self.cp, np.int32(self.n), np.int32(self.k)
        self.S.fill(0.0)
        self._launch("oh_split", self._grid1, n, k, np.float64(rho), np.float64(rc), x, z1, z2,
                     y1, y2, self.b, self.d, y3, self.B, self.X)
        shift = 2.0 * rho
        self._solve(shift + self.k * rc, shift)
        size = self.n * self.k
        x_new, z1_new, z2_new, xr = (cp.empty(size) for _ in range(4))
        self._launch("oh_post_a", self._grid1, n, k, self.ptr, self.idx, self.val,
                     np.float64(shift + self.k * rc), np.float64(shift), np.float64(rho),
                     np.float64(self.gamma * rc), self.X, self.B, self.R, y2, self.b, self.d, y3,
                     x_new, xr, self.S, np.int32(self.off))
        self._post_b(x_new, y1, y2, rho, x_new, z1_new, z2_new)
        return self._finish(x_new, z1_new, z2_new, xr, 1.0, self.violation)
