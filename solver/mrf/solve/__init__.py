"""Solving a segmentation MRF: the reduction to a BQP, early fixing, the pyramid and coarse to
fine, the live state and result, and ``solve_mrf`` (ADMM or a yardstick)."""
