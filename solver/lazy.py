"""Names of a package that load on first use (PEP 562), for the packages whose ``__init__``
must stay cheap or must not import its own submodules (:mod:`solver`, :mod:`solver.admm`,
:mod:`solver.admm.steps`, :mod:`solver.mrf`)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, where: dict[str, str]
               ) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` for ``package``: each name of ``where``
    comes from its module, imported when the name is first asked for.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    where : dict of str to str
        Each name and the module it lives in.

    Returns
    -------
    tuple
        ``(__all__, __getattr__, __dir__)``, to be bound in the package's ``__init__``.
    """
    names = sorted(where)

    def getattr_(name: str) -> Any:
        if name in where:
            return getattr(importlib.import_module(where[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def dir_() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return names, getattr_, dir_
