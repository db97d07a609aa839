"""How close ADMM gets to the yardstick, with the polish and without it (issue #38).

Every other quality test looks at the answer after the polish, and the polish is strong enough
to hide a broken ADMM: with the old fast ρ schedule ADMM's own answer on the cameraman at
n = 1e3 goes from +0% to +152% above min-cut while the polished answer stays at +0%. So each
case here is solved twice: ``polish=False`` (ADMM alone) and with the default polish.

The yardstick is min-cut (the global optimum) for K = 2 and α-expansion for K = 3. A gap is
100 · (E − E_ref) / |E_ref|, in percent, as in docs/performance.md ("Gaps are the energy above
the yardstick's, in percent of its magnitude").

The claims the polished thresholds guard, quoted from docs/performance.md, "Targets" (the README
gives only the measured figures: "| K = 2 vs min-cut (global optimum): gap | +0.00% | +0.01% |
+0.02% | +0.09% |" and "| K = 3 vs α-expansion: gap, time | +0.00%, 5.8× | +0.03%, 2.6× |
+0.04%, 0.3× | +0.04%, 0.4× |", and points to that page for the targets):

- "K = 2: energy at most 0.1% above min-cut at every n"
- "K = 3/4: energy at most 0.5% above α-expansion"

Thresholds. Every solve here is deterministic (the default start is ½ everywhere, and the
threaded kernels give the same bits on any number of threads), so each threshold is the gap
measured on 2026-11-26 on the 2-core development machine, times 1.5, plus an absolute slack of
0.25 percentage points for ADMM alone and 0.02 for the polished answer (all of these are below
the claims). Next to each threshold: the measured value. Negative measured gaps count as 0.

What these catch, each injected into a copy of the solver one at a time (2026-11-26): the slow
ρ schedule of small problems (``CoarseToFineOptions.small_growth`` 1.01 → 1.03, or not applied
to whole problems, or not to the coarsest level), the K > 2 starting penalty
(``small_rho0_multi`` 0.1 → 0.5, 0.3 or 0.03), the early-fixing tolerance
(``EarlyFixingOptions.delta`` 0.05 → 0.1 or more), the band radius (2 → 1 or 0), the descent
thresholds (K = 2: (0.5,) or (0.2, 0.5, 0.8); K > 2: (0.5,) or (0.1, 0.5, 0.9)), coarse to fine
turned off, and the model's defaults: λ (10 → 3, 5, 7, 15, 20, 25) and the GMM's components
(5 → 1, 2, 3, 4, 8) change what ADMM reaches on these inputs, and the two ground-truth tests at
the end fail on their own for λ <= 3 or >= 20 and for fewer than 5 components.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Callable

import numpy as np
import pytest
from scipy import ndimage

from segapp.cli.bench import TABLE1_LAMBDA, sample
from segapp.core.io import ASSETS_DIR
from solver.mrf import DEFAULT_LAMBDA, CoarseToFineOptions, MRFProblem, build_problem, solve_mrf
from solver.mrf.solve.pyramid import pyramid
from tests.solver._mrf_helpers import shapes_image

#: The documented targets (docs/performance.md, "Targets"), in percent above the yardstick.
CLAIM = {2: 0.1, 3: 0.5}


@dataclass(frozen=True)
class Case:
    """One input, with the largest gaps (percent) allowed to ADMM alone and after the polish,
    measured at the Table 1 protocol's λ (``build(lam)`` makes the problem at any λ)."""

    name: str
    build: Callable[[float], MRFProblem]
    admm_max: float
    polished_max: float
    levels: int = 1  # pyramid levels the solve must use (1: solved whole)
    coarsest_max: float | None = None  # ADMM alone at the coarsest level, against its yardstick

    def __str__(self) -> str:
        return self.name


def _shapes(seed: int, k: int, size: int) -> Callable[[], MRFProblem]:
    def build(lam: float) -> MRFProblem:
        image, _, strokes = shapes_image(seed=seed, k=k, size=size)
        return build_problem(image, strokes, k, lam=lam, seed=seed)
    return build


def _photo(n: int, k: int, name: str = "cameraman") -> Callable[[], MRFProblem]:
    """A bundled photo and its strokes resized to about ``n`` pixels (the Table 1 protocol)."""
    def build(lam: float) -> MRFProblem:
        if name == "cameraman":
            return build_problem(*sample(n, k), k, lam=lam)
        return build_problem(*sample(n, k, str(ASSETS_DIR / f"{name}.png"),
                                     str(ASSETS_DIR / f"{name}_strokes_k{k}.png")), k, lam=lam)
    return build


