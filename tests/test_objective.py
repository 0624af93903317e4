"""The two layers of the objective against finite differences and paper formulas."""

import math

import numpy as np
import pytest
from scipy import sparse

from sklmargin import margin_softmax_loss
from sklmargin.losses._registry import (
    ALIASES,
    LOSS_NAMES,
    get_margin,
    registered_margins,
)
from sklmargin.losses._support_vectors import with_support_vectors
from sklmargin.objective._linear import LinearMarginObjective
from sklmargin.objective._rows import prepare_rows

# Every registered loss is tested; a new one is picked up without editing a list.
LOSSES = [margin.name for margin in registered_margins()]


def _off_default_settings(margin):
    """(m, s) away from the defaults, so a wrong default would not hide a bug.

    m is 1.5 times the grid's largest m where that is in the domain; s is off
    the default too. The pointwise tests pass L-/A-Softmax's scale as
    ``norms`` (s=None).
    """
    m = None
    if "m" in margin.search_grid:
        m = max(margin.search_grid["m"])
        try:
            m = margin.check_m(1.5 * m)
        except ValueError:
            pass
    s = None
    if margin.uses_s and not margin.scale_from_norms:
        s = 0.2 * margin.default_s + 1.3
    return dict(m=m, s=s)


SETTINGS = {
    margin.name: _off_default_settings(margin) for margin in registered_margins()
}


def five_point_gradient(fun, x, h=1e-5):
    grad = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        grad.flat[k] = (
            -fun(x + 2 * e) + 8 * fun(x + e) - 8 * fun(x - e) + fun(x - 2 * e)
        ) / (12 * h)
    return grad


def random_cosines(rng, n, k):
    # Unit vectors so the cosines are genuine; keep them away from +-1 (kinks).
    a = rng.standard_normal((n, 5))
    b = rng.standard_normal((k, 5))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    return np.clip(a @ b.T, -0.95, 0.95)


def away_from_kinks(loss, m, cos, y, t):
    """True when no entry sits near a kink of the target or an SV mask flip."""
    rows = np.arange(len(y))
    c_y = cos[rows, y]
    theta = np.arccos(c_y)
    kinks = get_margin(loss).kink_angles(m if m is not None else 0.0)
    if any(np.any(np.abs(theta - kink) < 1e-3) for kink in kinks):
        return False
    if t > 1:
        f_y, _ = get_margin(loss).target(c_y, m if m is not None else 0.0)
        gap = np.abs(cos - f_y[:, None])
        gap[rows, y] = 1.0
        if np.any(gap < 1e-3):
            return False
    return True


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("t", [1.0, 1.3])
@pytest.mark.parametrize("weighted", [False, True])
def test_pointwise_gradient_matches_finite_differences(loss, t, weighted):
    rng = np.random.default_rng(0)
    n, k = 12, 4
    cos = random_cosines(rng, n, k)
    y = rng.integers(0, k, n)
    sw = rng.uniform(0.1, 3, n) if weighted else None
    kw = dict(SETTINGS[loss])
    norms = None
    if kw["s"] is None:
        kw.pop("s")
        norms = rng.uniform(0.5, 3.0, (n, 1))
    m = kw.get("m")
    assert away_from_kinks(loss, m, cos, y, t)

    def value(c):
        return margin_softmax_loss(
            c, y, loss=loss, t=t, norms=norms, sample_weight=sw, **kw
        )[0]

    # The SV mask is piecewise constant: differences are taken on one piece.
    _, grad = margin_softmax_loss(
        cos, y, loss=loss, t=t, norms=norms, sample_weight=sw, **kw
    )
    np.testing.assert_allclose(grad, five_point_gradient(value, cos), atol=1e-8)


def _arcface(theta, m):
    if theta + m <= math.pi:
        return math.cos(theta + m)
    return -2.0 - math.cos(theta + m)  # our monotone continuation


def _psi(theta, m):
    # L-/A-Softmax: psi(theta) = (-1)^k cos(m theta) - 2k, k = floor(m theta/pi)
    k = min(math.floor(m * theta / math.pi), math.ceil(m) - 1)
    return (-1) ** k * math.cos(m * theta) - 2 * k


