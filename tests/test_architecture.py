"""Layering rules from DESIGN.md: `solver` never imports Qt or `segapp`; `segapp.model` never Qt.

`make test` also runs import-linter with the contracts in pyproject.toml; this test checks the same
rules from the source alone, so it fails inside plain `pytest` runs too.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QT = ("PyQt6", "PyQt5", "PySide6", "pyqtgraph")


def imported_modules(package_dir: Path):
    for path in package_dir.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield path, alias.name
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                yield path, node.module


def offenders(package: str, forbidden: tuple[str, ...]):
    return [
        f"{path.relative_to(ROOT)} imports {mod}"
        for path, mod in imported_modules(ROOT / package)
        if mod.split(".")[0] in forbidden or any(mod.startswith(f + ".") for f in forbidden)
        or mod in forbidden
    ]


def test_solver_imports_neither_qt_nor_segapp():
    assert offenders("solver", QT + ("segapp",)) == []


def test_model_imports_no_qt():
    assert offenders("segapp/model", QT + ("segapp.ui",)) == []


def test_only_backend_imports_cupy():
    found = [f"{p.relative_to(ROOT)}" for p, m in imported_modules(ROOT / "solver")
             if m.split(".")[0] in ("cupy", "cupyx")]
    assert all(p.endswith("solver/backend.py") for p in found), found


def test_the_checker_catches_a_violation(tmp_path, monkeypatch):
    pkg = tmp_path / "solver"
    pkg.mkdir()
    (pkg / "bad.py").write_text("from PyQt6 import QtCore\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert offenders("solver", QT) == ["solver/bad.py imports PyQt6"]


def test_importing_solver_loads_no_qt():
    code = "import sys, solver, solver.mrf, solver.reference; " \
           "bad = [m for m in sys.modules if m.split('.')[0] in ('PyQt6', 'pyqtgraph', 'segapp', 'cupy')]; " \
           "print(bad); sys.exit(1 if bad else 0)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if "No module named 'solver.mrf'" in proc.stderr or "No module named 'solver.reference'" in proc.stderr:
        pytest.fail("solver.mrf / solver.reference missing")
    assert proc.returncode == 0, proc.stdout + proc.stderr
