"""``solve_mrf``'s ``seed``, ``callback`` and ``stop``: a one-line ValueError naming the argument,
before any iteration, for every method (as ``solve_bqp``'s; see test_bqp_hardening.py)."""

import warnings

import numpy as np
import pytest

from solver.mrf import solve_mrf
from solver.mrf.solve import dispatch
from tests.solver._mrf_helpers import random_problem


@pytest.fixture
def no_admm(monkeypatch):
    """ADMM (whole or coarse to fine) becomes an AssertionError: errors must come first."""
    def refuse(*_a, **_k):
        raise AssertionError("solve_mrf went on to ADMM with a bad argument")

    monkeypatch.setattr(dispatch, "MRFADMM", refuse)
    monkeypatch.setattr(dispatch, "solve_coarse_to_fine", refuse)


def _raises(match, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=match) as err:
            solve_mrf(random_problem((4, 5), k=2, seed=0), **kwargs)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("method, coarse_to_fine", [("admm", False), ("admm", True),
                                                    ("mincut", None)])
@pytest.mark.parametrize("seed", [1.5, 1.0, "x", True, -1, np.float64(3.0), [1, 2]])
def test_solve_mrf_seed_must_be_none_or_a_non_negative_integer(seed, method, coarse_to_fine,
                                                               no_admm):
    _raises(r"^seed must be None or an integer >= 0, got ", method=method, seed=seed,
            coarse_to_fine=coarse_to_fine)


@pytest.mark.parametrize("method, coarse_to_fine", [("admm", False), ("admm", True),
                                                    ("expansion", None)])
@pytest.mark.parametrize("value", [5, "print", True])
def test_solve_mrf_callback_must_be_none_or_callable(value, method, coarse_to_fine, no_admm):
    _raises(r"^callback must be None or callable, got ", method=method,
            coarse_to_fine=coarse_to_fine, callback=value)


def test_solve_mrf_takes_numpy_integer_seeds_but_not_bools():
    p = random_problem((4, 5), k=2, seed=0)
    ref = solve_mrf(p, "admm", seed=3, max_iter=10, polish=False)
    res = solve_mrf(p, "admm", seed=np.int64(3), max_iter=10, polish=False)
    assert np.array_equal(res.labels, ref.labels) and res.energy == ref.energy
    with pytest.raises(ValueError, match=r"^seed must be None or an integer >= 0, got True"):
        solve_mrf(p, "admm", seed=True, max_iter=10)