# The target logit of each loss, per sample, written from its paper and never
# from the package's code: (theta, m) -> the target cosine's replacement, which
# the test multiplies by the scale (s, or |x| for L-/A-Softmax). A registered
# loss without an entry here fails the test below: add its paper's formula.
PAPER_TARGET = {
    "softmax": lambda theta, m: math.cos(theta),  # the raw logit, here in [-1, 1]
    "normface": lambda theta, m: math.cos(theta),
    "am-softmax": lambda theta, m: math.cos(theta) - m,
    "arcface": _arcface,
    "l-softmax": _psi,
    "a-softmax": _psi,
}


def _paper_logit_target(loss, c, m, scale):
    if loss not in PAPER_TARGET:
        pytest.fail(
            f"no paper reference for loss {loss!r}: add one to PAPER_TARGET in "
            "tests/test_objective.py, written from the paper, not from the package"
        )
    return scale * PAPER_TARGET[loss](math.acos(max(-1.0, min(1.0, c))), m)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("t", [1.0, 1.5])
def test_loss_value_matches_per_sample_paper_formula(loss, t):
    rng = np.random.default_rng(1)
    n, k = 20, 5
    cos = random_cosines(rng, n, k)
    y = rng.integers(0, k, n)
    sw = rng.uniform(0.1, 2, n)
    kw = dict(SETTINGS[loss])
    m = kw["m"] if kw["m"] is not None else 0.0
    norms = None
    if kw["s"] is None:
        kw.pop("s")
        norms = rng.uniform(0.5, 3.0, n)
    total = 0.0
    for i in range(n):
        scale = norms[i] if norms is not None else kw["s"]
        target = _paper_logit_target(loss, cos[i, y[i]], m, scale)
        logits = []
        for j in range(k):
            if j == y[i]:
                logits.append(target)
                continue
            z = scale * cos[i, j]
            # SV-Softmax (Wang et al. 2018, eq. 8): h = exp(s (t-1)(cos+1) I).
            if target / scale - cos[i, j] < 0:
                z += scale * (t - 1) * (cos[i, j] + 1)
            logits.append(z)
        top = max(logits)
        lse = top + math.log(sum(math.exp(z - top) for z in logits))
        total += sw[i] * (lse - target)
    expected = total / sw.sum()
    value, _ = margin_softmax_loss(
        cos,
        y,
        loss=loss,
        t=t,
        sample_weight=sw,
        norms=None if norms is None else norms[:, None],
        **kw,
    )
    assert value == pytest.approx(expected, rel=1e-12)


def _objective(loss, t, fit_intercept, rng, sparse_X=False, n=15, d=4, k=3):
    X = rng.standard_normal((n, d))
    if sparse_X:
        X[rng.uniform(size=X.shape) < 0.3] = 0.0
        X = sparse.csr_matrix(X)
    y = np.arange(n) % k
    sw = rng.uniform(0.2, 2.0, n)
    kw = SETTINGS[loss]
    margin = get_margin(loss)
    m, s = margin.resolve(kw["m"], kw["s"] if margin.uses_s else None)
    rows = prepare_rows(X, normalize=margin.uses_angle)
    margin = with_support_vectors(margin, t)
    obj = LinearMarginObjective(rows, y, k, sw, margin, m, s, 0.7, fit_intercept)
    params = rng.standard_normal(obj.n_params)
    # the objective at a softening lam = 0.5 where the loss has one
    lam = 0.5 if margin.uses_lambda else 0.0
    return _AtLambda(obj, lam), params


class _AtLambda:
    """An objective evaluated at one softening (the solver passes it per call)."""

    def __init__(self, objective, lam):
        self.objective, self.lam = objective, lam

    def __getattr__(self, name):
        return getattr(self.objective, name)

    def loss_gradient(self, params, state=None):
        return self.objective.loss_gradient(params, lam=self.lam, state=state)

    def value_and_state(self, params):
        return self.objective.value_and_state(params, lam=self.lam)


