"""The layering rules of docs/architecture.md, checked from the source.

`make test` also runs import-linter with the contracts in pyproject.toml (the solver's layers,
no Qt below the UI); these tests check the same rules and the absence of import cycles, so they
fail inside a plain `pytest` run too. Every import counts, also one inside a function.
"""

import ast
import fnmatch
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QT = ("PyQt6", "PyQt5", "PySide6", "pyqtgraph")
PACKAGES = ("solver", "segapp")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the project's packages by dotted name."""
    return {module_name(p, root): p for pkg in PACKAGES for p in (root / pkg).rglob("*.py")}


def imports(path: Path, known: set[str]) -> set[str]:
    """The modules ``path`` imports, anywhere in it: ``from a import b`` names ``a.b`` when that
    is a module of the project, else ``a``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{a.name}" for a in node.names} & known
            found.update(subs)
            if len(subs) < len(node.names):
                found.add(node.module)
    return found


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Each module's imports, with the packages whose ``__init__`` an import runs first: one of
    ``a.b.c`` runs ``a/b/__init__`` too, which can import the importer back while it is half
    loaded (not counted for the importer's own packages, which are loaded before it)."""
    mods = modules(root)
    known = set(mods)
    edges = {}
    for name, path in mods.items():
        found = imports(path, known)
        for imp in list(found):
            parts = imp.split(".")
            for k in range(1, len(parts)):
                parent = ".".join(parts[:k])
                if parent in known and not (name == parent or name.startswith(parent + ".")):
                    found.add(parent)
        edges[name] = found
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, or with a self-import."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                out.append(sorted(comp))

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def offenders(edges: dict[str, set[str]], source: str, forbidden: tuple[str, ...]) -> list[str]:
    return sorted(f"{mod} imports {imp}" for mod, imps in edges.items()
                  if mod == source or mod.startswith(source + ".")
                  for imp in imps if any(imp == f or imp.startswith(f + ".") for f in forbidden))


def test_no_import_cycle_anywhere():
    assert cycles(graph()) == []


@pytest.mark.slow
def test_solver_imports_neither_qt_nor_segapp():
    assert offenders(graph(), "solver", QT + ("segapp",)) == []


def test_model_and_core_import_no_qt_and_no_ui():
    edges = graph()
    assert offenders(edges, "segapp.model", QT + ("segapp.ui", "segapp.cli", "segapp.core")) == []
    assert offenders(edges, "segapp.core", QT + ("segapp.ui", "segapp.cli")) == []


def test_the_batch_imports_no_qt_and_no_ui():
    """segapp batch runs on cluster workers that have no display: the module imports neither Qt
    nor the UI nor the command line (what it imports of segapp.core is held to the rule
    above)."""
    edges = graph()
    assert "segapp.batch" in edges
    assert offenders(edges, "segapp.batch", QT + ("segapp.ui", "segapp.cli")) == []


def test_only_the_backend_imports_cupy():
    found = offenders(graph(), "solver", ("cupy", "cupyx"))
    assert all(line.startswith("solver.backend") for line in found), found


def own_compilers(root: Path = ROOT) -> list[str]:
    """Where a module compiles with numba by itself (``numba.njit``, ``numba.jit``, ``njit`` or
    ``jit`` imported from numba) instead of through :mod:`solver.backend.jit`'s decorators."""
    found = []
    for name, path in modules(root).items():
        if name == "solver.backend.jit":
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr in ("njit", "jit")
                    and isinstance(node.value, ast.Name) and node.value.id == "numba"):
                found.append(f"{name}:{node.lineno} numba.{node.attr}")
            elif (isinstance(node, ast.ImportFrom) and node.module == "numba"
                  and any(a.name in ("njit", "jit") for a in node.names)):
                found.append(f"{name}:{node.lineno} from numba import")
    return sorted(found)


def test_every_kernel_compiles_through_the_one_jit_module():
    assert own_compilers() == []


def packages_in(root: Path) -> Path:
    """Empty ``solver`` and ``segapp`` packages under ``root``, for the checks' own tests."""
    for pkg in PACKAGES:
        (root / pkg).mkdir()
        (root / pkg / "__init__.py").write_text("")
    return root


