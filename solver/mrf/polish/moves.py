"""What the polish's moves share: the step from a move's in-place form to its public one, and the
numpydoc pieces their docstrings have in common.

Each move comes in two forms: ``move_into(problem, lab, ...)`` changes ``(n,)`` 0-based labels
in place (a polish keeps its labels so from step to step, sparing a conversion of the image each
way) and returns the number of regions taken; ``move(problem, labels, ...)`` takes 1-based labels
of any shape and returns new ones with that number (:func:`on_copy`). Their docstrings name the
shared parameters as ``%(name)s``, filled from :data:`PIECES` by :func:`documented` (as
``scipy.ndimage`` fills its own), so that one wording serves every move.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from solver.mrf.build.problem import MRFProblem

F = TypeVar("F", bound=Callable[..., Any])

#: The shared docstring pieces, each indented for a top-level function's docstring.
PIECES = {
    "problem_labels": (
        "problem : MRFProblem\n"
        "    labels : numpy.ndarray\n"
        "        ``(H, W)`` or ``(n,)`` labels in 1..K."),
    "constrained_labels": (
        "problem : MRFProblem\n"
        "        With constraints.\n"
        "    labels : numpy.ndarray\n"
        "        ``(H, W)`` or ``(n,)`` labels in 1..K."),
    "max_pixels": (
        "max_pixels : int, optional\n"
        "        Proposals relabelling more pixels are skipped (None: no limit)."),
    "workspace": (
        "workspace : Workspace, optional\n"
        "        Work arrays shared with the other steps of a polish (default: new ones)."),
    "labels_moved": (
        "labels : numpy.ndarray\n"
        "        ``(n,)`` int32 labels in 1..K, energy no higher than the input's.\n"
        "    moved : int\n"
        "        Number of regions taken."),
}

_PIECE = re.compile(r"%\((\w+)\)s")


def documented(func: F) -> F:
    """Fill the ``%(name)s`` pieces of ``func``'s docstring from :data:`PIECES`.

    Parameters
    ----------
    func : callable
        A function whose docstring names pieces of :data:`PIECES`.

    Returns
    -------
    callable
        ``func`` itself, its docstring filled in (a docstring stripped by ``python -OO`` is left
        as it is).

    Raises
    ------
    KeyError
        If the docstring names a piece :data:`PIECES` does not hold.
    """
    if func.__doc__:
        func.__doc__ = _PIECE.sub(lambda m: PIECES[m.group(1)], func.__doc__)
    return func


def on_copy(into: Callable[..., int], problem: MRFProblem, labels: np.ndarray, *args: Any,
            dtype: type = np.int32) -> tuple[np.ndarray, int]:
    """Run a move's in-place form on a 0-based copy of 1-based ``labels``.

    Parameters
    ----------
    into : callable
        ``into(problem, lab, *args) -> int``: the move on ``(n,)`` 0-based labels, in place.
    problem : MRFProblem
    labels : numpy.ndarray
        ``(H, W)`` or ``(n,)`` labels in 1..K; left as they are.
    *args
        The move's own arguments, after ``lab``.
    dtype : numpy dtype
        The 0-based labels' type, as ``into`` takes them.

    Returns
    -------
    labels : numpy.ndarray
        ``(n,)`` int32 labels in 1..K after the move.
    moved : int
        What ``into`` returned (the number of regions taken).
    """
    lab = np.subtract(np.asarray(labels).reshape(-1), 1, dtype=dtype, casting="unsafe")
    moved = into(problem, lab, *args)
    return np.add(lab, 1, dtype=np.int32), moved
