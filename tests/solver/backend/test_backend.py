import logging

import numpy as np
import pytest

from solver import GPUUnavailableError, get_backend, gpu_available


def test_cpu_backend_is_numpy():
    be = get_backend("cpu")
    assert be.xp is np and not be.is_gpu
    np.testing.assert_array_equal(be.to_numpy(be.asarray([1, 2])), [1, 2])


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend 'cuda'"):
        get_backend("cuda")


def test_gpu_without_gpu_raises_clear_error(no_cupy):
    with pytest.raises(GPUUnavailableError, match="no usable GPU: CuPy cannot be imported"):
        get_backend("gpu")
    assert not gpu_available()


def test_auto_falls_back_to_cpu_and_logs(caplog, no_cupy):
    with caplog.at_level(logging.INFO, logger="solver.backend"):
        be = get_backend("auto")
    assert be.name == "cpu"
    assert "using the CPU" in caplog.text


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CuPy/CUDA GPU")
def test_gpu_backend_round_trip():
    be = get_backend("gpu")
    a = be.asarray(np.arange(5.0))
    assert be.is_gpu
    np.testing.assert_array_equal(be.to_numpy(a * 2), np.arange(5.0) * 2)


def test_dot_and_norm_match_numpy(backend):
    be = get_backend(backend)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=1001), rng.normal(size=1001)
    got = be.dot(be.asarray(a), be.asarray(b))
    assert isinstance(got, float) and got == pytest.approx(float(a @ b), rel=1e-12)
    assert be.norm(be.asarray(a)) == pytest.approx(float(np.linalg.norm(a)), rel=1e-12)
