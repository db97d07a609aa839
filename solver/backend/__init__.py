"""Array backends: numpy/scipy on the CPU, cupy/cupyx on an NVIDIA GPU.

This is the only module in the project that imports CuPy, and it does so lazily, so the CPU
path never pays for (or depends on) a CUDA installation.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import scipy.sparse as sp

log = logging.getLogger(__name__)

from solver.names import BACKENDS


class GPUUnavailableError(RuntimeError):
    """Raised when ``backend="gpu"`` is requested but no usable CUDA GPU is present."""


@dataclass(frozen=True)
class Backend:
    """A pair of array and sparse-matrix modules plus transfer helpers.

    Attributes
    ----------
    name : str
        ``"cpu"`` or ``"gpu"``.
    xp : module
        ``numpy`` or ``cupy``.
    sparse : module
        ``scipy.sparse`` or ``cupyx.scipy.sparse``.
    """

    name: str
    xp: ModuleType
    sparse: ModuleType

    @property
    def is_gpu(self) -> bool:
        """Whether arrays live on the GPU."""
        return self.name == "gpu"

    def asarray(self, a: Any, dtype: Any = None) -> Any:
        """Move a dense array to this backend (no copy when already there)."""
        return self.xp.asarray(a, dtype=dtype)

    def dot(self, a: Any, b: Any) -> float:
        """Dot product of two vectors, as a float, without BLAS.

        A multi-threaded BLAS dot wakes helper threads for every call; when the cores are busy
        (the app's GUI thread, another process) each call waits for them. einsum's own loop is
        single-threaded (measured: docs/decisions.md, Compiled CPU kernels).
        """
        return float(self.xp.einsum("i,i->", a, b))

    def norm(self, a: Any) -> float:
        """Euclidean norm of a vector (see :meth:`dot`)."""
        return self.dot(a, a) ** 0.5

    def to_numpy(self, a: Any) -> np.ndarray:
        """Copy an array of this backend back to a numpy array on the host."""
        if self.is_gpu:
            return self.xp.asnumpy(a)
        return np.asarray(a)

    def as_sparse(self, m: Any, dtype: Any = np.float64) -> Any:
        """Convert a scipy sparse matrix (or dense array) to a CSR matrix on this backend."""
        csr = sp.csr_matrix(m, dtype=dtype)
        if not self.is_gpu:
            return csr
        return self.sparse.csr_matrix(csr)


CPU = Backend("cpu", np, sp)


def _load_gpu() -> Backend:
    try:
        import cupy  # noqa: PLC0415  (lazy on purpose)
        import cupyx.scipy.sparse as cusparse  # noqa: PLC0415
    except Exception as exc:  # ImportError, or CUDA libraries missing
        raise GPUUnavailableError(f"no usable GPU: CuPy cannot be imported ({exc})") from exc
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # driver missing or broken
        raise GPUUnavailableError(f"no usable GPU: CUDA driver error ({exc})") from exc
    if count < 1:
        raise GPUUnavailableError("no usable GPU: CuPy found no CUDA device")
    return Backend("gpu", cupy, cusparse)


def gpu_errors() -> tuple[type[BaseException], ...]:
    """The exceptions by which a solve fails for want of a working GPU: no usable device
    (:class:`GPUUnavailableError`), and where CuPy imports, its CUDA runtime and driver errors,
    GPU out-of-memory and kernels that do not compile. A caller may run the same solve on the
    CPU instead; any other exception is a real failure.

    Returns
    -------
    tuple of exception classes
    """
    errors: list[type[BaseException]] = [GPUUnavailableError]
    try:
        import cupy  # noqa: PLC0415  (lazy on purpose)
        from cupy.cuda.compiler import CompileException  # noqa: PLC0415
    except Exception:  # noqa: BLE001 - no CuPy: only the first kind can happen
        return tuple(errors)
    errors += [cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError,
               cupy.cuda.memory.OutOfMemoryError, CompileException]
    return tuple(errors)


def get_backend(name: str | Backend = "cpu") -> Backend:
    """Return the backend for ``"cpu"``, ``"gpu"`` or ``"auto"``.

    Parameters
    ----------
    name : {"cpu", "gpu", "auto"} or Backend
        ``"gpu"`` requires CuPy and a CUDA device; ``"auto"`` uses the GPU when one is usable
        and otherwise falls back to the CPU, logging why.

    Returns
    -------
    Backend

    Raises
    ------
    ValueError
        For an unknown backend name.
    GPUUnavailableError
        For ``"gpu"`` when no usable GPU is present.
    """
    if isinstance(name, Backend):
        return name
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}: expected one of {', '.join(BACKENDS)}")
    if name == "cpu":
        return CPU
    if name == "gpu":
        return _load_gpu()
    try:
        return _load_gpu()
    except GPUUnavailableError as exc:
        log.info("backend 'auto': using the CPU (%s)", exc)
        return CPU


def gpu_available() -> bool:
    """Whether a usable CUDA GPU (and CuPy) is present."""
    try:
        _load_gpu()
    except GPUUnavailableError:
        return False
    return True
