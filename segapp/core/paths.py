"""Output paths checked before any work: nothing a user gave as input, and nothing that is not a
regular file, is ever replaced.

The command line (``segment``, ``bench``) and the app's exports call :func:`check_outputs`
before they read or solve anything, so a refusal costs no time and writes nothing.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

#: An output or input as ``(what, path)``: ``what`` names it for the error (``"--out"``).
Named = tuple[str, "str | os.PathLike[str]"]


def file_identity(path: str | os.PathLike[str]) -> tuple:
    """What makes two paths the same file: the device and inode of an existing file (so hard
    links and symbolic links to it match), else the path with every link resolved.

    Parameters
    ----------
    path : str or os.PathLike
        A path; it need not exist.

    Returns
    -------
    tuple
        Equal for two paths exactly when they name one file (hashable: a set of inputs'
        identities checks many outputs at once).
    """
    try:
        st = os.stat(path)  # (follows symbolic links)
    except OSError:
        return ("path", os.path.realpath(path))
    return ("inode", st.st_dev, st.st_ino)


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name one file, however each reaches it (links, ``..``, relative).

    Parameters
    ----------
    a, b : str or os.PathLike
        Paths; neither need exist.

    Returns
    -------
    bool
    """
    return file_identity(a) == file_identity(b)


def check_output_path(path: str | os.PathLike[str], option: str) -> Path:
    """Refuse, before any work, an output path that cannot be written: a folder, something that
    exists but is not a regular file (a device such as ``/dev/full``, a pipe, a socket), or a
    file in a folder that does not exist or that this user cannot write in.

    Parameters
    ----------
    path : str or os.PathLike
        The output as given.
    option : str
        Its name in the error (``"--report"``).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        One sentence naming ``option`` and the path as given.
    """
    p = Path(path)
    parent = p.parent
    where = f"cannot write {option} '{path}'"
    if p.is_dir():
        raise ValueError(f"{where}: it is a folder")
    if p.exists() and not p.is_file():
        raise ValueError(f"{where}: it exists and is not a regular file (a device, pipe or "
                         "socket), so it is not replaced")
    if not parent.exists():
        raise ValueError(f"{where}: folder '{parent}' does not exist")
    if not parent.is_dir():
        raise ValueError(f"{where}: '{parent}' is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{where}: no permission to write in folder '{parent}'")
    try:  # (a read-only file system, or /proc, passes the permission check, as root does)
        with tempfile.TemporaryFile(dir=parent, prefix=".segapp-check-"):
            pass
    except OSError as exc:
        raise ValueError(f"{where}: cannot create files in folder '{parent}' "
                         f"({exc.strerror or exc})") from None
    return p


def check_outputs(outputs: Sequence[Named], inputs: Iterable[Named] = ()) -> list[Path]:
    """Check every output (:func:`check_output_path`), that no two name the same file, and that
    none is one of the inputs (compared as files: a link or another spelling of an input is the
    input).

    Parameters
    ----------
    outputs : sequence of (name, path)
        The outputs asked for (None paths are skipped).
    inputs : iterable of (name, path)
        The files the run reads (None paths are skipped).

    Returns
    -------
    list of pathlib.Path
        The outputs' paths, in order.

    Raises
    ------
    ValueError
        One sentence naming the output and what it would replace.
    """
    checked = [(name, check_output_path(path, name)) for name, path in outputs if path]
    given = [(name, path) for name, path in inputs if path]
    seen: list[tuple[str, Path]] = []
    for name, p in checked:
        for in_name, in_path in given:
            if same_file(p, in_path):
                raise ValueError(f"cannot write {name} '{p}': it is the {in_name} file "
                                 f"'{in_path}', which would be lost; name another file")
        for other, q in seen:
            if same_file(p, q):
                raise ValueError(f"{other} and {name} name the same file '{p}'")
        seen.append((name, p))
    return [p for _, p in checked]
