"""Binary quadratic programs: ``solve_bqp``, the library's general entry point."""

from solver.bqp.descent import one_flip_descent
from solver.bqp.solve import solve_bqp

__all__ = ["one_flip_descent", "solve_bqp"]