def test_the_jit_check_catches_a_module_of_its_own(tmp_path):
    packages_in(tmp_path)
    (tmp_path / "solver" / "k.py").write_text("import numba\n_jit = numba.njit(cache=True)\n")
    (tmp_path / "solver" / "m.py").write_text("from numba import njit\n")
    (tmp_path / "segapp" / "ok.py").write_text("from solver.backend.jit import jit\n")
    assert own_compilers(tmp_path) == ["solver.k:2 numba.njit", "solver.m:1 from numba import"]


#: The most parameters a compiled kernel takes: the graph, an energy, a level's state travel as
#: one structured argument each (:class:`solver.mrf.build.stencil.Potts` and the like), not as
#: long positional lists (docs/architecture.md, "Kernel hygiene").
MAX_KERNEL_PARAMETERS = 10
DECORATORS = ("jit", "parallel_jit", "inline_jit")


def long_kernels(root: Path = ROOT, most: int = MAX_KERNEL_PARAMETERS) -> list[str]:
    """The kernels (functions under one of :mod:`solver.backend.jit`'s decorators) that take
    more than ``most`` parameters, as ``module.function (count)``."""
    found = []
    for name, path in modules(root).items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.FunctionDef):
                continue
            if not any(isinstance(d, ast.Name) and d.id in DECORATORS
                       for d in node.decorator_list):
                continue
            count = len(node.args.posonlyargs) + len(node.args.args) + len(node.args.kwonlyargs)
            if count > most:
                found.append(f"{name}.{node.name} ({count})")
    return sorted(found)


def test_no_kernel_takes_more_than_ten_parameters():
    assert long_kernels() == []


def test_the_kernel_check_counts_a_long_kernel_and_passes_a_short_one(tmp_path):
    packages_in(tmp_path)
    params = ", ".join(f"a{i}" for i in range(11))
    (tmp_path / "solver" / "k.py").write_text(
        "from solver.backend.jit import jit, parallel_jit\n\n"
        f"@parallel_jit\ndef long({params}):\n    pass\n\n"
        "@jit\ndef short(potts, lab):\n    pass\n\n"
        f"def plain({params}):\n    pass\n")
    assert long_kernels(tmp_path) == ["solver.k.long (11)"]


def test_the_checks_catch_a_cycle_and_a_violation(tmp_path):
    packages_in(tmp_path)
    (tmp_path / "solver" / "a.py").write_text("def f():\n    from solver.b import g\n")
    (tmp_path / "solver" / "b.py").write_text("from solver import a\nfrom PyQt6 import QtCore\n")
    edges = graph(tmp_path)
    assert cycles(edges) == [["solver.a", "solver.b"]]
    assert offenders(edges, "solver", QT) == ["solver.b imports PyQt6"]
    # a package whose __init__ imports a module that imports one of the package's submodules
    (tmp_path / "solver" / "pkg").mkdir()
    (tmp_path / "solver" / "pkg" / "__init__.py").write_text("from solver.c import h\n")
    (tmp_path / "solver" / "pkg" / "kernels.py").write_text("")
    (tmp_path / "solver" / "c.py").write_text("from solver.pkg import kernels\n")
    assert ["solver.c", "solver.pkg"] in cycles(graph(tmp_path))


def stray_tests(root: Path = ROOT) -> list[str]:
    """Where the tests stop mirroring the tree: a test file under ``tests/`` in a folder that
    is not the same folder of the repository (``tests/solver/mrf/polish/`` for the package
    ``solver/mrf/polish/``, ``tests/benchmarks/`` for ``benchmarks/``), and a test folder that
    is not a package (its modules' basenames would clash with another folder's)."""
    tests = root / "tests"
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        folder = path.parent.relative_to(tests)
        if folder == Path("."):
            continue
        mirror = root / folder
        mirrored = ((mirror / "__init__.py").is_file() if folder.parts[0] in PACKAGES
                    else mirror.is_dir())
        if not mirrored:
            found.append(f"{path.relative_to(root).as_posix()} mirrors no {folder.as_posix()}/")
    for folder in sorted({p.parent for p in tests.rglob("*.py")}):
        if not (folder / "__init__.py").is_file():
            found.append(f"{folder.relative_to(root).as_posix()}/ has no __init__.py")
    return found


