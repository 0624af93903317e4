"""scikit-learn's conformance suite over every loss, with no expected failures."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier

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

KERNEL_CONFIGS = [
    KernelMarginSoftmaxClassifier(n_components=50, random_state=0),
    KernelMarginSoftmaxClassifier(loss="arcface", n_components=50, random_state=0),
    KernelMarginSoftmaxClassifier(loss="a-softmax", n_components=50, random_state=0),
    KernelMarginSoftmaxClassifier(t=1.2, n_components=50, random_state=0),
    KernelMarginSoftmaxClassifier(
        n_components=50, kernel_approximation="rff", random_state=0
    ),
    KernelMarginSoftmaxClassifier(
        n_components=50, kernel_approximation="nystroem", random_state=0
    ),
]


@parametrize_with_checks(LINEAR_CONFIGS + KERNEL_CONFIGS)
def test_sklearn_conformance(estimator, check):
    check(estimator)
