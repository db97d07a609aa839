"""The names users choose between, defined once for the library, the CLI and the app."""

#: Segmentation methods of :func:`solver.mrf.solve_mrf`: ℓ2-box ADMM and the yardsticks.
METHODS = ("admm", "mincut", "expansion", "lp")
#: Array backends of :func:`solver.get_backend`.
BACKENDS = ("cpu", "gpu", "auto")
#: Colour models of :func:`solver.mrf.fit_colour_models`.
COLOUR_MODELS = ("gmm", "histogram")
