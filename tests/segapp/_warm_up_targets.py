"""Warm-ups for the window's tests, run in the warm-up's child process
(``python -m solver.mrf.solve.warmup tests.segapp._warm_up_targets:NAME``).

``SEGAPP_TEST_RELEASE`` names a file the waiting ones wait for (at most a minute)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numba


def _compile() -> None:
    numba.njit(lambda x: 2 * x - 1)(3)  # a real compile, as on a cold cache


def _wait_for_release() -> None:
    path = Path(os.environ["SEGAPP_TEST_RELEASE"])
    end = time.monotonic() + 60
    while not path.exists() and time.monotonic() < end:
        time.sleep(0.02)


def compiles() -> float:
    _compile()
    return 42.0


def cached() -> float:
    return 42.0


def quick() -> float:
    return 1.0


def fails() -> float:
    _compile()
    raise RuntimeError("no kernels today")


def compiles_then_waits() -> float:
    _compile()
    _wait_for_release()
    return 42.0


def waits() -> float:
    _wait_for_release()
    return 1.0


def talks() -> float:
    """Writes far more to stderr than a pipe holds before it is ready (as numba's warnings
    could)."""
    import sys
    for _ in range(4000):
        print("a warning line of some length, " * 4, file=sys.stderr)
    return 7.0
