"""The names users choose between, defined once for the library, the CLI and the app."""

#: Segmentation methods of :func:`solver.mrf.solve_mrf`: ℓ2-box ADMM, the yardsticks, and
#: gco-v3's α-expansion, the peer for K > 2 (where the optional ``gco-wrapper`` is installed).
METHODS = ("admm", "mincut", "expansion", "lp", "gco")
#: Array backends of :func:`solver.get_backend`.
BACKENDS = ("cpu", "gpu", "auto")
#: Colour models of :func:`solver.mrf.fit_colour_models`.
COLOUR_MODELS = ("gmm", "histogram")
