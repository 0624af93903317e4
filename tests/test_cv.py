"""The cross-validated estimators: conformance, grids, paths, calibration."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklmargin import KernelMarginSoftmaxClassifierCV, MarginSoftmaxClassifierCV

CONFORMANCE_CONFIGS = [
    MarginSoftmaxClassifierCV(ss=[10.0, 30.0], ms=[0.0, 0.05], cv=3),
    MarginSoftmaxClassifierCV(loss="softmax", Cs=[0.1, 1.0], cv=3),
    MarginSoftmaxClassifierCV(ss=[10.0, 30.0], ms=[0.05], cv=3, refit=False),
    KernelMarginSoftmaxClassifierCV(
        gammas=["scale", 0.5],
        ss=[10.0, 30.0],
        ms=[0.05],
        n_components=30,
        cv=2,
        random_state=0,
    ),
]


@parametrize_with_checks(CONFORMANCE_CONFIGS)
def test_sklearn_conformance(estimator, check):
    check(estimator)
