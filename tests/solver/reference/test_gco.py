"""gco-v3's α-expansion (the optional peer for K > 2) on segapp's problems."""

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from solver.mrf import Constraints, build_problem, solve_mrf
from solver.reference import alpha_expansion, mincut
from solver.reference.gco import gco_expansion
from tests.solver._mrf_helpers import brute_force, random_problem, shapes_image


@pytest.mark.parametrize("k", [3, 4])
@pytest.mark.parametrize("seed", range(4))
def test_gco_is_an_expansion_fixed_point_within_the_potts_bound(k, seed):
    """gco's labels, scored by segapp's exact energy, keep the hard pixels and obey Boykov,
    Veksler and Zabih's bound E(f) <= E_data(f*) + 2 E_smooth(f*) against the brute-force
    optimum, as segapp's own α-expansion does (the integer scaling costs no more than its
    rounding)."""
    shape = (3, 3) if k == 3 else (2, 3)
    problem = random_problem(shape, k, seed, 0.2)
    best, arg = brute_force(problem)
    labels = gco_expansion(problem)
    problem.check_hard(labels)
    flat = arg.ravel()
    data = float(problem.unary[np.arange(problem.n), flat - 1].sum())
    smooth = best - data
    assert best - 1e-9 <= problem.energy(labels) <= data + 2.0 * smooth + 1e-6 * abs(best)


@pytest.mark.parametrize("seed", range(3))
def test_gco_for_two_labels_is_the_min_cut(seed):
    """For K = 2 one expansion move is the exact cut: gco's energy is min-cut's, to the
    integer scaling's rounding."""
    problem = random_problem((7, 9), 2, seed, 0.1)
    want = problem.energy(mincut(problem))
    assert problem.energy(gco_expansion(problem)) == pytest.approx(want, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("seed", [1, 2])
def test_gco_lands_where_segapps_expansion_does_on_an_image(seed):
    """On a built image problem (strokes as hard pixels, against strong unaries elsewhere) gco and
    segapp's α-expansion agree within 0.01 %, and every hard pixel keeps its label."""
    image, _, strokes = shapes_image(seed=seed, k=3, size=40)
    problem = build_problem(image, strokes, 3)
    ours = problem.energy(alpha_expansion(problem))
    labels = gco_expansion(problem)
    problem.check_hard(labels)
    assert abs(problem.energy(labels) - ours) <= 1e-4 * abs(ours)


def test_solve_mrf_runs_gco_and_reports_it():
    image, _, strokes = shapes_image(seed=2, k=3, size=32)
    problem = build_problem(image, strokes, 3)
    res = solve_mrf(problem, "gco")
    assert res.method == "gco" and res.labels.shape == problem.shape
    assert res.energy == pytest.approx(problem.energy(res.labels))


def test_gco_refuses_constraints_in_one_line():
    image, _, strokes = shapes_image(seed=2, k=3, size=32)
    problem = build_problem(image, strokes, 3, constraints=Constraints(apart=((1, 3),)))
    with pytest.raises(ValueError, match="solver gco cannot take these constraints") as info:
        solve_mrf(problem, "gco")
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="gco takes no area bounds or apart pairs"):
        gco_expansion(problem)


def test_loading_gco_leaves_numpys_namespace_as_it_was():
    """gco-wrapper sets numpy.int and numpy.float on import; they are taken off again, so code
    that asks numpy for them (or for their absence) sees what it saw before. (A fresh process:
    the package's import runs once per process.)"""
    code = ("import numpy as np\n"
            "names = ('int', 'float', 'bool')\n"
            "before = [hasattr(np, n) for n in names]\n"
            "from solver.reference.gco import load_gco\n"
            "gco = load_gco()\n"
            "assert gco.GCO is not None\n"
            "print(before == [hasattr(np, n) for n in names], before)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[3])
    assert out.stdout.startswith("True [False, False,"), out.stdout + out.stderr


def test_a_missing_gco_is_one_line_saying_what_to_install(monkeypatch):
    import solver.reference.gco as peer

    real = importlib.import_module

    def refuse(name, *args):
        if name == "gco":
            raise ModuleNotFoundError("No module named 'gco'")
        return real(name, *args)

    monkeypatch.setattr(peer.importlib, "import_module", refuse)
    assert not peer.gco_available()
    problem = random_problem((4, 4), 3, 0)
    with pytest.raises(ValueError, match=r"needs the gco-wrapper package: pip install") as info:
        solve_mrf(problem, "gco")
    assert "\n" not in str(info.value)