@pytest.mark.parametrize("loss", LOSSES)
def test_objective_keeps_no_state_between_evaluations(loss):
    # What the objective makes once (labels per dtype, L-Softmax's unit scale,
    # the largest norm) is a constant of the rows: an evaluation after others
    # equals the first evaluation of a fresh objective.
    obj, params = _objective(loss, 1.0, True, np.random.default_rng(12))
    fresh, _ = _objective(loss, 1.0, True, np.random.default_rng(12))
    for shift in (0.0, 0.5, -1.5):
        obj.loss_gradient(params + shift)
    value, grad = obj.loss_gradient(params)
    fresh_value, fresh_grad = fresh.loss_gradient(params)
    assert value == pytest.approx(fresh_value, rel=1e-12)
    np.testing.assert_allclose(grad, fresh_grad, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("t", [1.0, 1.4])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_full_objective_gradient_matches_finite_differences(loss, t, fit_intercept):
    rng = np.random.default_rng(2)
    obj, params = _objective(loss, t, fit_intercept, rng)
    state = obj.value_and_state(params)[1]  # hold SV fixed, as the solver does
    _, grad = obj.loss_gradient(params, state=state)
    numeric = five_point_gradient(
        lambda p: obj.loss_gradient(p, state=state)[0], params, h=1e-5
    )
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    "loss", [margin.name for margin in registered_margins() if margin.normalizes_W]
)
def test_gradient_of_normalised_prototypes_is_orthogonal_to_them(loss):
    rng = np.random.default_rng(3)
    obj, params = _objective(loss, 1.0, True, rng)
    _, grad = obj.loss_gradient(params)
    coef, _ = obj.unpack(params)
    grad_coef, _ = obj.unpack(grad)
    radial = np.einsum("ij,ij->i", grad_coef, coef)
    assert np.abs(radial).max() < 1e-12 * np.abs(grad_coef).max() * 10 + 1e-15
    # and the objective does not change along v_j itself (scale invariance)
    value = obj.loss_gradient(params)[0]
    scaled = params.copy()
    scaled[: coef.size] *= 3.0
    assert obj.loss_gradient(scaled)[0] == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("loss", LOSSES)
def test_sparse_and_dense_objective_agree(loss):
    rng = np.random.default_rng(4)
    obj_sparse, params = _objective(loss, 1.0, True, rng, sparse_X=True)
    X_dense = _objective(loss, 1.0, True, np.random.default_rng(4), sparse_X=True)[
        0
    ].rows
    obj_dense = obj_sparse.with_margin(obj_sparse.margin)
    obj_dense.rows = X_dense  # same values, now dense
    obj_dense.X = X_dense.X.toarray()
    obj_dense = _AtLambda(obj_dense, obj_sparse.lam)
    v1, g1 = obj_sparse.loss_gradient(params)
    v2, g2 = obj_dense.loss_gradient(params)
    assert v1 == pytest.approx(v2, rel=1e-12)
    np.testing.assert_allclose(g1, g2, rtol=1e-10, atol=1e-14)


def test_m_zero_gives_normface():
    rng = np.random.default_rng(5)
    cos = random_cosines(rng, 30, 4)
    y = rng.integers(0, 4, 30)
    ref = margin_softmax_loss(cos, y, loss="normface", s=8.0)
    for loss in ("am-softmax", "arcface"):
        value, grad = margin_softmax_loss(cos, y, loss=loss, m=0.0, s=8.0)
        assert value == pytest.approx(ref[0], rel=1e-12)
        np.testing.assert_allclose(grad, ref[1], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("m", [1.0, 1.5, 2.0, 3.0, 4.0, 5.5])
def test_psi_is_continuous_decreasing_and_below_cos(m):
    margin = get_margin("l-softmax")
    c = np.cos(np.linspace(0, math.pi, 20001))
    psi, dpsi = margin.target(c, m, lam=0.0)
    assert np.all(np.diff(psi) <= 1e-12)  # c decreases along theta: psi decreases
    assert np.all(psi <= c + 1e-12)
    assert np.max(np.abs(np.diff(psi))) < 1e-2  # no jumps
    if m == 1.0:
        np.testing.assert_allclose(psi, c, atol=1e-12)


def test_arcface_target_is_continuous_and_monotone():
    margin = get_margin("arcface")
    c = np.linspace(-1, 1, 40001)
    for m in (0.1, 0.5, 1.0, math.pi / 2):
        f, df = margin.target(c, m)
        assert np.all(np.diff(f) > 0)
        assert np.max(np.abs(np.diff(f))) < 1e-2
        assert np.all(np.isfinite(df)) and np.all(df >= -1e-9)


def test_large_scale_and_parallel_samples_stay_finite():
    cos = np.array([[1.0, -1.0, 0.3], [-1.0, 1.0, 1.0], [1.0, 1.0, -1.0]])
    y = np.array([0, 0, 2])
    for loss in ("am-softmax", "arcface", "normface"):
        value, grad = margin_softmax_loss(cos, y, loss=loss, s=100.0)
        assert np.isfinite(value) and np.all(np.isfinite(grad))
    for loss in ("l-softmax", "a-softmax"):
        value, grad = margin_softmax_loss(cos, y, loss=loss, m=4, norms=50.0)
        assert np.isfinite(value) and np.all(np.isfinite(grad))


def test_raw_logits_outside_unit_interval_are_used_as_given():
    z = np.array([[3.0, -2.0], [0.5, 4.0]])
    y = np.array([0, 1])
    value, _ = margin_softmax_loss(z, y, loss="softmax")
    expected = np.mean(np.log(np.exp(z).sum(1)) - z[[0, 1], y])
    assert value == pytest.approx(expected)
    v_am, _ = margin_softmax_loss(z, y, loss="am-softmax", m=0.0, s=1.0)
    assert v_am == pytest.approx(expected)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(loss="nope"), "valid names"),
        (dict(loss="am-softmax", m=1.5), "m must be in"),
        (dict(loss="arcface", m=-0.1), "m must be in"),
        (dict(loss="l-softmax", m=0.5, norms=1.0), "m must be >= 1"),
        (dict(loss="normface", m=0.2), "no margin"),
        (dict(loss="am-softmax", s=0.0), "s must be > 0"),
        (dict(loss="am-softmax", t=0.5), "t must be"),
        (dict(loss="l-softmax"), "norms"),
    ],
)
def test_invalid_arguments_raise(kwargs, match):
    cos = np.zeros((2, 3))
    with pytest.raises(ValueError, match=match):
        margin_softmax_loss(cos, [0, 1], **kwargs)