# Sizes: whole problems of 576 to 5041 pixels (the slow schedule of problems up to 32000), and
# 200 × 200 = 40000 pixels, solved coarse to fine in three levels (40000 > whole_max = 32000,
# halved while a level has more than coarsest = 8000 pixels: 40000 → 10000 → 2500).
CASES = [
    # synthetic rectangles, K = 2 (measured: +0.000% alone and polished for each seed)
    *(Case(f"shapes-k2-seed{s}-48px", _shapes(s, 2, 48), admm_max=0.25, polished_max=0.02)
      for s in range(4)),
    # synthetic rectangles, K = 3
    Case("shapes-k3-seed0-32px", _shapes(0, 3, 32),
         admm_max=2.56,  # measured +1.534%
         polished_max=0.02),  # measured +0.000%
    # (measured: +0.000% alone and polished for each of these)
    *(Case(f"shapes-k3-seed{s}-{px}px", _shapes(s, 3, px), admm_max=0.25, polished_max=0.02)
      for s, px in ((2, 32), (3, 32), (5, 24), (0, 48))),
    # the bundled cameraman, K = 2 (claim: 0.1% above min-cut)
    Case("cameraman-k2-1e3", _photo(1000, 2), admm_max=0.25,  # measured +0.000%
         polished_max=0.02),  # measured +0.000%
    Case("cameraman-k2-3e3", _photo(3000, 2), admm_max=0.42,  # measured +0.110%
         polished_max=0.02),  # measured +0.000%
    Case("cameraman-k2-5e3", _photo(5000, 2), admm_max=3.38,  # measured +2.086%
         polished_max=0.02),  # measured +0.000%
    # the bundled cameraman and coffee, K = 3 (claim: 0.5% above α-expansion)
    Case("cameraman-k3-1e3", _photo(1000, 3), admm_max=65.66,  # measured +43.601%
         polished_max=0.02),  # measured +0.000%
    Case("cameraman-k3-3e3", _photo(3000, 3), admm_max=2.44,  # measured +1.454%
         polished_max=0.02),  # measured +0.000%
    Case("cameraman-k3-4e3", _photo(4000, 3), admm_max=6.66,  # measured +4.271%
         polished_max=0.02),  # measured +0.000%
    Case("cameraman-k3-5e3", _photo(5000, 3), admm_max=3.72,  # measured +2.313%
         polished_max=0.02),  # measured -0.107% (below α-expansion)
    Case("coffee-k3-1e3", _photo(1000, 3, "coffee"), admm_max=47.51,  # measured +31.500%
         polished_max=0.02),  # measured +0.000%
    Case("coffee-k3-3e3", _photo(3000, 3, "coffee"), admm_max=8.45,  # measured +5.466%
         polished_max=0.02),  # measured +0.000%
    # coarse to fine, three pyramid levels; ADMM alone here is the finest level's ADMM (the
    # coarser levels are always polished), the answer of polish=False
    Case("cameraman-k2-4e4-3-levels", _photo(40000, 2), admm_max=1.52,  # measured +0.849%
         polished_max=0.021,  # measured +0.0006%
         levels=3, coarsest_max=1.75),  # measured +0.998%
    Case("cameraman-k3-4e4-3-levels", _photo(40000, 3), admm_max=2.45,  # measured +1.464%
         polished_max=0.18,  # measured +0.107%
         levels=3, coarsest_max=6.08),  # measured +3.883%
    Case("coffee-k3-4e4-3-levels", _photo(40000, 3, "coffee"), admm_max=2.33,  # measured +1.386%
         polished_max=0.02,  # measured -0.003%
         levels=3, coarsest_max=1.47),  # measured +0.812%
]


@cache
def _problem(case: Case, lam: float = TABLE1_LAMBDA) -> tuple[MRFProblem, float]:
    """The case's problem at ``lam`` and its yardstick energy, built once per test session."""
    problem = case.build(lam)
    method = "mincut" if problem.k == 2 else "expansion"
    return problem, solve_mrf(problem, method).energy


