"""Where an L-BFGS fit starts: imprinting, priors, a softmax solve, a warm start.

A good deterministic start matters more than usual here: the cosine losses are
non-convex, and L-/A-Softmax's margin is introduced by continuation from it.
Which start a loss wants is its margin's ``start`` attribute. Everything here
asks the objective only for the
:class:`~sklmargin.objective.MarginObjective` interface (the bias-only problem
included), so the in-memory, device and Dask fits share it.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.optimize import minimize
from sklearn.utils import check_random_state

from .._utils.array_api import (
    NUMPY,
    get_namespace,
    row_blocks,
    to_device,
    to_numpy,
    wide_dtype,
)
from ._lbfgs import fit_continuation


def weighted_class_sums(X, y_encoded, sample_weight, n_classes):
    """``sum_{i: y_i = j} w_i x_i`` per class, in float64 on the host, by row blocks.

    Blocks of at most 32 MiB keep the float64 copy of a float32 ``X`` small (a
    one-shot sparse product would upcast all of ``X``: measured +2 copies of the
    data; a fixed 65,536-row block was 1 GiB on 2,000 kernel features). Rows
    of another array API namespace are summed on their device (one GEMM of the
    weighted one-hot labels per block, in its widest float), ``K d`` numbers
    per block coming to the host.
    """
    xp, device = get_namespace(X)
    if xp is not NUMPY:
        wide = wide_dtype(xp, device)
        classes = xp.arange(n_classes, device=device)
        sample_weight = to_device(sample_weight, xp, device, dtype=wide)
    sums = np.zeros((n_classes, X.shape[1]))
    for rows in row_blocks(X, 8 * X.shape[1]):
        if xp is NUMPY:
            chunk = X[rows]
            chunk = chunk.toarray() if sparse.issparse(chunk) else chunk
            indicator = sparse.csr_matrix(
                (sample_weight[rows], (y_encoded[rows], np.arange(chunk.shape[0]))),
                shape=(n_classes, chunk.shape[0]),
            )
            sums += indicator @ chunk.astype(np.float64, copy=False)
        else:
            one_hot = xp.astype(y_encoded[rows][:, None] == classes[None, :], wide)
            weighted = one_hot * sample_weight[rows][:, None]
            sums += to_numpy(weighted.T @ xp.astype(X[rows, :], wide))
    return sums


def start_params(objective, class_totals, class_sums, random_state):
    """Cold start from class statistics (in memory, or reduced over Dask chunks).

    Biases: the centred weighted log-priors (softmax is invariant to a common
    shift). Prototypes by ``margin.start``: "class-means" (weight imprinting)
    starts each at the weighted mean of its class's unit rows, ``class_sums``
    normalised; a zero mean gets a random direction, the only use of
    ``random_state``. "zeros" (plain softmax, a convex problem) and
    "softmax-solution" leave them at zero.
    """
    params = np.zeros(objective.n_params)
    coef, intercept = objective.unpack(params)
    if intercept is not None:
        log_priors = np.log(np.maximum(class_totals / class_totals.sum(), 1e-12))
        intercept[:] = log_priors - log_priors.mean()
    if objective.margin.start == "class-means":
        means = np.array(class_sums, dtype=np.float64)
        norms = np.linalg.norm(means, axis=1)
        degenerate = norms <= 1e-12 * max(norms.max(), 1e-300)
        if np.any(degenerate):
            rng = check_random_state(random_state)
            means[degenerate] = rng.standard_normal(
                (int(degenerate.sum()), objective.n_features)
            )
            norms = np.linalg.norm(means, axis=1)
        coef[:] = means / norms[:, None]
    return params


#: Gradient tolerance of the bias-only problem: its gradient is the gap between
#: the weighted predicted and the weighted true class frequencies.
_INTERCEPT_TOL = 1e-8


def optimal_intercept(objective, params):
    """Return ``params`` with the bias that is optimal for its prototypes.

    The cold start imprints the prototypes and sets the bias to the log-priors,
    which is optimal only when every logit is equal. At a large logit scale
    (kernel default s=100) the imprinted prototypes' logits differ by tens,
    and the log-priors no longer carry the class weights: with
    ``class_weight={0: 1000, 1: 1e-4}`` the light class keeps its region and
    L-BFGS, stopping at ``tol * s``, never moves the bias far enough. Solving
    the bias-only problem first (convex, ``n_classes`` variables, one forward
    GEMM, then ``O(n_samples n_classes)`` per evaluation) starts every fit
    from the class frequencies the weights ask for.

    Parameters
    ----------
    objective : MarginObjective
        Its :meth:`~sklmargin.objective.MarginObjective.intercept_problem`:
        in memory, one forward GEMM and then ``O(n_samples n_classes)`` per
        step; over Dask chunks, the same per chunk on its worker (streamed
        chunks, kept nowhere: a forward GEMM per chunk per step).
    params : ndarray
        Starting parameters with prototypes in place.

    Returns
    -------
    ndarray
        A copy of ``params`` with the optimal bias, centred (softmax ignores a
        common shift).
    """
    params = np.array(params, dtype=np.float64)
    _, intercept = objective.unpack(params)
    if intercept is None:
        return params
    problem = objective.intercept_problem(params)

    result = minimize(
        problem,
        intercept.copy(),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 200, "gtol": _INTERCEPT_TOL},
    )
    if np.all(np.isfinite(result.x)) and result.fun <= problem(intercept)[0]:
        intercept[:] = result.x - result.x.mean()
    return params


def solve_softmax_start(start, x0, settings):
    """Solve the plain-softmax problem ``start`` and nudge collapsed prototypes.

    The start of L-Softmax (``margin.start == "softmax-solution"``): its logits
    at ``lambda -> infinity`` are the raw inner products ``<w_j, x>``, so the
    softmax prototypes on the raw rows carry over as they are. A prototype
    left at the origin (the cone point of ``|w||x|psi``, where the loss is
    not differentiable) is moved off it by a small random direction.

    Returns
    -------
    params : ndarray
    n_iter : int
    """
    result = fit_continuation(
        start, x0, max_iter=settings["max_iter"], tol=max(settings["tol"], 1e-4)
    )
    params = result.params
    coef, _ = start.unpack(params)
    norms = np.linalg.norm(coef, axis=1)
    scale = max(norms.max(), 1.0)
    small = norms < 1e-3 * scale
    if np.any(small):
        rng = check_random_state(settings["random_state"])
        coef[small] = 1e-3 * scale * rng.standard_normal((small.sum(), coef.shape[1]))
    return params, result.n_iter


def warm_start_params(estimator, objective):
    """Return the previous fit's parameters if they fit this problem, else None.

    They fit when the margin's name, the number of prototype coordinates and
    the lift agree. Fitted attributes store the training parametrisation.
    Losses that see only the prototypes' directions store them on the unit
    sphere; where the previous fit solved the same problem (its ``m_`` and
    ``s_`` are this objective's) they are put back at the norms the solver
    ended with (``_prototype_norms``): the gradient, which scales with
    ``1 / |v_j|``, is then the one the previous fit's stopping test passed,
    and a refit of a converged model has nothing left to do. Across a change
    of ``m`` or ``s`` (a CV path) they start on the sphere.
    """
    if not (estimator.warm_start and hasattr(estimator, "coef_")):
        return None
    lifted = objective.constant > 0
    n_classes, n_features = objective.n_classes, objective.n_features
    if (
        estimator.coef_.shape != (n_classes, n_features - lifted)
        or estimator.margin_.name != objective.margin.name
        or (estimator.constant_feature_ > 0) != lifted
    ):
        return None
    params = np.zeros(objective.n_params)
    coef, intercept = objective.unpack(params)
    # A model fitted on a device (torch, CuPy) holds its attributes there: a
    # NumPy refit starts from their host copy.
    coef[:, : n_features - lifted] = to_numpy(estimator.coef_)
    if lifted:
        coef[:, -1] = to_numpy(estimator.constant_coef_)
    if intercept is not None:
        intercept[:] = to_numpy(estimator.intercept_)
    norms = getattr(estimator, "_prototype_norms", None)
    norms = None if norms is None else np.asarray(norms, dtype=np.float64)
    if (
        norms is not None
        and objective.margin.normalizes_W
        and norms.shape == (n_classes,)
        and estimator.s_ == objective.s
        and estimator.m_ == objective.m
    ):
        coef *= norms[:, None]
    return params
