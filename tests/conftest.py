"""Test-wide set-up: Qt runs headless."""
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
