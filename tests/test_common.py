"""scikit-learn's conformance suite over every loss, with no expected failures.

The linear configurations are built from the loss registry, so a newly
registered loss is checked without editing this file.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklmargin import KernelMarginSoftmaxClassifier, MarginSoftmaxClassifier
from sklmargin._margins import registered_margins

LINEAR_CONFIGS = [
    MarginSoftmaxClassifier(loss=margin.name) for margin in registered_margins()
] + [
    MarginSoftmaxClassifier(loss="am-softmax", t=1.2),
    MarginSoftmaxClassifier(loss="arcface", t=1.2),
]

KERNEL_CONFIGS = [
    KernelMarginSoftmaxClassifier(n_components=50, random_state=0),
    KernelMarginSoftmaxClassifier(loss="arcface", n_components=50, random_state=0),
    KernelMarginSoftmaxClassifier(loss="a-softmax", n_components=50, random_state=0),
    KernelMarginSoftmaxClassifier(t=1.2, n_components=50, random_state=0),
    KernelMarginSoftmaxClassifier(
        n_components=50, kernel_approximation="orf", random_state=0
    ),
    KernelMarginSoftmaxClassifier(
        n_components=50, kernel_approximation="rff", random_state=0
    ),
] + [
    # Every Nyström centre selector, the sample-weight equivalence included.
    KernelMarginSoftmaxClassifier(n_components=20, centres=centres, random_state=0)
    for centres in ("kmeans", "rpcholesky")
]


@parametrize_with_checks(LINEAR_CONFIGS + KERNEL_CONFIGS)
def test_sklearn_conformance(estimator, check):
    check(estimator)
