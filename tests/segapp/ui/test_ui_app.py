"""The demo screenshot entry point (iterations capped to keep the test fast)."""
import pytest
from PyQt6.QtGui import QImage

pytestmark = pytest.mark.slow  # (every test here: see docs/testing.md, the fast lane)


def test_demo_screenshot(qapp, tmp_path):
    from segapp.ui.app import demo_screenshot
    out = tmp_path / "demo.png"
    assert demo_screenshot(str(out), max_iter=8) == 0
    img = QImage(str(out))
    assert img.width() >= 1280 and img.height() >= 800
