"""L-BFGS glue: one smooth problem per call, continuation across problems.

Two parts of the family are not one smooth problem:

* L-/A-Softmax only train when the margin is introduced gradually (the papers'
  ``lambda`` schedule). We solve a sequence of smooth problems with decreasing
  ``lambda``, each warm-started from the previous solution.
* A margin with a non-target *state* (SV-Softmax's support-vector mask) is
  piecewise smooth: its objective jumps where the state changes, and L-BFGS's
  line search assumes smoothness. We hold the state fixed during a run,
  recompute it, and run again, accepting a round only when it lowers the exact
  objective.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from ._sphere import scaled_lbfgs, sphere_scaling

# Relative decrease that still counts as progress: essentially off, so that the
# projected-gradient test ``tol`` decides when to stop (as LogisticRegression).
_FTOL = 64 * np.finfo(np.float64).eps
# A run that stops on the relative-reduction or line-search test counts as
# converged only if its largest gradient entry is within this factor of tol:
# the objective's round-off then dominates its decrease (the optimum to working
# precision). Beyond it the stop is a stall (e.g. L-Softmax prototypes
# collapsing onto the cone point w_j = 0), reported as not converged.
_STALL_FACTOR = 10.0
# Relative change of the objective below which two state rounds' values are
# the same (SV-Softmax): the rounds' acceptance and the warm refit's stall test.
_SAME_VALUE = 1e-12

# Fractions of a state round's step tried on the exact objective: where a state
# entry flipped, the full step can raise it while a shorter one still lowers it.
_BACKTRACK = (1.0, 0.5, 0.25, 0.125)

# Line-search steps of one L-BFGS iteration (scipy's default is 20), and the
# evaluations a run may spend in all: _EVALS_PER_ITERATION per iteration of its
# budget plus one line search. A well-posed run takes 1-1.5 evaluations per
# iteration; a run whose line searches keep failing (a stall at a kink,
# measured: 42 evaluations per iteration) stops there rather than spending
# seconds on a tiny problem.
_MAX_LINE_SEARCH = 50
_EVALS_PER_ITERATION = 2

# lambda schedule of L-/A-Softmax: start near plain softmax, divide by 10 per
# stage down to the user's final lambda.
_LAMBDA_START = 1000.0
_LAMBDA_FACTOR = 10.0
_LAMBDA_FLOOR = 0.1  # below this the next stage is the final lambda itself


def lambda_schedule(lambda_min):
    """Decreasing softening values ending at ``lambda_min``.

    Examples
    --------
    >>> lambda_schedule(5.0)
    [1000.0, 100.0, 10.0, 5.0]
    """
    schedule = []
    lam = _LAMBDA_START
    while lam > lambda_min and lam >= _LAMBDA_FLOOR:
        schedule.append(lam)
        lam /= _LAMBDA_FACTOR
    schedule.append(float(lambda_min))
    return schedule


@dataclass
class SolverResult:
    """What a (multi-stage) L-BFGS fit returns."""

    params: np.ndarray
    n_iter: int
    converged: bool
    message: str
    max_abs_grad: float = float("nan")
    #: Exact objective at ``params`` when the state rounds ended because a
    #: round from there found no decrease (None otherwise): a warm refit that
    #: starts at the same value does not repeat that round (:func:`state_rounds`).
    stalled_at: float | None = None
    #: Which shared iteration budget ran out, naming the setting that spent
    #: it ("" when none did): the fit then warns (:func:`warn_if_not_converged`).
    budget: str = ""
    #: Objective evaluations spent (scipy's ``nfev``; every run's, summed).
    n_eval: int = 0


def iteration_log(verbose):
    """Return a callback printing one line per L-BFGS iteration (None below 2).

    scipy's own iteration log (L-BFGS-B's ``iprint``) is deprecated in scipy
    1.17 and removed in 1.18; this one prints the iterate's objective.
    """
    if verbose <= 1:
        return None
    count = itertools.count(1)

    def log(intermediate_result):
        print(
            f"[sklmargin]   iteration {next(count)}: "
            f"objective {float(intermediate_result.fun):.10g}"
        )

    return log


def lbfgs(
    fun, x0, *, max_iter, tol, stationarity=None, verbose=0, scale=None,
    memory=None, max_eval=None,
):  # fmt: skip
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
        The fit has converged when the largest absolute gradient entry is
        below ``tol``.
    stationarity : callable, default=None
        ``stationarity(x, gradient) -> float``, the gradient size a stall is
        judged by (the objective's own scale); the largest absolute entry when
        None. Required with ``scale``, which it then also stops.
    verbose : int
        Above 1, one line per iteration (:func:`iteration_log`).
    scale : ndarray, default=None
        Run in the coordinates ``x / scale`` (:func:`sphere_scaling`), with
        50 curvature pairs, and stop when the scaled gradient, prototypes on
        their sphere, is below ``tol`` (``|v_j| dF/dv_j`` and
        ``scale_b dF/db``); ``stationarity`` is then that gradient. None: the
        plain run, stopped by scipy's test on the largest gradient entry.
    memory : int, default=None
        Curvature pairs of the plain run (scipy's ``maxcor``); None keeps
        scipy's 10. The sphere-scaled run keeps its own.
    max_eval : int, default=None
        Evaluations the run may spend (scipy's ``maxfun``); None allows
        :func:`evaluation_budget` of ``max_iter``. A run that shares a pool
        with other runs is given what is left of it.

    Returns
    -------
    SolverResult
        ``converged`` is True only when the gradient test at ``tol`` holds
        (to within a factor of 10 where scipy stopped on round-off).
    """
    options = {
        "maxiter": max_iter, "gtol": tol, "ftol": _FTOL, "maxls": _MAX_LINE_SEARCH,
        "maxfun": evaluation_budget(max_iter) if max_eval is None else max_eval,
    }  # fmt: skip
    log = iteration_log(verbose)
    if memory is not None:
        options["maxcor"] = int(memory)
    if scale is not None:
        result, max_abs_grad = scaled_lbfgs(
            fun, x0, scale, stationarity, tol=tol, options=options, log=log
        )
        raw_max = max_abs_grad
    else:
        result = minimize(
            fun, x0, jac=True, method="L-BFGS-B", options=options, callback=log
        )
        raw_max = float(np.max(np.abs(result.jac), initial=0.0))
        max_abs_grad = (
            raw_max if stationarity is None else stationarity(result.x, result.jac)
        )
    # status 0 covers scipy's gradient test (raw_max <= tol) but also its
    # relative-reduction stop, and status 2 its "ABNORMAL" line-search end:
    # those are round-off near an optimum only when the gradient (on the
    # objective's own scale) is small, and a stall otherwise.
    converged = raw_max <= tol or (
        result.status in (0, 2) and max_abs_grad <= _STALL_FACTOR * tol
    )
    # L-BFGS-B's message is a str in every supported scipy (bytes before 1.6)
    return SolverResult(
        result.x, int(result.nit), converged, result.message, max_abs_grad,
        n_eval=int(result.nfev),
    )  # fmt: skip


