"""The polish: exact moves that never raise the energy (ICM, pair and region moves, fusions with
proposals), and the pipeline that runs them after ADMM."""

from solver.mrf.polish.icm import icm
from solver.mrf.polish.pipeline import polish_labels

__all__ = ["icm", "polish_labels"]