def test_the_tests_mirror_the_package_tree():
    assert stray_tests() == []


def test_pytest_searches_every_test_folder(pytestconfig):
    """No test folder is one that pytest's ``norecursedirs`` leaves out (its default list has
    ``build``, which is also the name of ``solver/mrf/build/``)."""
    patterns = pytestconfig.getini("norecursedirs")
    folders = sorted({p.parent for p in (ROOT / "tests").rglob("test_*.py")})
    assert [f.relative_to(ROOT).as_posix() for f in folders
            if any(fnmatch.fnmatch(part, pat) for part in f.relative_to(ROOT).parts
                   for pat in patterns)] == []


def test_the_mirror_check_catches_a_test_folder_of_no_package(tmp_path):
    packages_in(tmp_path)
    for folder in ("solver/mrf", "segapp/ui", "benchmarks"):
        (tmp_path / folder).mkdir()
    (tmp_path / "solver" / "mrf" / "__init__.py").write_text("")  # (segapp/ui is no package)
    for folder in ("", "solver", "solver/mrf", "solver/polish", "segapp", "segapp/ui",
                   "benchmarks", "tools", "segapp/core"):
        (tmp_path / "tests" / folder).mkdir(parents=True, exist_ok=True)
        if folder != "segapp/core":
            (tmp_path / "tests" / folder / "__init__.py").write_text("")
    for test in ("test_top.py", "solver/test_a.py", "solver/mrf/test_b.py", "benchmarks/test_c.py",
                 "solver/polish/test_d.py", "segapp/ui/test_e.py", "tools/test_f.py"):
        (tmp_path / "tests" / test).write_text("")
    (tmp_path / "tests" / "segapp" / "core" / "helpers.py").write_text("")
    assert stray_tests(tmp_path) == [
        "tests/segapp/ui/test_e.py mirrors no segapp/ui/",
        "tests/solver/polish/test_d.py mirrors no solver/polish/",
        "tests/tools/test_f.py mirrors no tools/",
        "tests/segapp/core/ has no __init__.py"]


@pytest.mark.slow
def test_importing_the_qt_free_layers_loads_no_qt():
    code = ("import sys, solver, solver.mrf, solver.reference, segapp.model, segapp.core.pipeline, "
            "segapp.core.io, segapp.core.session, segapp.core.colouring\n"
            "from solver.mrf import solve_mrf, build_problem\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('PyQt6', 'pyqtgraph', 'cupy')]\n"
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_every_solver_module_imports_first_in_a_fresh_interpreter():
    """A library user may import any module first (``from solver.admm.systems import ...``):
    each is imported alone, in its own interpreter."""
    from concurrent.futures import ThreadPoolExecutor

    def fails(name: str) -> bool:
        proc = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True,
                              cwd=ROOT)
        return proc.returncode != 0

    names = sorted(name for name in modules() if name.split(".")[0] == "solver")
    with ThreadPoolExecutor(4) as pool:
        assert [name for name, bad in zip(names, pool.map(fails, names)) if bad] == []


def test_lazy_names_load_on_first_use_and_list_in_dir():
    """The packages' names load from their modules when asked for, are listed by ``dir`` and
    ``__all__``, and an unknown one is an AttributeError naming the package."""
    import solver
    import solver.admm.steps as steps
    from solver.admm.steps.fused import fused_step

    assert steps.fused_step is fused_step
    assert "fused_step" in dir(steps) and "fused_step" in steps.__all__
    assert "solve_bqp" in dir(solver) and "lazy_names" not in solver.__all__
    try:
        solver.no_such_name  # noqa: B018
    except AttributeError as err:
        assert "'solver'" in str(err) and "no_such_name" in str(err)
    else:
        raise AssertionError("an unknown name must raise AttributeError")
