"""Building a segmentation MRF: the grid graph and its Laplacian, colour models and unaries, and
the problem itself (:class:`solver.mrf.build.problem.MRFProblem`)."""
