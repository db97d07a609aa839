"""Yardsticks for the ADMM solver: exact min-cut (K = 2), alpha-expansion, LP relaxation."""

from solver.reference.expansion import alpha_expansion
from solver.reference.lp import lp_relaxation
from solver.reference.mincut import mincut

__all__ = ["alpha_expansion", "lp_relaxation", "mincut"]
