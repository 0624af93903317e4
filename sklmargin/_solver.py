"""L-BFGS glue: one smooth problem per call, continuation across problems.

Two parts of the family are not one smooth problem:

* L-/A-Softmax only train when the margin is introduced gradually (the papers'
  ``lambda`` schedule). We solve a sequence of smooth problems with decreasing
  ``lambda``, each warm-started from the previous solution.
* SV-Softmax's support-vector mask is piecewise constant in the parameters, so
  its objective jumps where a mask entry flips, and L-BFGS's line search assumes
  smoothness. We hold the mask fixed during a run, recompute it, and warm-start
  the next run until the mask no longer changes (DESIGN.md section 3.4).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

# Relative decrease that still counts as progress: essentially off, so that the
# projected-gradient test ``tol`` decides when to stop (as LogisticRegression).
_FTOL = 64 * np.finfo(np.float64).eps


@dataclass
class SolverResult:
    """What a (multi-stage) L-BFGS fit returns."""

    params: np.ndarray
    n_iter: int
    converged: bool
    message: str


def lbfgs(fun, x0, *, max_iter, tol, verbose=0):
    """Minimise ``fun`` (returning value and gradient) with scipy's L-BFGS-B.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)``, one forward and backward pass.
    x0 : ndarray
        Starting point (float64).
    max_iter : int
        Iteration budget.
    tol : float
        Stop when the largest absolute gradient entry is below ``tol``.
    verbose : int
        Passed on as scipy's ``iprint`` when positive.

    Returns
    -------
    SolverResult
    """
    options = {"maxiter": max_iter, "gtol": tol, "ftol": _FTOL, "maxls": 50}
    if verbose > 1:
        options["iprint"] = verbose - 1
    result = minimize(fun, x0, jac=True, method="L-BFGS-B", options=options)
    converged = result.status == 0
    if result.status == 2:
        # "ABNORMAL" line-search ends happen once the objective's round-off
        # dominates its decrease; at a gradient already near tol that is the
        # optimum to working precision, not a failure.
        converged = bool(np.max(np.abs(result.jac), initial=0.0) <= 10 * tol)
    message = result.message
    if isinstance(message, bytes):  # older scipy
        message = message.decode()
    return SolverResult(result.x, int(result.nit), converged, str(message))


def fit_continuation(
    objective,
    x0,
    *,
    lambdas=(0.0,),
    max_iter=1000,
    tol=1e-6,
    max_sv_rounds=10,
    verbose=0,
):
    """Solve the sequence of smooth problems an objective needs.

    For every ``lambda`` in ``lambdas`` (one value for losses without softening),
    run L-BFGS; with SV-Softmax (``objective.t > 1``) repeat with the support
    vector mask recomputed at the solution until it is stable or
    ``max_sv_rounds`` runs are done. Every stage warm-starts from the last.

    Parameters
    ----------
    objective : LinearMarginObjective
        Has ``loss_gradient``, settable ``lam`` and ``sv_mask``, and
        ``compute_sv_mask``.
    x0 : ndarray
        Starting parameters.
    lambdas : sequence of float
        Softening schedule, the last value is the problem the user asked for.
    max_iter : int
        Iteration budget of each run.
    tol : float
        Gradient tolerance of the final run; earlier runs only set up the next
        warm start and stop at ``max(tol, 1e-4)``.
    max_sv_rounds : int
        Cap on mask recomputations per stage.
    verbose : int

    Returns
    -------
    SolverResult
        ``converged`` refers to the last run; ``n_iter`` is the total.
    """
    params = np.asarray(x0, dtype=np.float64)
    n_iter = 0
    result = None
    uses_sv = objective.t != 1.0
    for stage, lam in enumerate(lambdas):
        objective.lam = lam
        last_stage = stage == len(lambdas) - 1
        stage_tol = tol if last_stage else max(tol, 1e-4)
        if uses_sv:
            params, result, stage_iter = _sv_rounds(
                objective, params, max_iter, stage_tol, max_sv_rounds, verbose
            )
        else:
            result = lbfgs(
                objective.loss_gradient,
                params,
                max_iter=max_iter,
                tol=stage_tol,
                verbose=verbose,
            )
            params, stage_iter = result.params, result.n_iter
            _report(verbose, lam, 0, result)
        n_iter += stage_iter
    objective.sv_mask = None
    return SolverResult(params, n_iter, result.converged, result.message)


def _sv_rounds(objective, start, max_iter, tol, max_rounds, verbose):
    """Mask rounds of SV-Softmax, keeping the best point of the exact objective.

    Each round solves the smooth problem with a fixed support-vector mask. The
    mask at its solution may differ, and a fixed point need not exist (entries
    can oscillate across the boundary in a 2-cycle), so each round is judged on
    the *exact* objective (mask recomputed): rounds go on while it decreases and
    the mask changes, and the best point is returned.

    Every round starts from the same ``start``, not from the previous solution:
    a fixed-mask optimum does not depend on the start, and this way the result
    depends on earlier rounds only through their (discrete) masks. Warm starts
    carried each round's last-bit round-off into the next run, where L-BFGS's
    line search amplified it to ~1e-7 (its floor, sqrt(eps / curvature)), so a
    weighted fit and the same data with repeated rows ended visibly apart.
    """
    objective.sv_mask = None
    best_value = objective.loss_gradient(start)[0]  # exact: mask from params
    mask = objective.compute_sv_mask(start)
    best_params, best_result, n_iter = start, None, 0
    for sv_round in range(max_rounds):
        objective.sv_mask = mask
        result = lbfgs(
            objective.loss_gradient, start, max_iter=max_iter, tol=tol, verbose=verbose
        )
        n_iter += result.n_iter
        _report(verbose, objective.lam, sv_round, result)
        objective.sv_mask = None
        value = objective.loss_gradient(result.params)[0]
        new_mask = objective.compute_sv_mask(result.params)
        # A relative threshold keeps the decision identical under round-off.
        if not value < best_value - 1e-12 * abs(best_value):
            break
        best_value, best_params, best_result = value, result.params, result
        if np.array_equal(new_mask, mask):
            break
        mask = new_mask
    if best_result is None:  # no round improved on the start: report the last
        best_result, best_params = result, result.params
    return best_params, best_result, n_iter


def _report(verbose, lam, sv_round, result):
    if verbose:
        print(
            f"[sklmargin] lambda={lam:g} sv_round={sv_round} "
            f"iterations={result.n_iter} {result.message}"
        )


def warn_if_not_converged(result, max_iter, tol, estimator_name):
    """Emit a ConvergenceWarning naming ``max_iter`` and ``tol`` if needed."""
    if not result.converged:
        warnings.warn(
            f"{estimator_name} did not converge: L-BFGS stopped with "
            f"'{result.message}' after {result.n_iter} iterations in total "
            f"(max_iter={max_iter} per run, tol={tol}). Increase max_iter, loosen "
            "tol, or scale the data (e.g. StandardScaler).",
            ConvergenceWarning,
            stacklevel=3,
        )