def test_aliases_resolve():
    assert set(ALIASES) <= set(LOSS_NAMES)
    assert get_margin("cosface") is get_margin("am-softmax")
    assert get_margin("sphereface") is get_margin("a-softmax")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_cross_entropy_matches_numpy_reference(dtype):
    from sklmargin.objective import _cross_entropy

    if _cross_entropy.HalfMultinomialLoss is None:
        pytest.skip("this scikit-learn has no private HalfMultinomialLoss")
    # With it present (scikit-learn 1.6-1.9), the probe must have chosen it.
    assert (
        _cross_entropy.softmax_cross_entropy
        is _cross_entropy._sklearn_softmax_cross_entropy
    )
    rng = np.random.default_rng(6)
    z = (rng.standard_normal((500, 7)) * 30).astype(dtype)
    y = rng.integers(0, 7, 500)
    sw = rng.uniform(0, 1, 500)
    sw /= sw.sum()
    loss_ref, grad_ref = _cross_entropy._numpy_softmax_cross_entropy(z.copy(), y, sw)
    loss, grad = _cross_entropy._sklearn_softmax_cross_entropy(z.copy(), y, sw)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    assert loss == pytest.approx(loss_ref, rel=rtol)
    np.testing.assert_allclose(grad, grad_ref, rtol=rtol, atol=rtol * 1e-3)
    # The labels as floats of z's dtype (cast once, by TargetEntries): the same.
    labels = y.astype(dtype)
    for fn in (
        _cross_entropy._numpy_softmax_cross_entropy,
        _cross_entropy._sklearn_softmax_cross_entropy,
    ):
        assert fn(z.copy(), labels, sw)[0] == pytest.approx(loss_ref, rel=rtol)