def evaluation_budget(max_iter):
    """Return the evaluations ``max_iter`` iterations may spend (line searches too).

    :data:`_EVALS_PER_ITERATION` per iteration plus one full line search: a
    well-posed run never reaches it; a run whose line searches keep failing
    stops there. A shared iteration budget has one such pool too, so that
    many short runs (the lambda stages, the state rounds) cannot each spend
    a run's worth of failed line searches.
    """
    return _EVALS_PER_ITERATION * max_iter + _MAX_LINE_SEARCH


def fit_continuation(
    objective,
    x0,
    *,
    lambdas=(0.0,),
    max_iter=1000,
    tol=1e-6,
    max_state_rounds=10,
    warm=False,
    verbose=0,
    sphere=False,
    stalled_at=None,
    spent=0,
    memory=None,
):
    """Solve the sequence of smooth problems an objective needs.

    For every ``lambda`` in ``lambdas`` (one value for losses without softening),
    run L-BFGS on the margin without its non-target state; then, for a margin
    with one (SV-Softmax), run state rounds at the final ``lambda`` from that
    solution (:func:`state_rounds`). A warm fit skips the plain solve: its
    rounds start from ``x0``, the previous model, which they can only improve.

    The work is bounded by three budgets of ``max_iter`` L-BFGS iterations
    each, whatever the number of runs: the final ``lambda``'s run has its
    own; the runs that only prepare it (the stages before the final
    ``lambda``, after the ``spent`` iterations of a softmax start) share one,
    the later stages being skipped once it is spent; the state rounds share
    one. A fit thus runs at most ``3 * max_iter`` iterations (it was
    ``max_iter`` per stage and per round, up to 15 times as many: seconds on
    a tiny problem at an extreme setting). A budget that runs out is named
    in the result (``budget``), and the estimator warns.

    Parameters
    ----------
    objective : MarginObjective
        The problem (:class:`~sklmargin.objective.MarginObjective`); each
        evaluation is told its ``lam`` and ``state``, nothing is set on it.
    x0 : ndarray
        Starting parameters.
    lambdas : sequence of float
        Softening schedule, the last value is the problem the user asked for.
    max_iter : int
        Iteration budget of the final run, and of the preparing stages and of
        the state rounds, each group together (see above).
    tol : float
        Gradient tolerance of the final run; earlier runs only set up the next
        warm start and stop at ``max(tol, 1e-4)``.
    max_state_rounds : int
        Cap on state recomputations.
    warm : bool
        Whether ``x0`` is a previous solution (see above).
    verbose : int
    sphere : bool, default=False
        Run losses with normalised prototypes sphere-scaled
        (:func:`sphere_scaling`); other losses run plain either way.
    stalled_at : float, default=None
        The previous fit's ``SolverResult.stalled_at`` (warm fits of a
        stateful margin; see :func:`state_rounds`).
    spent : int, default=0
        Iterations a start already took from the preparing budget (the
        softmax start of L-Softmax).
    memory : int, default=None
        Curvature pairs of the plain runs of the ``lambda`` stages
        (:func:`lbfgs`); None keeps scipy's 10.

    Returns
    -------
    SolverResult
        ``converged`` refers to the last run; ``n_iter`` is the total.
    """
    params = np.asarray(x0, dtype=np.float64)
    stateful = objective.margin.stateful
    plain = (
        objective.with_margin(objective.margin.stateless()) if stateful else objective
    )
    n_iter = 0
    result = None
    budget = ""
    scale = sphere_scaling(objective) if sphere else None
    if not (stateful and warm):
        # The preparing stages' shared budget (after a softmax start's share).
        left = max_iter - spent
        evals_left = evaluation_budget(left)
        for stage, lam in enumerate(lambdas):
            final = stage == len(lambdas) - 1
            if not final and min(left, evals_left) <= 0:  # on to the final lambda
                budget = budget or _schedule_spent(
                    objective.margin, lambdas, lam, max_iter
                )
                continue
            result = lbfgs(
                partial(plain.loss_gradient, lam=lam),
                params,
                max_iter=max_iter if final else left,
                tol=tol if final else max(tol, 1e-4),
                stationarity=plain.stationarity,
                verbose=verbose,
                scale=scale,
                memory=memory,
                max_eval=None if final else evals_left,
            )
            params = result.params
            n_iter += result.n_iter
            _report(verbose, lam, "plain", result)
            if not final:
                left -= result.n_iter
                evals_left -= result.n_eval
                if min(left, evals_left) <= 0 and not result.converged:
                    budget = _schedule_spent(objective.margin, lambdas, None, max_iter)
    if stateful:
        # Stateful margins run plain (sphere_scaling returns None for them).
        params, rounds_result = state_rounds(
            objective, params, max_iter, tol, max_state_rounds, verbose,
            lam=lambdas[-1], stalled_at=stalled_at if warm else None,
        )  # fmt: skip
        n_iter += rounds_result.n_iter
        result = replace(rounds_result, budget=rounds_result.budget or budget)
    else:
        result = replace(result, budget=budget)
    return replace(result, params=params, n_iter=n_iter)


