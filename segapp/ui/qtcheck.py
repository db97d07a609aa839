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


def display_problem(env: Mapping[str, str] | None = None,
                    connect: Callable[[str], bool] | None = None) -> str | None:
    """Why Qt's X11 platform would find no display, in one sentence with what to do instead;
    None where there is one (or Qt will not use X11). Without a display Qt aborts the process
    (SIGABRT) after several lines, one of which blames a library.

    Parameters
    ----------
    env : mapping, optional
        Default the process's environment.
    connect : callable, optional
        ``connect(display) -> bool``, whether an X server answers there (default: ask libxcb,
        as Qt will).

    Returns
    -------
    str or None
    """
    env = os.environ if env is None else env
    if not uses_xcb(env=env):
        return None
    display = env.get("DISPLAY", "")
    headless = ("run it in a desktop session, or headless with QT_QPA_PLATFORM=offscreen, "
                "or use the command line (segapp segment --help)")
    if not display:
        return f"no display found (DISPLAY is not set): {headless}"
    connect = _xcb_connects if connect is None else connect
    if not connect(display):
        return f"no display found: nothing answers at DISPLAY={display}; {headless}"
    return None


def _xcb_connects(display: str) -> bool:
    """Whether an X server answers at ``display`` (libxcb's own connect, then disconnect); True
    where libxcb cannot be loaded (Qt will then say what is missing)."""
    name = ctypes.util.find_library("xcb")
    if name is None:
        return True
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return True
    lib.xcb_connect.restype = ctypes.c_void_p
    lib.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    lib.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    lib.xcb_disconnect.argtypes = [ctypes.c_void_p]
    conn = lib.xcb_connect(display.encode(), None)
    try:
        return conn is not None and lib.xcb_connection_has_error(conn) == 0
    finally:
        if conn is not None:
            lib.xcb_disconnect(conn)


def install_hint(packages: list[str]) -> str:
    """One line naming the missing packages and the command that installs them all."""
    return ("Qt's X11 platform needs system libraries that are missing "
            f"({', '.join(packages)}); on Debian/Ubuntu: "
            f"sudo apt-get install {' '.join(packages)}")