def _gap(energy: float, reference: float) -> float:
    return 100.0 * (energy - reference) / abs(reference)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_admm_alone_stays_close_to_the_yardstick(case):
    """ADMM's own answer (``polish=False``): the gap the polish would otherwise hide. Coarse to
    fine, also the coarsest level's ADMM (solved whole with the slow schedule, then always
    polished), from the callback: a coarse labelling's energy is that of its copy to the
    pixels, and ADMM's answer is its best rounded iterate."""
    problem, reference = _problem(case)
    best: dict[int, float] = {}

    def track(state) -> None:
        best[state.level] = min(best.get(state.level, np.inf), state.energy_rounded)

    res = solve_mrf(problem, "admm", polish=False,
                    callback=track if case.coarsest_max is not None else None)
    assert res.energy == pytest.approx(problem.energy(res.labels))
    gap = _gap(res.energy, reference)
    assert gap <= case.admm_max, f"{case}: ADMM alone {gap:+.3f}% above the yardstick"
    if case.coarsest_max is not None:
        levels, _ = pyramid(problem, CoarseToFineOptions().coarsest)
        coarsest = levels[-1]
        assert len(levels) == case.levels and sorted(best) == list(range(case.levels))
        method = "mincut" if coarsest.k == 2 else "expansion"
        gap = _gap(best[len(levels) - 1], solve_mrf(coarsest, method).energy)
        assert gap <= case.coarsest_max, f"{case}: coarsest level {gap:+.3f}% above its yardstick"


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=str)
def test_polished_answer_meets_the_documented_target(case):
    """The default solve against the documented target, and the pyramid it ran on."""
    problem, reference = _problem(case)
    levels: set[int] = set()
    res = solve_mrf(problem, "admm", callback=lambda state: levels.add(state.level))
    assert case.polished_max <= CLAIM[problem.k]
    gap = _gap(res.energy, reference)
    assert gap <= case.polished_max, f"{case}: polished {gap:+.4f}% above the yardstick"
    # the polish starts from ADMM's answer and never raises the energy
    assert res.energy <= res.energy_admm + 1e-9 * abs(res.energy_admm)
    assert levels == set(range(case.levels)), f"{case}: ran on pyramid levels {sorted(levels)}"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["shapes-k3-seed3-32px", "cameraman-k2-5e3", "cameraman-k3-4e3",
                                  "coffee-k3-1e3", "cameraman-k2-4e4-3-levels",
                                  "cameraman-k3-4e4-3-levels"])
def test_polished_answer_at_the_apps_lambda(name):
    """The caps above were measured at the Table 1 protocol's λ = 10; the app's default is 15
    (docs/decisions.md, default lambda). Its stronger smoothness makes ADMM alone worse at
    K = 3 on small problems (measured 2026-12-02: +197% on shapes-k3-seed3, +261% on
    cameraman-k3-1e3), not the polished answer: +0.0000% on every case, coffee-k3-1e3
    -2.55% (below α-expansion). These six are the cases where ADMM alone moved most."""
    assert DEFAULT_LAMBDA != TABLE1_LAMBDA  # (else the protocol's cases cover it)
    case = next(c for c in CASES if c.name == name)
    problem, reference = _problem(case, DEFAULT_LAMBDA)
    assert problem.lam == DEFAULT_LAMBDA
    res = solve_mrf(problem, "admm")
    gap = _gap(res.energy, reference)
    assert gap <= case.polished_max, f"{case} at λ = {DEFAULT_LAMBDA:g}: polished {gap:+.4f}%"


@pytest.mark.slow
def test_a_warm_start_on_a_large_image_solves_a_band_and_keeps_the_answer():
    """The app re-runs warm-started from the last answer. Above 32000 pixels a cold run is
    coarse to fine; a warm one goes straight to coarse to fine's last step, the warm start
    standing in for the coarser answer: only a band round its boundaries is solved again, and
    the re-run ends no worse than the answer it continues (it used to drop coarse to fine
    and solve the whole image with the fast schedule: +0.146% above min-cut after a cold
    +0.0006%, measured 2026-11-26). Measured now: 10785 of 40000 pixels free, the cold energy
    kept; from ADMM's continuous answer instead, +0.095% (its rounding: +0.85%)."""
    case = next(c for c in CASES if c.name == "cameraman-k2-4e4-3-levels")
    problem, reference = _problem(case)
    assert problem.n > CoarseToFineOptions().whole_max
    cold = solve_mrf(problem, "admm")
    seen: list[tuple[int, int]] = []
    answer = np.eye(problem.k)[cold.labels.ravel() - 1]
    warm = solve_mrf(problem, "admm", x0=answer,
                     callback=lambda s: seen.append((s.level, s.solver.free.size)))
    assert {level for level, _ in seen} == {0}
    assert 0 < max(free for _, free in seen) < problem.n / 2
    assert warm.energy <= cold.energy + 1e-9 * abs(cold.energy)
    # from ADMM's own continuous answer: never worse than that start's rounding
    x = cold.x_continuous.reshape(problem.n, problem.k)
    hard = np.asarray(problem.hard).ravel()
    rounding = np.where(hard > 0, hard, x.argmax(1) + 1).reshape(problem.shape)
    again = solve_mrf(problem, "admm", x0=cold.x_continuous)
    assert again.energy <= problem.energy(rounding) + 1e-9 * abs(reference)


