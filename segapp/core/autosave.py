"""Autosave: the document kept on disk while a person works, so that a crash loses nothing.

An autosave is a session file (:func:`segapp.core.session.save_session`: the image by path, K,
the rectangle, the settings with the constraints, and the strokes and hard pixels as PNG
layers), written atomically in a per-user folder (:func:`autosave_dir`). Each window writes its
own file, ``autosave-<pid>-<token>.json``, and holds an exclusive lock on the file beside it
(``.lock``) for as long as it runs; the system drops that lock however the process ends, a
``kill -9`` or an out-of-memory kill included. So a file whose lock can be taken was left by a
process that is gone (:func:`find_leftovers`), and a file whose lock is held belongs to a
window that still runs and is never offered, read over or removed by another. A process id
that the system gives again later cannot make a leftover look alive, and a new window never
writes over an old file (the random token).

The window removes its file when the work is saved or deliberately discarded, and when it
closes cleanly (:meth:`Autosave.close`); the next start offers any leftover back
(:func:`claim`, then :func:`segapp.core.session.load_session` of its path).

Qt-free: the folder is resolved from the environment.
"""
from __future__ import annotations

import errno
import logging
import os
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from segapp.core.session import SessionData, save_session
from segapp.model.document import Document

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
try:  # Windows
    import msvcrt
except ImportError:
    msvcrt = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

#: The environment variable that names the autosave folder (tests point it at a temporary one).
ENV_DIR = "SEGAPP_AUTOSAVE_DIR"
PREFIX = "autosave-"
SUFFIX = ".json"
LOCK_SUFFIX = ".lock"
#: Appended to an autosave that cannot be read: kept for a person to look at, not offered again.
UNREADABLE_SUFFIX = ".unreadable"
#: The key of the autosave's own fields in the session's ``extra`` object.
EXTRA_KEY = "autosave"


def autosave_dir() -> Path:
    """The folder autosaves are written in.

    ``$SEGAPP_AUTOSAVE_DIR`` where it is set; otherwise the per-user state folder:
    ``$XDG_STATE_HOME/segapp`` (``~/.local/state/segapp`` when that is unset or not absolute,
    as the XDG base directory specification says) on Linux and other Unix,
    ``~/Library/Application Support/segapp/autosave`` on macOS and
    ``%LOCALAPPDATA%\\segapp\\autosave`` on Windows.

    Returns
    -------
    pathlib.Path
        The folder; it need not exist yet.
    """
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    home = Path.home()
    if sys.platform == "win32":  # pragma: no cover - Windows
        base = os.environ.get("LOCALAPPDATA")
        return (Path(base) if base else home / "AppData" / "Local") / "segapp" / "autosave"
    if sys.platform == "darwin":  # pragma: no cover - macOS
        return home / "Library" / "Application Support" / "segapp" / "autosave"
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state) if state and Path(state).is_absolute() else home / ".local" / "state"
    return base / "segapp"


def lock_path(path: str | os.PathLike[str]) -> Path:
    """The lock file beside autosave ``path`` (``autosave-1234-ab12cd34.lock``)."""
    p = Path(path)
    return p.with_name(p.name[:-len(SUFFIX)] + LOCK_SUFFIX if p.name.endswith(SUFFIX)
                       else p.name + LOCK_SUFFIX)


def file_pid(path: str | os.PathLike[str]) -> int | None:
    """The process id an autosave's name gives (``autosave-1234-ab12cd34.json``: 1234)."""
    name = Path(path).name
    if not (name.startswith(PREFIX) and name.endswith(SUFFIX)):
        return None
    head = name[len(PREFIX):-len(SUFFIX)].split("-", 1)[0]
    return int(head) if head.isdigit() else None


def pid_alive(pid: int) -> bool:
    """Whether a process of id ``pid`` runs (where that cannot be told: True, the safe answer).

    Only the fallback where a file system has no locks: a process id can be given again.
    """
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    if sys.platform == "win32":  # pragma: no cover - (os.kill(pid, 0) would end it there)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except OSError:
        return True
    return True


_HELD = {errno.EACCES, errno.EAGAIN, errno.EWOULDBLOCK, getattr(errno, "EDEADLK", -1)}


