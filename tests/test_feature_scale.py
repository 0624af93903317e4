"""FeatureScaleWarning: unscaled columns are named, not fitted silently.

The threshold (``FEATURE_SCALE_RATIO``) is measured by
``benchmarks/feature_scale.py``: these tests check the statistic and where the
warning must and must not fire, not the measurement.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_wine, make_classification
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklmargin import (
    FeatureScaleWarning,
    KernelMarginSoftmaxClassifier,
    MarginSoftmaxClassifier,
)
from sklmargin._utils.validation import FEATURE_SCALE_RATIO, check_feature_scales


def _customers(n=600, seed=0):
    """Raw customer-like columns: income ~3e4 beside ages ~40 and 0/1 flags."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [
            rng.lognormal(np.log(3e4), 0.5, n),
            rng.normal(40, 12, n),
            rng.uniform(0, 120, n),
            (rng.random(n) < 0.7).astype(float),
        ]
    )
    y = (StandardScaler().fit_transform(X) @ [1.0, -1.0, 0.5, 1.0] > 0).astype(int)
    return X, y


@pytest.mark.parametrize(
    "estimator",
    [
        MarginSoftmaxClassifier(),
        MarginSoftmaxClassifier(loss="softmax"),
        KernelMarginSoftmaxClassifier(n_components=20, random_state=0),
    ],
    ids=["am-softmax", "softmax", "kernel"],
)
def test_raw_customer_columns_warn_and_name_the_scaler(estimator):
    X, y = _customers()
    with pytest.warns(FeatureScaleWarning, match="StandardScaler") as caught:
        estimator.fit(X, y)
    message = str(caught[0].message)
    assert "column 0" in message  # income
    # once per fit: the kernel's learned-metric pilot fits (on these rows, then
    # rescaled ones) leave it to the user's fit
    assert [w.category for w in caught].count(FeatureScaleWarning) == 1
    assert issubclass(FeatureScaleWarning, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FeatureScaleWarning)
        make_pipeline(StandardScaler(), estimator).fit(X, y)


def test_the_warning_pays_for_itself_on_wine():
    """Raw wine (proline ~750 beside ratios ~1): warned, and scaling helps."""
    X, y = load_wine(return_X_y=True)
    with pytest.warns(FeatureScaleWarning):
        raw = MarginSoftmaxClassifier().fit(X, y).score(X, y)
    scaled = make_pipeline(StandardScaler(), MarginSoftmaxClassifier())
    assert scaled.fit(X, y).score(X, y) > raw + 0.1


def test_threshold_on_standardised_data_with_one_column_scaled():
    X, _ = make_classification(500, 6, random_state=0)
    Z = StandardScaler().fit_transform(X)
    weights = np.ones(len(Z))
    for factor, warns in [(1.0, False), (0.5 * FEATURE_SCALE_RATIO, False),
                          (2 * FEATURE_SCALE_RATIO, True)]:  # fmt: skip
        scaled = Z.copy()
        scaled[:, 2] *= factor
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ratio = check_feature_scales(scaled, weights)
        assert ratio == pytest.approx(factor, rel=0.2)
        assert any(w.category is FeatureScaleWarning for w in caught) == warns


