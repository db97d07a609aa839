"""The switches of the segmentation solver: what the polish tries, when early fixing fixes
pixels, and how coarse to fine cuts the image, as frozen dataclasses passed down explicitly.

The defaults are the tuned values; docs/decisions.md records the measurements behind each. A
caller changes one with :func:`dataclasses.replace`::

    from dataclasses import replace
    from solver.mrf import SolveOptions, solve_mrf

    options = SolveOptions()
    options = replace(options, polish=replace(options.polish, edge_snap=False))
    solve_mrf(problem, "admm", options=options)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

#: The smoothness weight λ when none is given (here, a leaf module, so a front end can show it
#: without loading the model's kernels; :mod:`solver.mrf.build.problem` uses it).
DEFAULT_LAMBDA: float = 15.0

#: Iterations (1-based, per ADMM run) whose continuous iterate is kept for the polish's
#: level-set fusion: dense early, when the iterate is still the smooth relaxation.
SNAPSHOT_ITERATIONS = frozenset((1, 2, 3, 5, 8, 12, 17, 25, 35, 50, 70, 100, 140, 200))


@dataclass(frozen=True)
class FusionOptions:
    """The level-set fusions of the polish: proposals made from ADMM's iterates
    (:func:`solver.mrf.polish.fusion.fuse_level_sets_into`), plain and carved by ICM
    (descent fusion, :mod:`solver.mrf.polish.descents`).

    Attributes
    ----------
    thresholds : tuple of float
        Level-set thresholds of the plain fusion ("label c wherever x_c > t").
    max_pixels : int or None
        Largest plain proposal, in pixels (larger ones are skipped; None: no cap). The early
        iterates of K > 2 give proposals as large as the whole band.
    coarse_rounds : int
        Rounds of plain fusion at a coarser level of coarse to fine (each round fuses every
        snapshot, then ICM and region moves; they stop when one takes nothing).
    final_rounds : int
        The same in a final polish, after descent fusion and the edge-snapped proposals.
    descent_thresholds : tuple of float
        Level-set thresholds of descent fusion for K = 2: wider than the plain fusion's, since
        ICM carves away what a loose level set takes in.
    descent_thresholds_multi : tuple of float
        The same for K > 2.
    descent_max_pixels : int or None
        Largest descent-fusion proposal.
    snapshot_iterations : frozenset of int
        ADMM iterations whose continuous iterate is kept for the fusions.
    """

    thresholds: tuple[float, ...] = (0.2, 0.5, 0.8)
    max_pixels: int | None = 20000
    coarse_rounds: int = 3
    final_rounds: int = 1
    descent_thresholds: tuple[float, ...] = (0.1, 0.5, 0.9)
    descent_thresholds_multi: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    descent_max_pixels: int | None = 15000
    snapshot_iterations: frozenset[int] = SNAPSHOT_ITERATIONS


@dataclass(frozen=True)
class TVOptions:
    """The TV-relaxation proposals of a final polish without constraints
    (:mod:`solver.mrf.polish.tv`): of the labelling for K = 2, of each label's α-expansion
    move for K > 2.

    Attributes
    ----------
    iterations : int
        K = 2: most linearized-ADMM steps on the TV relaxation whose level sets are fused; 0
        turns the K = 2 proposals off.
    gap : float or None
        K = 2: the steps stop once the polished labels are proved within this fraction of
        their energy's magnitude of the optimum (the relaxation's duality gap, checked every
        25 steps); None: never.
    fuse_every : int or None
        K = 2: the level sets are fused every this many steps (a multiple of 25), and the
        steps stop once a fusion takes nothing; None: once, after ``iterations`` steps.
    fuse_next : int or None
        K = 2: the rounds after the first are this many steps (a multiple of 25); None:
        ``fuse_every`` steps too.
    proof : float or None
        K = 2, with ``fuse_every``: neither an empty fusion nor the step count ends the steps
        while the labels are not proved within this fraction of their energy's magnitude of
        the optimum (the duality gap at the labels after the fusion); the steps go on, up to
        ``proof_scale`` times the count. None: the other stops only.
    proof_scale : float
        That longest run, as a multiple of the K = 2 step count (:func:`binary_tv_steps`).
    only_binary : bool
        K = 2, where the proposals run: skip descent fusion and the edge-snapped proposals
        (``PolishOptions.descents``, ``edge_snap``), whose regions the relaxation's level sets
        take too.
    grow_above : int or None
        Above this many pixels the K = 2 ``iterations`` grow with the image's side,
        ``sqrt(n / grow_above)`` times, rounded up to whole rounds of ``fuse_every`` (a
        boundary drifts a bounded distance in pixels a step); None: never.
    expansion_iterations : int
        K > 2: the same steps on the relaxation of each label's α-expansion move
        (:func:`solver.mrf.polish.tv.fuse_tv_expansions_into`); 0 turns them off.
    expansion_gap : float or None
        K > 2: each expansion move's steps stop once the move is proved to gain at most this
        fraction of the energy's magnitude (its duality gap at the current labels, checked
        every 25 steps); None: never.
    step : float
        The primal step scale of every TV relaxation (the local re-solves' and the
        constrained polish's too), relative to the largest pairwise weight ``2 lam``.
    thresholds : tuple of float
        Levels of the relaxations proposed.
    max_pixels : int or None
        Largest image (pixels) given TV proposals (either kind); None: any.
    """

    iterations: int = 800
    gap: float | None = 1e-5
    fuse_every: int | None = 200
    fuse_next: int | None = None
    proof: float | None = 1e-3
    proof_scale: float = 4.0
    only_binary: bool = True
    grow_above: int | None = 1_000_000
    expansion_iterations: int = 400
    expansion_gap: float | None = 1e-5
    step: float = 1.0
    thresholds: tuple[float, ...] = (0.1, 0.3, 0.5, 0.7, 0.9)
    max_pixels: int | None = 4_000_000


@dataclass(frozen=True)
class ConstrainedOptions:
    """The relaxations of the polish under area bounds and apart pairs
    (:mod:`solver.mrf.polish.constrained`, :mod:`solver.mrf.polish.layered`).

    Attributes
    ----------
    expansion_iterations : int
        Steps of the TV-relaxed expansion moves in the constrained polish (apart pairs, K > 2
        area bounds), whose moves keep the constraints; 0 turns them off.
    tv_max_pixels : int or None
        Largest image (pixels) given the constrained and layered polishes' relaxations.
    layered_iterations : int
        K = 3 with one apart pair and no area bound, final polish: most steps on the layered TV
        relaxation of the nesting; 0 turns it off.
    relaxation_gap : float
        The layered relaxation's and the area relaxation's steps stop once the labels they
        start from are proved within this fraction of their energy's magnitude of the optimum
        (the relaxation's duality gap, checked every 25 steps), and they then propose nothing;
        0: never.
    area_iterations, area_step : int, float
        Steps and step scale of the TV relaxation under an area bound (K = 2): its multiplier
        needs more and longer steps.
    area_levels : tuple of float
        Levels of that relaxation whose sets, where within the bounds, are tried whole.
    area_small : tuple of (int, float) or None
        Steps and step scale of a second relaxation under the area bound on small images (the
        area multiplier of the first can swing there without settling); its own polish runs
        too and the best end is kept. None: none.
    area_small_pixels : int
        Largest image (pixels) given the second relaxation.
    relax_area_max_pixels : int
        Largest image (pixels) whose final polish, K = 2 with area bounds and no apart pairs,
        also makes the relax-and-repair move (the polish without the bound, then the repair and
        the feasible polish from where it ends), the better end kept; 0: none. It costs about a
        tenth of the solve and found lower energies on small images only (docs/decisions.md,
        Area bounds and apart pairs, "Relax and repair").
    """

    expansion_iterations: int = 100
    tv_max_pixels: int | None = 1_200_000
    layered_iterations: int = 200
    relaxation_gap: float = 1e-5
    area_iterations: int = 400
    area_step: float = 3.0
    area_levels: tuple[float, ...] = tuple(round(0.02 * i, 2) for i in range(1, 50))
    area_small: tuple[int, float] | None = (800, 1.0)
    area_small_pixels: int = 40_000
    relax_area_max_pixels: int = 131_072


@dataclass(frozen=True)
class LocalOptions:
    """The local re-solves of a final polish where a labelling shows the pyramid: straight
    label runs along a cell line (:func:`solver.mrf.polish.local.fuse_local_expansions_into`).

    Attributes
    ----------
    iterations : int
        A labelling that came through a pyramid (K > 2, or K = 2 with ``binary``): most steps
        of the TV-relaxed α-expansion moves re-solved in a window around each run; 0 turns
        them off.
    margin, run : int
        Free pixels around such a run, and the shortest run (exclusive) that counts.
    gap : float or None
        A window's steps stop once its move is proved to gain at most this fraction of the
        energy's magnitude; None: they run ``iterations``.
    rounds : int
        Most rounds: a round that took regions is followed by one around the new labels' runs
        outside the zones already re-solved, with twice the margin.
    binary : bool
        Re-solve such zones for K = 2 too, where the TV proposals do not run (above
        ``TVOptions.max_pixels``; below it their steps reach the runs' regions). On the tuning
        images at 6 MP (rectangles, K = 2) it took the straight runs 115 -> 22 at 1.37x the
        time, still 0.6x min-cut's (docs/decisions.md, "Local re-solves at pyramid cell
        lines").
    again : bool
        After the final level-set fusion, re-solve the runs it made outside the zones already
        re-solved (a fusion can lengthen a run that was too short when they ran).
    """

    iterations: int = 1600
    margin: int = 16
    run: int = 16
    gap: float | None = 1e-8
    rounds: int = 3
    binary: bool = True
    again: bool = True


@dataclass(frozen=True)
class PolishOptions:
    """What :func:`solver.mrf.polish.polish_labels` tries after ADMM (none of it raises the
    energy), its stages' switches here and their settings in one group each.

    Attributes
    ----------
    enabled : bool
        Polish at all (False: ADMM's own rounded labelling is the answer).
    split : bool
        Try split moves (a region re-split between two other labels, K > 2) in a final polish.
    descents : bool
        Try descent fusion (level sets of ADMM's iterates carved by ICM) in a final polish.
    edge_snap : bool
        Try edge-snapped proposals (boundary zones flooded again along image edges) in a final
        polish.
    pair_moves_binary : bool
        Try pair moves for K = 2 too (K > 2 always does): at K = 2 descent fusion and the
        edge-snapped proposals take the same two-pixel slivers, for less time.
    region_cap : float
        Largest region a region move considers, as a fraction of the level's pixels (at least
        ``region_cap_min``): a search stops once it passes the cap, so a huge region (the
        background) near a change costs at most the cap.
    region_cap_min : int
        Floor of that cap, in pixels.
    fusion : FusionOptions
        The level-set fusions (plain and descent).
    tv : TVOptions
        The TV-relaxation proposals without constraints.
    constrained : ConstrainedOptions
        The relaxations under area bounds and apart pairs.
    local : LocalOptions
        The local re-solves along the pyramid's cell lines.
    """

    enabled: bool = True
    split: bool = True
    descents: bool = True
    edge_snap: bool = True
    pair_moves_binary: bool = False
    region_cap: float = 1 / 128
    region_cap_min: int = 2048
    fusion: FusionOptions = field(default_factory=FusionOptions)
    tv: TVOptions = field(default_factory=TVOptions)
    constrained: ConstrainedOptions = field(default_factory=ConstrainedOptions)
    local: LocalOptions = field(default_factory=LocalOptions)

    def cap(self, n: int) -> int:
        """The region-move cap for a level of ``n`` pixels."""
        return max(self.region_cap_min, int(self.region_cap * n))


@dataclass(frozen=True)
class EarlyFixingOptions:
    """When an ADMM run fixes the pixels whose iterate has settled on a label
    (:mod:`solver.mrf.solve.early_fixing`).

    Attributes
    ----------
    enabled : bool
        Fix settled pixels at all.
    window_growth : float
        A pixel must stay settled while the penalty grows by this factor (10 iterations at the
        default growth of 1.03, 30 at the slow schedule's 1.01).
    delta : float
        A pixel is settled when every entry of its iterate is within this of its one-hot point.
    min_rho : float
        From a cold start, nothing is fixed while the penalty is below this multiple of the
        problem scale: the relaxation is still soft, and early iterates can look settled
        before they are.
    min_fraction : float
        Fix the settled pixels only when they are at least this fraction of the free ones
        (rebuilding the system costs about as much as a few iterations).
    warm_start_check : bool
        A warm start counts as a check: pixels within ``delta`` of their warm-start label at the
        first pause are settled then (the coarse-to-fine bands start from the coarser answer,
        which most of a band keeps).
    tail_fraction : float
        K > 2: a run ends at the pause where fixing the settled pixels would leave at most this
        fraction of its free pixels free; the polish decides those (0: never).
    """

    enabled: bool = True
    window_growth: float = 1.34
    delta: float = 0.05
    min_rho: float = 0.3
    min_fraction: float = 0.1
    warm_start_check: bool = True
    tail_fraction: float = 0.1


@dataclass(frozen=True)
class CoarseToFineOptions:
    """How :func:`solver.mrf.solve.coarse_to_fine.solve_coarse_to_fine` cuts the problem.

    Attributes
    ----------
    coarsest : int
        Halve the image until a level has at most this many pixels.
    whole_max : int
        Images with at most this many pixels are solved whole, larger ones coarse to fine.
    small_growth : float
        Penalty growth of a problem solved whole this small, and of the coarsest level: slower
        annealing costs little there and avoids early commitments on small grids.
    small_rho0_multi : float
        Starting penalty of that slow schedule for K > 2 (K = 2 keeps the default): the one-hot
        relaxation needs longer to settle before the penalty takes over.
    band_radius : int
        Half-width of the band of free pixels around the boundaries at each finer level.
    revisit_radius : int or None
        Pixels that a coarser level's polish relabelled, grown by this many pixels, are also
        left free at the next level (ADMM never weighed those moves); None: no revisit.
    warm_fusion : bool
        After a band level's polish, fuse its labels with the level's warm start region by
        region (the band's first iterates are the smooth relaxation, which can take a right
        coarse decision back).
    """

    coarsest: int = 8000
    whole_max: int = 32000
    small_growth: float = 1.01
    small_rho0_multi: float = 0.1
    band_radius: int = 2
    revisit_radius: int | None = 8
    warm_fusion: bool = True


@dataclass(frozen=True)
class SolveOptions:
    """All the switches of a segmentation solve, passed to :func:`solver.mrf.solve_mrf`.

    Attributes
    ----------
    polish : PolishOptions
    early_fixing : EarlyFixingOptions
    coarse_to_fine : CoarseToFineOptions
    apart : {"split", "rows"}
        How ADMM holds apart pairs: ``"split"``, a copy of each row's two entries projected on
        its half-plane (the x-update keeps its split along label directions); ``"rows"``,
        exact inequality rows with slack in the x-update (CG on the whole pixel-major system).
        Measured side by side: docs/decisions.md, "Area bounds and apart pairs".
    apart_ratio : float
        The split's penalty over the box and sphere penalty (0.3: best of 0.03-3 on the
        K = 3 nesting samples at 1e4 pixels, docs/decisions.md).
    """

    polish: PolishOptions = field(default_factory=PolishOptions)
    early_fixing: EarlyFixingOptions = field(default_factory=EarlyFixingOptions)
    coarse_to_fine: CoarseToFineOptions = field(default_factory=CoarseToFineOptions)
    apart: str = "split"
    apart_ratio: float = 0.3

    def with_polish(self, enabled: bool) -> SolveOptions:
        """These options with the polish on or off (``polish.enabled``)."""
        if enabled == self.polish.enabled:
            return self
        return replace(self, polish=replace(self.polish, enabled=bool(enabled)))


DEFAULT_OPTIONS = SolveOptions()


@dataclass(frozen=True)
class ModelOptions:
    """How the model is made from a person's drawing (:func:`solver.mrf.segment` and
    :func:`solver.mrf.prepare`; the app and the command line take the same defaults).

    Attributes
    ----------
    rect_rounds, stroke_rounds : int
        GrabCut-style re-estimation rounds (:func:`solver.mrf.reestimate`) with a rectangle,
        and with strokes alone: the colour models are refitted to the answer this many times.
    unlabelled : int or None
        Strokes alone, K = 2: the label whose colour model also takes every unlabelled pixel to
        begin with (GrabCut's "probably background", so a colour no stroke of the object has is
        the background's); None: each model is fitted to its strokes alone.
    fix_strokes : bool
        Stroke pixels keep their label in the answer (seeds, as in Boykov and Jolly), as well
        as training its colour model; False: they only train it. Strokes of another label
        than 2 outside a rectangle only train (the rectangle's outside is label 2).
    copy_pixels : int
        Above this many pixels the rounds run on a copy reduced by a whole factor, and the full
        image is solved once on the copy's final models, warm-started from its answer.
    tol : float
        Rounds end once a solve changes at most this fraction of the pixels.
    """

    rect_rounds: int = 3
    stroke_rounds: int = 3
    unlabelled: int | None = 2
    fix_strokes: bool = True
    copy_pixels: int = 100_000
    tol: float = 1e-3

    def rounds_for(self, rect: object | None) -> int:
        """The rounds a drawing gets: :attr:`rect_rounds` with a rectangle, else
        :attr:`stroke_rounds`."""
        return self.rect_rounds if rect is not None else self.stroke_rounds


#: The model the app, the command line and :func:`solver.mrf.segment` use by default.
DEFAULT_MODEL = ModelOptions()

#: The colour models fitted once, each from its own strokes, stroke pixels only training them:
#: exactly :func:`solver.mrf.build_problem`'s model (for a study of the solver on a fixed MRF).
ONE_SHOT_MODEL = ModelOptions(rect_rounds=0, stroke_rounds=0, unlabelled=None,
                              fix_strokes=False)