def test_numpy_cross_entropy_matches_per_sample_formula():
    rng = np.random.default_rng(7)
    z = rng.standard_normal((9, 4)) * 20
    y = rng.integers(0, 4, 9)
    sw = rng.uniform(0.1, 1, 9)
    sw /= sw.sum()
    expected = sum(
        sw[i] * (math.log(sum(math.exp(v - z[i].max()) for v in z[i])) + z[i].max())
        - sw[i] * z[i, y[i]]
        for i in range(9)
    )
    from sklmargin.objective._cross_entropy import _numpy_softmax_cross_entropy

    loss, grad = _numpy_softmax_cross_entropy(z.copy(), y, sw)
    assert loss == pytest.approx(expected, rel=1e-12)
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(9), y] -= 1
    np.testing.assert_allclose(grad, p * sw[:, None], rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("replacement", [None, "broken"])
def test_cross_entropy_falls_back_to_numpy(monkeypatch, replacement):
    from sklmargin.objective import _cross_entropy

    class Broken:
        def __init__(self, n_classes):
            raise RuntimeError("moved in a future scikit-learn")

    monkeypatch.setattr(
        _cross_entropy, "HalfMultinomialLoss", None if replacement is None else Broken
    )
    chosen = _cross_entropy._select_cross_entropy()
    assert chosen is _cross_entropy._numpy_softmax_cross_entropy


def _objective_in(kind, X, y, sw, margin, m, s):
    """The same problem as a NumPy, CSR, array-api-strict or Dask objective."""
    args = (3, sw, margin, m, s, 0.7, True)
    if kind in ("numpy", "csr"):
        rows = sparse.csr_matrix(X) if kind == "csr" else X
        return LinearMarginObjective(
            prepare_rows(rows, normalize=margin.uses_angle), y, *args
        )
    if kind == "array_api_strict":
        xps = pytest.importorskip("array_api_strict", reason="needs array-api-strict")
        rows = prepare_rows(xps.asarray(X), normalize=margin.uses_angle)
        return LinearMarginObjective(rows, xps.asarray(y), *args)
    dask = pytest.importorskip("dask", reason="needs dask")
    from sklmargin.integrations.dask._objective import (
        DaskMarginObjective,
        prepare_chunk,
    )

    chunks = [
        dask.delayed(prepare_chunk)(
            X[i : i + 7],
            y[i : i + 7],
            sw[i : i + 7],
            np.asarray,
            margin.uses_angle,
            0.0,
        )  # fmt: skip
        for i in range(0, len(y), 7)
    ]
    return DaskMarginObjective(
        chunks, sw.sum(), X.shape[1], 0.0, 3, margin, m, s, 0.7, True
    )


@pytest.mark.parametrize("kind", ["numpy", "csr", "array_api_strict", "dask"])
@pytest.mark.parametrize("loss", ["arcface", "l-softmax", "softmax"])
def test_every_objective_gives_the_same_values_and_bias_problem(kind, loss):
    """One objective class for every namespace, and Dask's reduction of it.

    Value, gradient and the solver's bias-only problem (a protocol method)
    agree with the NumPy objective's; the bias problem's gradient is the full
    gradient's bias part at that bias.
    """
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((30, 4)), np.arange(30) % 3
    sw = rng.uniform(0.2, 2.0, 30)
    margin = with_support_vectors(get_margin(loss), 1.2)
    m, s = margin.resolve(None, None)
    reference = _objective_in("numpy", X, y, sw, margin, m, s)
    objective = _objective_in(kind, X, y, sw, margin, m, s)
    params = rng.standard_normal(reference.n_params)
    bias = rng.standard_normal(3)
    trial = params.copy()
    trial[-3:] = bias
    with dask_synchronous():
        value, grad = objective.loss_gradient(trial)
        problem_value, problem_grad = objective.intercept_problem(params)(bias)
    expected_value, expected_grad = reference.loss_gradient(trial)
    assert value == pytest.approx(expected_value, rel=1e-12)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-10, atol=1e-13)
    assert problem_value == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(problem_grad, grad[-3:], rtol=1e-10, atol=1e-13)


def dask_synchronous():
    """Dask's synchronous scheduler where Dask is installed, else nothing."""
    import contextlib

    try:
        import dask
    except ImportError:
        return contextlib.nullcontext()
    return dask.config.set(scheduler="synchronous")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("loss", LOSSES)
def test_margin_free_logits_on_array_api_rows_equal_numpys(loss, dtype):
    """Predict's logits: one function for NumPy and array-api-strict rows."""
    xps = pytest.importorskip("array_api_strict", reason="needs array-api-strict")
    from sklmargin._utils.array_api import to_numpy
    from sklmargin.objective._linear import margin_free_logits

    rng = np.random.default_rng(4)
    X = rng.standard_normal((20, 5)).astype(dtype)
    margin = get_margin(loss)
    m, s = margin.resolve(None, None)
    coef, intercept = rng.standard_normal((3, 5)), rng.standard_normal(3)
    lift = {"constant": 0.8, "constant_coef": rng.standard_normal(3)}
    expected = margin_free_logits(margin, X, coef, intercept, s=s, **lift)
    logits = margin_free_logits(margin, xps.asarray(X), coef, intercept, s=s, **lift)
    assert isinstance(logits, type(xps.asarray(X)))
    assert to_numpy(logits).dtype == expected.dtype
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(
        to_numpy(logits), expected, rtol=rtol, atol=rtol * np.abs(expected).max()
    )
