"""The solver: where a fit starts and how L-BFGS runs reach the optimum.

:mod:`._start` builds the starting point (class means, the optimal bias, a
softmax warm start); :mod:`._lbfgs` runs scipy's L-BFGS through the softening
schedule and the state rounds of SV-Softmax, on any
:class:`~sklmargin.objective.MarginObjective`; :mod:`._sphere` is its
balanced run for the losses that normalise their prototypes.
"""

from ._lbfgs import SolverResult, fit_continuation, lambda_schedule, lbfgs

__all__ = ["SolverResult", "fit_continuation", "lambda_schedule", "lbfgs"]
