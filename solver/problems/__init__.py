"""Integer programs of other kinds than segmentation, written as BQPs for
:func:`solver.solve_bqp`, with the baselines the paper compares against: graph matching
(:mod:`solver.problems.matching`), information-theoretic clustering
(:mod:`solver.problems.clustering`) and ℓ1-regularised binary problems
(:mod:`solver.problems.tv`). The scripts in ``examples/`` run them and write their tables.
"""
