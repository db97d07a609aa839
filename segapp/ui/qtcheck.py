"""Before Qt starts on Linux: the system libraries its X11 (xcb) platform plugin needs.

Without them Qt aborts naming only the first one missing, so installing it gives the same
error with the next name. This module imports no Qt: it looks the libraries up the way the
dynamic loader would (``ctypes.util.find_library``) and names every missing one with the command
that installs them.
"""

from __future__ import annotations

import ctypes.util
import os
import sys
from collections.abc import Callable, Mapping

#: Library (as ``find_library`` names it) -> the Debian/Ubuntu package that provides it.
XCB_LIBRARIES = {
    "xcb-cursor": "libxcb-cursor0",
    "xcb-icccm": "libxcb-icccm4",
    "xcb-keysyms": "libxcb-keysyms1",
    "xkbcommon-x11": "libxkbcommon-x11-0",
}


def uses_xcb(platform: str | None = None, env: Mapping[str, str] | None = None) -> bool:
    """Whether Qt will start its X11 platform plugin: on Linux, unless ``QT_QPA_PLATFORM``
    names another one (offscreen, wayland, ...) or only a Wayland session is present
    (``platform`` and ``env`` default to this process's)."""
    platform = sys.platform if platform is None else platform
    env = os.environ if env is None else env
    if not platform.startswith("linux"):
        return False
    qpa = env.get("QT_QPA_PLATFORM", "")
    if qpa:
        return qpa.split(":")[0].split(";")[0] == "xcb"
    return not (env.get("WAYLAND_DISPLAY") and not env.get("DISPLAY"))


def missing_packages(platform: str | None = None, env: Mapping[str, str] | None = None,
                     find: Callable[[str], str | None] | None = None) -> list[str]:
    """The packages whose libraries Qt's X11 platform would miss (empty where it is not used).

    Parameters
    ----------
    platform : str, optional
        Default ``sys.platform``.
    env : mapping, optional
        Default the process's environment.
    find : callable, optional
        Default ``ctypes.util.find_library``.

    Returns
    -------
    list of str
        Debian/Ubuntu package names, in :data:`XCB_LIBRARIES`' order.
    """
    if not uses_xcb(platform, env):
        return []
    find = ctypes.util.find_library if find is None else find
    return [pkg for lib, pkg in XCB_LIBRARIES.items() if find(lib) is None]


def install_hint(packages: list[str]) -> str:
    """One line naming the missing packages and the command that installs them all."""
    return ("Qt's X11 platform needs system libraries that are missing "
            f"({', '.join(packages)}); on Debian/Ubuntu: "
            f"sudo apt-get install {' '.join(packages)}")
