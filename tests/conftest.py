"""Test-wide set-up: Qt runs headless."""
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import sys  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture
def no_cupy(monkeypatch):
    """A machine without CuPy, on any machine: importing it fails as it does where it is not
    installed, so solver.backend's real detection path runs (and says why)."""
    for name in ("cupy", "cupyx", "cupyx.scipy", "cupyx.scipy.sparse"):
        monkeypatch.setitem(sys.modules, name, None)
