"""Starting the app on a Linux box without the libraries Qt's X11 platform needs: one line that
names every missing package and the command that installs them, before Qt aborts."""

import ctypes.util

import pytest

from segapp.cli import main
from segapp.ui import qtcheck

pytestmark = pytest.mark.usefixtures("app_launches")

X11 = {"DISPLAY": ":0"}


def finder(missing):
    return lambda lib: None if lib in missing else f"lib{lib}.so.0"


def test_every_missing_library_is_named_with_its_package():
    got = qtcheck.missing_packages("linux", X11, finder({"xcb-cursor", "xcb-keysyms"}))
    assert got == ["libxcb-cursor0", "libxcb-keysyms1"]
    hint = qtcheck.install_hint(got)
    assert hint.endswith("sudo apt-get install libxcb-cursor0 libxcb-keysyms1")
    assert qtcheck.missing_packages("linux", X11, finder(set())) == []


@pytest.mark.parametrize("platform,env,expected", [
    ("linux", {"DISPLAY": ":0"}, True),
    ("linux", {"QT_QPA_PLATFORM": "xcb", "WAYLAND_DISPLAY": "wayland-0"}, True),
    ("linux", {"QT_QPA_PLATFORM": "offscreen", "DISPLAY": ":0"}, False),
    ("linux", {"QT_QPA_PLATFORM": "wayland;xcb"}, False),
    ("linux", {"WAYLAND_DISPLAY": "wayland-0"}, False),
    ("linux", {"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, True),
    ("darwin", {}, False),
    ("win32", {"DISPLAY": ":0"}, False),
])
def test_only_the_x11_platform_is_checked(platform, env, expected):
    assert qtcheck.uses_xcb(platform, env) is expected
    missing = qtcheck.missing_packages(platform, env, finder(set(qtcheck.XCB_LIBRARIES)))
    assert missing == (list(qtcheck.XCB_LIBRARIES.values()) if expected else [])


@pytest.mark.parametrize("argv", [[], ["photo.png"]])
def test_the_app_command_says_what_to_install_instead_of_starting(argv, app_launches, monkeypatch,
                                                                  capsys):
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setattr(qtcheck.sys, "platform", "linux")
    monkeypatch.setattr(ctypes.util, "find_library", finder({"xkbcommon-x11"}))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("segapp: error: Qt's X11 platform")
    assert err[0].endswith("sudo apt-get install libxkbcommon-x11-0")
    assert app_launches == []