class FileLock:
    """An exclusive advisory lock on a file, held while this object keeps the file open.

    The system drops it when the process ends in any way. Two :class:`FileLock` objects on one
    file exclude each other also inside one process (each opens the file itself).

    Parameters
    ----------
    path : str or os.PathLike
        The lock file (created when missing).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> bool | None:
        """Take the lock without waiting.

        Returns
        -------
        bool or None
            True: taken (or already held); False: another holder has it; None: the lock file
            cannot be opened or its file system has no locks.
        """
        if self._fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            log.debug("cannot open lock %s: %s", self.path, exc)
            return None
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            elif msvcrt is not None:  # pragma: no cover - Windows
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            else:  # pragma: no cover
                raise OSError(errno.ENOLCK, "no file locks on this system")
        except OSError as exc:
            os.close(fd)
            if exc.errno in _HELD:
                return False
            log.debug("no lock on %s: %s", self.path, exc)
            return None
        self._fd = fd
        return True

    def release(self, unlink: bool = False) -> None:
        """Let the lock go; with ``unlink``, remove the lock file first (while still held)."""
        if unlink:
            try:
                self.path.unlink(missing_ok=True)
            except OSError as exc:  # (Windows: an open file cannot be removed)
                log.debug("lock %s not removed yet: %s", self.path, exc)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if unlink and self.path.exists():
            self.path.unlink(missing_ok=True)


@dataclass(frozen=True)
class Leftover:
    """An autosave left by a process that no longer runs.

    Attributes
    ----------
    path : pathlib.Path
        The session file.
    pid : int or None
        The process that wrote it, as its name says.
    saved_at : float
        When it was last written (seconds since the epoch).
    """

    path: Path
    pid: int | None
    saved_at: float


def owner_alive(path: str | os.PathLike[str]) -> bool:
    """Whether the window that writes autosave ``path`` still runs: its lock is held (where
    locks cannot be used, whether its process id runs)."""
    lock = FileLock(lock_path(path))
    got = lock.acquire()
    if got is None:
        pid = file_pid(path)
        return pid is None or pid_alive(pid)
    if got:
        lock.release()
        return False
    return True


def find_leftovers(folder: str | os.PathLike[str] | None = None,
                   own: tuple[str | os.PathLike[str], ...] = ()) -> list[Leftover]:
    """The autosaves in ``folder`` whose writers no longer run, newest first.

    Parameters
    ----------
    folder : str or os.PathLike, optional
        Where to look (default :func:`autosave_dir`); a missing folder has none.
    own : tuple of paths
        This process's own files, never counted.

    Returns
    -------
    list of Leftover
    """
    folder = Path(folder) if folder is not None else autosave_dir()
    mine = {Path(p).resolve() for p in own}
    try:
        candidates = sorted(folder.glob(f"{PREFIX}*{SUFFIX}"))
    except OSError as exc:
        log.warning("cannot look for autosaves in %s: %s", folder, exc)
        return []
    out = []
    for p in candidates:
        if p.resolve() in mine or not p.is_file() or owner_alive(p):
            continue
        try:
            saved_at = p.stat().st_mtime
        except OSError:  # (removed meanwhile)
            continue
        out.append(Leftover(path=p, pid=file_pid(p), saved_at=saved_at))
    out.sort(key=lambda left: left.saved_at, reverse=True)
    return out


class Claim:
    """A leftover taken by this process while it is offered: no other start offers it meanwhile.

    Made by :func:`claim`; :meth:`release` lets it go, leaving the file where it is, and
    :meth:`discard` removes it.
    """

    def __init__(self, leftover: Leftover, lock: FileLock) -> None:
        self.leftover = leftover
        self._lock = lock

    @property
    def path(self) -> Path:
        """The leftover's session file."""
        return self.leftover.path

    def release(self) -> None:
        """Let the leftover go, kept on disk (to be offered again at the next start)."""
        self._lock.release()

    def discard(self) -> None:
        """Remove the leftover's file and its lock (its work was restored or refused)."""
        self.leftover.path.unlink(missing_ok=True)
        self._lock.release(unlink=True)
        log.info("removed autosave %s", self.leftover.path)

    def set_aside(self) -> Path:
        """Rename an unreadable leftover to ``….json.unreadable``: kept, not offered again.

        Returns
        -------
        pathlib.Path
            Where the file is now.
        """
        p = self.leftover.path
        target = p.with_name(p.name + UNREADABLE_SUFFIX)
        os.replace(p, target)
        self._lock.release(unlink=True)
        return target

    def __enter__(self) -> "Claim":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def claim(leftover: Leftover) -> Claim | None:
    """Take ``leftover`` for this process while it is offered.

    Returns
    -------
    Claim or None
        None where another process holds it (a window that runs, or another start offering it).
    """
    lock = FileLock(lock_path(leftover.path))
    got = lock.acquire()
    if got is False:
        return None
    if got is None and leftover.pid is not None and pid_alive(leftover.pid):
        return None
    return Claim(leftover, lock)


