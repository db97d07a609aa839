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


@pytest.fixture
def app_launches(monkeypatch):
    """The app's window, stubbed: a ``segapp`` call that would open it records its arguments
    here (and returns 0) instead of entering the event loop. Headless commands are run under
    it, so one that opens a window by mistake fails at once rather than waiting for a user."""
    import segapp.ui.app as app
    calls: list[tuple] = []
    monkeypatch.setattr(app, "run_app", lambda argv=None, image=None: calls.append((argv, image))
                        or 0)
    return calls
