"""The sphere-scaled L-BFGS run of the losses that normalise their prototypes.

AM-Softmax and NormFace see each prototype only through its direction, and a
logit is ``s cos(theta) + b`` on unit rows: the curvature along a prototype
entry is about ``s**2 / d`` times that along a bias. Unscaled, L-BFGS spends
its iterations on that imbalance. :func:`sphere_scaling` gives the
coordinates in which the run is balanced, :func:`scaled_problem` the
objective in them, and :func:`scaled_lbfgs` the run, stopped by the gradient
at each prototype's own scale. :func:`~sklmargin.solver._lbfgs.lbfgs` calls
it when given a ``scale``.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import OptimizeResult, minimize

# The sphere-scaled run (:func:`sphere_scaling`) keeps this many curvature
# pairs (scipy's default, 10, elsewhere): with 10 a last-bit change of X still
# changed some test labels, with 50 fewer, at no more fit time (fewer
# iterations pay for the longer two-loop recursion over K d parameters); the
# benchmarks page, "Label stability", has the measurements.
_SPHERE_MEMORY = 50
# Its message when the scaled gradient test holds (scipy's names its own test).
_SPHERE_CONVERGED = "CONVERGENCE: GRADIENT ON THE SPHERE-SCALED PARAMETERS <= TOL"


def sphere_scaling(objective):
    r"""Per-parameter scale of the sphere-scaled run; None where it does not apply.

    A smooth loss that sees each prototype only through its direction
    (``margin.normalizes_W``, no kink, no state: AM-Softmax and NormFace) is
    solved in the coordinates ``z = x / D`` with ``D = 1`` on the prototypes and

    .. math::

        D_{b} = \alpha = \frac{s}{\sqrt{d}}

    on the biases (``d`` the prepared rows' width, lift included). Why: a
    logit is ``s \cos\theta_{ij} + b_j`` with unit rows, whose ``d`` entries
    are of size ``1 / \sqrt{d}``; the curvature along a prototype entry is
    then about ``s^2 / d`` times the curvature along a bias (a factor 50 at
    ``s = 30``, ``d = 18``). Unscaled, L-BFGS spends its iterations on that
    imbalance and stops, at ``tol * s``, far from the optimum along the flat
    bias-prototype directions, wherever the round-off of its path led it, so
    a last-bit change of ``X`` changes test labels. Scaled, the same ``tol``
    stops at the optimum to the labels' resolution in fewer iterations (the
    benchmarks page, "Label stability", has the measurements).
    The run then also stops by the gradient at each prototype's own scale
    (:func:`~sklmargin.solver._lbfgs.lbfgs`, ``scale``).

    Parameters
    ----------
    objective : MarginObjective
        Its ``margin``, ``s`` and ``layout``.

    Only for a smooth objective: with a kink in the target (ArcFace at
    ``theta = pi - m``) or a non-target state that the rounds re-decide
    (SV-Softmax), the longer, tighter run met those switches and its end moved
    with round-off (the float64 NumPy and torch fits of
    ``tests/test_array_api.py`` then differed beyond its 1e-8), so those
    losses run plain.

    Returns
    -------
    ndarray of shape (n_params,) or None
        ``D``; None for losses that depend on the prototype norms (softmax,
        L-Softmax), for targets with kinks (ArcFace; A-Softmax at
        ``theta = 0``) and for stateful margins (SV-Softmax), whose runs are
        plain.
    """
    margin = objective.margin
    if (
        not margin.normalizes_W
        or margin.stateful
        or margin.kink_angles(objective.m or 0.0)
    ):
        return None
    layout = objective.layout
    scale = np.ones(layout.n_params)
    _, bias = layout.unpack(scale)
    if bias is not None:
        s = objective.s if objective.s is not None else 1.0
        bias[:] = s / np.sqrt(layout.n_features)
    return scale


def scaled_problem(fun, scale, last=None):
    """``fun`` in the coordinates ``z = x / scale``: ``z -> (F, scale * dF/dx)``.

    The chain rule of ``x = scale * z``. ``last`` (a dict), when given, keeps
    the latest ``z``, its value and its gradient, and answers a call at that
    same ``z`` from them: scipy evaluates its start once more after
    :func:`scaled_lbfgs` has tested it. ``z`` is kept by reference: scipy
    hands ``fun`` a copy of its iterate (which L-BFGS-B updates in place), so
    no second copy per evaluation.
    """

    def scaled(z):
        if last and np.array_equal(z, last["z"]):
            return last["value"], last["grad"]
        value, grad = fun(scale * z)
        grad = scale * grad
        if last is not None:
            last["z"], last["value"], last["grad"] = z, value, grad
        return value, grad

    return scaled


def scaled_lbfgs(fun, x0, scale, stationarity, *, tol, options, log=None):
    """Run L-BFGS sphere-scaled; return ``(scipy result, stationarity)``.

    ``stationarity`` is the objective's (prototypes on their sphere: the
    scaled run is for normalised prototypes only); at ``z = x / scale`` with
    the scaled gradient it reads ``|v_j| dF/dv_j`` and ``scale_b dF/db``.
    """
    last = {}
    scaled = scaled_problem(fun, scale, last)
    z0 = x0 / scale
    value0, grad0 = scaled(z0)  # minimize's own first call reads it from last
    size0 = stationarity(z0, grad0)
    if size0 <= tol:
        # scipy's plain run tests its start before the first iteration; the
        # callback below only sees iterates. A warm start that is already
        # stationary (most points of a CV path at large s) is the answer, as
        # it is in the plain run: no line search is spent moving it.
        result = OptimizeResult(
            x=np.array(x0, dtype=np.float64), fun=value0, jac=grad0,
            nit=0, nfev=1, status=0, success=True, message=_SPHERE_CONVERGED,
        )  # fmt: skip
        return result, size0

    def stop_when_stationary(intermediate_result):
        if log is not None:
            log(intermediate_result)
        # The accepted point is the line search's last evaluation: its
        # gradient is at hand (if not, the test waits one iteration).
        z = intermediate_result.x
        if np.array_equal(z, last["z"]) and stationarity(z, last["grad"]) <= tol:
            raise StopIteration

    # The callback stops the run (scipy's gtol test is the raw gradient's).
    options = {**options, "gtol": 0.0, "maxcor": _SPHERE_MEMORY}
    result = minimize(
        scaled, z0, jac=True, method="L-BFGS-B", options=options,
        callback=stop_when_stationary,
    )  # fmt: skip
    # scipy's jac is the gradient at its x, in the scaled coordinates
    # |v_j| dF/dv_j and alpha dF/db: the scaled gradient, prototypes on their
    # sphere (the run lets their norms drift; D = 1 on them).
    size = stationarity(result.x, result.jac)
    result.x = scale * result.x
    if size <= tol:
        result.message = _SPHERE_CONVERGED
    return result, size
