"""The solver on its own: L-BFGS glue, stall detection, state rounds."""

import numpy as np
import pytest

from sklmargin.losses._registry import get_margin
from sklmargin.losses._support_vectors import with_support_vectors
from sklmargin.objective._linear import LinearMarginObjective
from sklmargin.objective._rows import prepare_rows
from sklmargin.solver._lbfgs import (
    fit_continuation,
    lambda_schedule,
    lbfgs,
    state_rounds,
)


def test_lbfgs_solves_a_quadratic_to_tol():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((20, 20))
    H = A @ A.T + np.eye(20)
    b = rng.standard_normal(20)

    def fun(x):
        return 0.5 * x @ H @ x - b @ x, H @ x - b

    result = lbfgs(fun, np.zeros(20), max_iter=500, tol=1e-6)
    assert result.converged and result.max_abs_grad <= 1e-5
    np.testing.assert_allclose(result.params, np.linalg.solve(H, b), atol=1e-5)


def test_lbfgs_reports_budget_exhaustion():
    H = np.diag(np.logspace(0, 4, 30))

    def fun(x):
        return 0.5 * x @ H @ x, H @ x

    result = lbfgs(fun, np.ones(30), max_iter=3, tol=1e-10)
    assert not result.converged and result.n_iter == 3
    # scipy's own words, as text (L-BFGS-B gave bytes before scipy 1.6)
    assert isinstance(result.message, str) and "ITERATIONS" in result.message


def test_lbfgs_does_not_call_a_stall_convergence():
    # |x| has no minimiser L-BFGS can reach with a small gradient: it stalls on
    # the relative-reduction or line-search test with |grad| = 1 >> tol.
    def fun(x):
        return float(np.abs(x).sum()), np.sign(x) + (x == 0)

    result = lbfgs(fun, np.full(3, 0.3), max_iter=200, tol=1e-6)
    assert not result.converged
    assert result.max_abs_grad > 1e-3


def test_lambda_schedule_is_decreasing_and_ends_at_lambda_min():
    for lam in (0.0, 0.05, 1.0, 20.0, 5000.0):
        schedule = lambda_schedule(lam)
        assert schedule[-1] == lam
        assert all(a > b for a, b in zip(schedule[:-1], schedule[1:], strict=True))


def _sv_problem(t, seed=3):
    rng = np.random.default_rng(seed)
    y = np.arange(40) % 4
    X = rng.standard_normal((40, 5)) + y[:, None]
    margin = get_margin("normface")
    rows = prepare_rows(X, normalize=True)
    objective = LinearMarginObjective(
        rows, y, 4, np.ones(40), with_support_vectors(margin, t), 0.0, 20.0, 1.0, True
    )
    return objective, rng


@pytest.mark.parametrize("t", [1.2, 2.0])
def test_state_rounds_never_end_above_their_start(t):
    objective, rng = _sv_problem(t)
    for _ in range(5):
        start = rng.standard_normal(objective.n_params)
        start_value, _ = objective.value_and_state(start)
        params, result = state_rounds(objective, start, 200, 1e-4, 10)
        value, _ = objective.value_and_state(params)
        assert value <= start_value
        assert np.all(np.isfinite(params))


def test_warm_continuation_from_a_solution_stays_there():
    objective, _ = _sv_problem(2.0)
    x0 = np.zeros(objective.n_params)
    x0[: 4 * objective.n_features] = 0.1
    cold = fit_continuation(objective, x0, tol=1e-4)
    cold_value, _ = objective.value_and_state(cold.params)
    warm = fit_continuation(objective, cold.params, tol=1e-4, warm=True)
    warm_value, _ = objective.value_and_state(warm.params)
    assert warm_value <= cold_value


def test_optimal_intercept_asks_only_the_protocol():
    """The start's bias problem is the objective's own (no type tests, no internals).

    A stand-in objective with a quadratic bias problem and nothing else of an
    in-memory objective: the start returns its minimiser, centred.
    """
    from sklmargin.objective._interface import ParameterLayout
    from sklmargin.solver._start import optimal_intercept

    target = np.array([1.0, -2.0, 4.0])

    class QuadraticBias:
        layout = ParameterLayout(3, 2, True)
        unpack = layout.unpack

        def intercept_problem(self, params):
            return lambda b: (0.5 * float((b - target) @ (b - target)), b - target)

    params = optimal_intercept(QuadraticBias(), np.zeros(9))
    np.testing.assert_allclose(params[-3:], target - target.mean(), atol=1e-6)
    np.testing.assert_array_equal(params[:-3], 0.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_class_sums_are_one_function_for_numpy_sparse_and_array_api(dtype):
    """The start's class sums: NumPy, CSR and array-api-strict rows agree."""
    from scipy import sparse

    from sklmargin.solver._start import weighted_class_sums

    xps = pytest.importorskip("array_api_strict", reason="needs array-api-strict")
    rng = np.random.default_rng(5)
    X = rng.standard_normal((50, 4)).astype(dtype)
    y, sw = np.arange(50) % 3, rng.uniform(0.1, 2.0, 50)
    expected = np.stack([(sw[y == j, None] * X[y == j]).sum(axis=0) for j in range(3)])
    for rows, labels in [
        (X, y),
        (sparse.csr_matrix(X), y),
        (xps.asarray(X), xps.asarray(y)),
    ]:
        sums = weighted_class_sums(rows, labels, sw, 3)
        assert isinstance(sums, np.ndarray) and sums.dtype == np.float64
        np.testing.assert_allclose(
            sums, expected, rtol=1e-5 if dtype == np.float32 else 1e-12
        )


@pytest.mark.parametrize("loss", ["am-softmax", "softmax"])
def test_verbose_two_logs_each_iteration_without_scipy_deprecations(loss, capsys):
    # scipy 1.17 deprecates (1.18 removes) L-BFGS-B's iprint: verbose=2 prints
    # its own line per iteration, sphere-scaled run (am-softmax) or plain.
    import warnings

    from sklmargin import MarginSoftmaxClassifier

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((60, 3)), np.arange(60) % 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        clf = MarginSoftmaxClassifier(loss=loss, verbose=2).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    steps = [line for line in lines if "  iteration " in line]
    assert len(steps) == clf.n_iter_ > 0
    assert steps[-1].startswith(f"[sklmargin]   iteration {clf.n_iter_}: objective ")
