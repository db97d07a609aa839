"""Yardsticks for the ADMM solver: exact min-cut (K = 2), alpha-expansion, LP relaxation."""

from .expansion import alpha_expansion
from .lp import lp_relaxation
from .mincut import mincut

__all__ = ["alpha_expansion", "lp_relaxation", "mincut"]
