"""OpenMP's idle threads are told to spin briefly unless the user chose a wait policy, and the
setting is in place before numba loads its OpenMP layer (which reads it once)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from solver.backend.threads import SPIN_COUNT, bound_spin

ROOT = Path(__file__).resolve().parents[3]

#: A fresh interpreter: nothing the solver imports loads libgomp; a solve does, after the spin
#: count is set. Prints the spin count seen, whether libgomp was mapped before and after, and
#: numba's threading layer.
SCRIPT = """
import os
def gomp():
    with open("/proc/self/maps") as f:
        return "libgomp" in f.read()
import numpy as np
import solver.mrf
from solver.mrf import build_problem, solve_mrf
before = gomp()
img = np.zeros((200, 200), np.uint8); img[50:150, 50:150] = 200
strokes = np.zeros((200, 200), np.int32); strokes[90:110, 90:110] = 2; strokes[:5] = 1
solve_mrf(build_problem(img, strokes, 2), "admm", seed=0)
import numba
print(os.environ.get("GOMP_SPINCOUNT"), before, gomp(), numba.threading_layer())
"""


@pytest.mark.parametrize("preset", [{}, {"GOMP_SPINCOUNT": "300000"},
                                    {"OMP_WAIT_POLICY": "passive"}])
def test_the_spin_is_bounded_unless_the_user_chose(preset):
    env = dict(preset)
    assert bound_spin(env) is not preset
    assert env == (preset or {"GOMP_SPINCOUNT": SPIN_COUNT})


@pytest.mark.slow
def test_the_bound_is_set_before_openmp_loads():
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=600, check=True).stdout.split()
    assert out[0] == SPIN_COUNT
    if os.path.exists("/proc/self/maps") and out[3] == "omp":  # (Linux, numba on libgomp)
        assert out[1:3] == ["False", "True"]
