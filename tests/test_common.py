"""scikit-learn's conformance suite over every loss, with no expected failures."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklmargin import MarginSoftmaxClassifier

LINEAR_CONFIGS = [
    MarginSoftmaxClassifier(loss="softmax"),
    MarginSoftmaxClassifier(loss="normface"),
    MarginSoftmaxClassifier(loss="am-softmax"),
    MarginSoftmaxClassifier(loss="arcface"),
    MarginSoftmaxClassifier(loss="l-softmax"),
    MarginSoftmaxClassifier(loss="a-softmax"),
    MarginSoftmaxClassifier(loss="am-softmax", t=1.2),
    MarginSoftmaxClassifier(loss="arcface", t=1.2),
]


@parametrize_with_checks(LINEAR_CONFIGS)
def test_sklearn_conformance(estimator, check):
    check(estimator)
