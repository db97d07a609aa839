"""First window sizes that fit the screen a window opens on (shared by the main window and the
Geometry window, so neither imports the other)."""

from __future__ import annotations

from PyQt6.QtGui import QGuiApplication
from PyQt6.QtWidgets import QWidget

#: Room left on the screen around a window for its frame and title bar.
FRAME_ALLOWANCE = (16, 40)


def fit_to_screen(widget: QWidget, size: tuple[int, int]) -> tuple[int, int]:
    """``size`` shrunk to the available geometry of ``widget``'s screen less
    :data:`FRAME_ALLOWANCE` (a 1366x768 laptop, with its panel, has 1366x708).

    Parameters
    ----------
    widget : QWidget
        The window (its screen, else the primary screen, is measured).
    size : tuple of int
        The width and height wanted where the screen has room.

    Returns
    -------
    tuple of int
        Width and height; ``size`` unchanged when there is no screen.
    """
    screen = widget.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        return size
    avail = screen.availableGeometry()
    return (min(size[0], avail.width() - FRAME_ALLOWANCE[0]),
            min(size[1], avail.height() - FRAME_ALLOWANCE[1]))