def test_unit_norm_embedding_rows_are_left_alone():
    """Rows of one length (e.g. CLIP features) with uneven columns: no warning."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 32))
    X[:, 0] += 200.0  # one dominant "outlier dimension", as CLIP's
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X = X.astype(np.float16).astype(np.float32)  # stored in half precision
    y = rng.integers(0, 3, 300)
    assert check_feature_scales(X, np.ones(300)) > FEATURE_SCALE_RATIO
    with warnings.catch_warnings():
        warnings.simplefilter("error", FeatureScaleWarning)
        MarginSoftmaxClassifier().fit(X, y)


def test_weights_count_like_repeated_rows_and_zero_weights_not_at_all():
    X, _ = _customers(200)
    Z = StandardScaler().fit_transform(X)
    weights = np.random.default_rng(0).integers(0, 4, len(Z))
    repeated = np.repeat(Z, weights, axis=0)
    assert check_feature_scales(Z, weights) == pytest.approx(
        check_feature_scales(repeated, np.ones(len(repeated))), rel=1e-12
    )
    # a huge row of zero weight does not count
    Z[0, 0] = 1e9
    weights[0] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", FeatureScaleWarning)
        assert check_feature_scales(Z, weights) < FEATURE_SCALE_RATIO


@pytest.mark.parametrize("dtype, scale", [(np.float32, 1e30), (np.float64, 1e200)])
def test_huge_rows_neither_overflow_nor_warn(dtype, scale):
    X, _ = make_classification(100, 4, random_state=0)
    X = (StandardScaler().fit_transform(X) * scale).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_feature_scales(X, np.ones(100)) < FEATURE_SCALE_RATIO


def test_not_checked_for_sparse_or_single_columns():
    X, y = _customers(200)
    assert check_feature_scales(sp.csr_matrix(X), np.ones(200)) is None
    assert check_feature_scales(X[:, :1], np.ones(200)) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", FeatureScaleWarning)
        MarginSoftmaxClassifier(loss="softmax").fit(sp.csr_matrix(X), y)


def test_a_dataframe_column_is_named():
    pd = pytest.importorskip("pandas")
    X, y = _customers(200)
    frame = pd.DataFrame(X, columns=["income", "age", "tenure", "active"])
    with pytest.warns(FeatureScaleWarning, match="column 0 \\('income'\\)"):
        MarginSoftmaxClassifier().fit(frame, y)


def test_a_cv_fit_warns_once_not_once_per_fold():
    """The folds' fits leave the warning to the final refit on all the rows."""
    from sklmargin import MarginSoftmaxClassifierCV

    X, y = _customers(300)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        MarginSoftmaxClassifierCV(cv=3).fit(X, y)
    messages = [str(w.message) for w in caught if w.category is FeatureScaleWarning]
    assert len(messages) == 1
    with pytest.warns(FeatureScaleWarning):
        ratio = check_feature_scales(X, np.ones(len(X)))
    bound = 10 ** np.floor(np.log10(ratio))  # a round bound, stable across folds
    assert f"more than {bound:,.0f} " in messages[0]


def _every_estimator():
    """Each classifier, small enough for a test; the kernel ones learn a metric."""
    from sklmargin import KernelMarginSoftmaxClassifierCV, MarginSoftmaxClassifierCV

    kernel = dict(n_components=60, random_state=0)
    return [
        MarginSoftmaxClassifier(),
        KernelMarginSoftmaxClassifier(**kernel),
        MarginSoftmaxClassifierCV(cv=3),
        KernelMarginSoftmaxClassifierCV(
            ss=[30.0], gammas=["scale"], metric="diagonal", cv=3, **kernel
        ),
    ]


def _few_informative_columns():
    """2 informative columns among 40: a learned metric shrinks the other 38.

    After the metric the kernel's rows have a column root-mean-square ratio
    of 27-46 (seeds 0 and 1): what the kernel CV's refit used to check.
    """
    return make_classification(
        n_samples=240, n_features=40, n_informative=2, n_redundant=0,
        n_classes=3, n_clusters_per_class=1, random_state=0,
    )  # fmt: skip


@pytest.mark.parametrize(
    "estimator", _every_estimator(), ids=["linear", "kernel", "cv", "kernel-cv"]
)
def test_no_warning_after_a_standard_scaler(estimator):
    # The check is on the user's rows: after a StandardScaler every column has
    # unit scale, whatever a learned metric does to them inside the fit.
    for X, y in (load_wine(return_X_y=True), _few_informative_columns()):
        with warnings.catch_warnings():
            warnings.simplefilter("error", FeatureScaleWarning)
            make_pipeline(StandardScaler(), estimator).fit(X, y)


@pytest.mark.parametrize(
    "estimator", _every_estimator(), ids=["linear", "kernel", "cv", "kernel-cv"]
)
def test_every_estimator_warns_once_on_raw_badly_scaled_rows(estimator):
    X, y = _customers(300)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    messages = [str(w.message) for w in caught if w.category is FeatureScaleWarning]
    assert len(messages) == 1, messages
    assert "column 0" in messages[0]