def _schedule_spent(margin, lambdas, lam, max_iter):
    """Return the warning's sentence for a lambda schedule that spent its budget.

    ``lam``: the first stage skipped (None: the last one ran out).
    """
    where = "in its last stage" if lam is None else f"before lambda={lam:g}"
    return (
        f"The lambda schedule of loss={margin.name!r} (stages "
        f"{', '.join(f'{value:g}' for value in lambdas[:-1])} before "
        f"lambda_min={lambdas[-1]:g}, after the softmax start where the loss "
        f"has one) spent its shared budget of max_iter={max_iter} iterations "
        f"(or {evaluation_budget(max_iter)} evaluations) "
        f"{where}: the final stage started from there. "
    )


def state_rounds(
    objective, start, max_iter, tol, max_rounds, verbose=0, *, lam=0.0,
    stalled_at=None,
):  # fmt: skip
    """Run the rounds of a stateful margin, never ending above the start.

    Round ``r`` solves the smooth problem with the state fixed at the state of
    the best point so far, warm-started there. Because a fixed state agrees
    with the exact objective at the point it was taken from, L-BFGS can only
    lower the fixed-state objective from there; the exact objective at the new
    point (state recomputed) may still be higher, where a state entry flipped.
    So each round is judged on the exact objective and kept only if it lowers
    it (where the full step does not, the fractions 1/2, 1/4, 1/8 of it are
    tried); rounds stop when one does not, when the state no longer changes,
    after ``max_rounds``, or when they have spent ``max_iter`` iterations
    together (the result's ``budget`` then says so). The result is the best
    point seen, the start included: a fit (or a warm refit) never returns a
    model worse, on its own objective, than the one it started from.

    Where the rounds end on a round that found no decrease, the result's
    ``stalled_at`` is the exact objective at the point returned. A warm
    refit passes it back: a start at that value, to the rounds' relative
    threshold of 1e-12 (the same point of the same problem, read back from
    ``coef_`` and ``intercept_``: the previous call's solution) would run
    the same rejected round again, so it is returned as it is, in no
    iteration.

    Returns
    -------
    params : ndarray
        The best point.
    result : SolverResult
        Iterations over all rounds; convergence of the last accepted round
        (True when none was accepted: the start is then the best point found).
    """
    best_value, state = objective.value_and_state(start, lam=lam)
    best_params, n_iter, accepted, stalled = start, 0, None, None
    # The same point up to the round-off of storing it as coef_ and intercept_
    # and reading it back (1 ulp of the value under some BLAS kernels): the
    # rounds' own acceptance threshold decides "the same".
    if stalled_at is not None and abs(best_value - stalled_at) <= _SAME_VALUE * abs(
        stalled_at
    ):
        message = "the previous fit's last state round from here found no decrease"
        return start, SolverResult(start, 0, True, message, stalled_at=best_value)
    budget = ""
    evals_left = evaluation_budget(max_iter)
    for sv_round in range(max_rounds):
        if n_iter >= max_iter or evals_left <= 0:
            budget = (
                f"SV-Softmax's state rounds (t={objective.margin.t:g}) spent "
                f"their shared budget of max_iter={max_iter} iterations (or "
                f"{evaluation_budget(max_iter)} evaluations) after "
                f"{sv_round} rounds, before the support-vector state settled: "
                "the model is the best point found (a t closer to 1, a looser "
                "tol or a larger max_iter settles it). "
            )
            break
        result = lbfgs(
            partial(objective.loss_gradient, lam=lam, state=state),
            best_params,
            max_iter=max_iter - n_iter,
            tol=tol,
            stationarity=objective.stationarity,
            verbose=verbose,
            max_eval=evals_left,
        )
        n_iter += result.n_iter
        evals_left -= result.n_eval
        _report(verbose, lam, f"state round {sv_round}", result)
        step = result.params - best_params
        for fraction in _BACKTRACK:
            candidate = best_params + fraction * step if fraction < 1 else result.params
            value, new_state = objective.value_and_state(candidate, lam=lam)
            # A relative threshold keeps the decision identical under round-off.
            if value < best_value - _SAME_VALUE * abs(best_value):
                break
        else:
            stalled = best_value
            break
        best_value, best_params, accepted = value, candidate, result
        if _same_state(new_state, state):
            break
        state = new_state
    if accepted is None:
        # The procedure ended normally: no round (nor a shorter step of it)
        # lowers the exact objective, so the start is the best point found.
        accepted = SolverResult(
            best_params,
            0,
            True,
            "no state round lowered the exact objective; kept the start",
        )
    result = replace(
        accepted, params=best_params, n_iter=n_iter, stalled_at=stalled, budget=budget
    )
    return best_params, result


