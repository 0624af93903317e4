"""The Margin is the one place a loss lives: hooks, scale rule, user margins."""

import math

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.model_selection import cross_val_score
from sklearn.preprocessing import StandardScaler

from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier
from sklmargin.losses._additive import AMSoftmax
from sklmargin.losses._base import Margin
from sklmargin.losses._registry import get_margin, registered_margins
from sklmargin.losses._support_vectors import SupportVectorGuided, with_support_vectors

MARGINS = registered_margins()


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _reference_logits(clf, X):
    """Margin-free logits from their definition, without the package's code.

    Every loss's logit is ``scale * <u, v> + b`` with ``u`` the lifted row
    ``[x, c]`` and ``v`` the prototype ``[w, w_c]``, each divided by its norm
    where the loss normalises it, and ``scale = s`` where the loss has an
    ``s`` (L-Softmax's scale ``|w||x|`` is the un-normalised product itself).
    """
    margin = clf.margin_
    u = np.column_stack([X, np.full(len(X), clf.constant_feature_)])
    v = np.column_stack([clf.coef_, clf.constant_coef_])
    if margin.normalizes_X:
        u = u / np.linalg.norm(u, axis=1, keepdims=True)
    if margin.normalizes_W:
        v = v / np.linalg.norm(v, axis=1, keepdims=True)
    scale = clf.s_ if margin.uses_s else 1.0
    return scale * (u @ v.T) + clf.intercept_


@pytest.mark.parametrize("margin", MARGINS, ids=lambda m: m.name)
def test_prediction_is_the_margin_free_logit(iris, margin):
    # The scale rule lives in Margin.logit_scale alone; what predict computes
    # must be the paper's logit without the margin.
    X, y = iris
    clf = MarginSoftmaxClassifier(loss=margin.name).fit(X, y)
    np.testing.assert_allclose(
        clf.decision_function(X), _reference_logits(clf, X), rtol=1e-10, atol=1e-10
    )


class ScaledByNorm(AMSoftmax):
    """A user's loss: AM-Softmax's target with A-Softmax's scale s |x|."""

    name = "am-by-norm"
    normalizes_X = False

    def logit_scale(self, s, norms, w_norm):
        return (norms * norms.dtype.type(s))[:, None]


class Quadratic(Margin):
    r"""A user's loss defined in a few lines: :math:`f(c) = c - m (1 - c)^2`."""

    name = "quadratic"
    default_m = 0.2
    default_s = 20.0

    def check_m(self, m):
        return float(m)

    def target(self, cos_y, m, lam=0.0):
        return cos_y - m * (1.0 - cos_y) ** 2, 1.0 + 2.0 * m * (1.0 - cos_y)


@pytest.mark.parametrize("user_margin", [ScaledByNorm(), Quadratic()])
def test_a_users_margin_works_end_to_end(iris, user_margin):
    X, y = iris
    clf = MarginSoftmaxClassifier(loss=user_margin, s=3.0)
    assert cross_val_score(clf, X, y, cv=3).mean() > 0.85
    clf = clone(clf).fit(X, y)
    assert type(clf.margin_) is type(user_margin)
    np.testing.assert_allclose(
        clf.decision_function(X), _reference_logits(clf, X), rtol=1e-10, atol=1e-10
    )
    # SV-Softmax composes with it, and the kernel estimator accepts it.
    assert MarginSoftmaxClassifier(loss=user_margin, t=1.2).fit(X, y).score(X, y) > 0.8
    kernel = KernelMarginSoftmaxClassifier(
        loss=user_margin, n_components=100, random_state=0
    )
    assert kernel.fit(X, y).score(X, y) > 0.9


def test_loss_rejects_other_objects(iris):
    X, y = iris
    with pytest.raises(ValueError, match="loss"):
        MarginSoftmaxClassifier(loss=object()).fit(X, y)
    with pytest.raises(ValueError, match="loss"):
        MarginSoftmaxClassifier(loss="cos-face").fit(X, y)


@pytest.mark.parametrize("margin", MARGINS, ids=lambda m: m.name)
def test_every_margin_declares_a_valid_grid_with_its_defaults(margin):
    grid = margin.search_grid
    assert math.prod(len(values) for values in grid.values()) == 9
    for value in grid.get("m", ()):
        assert margin.check_m(value) == value
    for value in grid.get("s", ()):
        assert margin.check_s(value) == value
    if "m" in grid:
        assert margin.default_m in grid["m"]


@pytest.mark.parametrize("margin", MARGINS, ids=lambda m: m.name)
def test_every_margin_declares_its_domain_edges_and_formulas(margin):
    # The tests, the fuzz strategies and the docs' tables read these: they
    # must say what check_m accepts, and be filled in for a new loss.
    low, high = margin.m_domain
    assert margin.check_m(low) == low
    with pytest.raises(ValueError):
        margin.check_m(low - 1e-9)
    if math.isfinite(high):
        assert margin.check_m(high) == high
        with pytest.raises(ValueError):
            margin.check_m(high + 1e-9)
    assert low <= margin.default_m <= high
    edge = margin.edge_settings
    assert set(edge) <= {"m", "s", "lambda_min"}
    if "m" in edge:
        assert margin.check_m(edge["m"]) == edge["m"]
    if "s" in edge:
        assert margin.uses_s and margin.check_s(edge["s"]) == edge["s"]
    assert all(margin.logits_latex) and all(margin.logits_text) and margin.paper
    assert all(0.0 <= kink <= math.pi for kink in margin.kink_angles(margin.default_m))


def test_sv_modifier_delegates_and_its_mask_reduces_to_the_base():
    base = get_margin("arcface")
    sv = with_support_vectors(base, 1.3)
    assert isinstance(sv, SupportVectorGuided) and sv.stateful
    assert with_support_vectors(base, 1.0) is base
    assert sv.name == "arcface" and sv.default_s == base.default_s
    assert sv.stateless() is base
    rng = np.random.default_rng(0)
    cos = rng.uniform(-0.9, 0.9, (50, 4))
    y = rng.integers(0, 4, 50)
    f_y, _ = sv.target(cos[np.arange(50), y], 0.1)
    mask = sv.non_target_state(cos, y, f_y)
    assert mask.dtype == bool and not mask[np.arange(50), y].any()
    expected = cos > f_y[:, None]
    expected[np.arange(50), y] = False
    np.testing.assert_array_equal(mask, expected)
    h, dh = sv.non_target(cos, np.zeros_like(mask))
    np.testing.assert_array_equal(h, cos)
    np.testing.assert_array_equal(dh, np.ones_like(cos))
    h, dh = sv.non_target(cos, mask)
    np.testing.assert_allclose(h[mask], cos[mask] + 0.3 * (cos[mask] + 1))
    np.testing.assert_allclose(dh[mask], 1.3)


def test_no_module_outside_margins_tests_a_loss_name():
    # The registry's promise (issue 14): nothing else knows a loss by name.
    import pathlib

    package = pathlib.Path(__file__).resolve().parent.parent / "sklmargin"
    names = [m.name for m in MARGINS]
    offenders = []
    for path in package.rglob("*.py"):
        if path.name == "_margins.py":
            continue
        text = path.read_text()
        for name in names:
            for pattern in (f'== "{name}"', f'!= "{name}"', f'in ("{name}"'):
                if pattern in text:
                    offenders.append((path.name, pattern))
    assert not offenders