class Autosave:
    """One window's autosave: a session file of its document, and the lock that says the
    window runs.

    Parameters
    ----------
    folder : str or os.PathLike, optional
        Where to write (default :func:`autosave_dir`).
    """

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self.folder = Path(folder) if folder is not None else autosave_dir()
        self.path = self.folder / f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}{SUFFIX}"
        self._lock = FileLock(lock_path(self.path))

    @staticmethod
    def needed(doc: Document) -> bool:
        """Whether ``doc`` has work to keep: unsaved changes to an image read from a file (an
        image without a path could not be read back)."""
        return bool(doc.dirty and doc.has_image and doc.image_path)

    @property
    def exists(self) -> bool:
        """Whether this window's autosave file is on disk."""
        return self.path.is_file()

    def write(self, doc: Document, extra: dict[str, Any] | None = None,
              session_path: str | None = None) -> bool:
        """Write ``doc`` as this window's autosave, atomically, where it has work to keep.

        Parameters
        ----------
        doc : Document
        extra : dict, optional
            The session's view state (``{"opacity": 0.55}``).
        session_path : str, optional
            The session file the work came from, to save to again after a restore.

        Returns
        -------
        bool
            True when written; False when ``doc`` has nothing to keep (:meth:`needed`).

        Raises
        ------
        OSError
            The folder or the file cannot be written (the previous autosave is then intact).
        """
        if not self.needed(doc):
            return False
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self._lock.held and self._lock.acquire() is None:
            log.info("no lock for %s: the next start tells a leftover by its process id",
                     self.path)
        info = {"pid": os.getpid(), "saved_at": time.time(), "session_path": session_path}
        save_session(self.path, doc, extra={**(extra or {}), EXTRA_KEY: info})
        log.debug("autosaved %s", self.path)
        return True

    def remove(self) -> None:
        """Remove the autosave file (the work was saved or discarded); the lock stays held."""
        try:
            self.path.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("cannot remove autosave %s: %s", self.path, exc)

    def close(self) -> None:
        """A clean end: remove the file, then the lock."""
        self.remove()
        self._lock.release(unlink=True)


def autosave_info(data: SessionData) -> dict[str, Any]:
    """An autosave's own fields (``pid``, ``saved_at``, ``session_path``) from its session
    data; fields missing or of the wrong type are left out."""
    info = data.extra.get(EXTRA_KEY)
    if not isinstance(info, dict):
        return {}
    out: dict[str, Any] = {}
    if isinstance(info.get("session_path"), str) and info["session_path"]:
        out["session_path"] = info["session_path"]
    if isinstance(info.get("saved_at"), (int, float)) and not isinstance(info["saved_at"], bool):
        out["saved_at"] = float(info["saved_at"])
    if isinstance(info.get("pid"), int) and not isinstance(info["pid"], bool):
        out["pid"] = info["pid"]
    return out


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def _series(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def describe(data: SessionData) -> str:
    """What an autosave holds, for a person: ``"strokes of labels 1, 2 and 3 (4,210 pixels),
    96 hard pixels, a rectangle and 2 constraints; K = 3"``.

    Parameters
    ----------
    data : SessionData

    Returns
    -------
    str
    """
    parts = []
    for arr, kind in ((data.strokes, "strokes"), (data.hard, "hard")):
        if arr is None:
            continue
        n = int(np.count_nonzero(arr))
        if not n:
            continue
        if kind == "strokes":
            labels = [str(v) for v in np.unique(arr[arr > 0])]
            which = ("label " if len(labels) == 1 else "labels ") + _series(labels)
            parts.append(f"strokes of {which} ({_count(n, 'pixel')})")
        else:
            parts.append(_count(n, "hard pixel"))
    if data.rect is not None:
        parts.append("a rectangle")
    n_constraints = len(data.settings.area) + len(data.settings.apart)
    if n_constraints:
        parts.append(_count(n_constraints, "constraint"))
    what = _series(parts) if parts else "changed settings, no strokes"
    return f"{what}; K = {data.k}"


def saved_when(saved_at: float, now: float | None = None) -> str:
    """When an autosave was written, for a person: ``"today at 14:02"``, ``"yesterday at
    09:15"`` or ``"on 3 May 2026 at 14:02"`` (local time).

    Parameters
    ----------
    saved_at : float
        Seconds since the epoch.
    now : float, optional
        The present (default: the clock).
    """
    t = time.localtime(saved_at)
    today = time.localtime(time.time() if now is None else now)
    clock = f"{t.tm_hour:02d}:{t.tm_min:02d}"
    day = (t.tm_year, t.tm_yday)
    if day == (today.tm_year, today.tm_yday):
        return f"today at {clock}"
    yesterday = time.localtime(time.mktime(today) - 86400)
    if day == (yesterday.tm_year, yesterday.tm_yday):
        return f"yesterday at {clock}"
    return f"on {t.tm_mday} {time.strftime('%B', t)} {t.tm_year} at {clock}"