def _same_state(a, b):
    if isinstance(a, tuple):
        return isinstance(b, tuple) and all(map(_same_state, a, b))
    return np.array_equal(a, b)


def _report(verbose, lam, stage, result):
    if verbose:
        print(
            f"[sklmargin] lambda={lam:g} {stage}: iterations={result.n_iter} "
            f"max|grad|={result.max_abs_grad:.3g} {result.message}"
        )


def warn_if_not_converged(result, max_iter, tol, estimator_name, hint=""):
    """Emit a ConvergenceWarning naming ``max_iter`` and ``tol`` if needed.

    Also where the last run converged but a shared budget ran out on the way
    (``result.budget``, which names the setting that spent it).
    """
    if result.converged and result.budget:
        warnings.warn(
            f"{estimator_name} stopped short: {result.budget}{hint or ''}"
            f"({result.n_iter} iterations in total, max_iter={max_iter}, tol={tol}.)",
            ConvergenceWarning,
            stacklevel=3,
        )
    if not result.converged:
        if "EVALUATIONS" in str(result.message):
            hint = (
                f"Its line searches kept failing: a run may evaluate the "
                f"objective {_EVALS_PER_ITERATION} times per iteration of its "
                f"budget plus {_MAX_LINE_SEARCH}. " + (hint or "")
            )
        warnings.warn(
            f"{estimator_name} did not converge: L-BFGS stopped with "
            f"'{result.message}' after {result.n_iter} iterations in total, "
            f"largest gradient entry {result.max_abs_grad:.3g} "
            f"(max_iter={max_iter}, tol={tol}). {result.budget}"
            f"{hint or ''}Increase "
            "max_iter, loosen tol, or scale the data (e.g. StandardScaler).",
            ConvergenceWarning,
            stacklevel=3,
        )