# --- the model's defaults, against ground truth --------------------------------------------


def _bar_and_square(seed: int = 0, size: int = 64, noise: float = 0.1):
    """Grey image: a dark background, a bright square and a bright 3-pixel bar, with noise.

    Returns (image, truth labels 1..2, strokes on the background and inside the square only:
    the bar is never painted).
    """
    rng = np.random.default_rng(seed)
    truth = np.ones((size, size), np.int32)
    truth[12:40, 10:36] = 2
    truth[48:51, 6:58] = 2  # the thin structure
    image = np.clip(np.where(truth == 2, 0.7, 0.3) + rng.normal(0.0, noise, truth.shape), 0, 1)
    strokes = np.zeros_like(truth)
    strokes[3, 3:60] = strokes[60, 3:60] = 1
    strokes[25, 14:32] = 2
    return image, truth, strokes


def test_default_lambda_removes_specks_and_keeps_thin_structures():
    """docs/algorithm.md: with the default λ "specks of ambiguous colour disappear";
    "λ = 3 leaves islands of ambiguous colour and λ = 25 starts to eat thin structures".

    Measured with the default λ (15): 1 connected region more than the truth's 3 (one speck),
    97% of the bar kept, as at 10 and 12.5. λ = 3 leaves 4 extra regions; λ = 20 keeps 37% of
    the bar, λ = 25 none: the default sits below that edge.
    """
    image, truth, strokes = _bar_and_square()
    problem = build_problem(image, strokes, 2)  # the default λ
    labels = solve_mrf(problem, "mincut").labels
    eight = np.ones((3, 3))
    regions = sum(ndimage.label(labels == c, structure=eight)[1] for c in (1, 2))
    assert regions - 3 <= 2  # measured 1
    assert (labels[48:51, 6:58] == 2).mean() >= 0.9  # measured 0.97
    assert (labels == truth).mean() >= 0.99


def _interleaved_modes(seed: int, cell: int = 8, grid: int = 6, noise: float = 0.01):
    """Patches of 9 grey levels, alternately foreground (0.1, 0.3, 0.5, 0.7, 0.9) and background
    (0.2, 0.4, 0.6, 0.8), shuffled on a 6 × 6 grid, a stroke through every patch.

    A label's colour model needs one component per grey level: a component that merges two of
    the foreground's levels sits on a background level between them.
    """
    rng = np.random.default_rng(seed)
    modes = [(0.1, 2), (0.3, 2), (0.5, 2), (0.7, 2), (0.9, 2), (0.2, 1), (0.4, 1), (0.6, 1),
             (0.8, 1)]
    truth = np.zeros((grid * cell, grid * cell), np.int32)
    image = np.zeros(truth.shape)
    for index, mode in enumerate(rng.permutation(np.arange(grid * grid) % len(modes))):
        r, c = divmod(index, grid)
        block = (slice(r * cell, (r + 1) * cell), slice(c * cell, (c + 1) * cell))
        image[block], truth[block] = modes[mode]
    image = np.clip(image + rng.normal(0.0, noise, image.shape), 0.0, 1.0)
    strokes = np.zeros_like(truth)
    strokes[cell // 2::cell, :] = truth[cell // 2::cell, :]
    strokes[:, ::3] = 0
    return image, truth, strokes


@pytest.mark.parametrize("seed", [0, 1])
def test_default_colour_model_tells_interleaved_grey_levels_apart(seed):
    """The default GMM (5 components, as GrabCut) separates a label of five grey levels from one
    of four levels between them. Measured: every pixel right with 5 components; with 4, 94.4%
    (seed 0) and 80.6% (seed 1), one patch is 2.8% of the image."""
    image, truth, strokes = _interleaved_modes(seed)
    problem = build_problem(image, strokes, 2)
    assert problem.colour_model == "gmm"
    labels = solve_mrf(problem, "mincut").labels
    assert (labels == truth).mean() >= 0.99  # measured 1.000
